"""Where teiten keeps things, and the marker that says a directory is teiten's own.

teiten removes only directories that carry its marker file: nothing a user made is ever
deleted, even when a study file points somewhere unexpected.
"""

from __future__ import annotations

import json
import logging
import os
import stat
import time
from pathlib import Path

from teiten.host import safefs, trust
from teiten.model.errors import UserError

log = logging.getLogger(__name__)

MARKER = ".teiten-owned"


def home() -> Path:
    """``$TEITEN_HOME``, else ``$XDG_CACHE_HOME/teiten`` (an absolute one: the XDG rule), else
    ``~/.cache/teiten``: installs, clusters and snapshots."""
    env = os.environ.get("TEITEN_HOME")
    if env:
        return Path(env).expanduser().absolute()
    xdg = os.environ.get("XDG_CACHE_HOME", "")
    return (Path(xdg) if os.path.isabs(xdg) else Path.home() / ".cache") / "teiten"


def installs_dir() -> Path:
    return home() / "installs"


def downloads_dir() -> Path:
    return home() / "downloads"


def clusters_dir() -> Path:
    return home() / "clusters"


def make_owned(path: Path, purpose: str, *, mode: int = 0o755) -> Path:
    """Create ``path`` (which must not exist yet) and mark it as teiten's own. Its parents
    are made as needed; the last step never follows a link (see :mod:`teiten.host.safefs`)."""
    path = path.absolute()
    if os.path.lexists(path):
        raise UserError(f"{path} already exists; teiten only creates new directories there")
    refuse_replaceable(path.parent)
    # safe: the parents of a new directory of teiten's: its home, or a directory the user named
    path.parent.mkdir(parents=True, exist_ok=True)
    with safefs.Dir.open(path.parent) as parent, \
            parent.make_dir(path.name, mode=mode, give=False) as made:
        made.write_text(MARKER, _marker_text(purpose), mode=0o644, give=False)
    return path


def refuse_replaceable(path: Path | str, what: str = "") -> None:
    """Refuse ``path`` (or a path to be made there: its parent decides) when an account other
    than root and the invoking user could change a directory on the way, or the path itself
    (:func:`teiten.host.trust.who_can_change`): what teiten makes, runs or writes there could be
    swapped for that account's own between two of root's steps."""
    problem = trust.who_can_change(path)
    if problem is not None:
        raise UserError(f"{what or path}: {problem}, so another account could change what "
                        "teiten runs or writes there; " + trusted_hint())


def trusted_hint() -> str:
    """How to give a path that passes :func:`refuse_replaceable`."""
    if os.geteuid() == 0:
        return "give a path that only root can write (e.g. mkdir -m 755 /srv/teiten)"
    return "give a path below your home that only you can write"


def check_home() -> None:
    """Refuse a ``$TEITEN_HOME`` (made or not) that another account could change: the installs
    there are run as root."""
    refuse_replaceable(home(), f"TEITEN_HOME {home()}")


def mark_owned(path: Path, purpose: str) -> None:
    """Mark the directory ``path``, which teiten just created, as its own."""
    safefs.write_text(path / MARKER, _marker_text(purpose), mode=0o644, give=False)


def _marker_text(purpose: str) -> str:
    info = {"purpose": purpose, "pid": os.getpid(), "created": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
    return json.dumps(info) + "\n"


def _marked(directory: safefs.Dir) -> bool:
    st = directory.lstat(MARKER)
    return st is not None and stat.S_ISREG(st.st_mode)


def is_owned(path: Path) -> bool:
    try:
        with safefs.Dir.open(path) as directory:
            return _marked(directory)
    except (OSError, safefs.UnsafePath):
        return False


def remove_owned(path: Path) -> bool:
    """Remove ``path`` only if it carries teiten's marker. Returns whether it was removed.

    The directory is opened without following a link, the marker looked for in the very
    directory then removed, and nothing below it is followed (:mod:`teiten.host.safefs`)."""
    try:
        parent, name = safefs.parent_and_name(path)
    except (FileNotFoundError, NotADirectoryError):
        return False
    with parent:
        if parent.lstat(name) is None:
            return False
        if parent.remove(name, only=_marked):
            return True
    log.warning("not removing %s: it has no %s marker, so teiten did not create it", path, MARKER)
    return False


# -- what teiten made outside a directory of its own ---------------------------------------

RECORD = ".teiten-made"


def remember(record_dir: Path, made: Path) -> None:
    """Note in ``record_dir`` (a directory of teiten's that the server account cannot write)
    that teiten made ``made`` elsewhere, for the cleanup of a killed run: that cleanup
    removes what this record names, never what it finds in the server's files."""
    with safefs.Dir.open(record_dir) as directory:
        known = directory.read_text(RECORD) if directory.lstat(RECORD) else ""
        directory.write_text(RECORD, known + json.dumps(str(made.absolute())) + "\n",
                             mode=0o644, give=False)


def remembered(record_dir: Path) -> list[Path]:
    """What :func:`remember` noted in ``record_dir`` (none when it is not teiten's, or the
    server account could have written the record)."""
    try:
        with safefs.Dir.open(record_dir) as directory:
            if directory.lstat(RECORD) is None or directory.controls(RECORD):
                return []
            text = directory.read_text(RECORD, limit=1 << 20)
    except (OSError, safefs.UnsafePath):
        return []
    found = []
    for line in text.splitlines():
        try:
            found.append(Path(json.loads(line)))
        except (ValueError, TypeError):
            continue
    return found


def cannot_make(path: Path | str) -> str | None:
    """Why this user cannot make ``path``, a file or directory that does not exist, with the
    directories above it that are missing (as teiten makes them): the directory at fault, and
    the system's reason; None when it can. Only looks: makes nothing."""
    target = Path(os.path.abspath(path))
    holder, missing = target.parent, False
    while True:
        try:
            st = os.stat(holder)
            break
        except FileNotFoundError:
            holder, missing = holder.parent, True
        except PermissionError:
            return unsearchable(holder)
        except OSError as exc:
            return f"{holder}: {exc.strerror}"
    if not stat.S_ISDIR(st.st_mode):
        return f"{holder} is not a directory"
    if os.access(holder, os.W_OK | os.X_OK):
        return None
    why = unwritable(holder)
    return (f"there is no directory {target.parent}, and {holder}, where it would be made, {why}"
            if missing else f"{holder} {why}")


def unsearchable(path: Path | str) -> str:
    """Which directory on the way to ``path`` this user cannot enter (the cause of a
    Permission denied on ``path``), said as a message says it."""
    target = Path(os.path.abspath(path))
    for directory in [*reversed(target.parents), target]:
        if not os.access(directory, os.X_OK):
            return f"{directory} cannot be entered by you (Permission denied)"
    return f"{target}: Permission denied"


def unwritable(directory: Path) -> str:
    """Why an existing directory refuses a new entry: a read-only file system, or its mode."""
    try:
        read_only = bool(os.statvfs(directory).f_flag & os.ST_RDONLY)
    except OSError:
        read_only = False
    if read_only:
        return "is on a read-only file system"
    if not os.access(directory, os.X_OK):
        return "cannot be entered by you (Permission denied)"
    return "is not writable by you (Permission denied)"
