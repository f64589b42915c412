"""What an install teiten made holds, so that a damaged one is caught before it is used.

When teiten makes an install (PyPI, Maven, npm, a source build) it writes, last,
``.teiten-manifest.json``: every regular file's path (relative to the install), size and
SHA-256, and every symlink's target. Sizes are checked (stat only, about 10 ms) every time
the install is looked up; hashes (0.1 to 0.3 s for an install of 30 to 60 MB) before a
study's first trial and by ``teiten installs --verify``. Installs teiten did not make (the
system's packages, a bindir on PATH) have no manifest and are never hashed.

An install made before teiten kept manifests gets one at its first check, from its files as
they are then: nothing it was downloaded from is kept to check them against, and refusing it
would make every cached install a download again. From then on it is checked like any other.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shlex
import stat
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from teiten import paths
from teiten.installs.source_key import PRESETS

log = logging.getLogger(__name__)

MANIFEST = ".teiten-manifest.json"
METADATA = "teiten-install.json"
# teiten's own records in an install are not what it installed: left out of the manifest,
# so that teiten may add to them later without the install looking damaged.
_OWN = frozenset({MANIFEST, METADATA, paths.MARKER})
_FORMAT = 1


def made_by_teiten(prefix: Path) -> bool:
    """``prefix`` (the directory that holds bin/) is an install teiten made."""
    return (prefix / METADATA).is_file()


def record(prefix: Path) -> dict[str, Any]:
    """The manifest of the install in ``prefix``, read from its files now."""
    files: dict[str, dict[str, object]] = {}
    links: dict[str, str] = {}
    for directory, dirs, names in os.walk(prefix):
        dirs.sort()
        for name in [*dirs, *names]:
            path = os.path.join(directory, name)
            rel = os.path.relpath(path, prefix)
            st = os.lstat(path)
            if stat.S_ISLNK(st.st_mode):
                links[rel] = os.readlink(path)
            elif stat.S_ISREG(st.st_mode) and rel not in _OWN and not rel.startswith(f"{MANIFEST}."):
                files[rel] = {"size": st.st_size, "sha256": _sha256(path)}
    return {"format": _FORMAT, "algorithm": "sha256", "files": files, "links": links}


def write(prefix: Path) -> dict[str, Any]:
    """Write the manifest of ``prefix`` (in one step: a reader sees all of it or none)."""
    manifest = record(prefix)
    part = prefix / f"{MANIFEST}.{os.getpid()}"  # another teiten may write it at once
    part.write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")
    part.chmod(0o644)
    part.rename(prefix / MANIFEST)
    return manifest


@dataclass(frozen=True)
class Checked:
    """What checking an install found: ``problem`` is the first difference from its
    manifest, in words ("bin/pgbench is 0 bytes, its manifest says 1093472"), or None."""

    files: int
    size: int
    seconds: float
    problem: str | None
    written: bool = False  # the manifest was written by this check (an install from before)
    unchecked: bool = False  # no manifest, and none could be written: nothing was checked


def check(prefix: Path, *, hashes: bool) -> Checked:
    """Compare the files of ``prefix`` with its manifest: sizes, symlink targets, and with
    ``hashes`` their SHA-256 too. An install without a manifest gets one now (module
    docstring); one that cannot be written (the cache is not ours to write) is not checked."""
    began = time.monotonic()
    try:
        manifest = json.loads((prefix / MANIFEST).read_text())
        files: dict[str, dict[str, Any]] = manifest["files"]
        links: dict[str, str] = manifest["links"]
    except FileNotFoundError:
        try:
            files = write(prefix)["files"]
        except OSError as exc:
            log.info("%s has no %s and cannot get one (%s): not checked", prefix, MANIFEST, exc)
            return Checked(0, 0, time.monotonic() - began, None, unchecked=True)
        log.info("%s was made before teiten kept manifests: its files are recorded as they are "
                 "now, and checked from now on", prefix)
        return Checked(len(files), sum(int(f["size"]) for f in files.values()),
                       time.monotonic() - began, None, written=True)
    except (OSError, ValueError, KeyError, TypeError) as exc:
        return Checked(0, 0, time.monotonic() - began, f"its {MANIFEST} cannot be read ({exc})")
    problem = _first_problem(prefix, files, links, hashes=hashes)
    return Checked(len(files), sum(int(f["size"]) for f in files.values()),
                   time.monotonic() - began, problem)


def _first_problem(prefix: Path, files: Mapping[str, Mapping[str, Any]], links: Mapping[str, str],
                   *, hashes: bool) -> str | None:
    for rel in sorted(links):
        try:
            target = os.readlink(prefix / rel)
        except FileNotFoundError:
            return f"the link {rel} is missing"
        except OSError:
            return f"{rel} is no longer a link (to {links[rel]})"
        if target != links[rel]:
            return f"the link {rel} points to {target}, its manifest says {links[rel]}"
    for rel in sorted(files):  # sizes first, all of them: cheap, and the usual damage
        try:
            st = os.lstat(prefix / rel)
        except OSError:
            return f"{rel} is missing"
        if not stat.S_ISREG(st.st_mode):
            return f"{rel} is no longer a regular file"
        if st.st_size != files[rel]["size"]:
            return f"{rel} is {st.st_size} bytes, its manifest says {files[rel]['size']}"
    if hashes:
        for rel in sorted(files):
            try:
                digest = _sha256(str(prefix / rel))
            except OSError as exc:
                return f"{rel} cannot be read ({exc.strerror})"
            if digest != files[rel]["sha256"]:
                return f"{rel} has the size its manifest says but not its SHA-256 (changed in place)"
    return None


def _sha256(path: str) -> str:
    # O_NOFOLLOW: what the manifest calls a file is never read through a link.
    with os.fdopen(os.open(path, os.O_RDONLY | os.O_NOFOLLOW), "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def damage(prefix: Path, problem: str, *, hashes: bool) -> str:
    """The one line that says an install is damaged, what was checked, and how to reinstall."""
    how = "sizes and SHA-256" if hashes else "sizes"
    return (f"install {prefix.name} ({prefix}) is damaged: {problem} (checked: the {how} of its "
            f"files against {MANIFEST}); reinstall it with '{reinstall_command(prefix)}'")


def reinstall_command(prefix: Path) -> str:
    """The teiten command that makes the install in ``prefix`` again, in its place."""
    try:
        info = json.loads((prefix / METADATA).read_text())
    except (OSError, ValueError):
        info = {}
    origin, version = info.get("origin", "pypi"), info.get("version", "?")
    if origin != "source":
        return f"teiten install --force {origin}:{version}"
    git = info.get("git")
    if isinstance(git, dict):  # a commit (teiten install --from-git)
        argv = ["teiten", "install", "--force", "--from-git", str(git.get("repo")), "--commit",
                str(git.get("commit")), "--name", str(info.get("name"))]
    else:
        argv = ["teiten", "install", "--force", "--from-source",
                str(info.get("source", {}).get("path")), "--name", str(info.get("name"))]
    preset = info.get("preset")
    args = list(info.get("configure", {}).get("argv", [])[2:])  # after configure and --prefix
    if preset in PRESETS:
        argv += ["--preset", preset]
        args = _without_preset(args, PRESETS[preset].cppflags)
    if args:
        argv.append("--configure=" + shlex.join(args))
    return shlex.join(argv)


def _without_preset(args: list[str], cppflags: str) -> list[str]:
    """The configure arguments as given, without the CPPFLAGS the preset added to them."""
    if not cppflags:
        return args
    kept = []
    for arg in args:
        if arg == f"CPPFLAGS={cppflags}":
            continue
        kept.append(arg.removesuffix(f" {cppflags}") if arg.startswith("CPPFLAGS=") else arg)
    return kept
