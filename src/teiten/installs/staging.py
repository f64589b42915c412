"""Putting a downloaded install into teiten's cache so that a killed install leaves nothing
that looks finished: unpacked into a staging directory beside its place, checked, described
(``teiten-install.json``), its postgres run once, marked as teiten's own, then renamed into
place in one step."""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path

from teiten import paths, procs
from teiten.errors import InstallError, ProcessError
from teiten.installs.discover import METADATA


def ready(target: Path) -> bool:
    """An install is there already (finished: described, with its postgres)."""
    return (target / METADATA).is_file() and (target / "bin" / "postgres").is_file()


def install_into(target: Path, unpack: Callable[[Path], None], meta: Mapping[str, object],
                 *, what: str, purpose: str) -> Path:
    """Make ``target`` with ``unpack(staging)`` (which fills an empty directory so that it holds
    ``bin/postgres``); ``what`` names the download in messages. Returns the bindir."""
    paths.installs_dir().mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=paths.installs_dir()))
    try:
        unpack(staging)
        if not (staging / "bin" / "postgres").is_file():
            raise InstallError(f"{what}: no bin/postgres inside")
        try:  # a build that cannot run here (a library missing) is not put in place
            procs.run([str(staging / "bin" / "postgres"), "--version"], timeout=60,
                      what="postgres --version")
        except (ProcessError, OSError) as exc:  # OSError: another architecture (ENOEXEC)
            raise InstallError(f"{what}: its postgres does not run here, so nothing was "
                               f"installed: {str(exc).splitlines()[0]}") from None
        staging.chmod(0o755)
        (staging / METADATA).write_text(json.dumps(dict(meta), indent=2) + "\n")
        paths.mark_owned(staging, purpose)
        if target.exists():  # an old, unfinished install of ours
            paths.remove_owned(target)
        staging.rename(target)
    finally:
        if staging.exists():
            shutil.rmtree(staging)
    return target / "bin"
