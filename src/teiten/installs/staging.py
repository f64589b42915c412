"""Putting a downloaded install into teiten's cache so that a killed install leaves nothing
that looks finished: unpacked into a staging directory beside its place, checked, described
(``teiten-install.json``), its postgres run once, its manifest written (installs.manifest),
then renamed into place in one step.

A staging directory is hidden, named after the install and the pid of the teiten that makes
it (``.pypi-17.11-4242-x1y2z3.staging``), and marked as teiten's own from the start; one whose
teiten was killed is removed by the next ``teiten install`` and by ``teiten clean``
(:func:`remove_stale`), never while that process lives.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import os
import re
import shutil
import tempfile
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path

import psutil

from teiten.host import paths, procs, safefs
from teiten.installs import manifest
from teiten.installs.manifest import METADATA
from teiten.model.errors import InstallError, ProcessError

log = logging.getLogger(__name__)

_STAGING = re.compile(r"^\.(?P<install>.+)-(?P<pid>\d+)-[a-z0-9_]+\.staging$")


@contextlib.contextmanager
def one_at_a_time(name: str) -> Iterator[None]:
    """While the block runs, no other teiten installs ``name`` (``pypi-17.11``): two runs that
    need the same release download it once, the second finding it in place when its turn
    comes (each registry's install looks for a finished one first)."""
    locks = paths.home() / "locks"
    locks.mkdir(parents=True, exist_ok=True)
    fd = os.open(locks / f"install-{name}.lock", os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            log.warning("waiting for another teiten that installs %s", name)
            fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def ready(target: Path) -> bool:
    """An install is there already (finished: described, with its postgres)."""
    return (target / METADATA).is_file() and (target / "bin" / "postgres").is_file()


def install_into(target: Path, unpack: Callable[[Path], None], meta: Mapping[str, object],
                 *, what: str, purpose: str) -> Path:
    """Make ``target`` with ``unpack(staging)`` (which fills a directory that holds only
    teiten's marker so that it holds ``bin/postgres``); ``what`` names the download in
    messages. Returns the bindir."""
    paths.installs_dir().mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}-{os.getpid()}-", suffix=".staging",
                                    dir=paths.installs_dir()))
    try:
        paths.mark_owned(staging, purpose)
        unpack(staging)
        if not (staging / "bin" / "postgres").is_file():
            raise InstallError(f"{what}: no bin/postgres inside")
        try:  # a build that cannot run here (a library missing) is not put in place
            procs.run([str(staging / "bin" / "postgres"), "--version"], timeout=60,
                      what="postgres --version")
        except (ProcessError, OSError) as exc:  # OSError: another architecture (ENOEXEC)
            raise InstallError(f"{what}: its postgres does not run here, so nothing was "
                               f"installed: {str(exc).splitlines()[0]}") from None
        safefs.chmod(staging, 0o755)
        (staging / METADATA).write_text(json.dumps(dict(meta), indent=2) + "\n")
        manifest.write(staging)  # last: what the install holds from here on
        if target.exists():  # an old, unfinished or damaged install of ours
            paths.remove_owned(target)
        staging.rename(target)
    finally:
        if staging.exists():
            shutil.rmtree(staging)
    return target / "bin"


def remove_stale() -> list[str]:
    """Remove the staging directories of installs whose teiten no longer runs; one line for
    each. Only teiten's own (named as above, and marked) are touched."""
    root = paths.installs_dir()
    notes = []
    for entry in sorted(root.iterdir()) if root.is_dir() else []:
        m = _STAGING.match(entry.name)
        if m is None or entry.is_symlink() or not entry.is_dir() or _running(int(m["pid"]), entry):
            continue
        try:
            if paths.remove_owned(entry):
                notes.append(f"removed {entry}, left by an install of {m['install']} that was "
                             f"interrupted (pid {m['pid']} no longer runs)")
        except OSError as exc:
            log.warning("could not remove %s: %s", entry, exc)
    return notes


def _running(pid: int, staging: Path) -> bool:
    """Whether the teiten that made ``staging`` still runs: process ``pid`` exists and began
    before the directory was marked (a later process has only been given the same pid)."""
    try:
        marked = (staging / paths.MARKER).stat().st_mtime
        return psutil.Process(pid).create_time() <= marked + 1
    except psutil.NoSuchProcess:
        return False
    except (OSError, psutil.Error):  # no marker (remove_owned will keep it), or not ours to see
        return True
