"""Finding the PostgreSQL binaries already on this machine."""

from __future__ import annotations

import json
import logging
import os
import shutil
from collections.abc import Iterator
from pathlib import Path

from teiten.host import paths, procs
from teiten.installs import manifest
from teiten.installs.manifest import METADATA
from teiten.installs.model import Install, parse_version, version_key
from teiten.model.errors import ProcessError

log = logging.getLogger(__name__)

SYSTEM_GLOB = "/usr/lib/postgresql/*/bin"


def probe_bindir(bindir: Path, origin: str, name: str | None = None) -> Install | None:
    """An Install for ``bindir`` if it holds a working postgres binary.

    An install teiten made is checked against its manifest first (installs.manifest: the
    whole tree walked, stat only: every entry's type, mode, owner and size, nothing added,
    nothing missing; one without a manifest fails): a damaged one is not run (a truncated
    program may not even start, and an added library or a setuid bit must not reach root) but
    returned with its ``damage`` set, so that the study that uses it is refused with the line
    that says so, and no other is.
    """
    prefix = bindir.parent
    made = manifest.made_by_teiten(prefix)
    if made:
        checked = manifest.check(prefix, hashes=False)
        if checked.problem is not None:
            return _unprobed(bindir, origin, name, manifest.damage(prefix, checked.problem, hashes=False))
    postgres = bindir / "postgres"
    if not postgres.is_file():
        return None
    try:
        done = procs.run([str(postgres), "--version"], timeout=20, what="postgres --version")
    except (ProcessError, OSError) as exc:  # OSError: not a program this machine runs (ENOEXEC)
        if made and (problem := manifest.check(prefix, hashes=True).problem) is not None:
            return _unprobed(bindir, origin, name, manifest.damage(prefix, problem, hashes=True))
        log.warning("ignoring %s: %s", bindir, exc)
        return None
    parsed = parse_version(done.stdout)
    if parsed is None:
        return None
    version, major = parsed
    return Install(bindir=bindir.resolve(), version=version, major=major, origin=origin, name=name)


def _unprobed(bindir: Path, origin: str, name: str | None, damage: str) -> Install | None:
    """A damaged install of teiten's as its metadata describes it (its postgres not run)."""
    info = read_metadata(bindir.parent) or {}
    parsed = parse_version(f"(PostgreSQL) {info.get('version')}")
    if parsed is None:
        log.warning("ignoring %s: %s", bindir, damage)
        return None
    return Install(bindir=bindir.resolve(), version=parsed[0], major=parsed[1], origin=origin,
                   name=name, damage=damage)


def _system() -> Iterator[Install]:
    for bindir in sorted(Path("/").glob(SYSTEM_GLOB.lstrip("/"))):
        found = probe_bindir(bindir, "system")
        if found:
            yield found


def _pg_config() -> Iterator[Install]:
    pg_config = shutil.which("pg_config")
    if pg_config is None:
        return
    try:
        done = procs.run([pg_config, "--bindir"], timeout=20)
    except ProcessError as exc:
        log.warning("ignoring pg_config: %s", exc)
        return
    found = probe_bindir(Path(done.stdout.strip()), "pg_config")
    if found:
        yield found


def _path() -> Iterator[Install]:
    for program in ("postgres", "pg_ctl", "initdb"):
        where = shutil.which(program)
        if where:
            found = probe_bindir(Path(os.path.realpath(where)).parent, "path")
            if found:
                yield found


def read_metadata(prefix: Path) -> dict[str, object] | None:
    """The ``teiten-install.json`` of an install in teiten's cache (``prefix`` holds bin/)."""
    try:
        info = json.loads((prefix / METADATA).read_text())
    except (OSError, json.JSONDecodeError):
        return None
    return info if isinstance(info, dict) else None


def cached() -> Iterator[Install]:
    """Installs in teiten's own cache (``$TEITEN_HOME/installs``)."""
    root = paths.installs_dir()
    if not root.is_dir():
        return
    for meta in sorted(root.glob(f"*/{METADATA}")):
        if meta.parent.name.startswith("."):  # a staging directory (installs.staging)
            continue
        # None: removed since the listing (another teiten's 'remove', a test's stand-in) or
        # unreadable; such an install is not one this command can use, and listing the others
        # must not fail on it.
        info = read_metadata(meta.parent)
        if info is None:
            continue
        origin, name = info.get("origin", "pypi"), info.get("name")  # as teiten wrote them: text
        found = probe_bindir(meta.parent / "bin", origin if isinstance(origin, str) else "pypi",
                             name if isinstance(name, str) else None)
        if found:
            yield found


def find_all() -> list[Install]:
    """Every PostgreSQL found, each bindir once, newest version first."""
    seen: dict[Path, Install] = {}
    for source in (_system(), _pg_config(), _path(), cached()):
        for inst in source:
            seen.setdefault(inst.bindir, inst)
    return sorted(seen.values(), key=lambda i: version_key(i.version), reverse=True)
