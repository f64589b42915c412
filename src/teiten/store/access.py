"""Whether this user can open or make an SQLite store at a path, said as the cause is (issue
54, item 14): a store teiten cannot create because its directory is not writable, or does not
exist and cannot be made, is not "not a teiten store"; nor is one it cannot read or write.

:func:`check_path` only looks (a run calls it before anything is made or downloaded);
:func:`unusable` turns SQLite's own refusal into the line that says why.
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

from teiten.host import paths, trust
from teiten.model.errors import UnusableStore, UserError

ELSEWHERE = "choose a store in a directory you can write"


def check_path(path: Path, *, create: bool) -> None:
    """Refuse ``path`` when this user cannot open it as a store, or (``create``: to write in
    it) make it where it is missing or write it where it is there: one line naming the
    directory or file at fault. Makes nothing."""
    try:
        os.stat(path)
    except FileNotFoundError:
        if not create:
            parent = Path(os.path.abspath(path)).parent
            where = "" if parent.is_dir() else f" (there is no directory {parent})"
            raise UserError(f"no store at {path}{where}; give the --store that 'teiten run' "
                            "wrote") from None
        why = paths.cannot_make(path)
        if why is not None:
            raise UnusableStore(f"cannot create the store {path}: {why}; {ELSEWHERE}") from None
        return
    except PermissionError:
        raise UnusableStore(f"cannot reach the store {path}: {paths.unsearchable(path)}; "
                            "give a store you can read, or run teiten as its owner") from None
    except OSError as exc:
        raise UnusableStore(f"cannot reach the store {path}: {exc.strerror}") from None
    if os.path.isdir(path):
        raise UnusableStore(f"{path} is a directory; a store is the path of a file, for "
                            f"instance {path / 'teiten.db'}")
    if not os.access(path, os.R_OK):
        raise UnusableStore(f"cannot read the store {path}: it is not readable by you "
                            f"(Permission denied; its owner is {_owner(path)}); run teiten as "
                            "that account, or copy the store where you can read it")
    refused = _unwritable(path) if create else None  # a run writes it
    if refused is not None:
        raise refused


def unusable(path: Path, exc: sqlite3.DatabaseError) -> UnusableStore:
    """SQLite's refusal of ``path``: the permission that caused it, when this user cannot
    write the store or its directory; else not a teiten store."""
    if isinstance(exc, sqlite3.OperationalError) and os.path.exists(path):
        refused = _unwritable(path)
        if refused is not None:
            return refused
    return UnusableStore(f"{path} is not a teiten store: {exc}")


def _unwritable(path: Path) -> UnusableStore | None:
    """Why this user cannot write the existing store ``path``: the file, or its directory,
    where SQLite keeps its -wal and -shm files (even to read it); None when both are writable."""
    directory = Path(os.path.abspath(path)).parent
    blocked = [] if os.access(path, os.W_OK) else [f"{path} (its owner is {_owner(path)})"]
    if not os.access(directory, os.W_OK | os.X_OK):
        blocked.append(f"its directory {directory}")
    if not blocked:
        return None
    why = "on a read-only file system" if paths.unwritable(directory).endswith("file system") \
        else "not writable by you (Permission denied)"
    return UnusableStore(
        f"cannot open the store {path}: {' and '.join(blocked)} "
        f"{'is' if len(blocked) == 1 else 'are'} {why}, and "
        "teiten opens a store for writing, even to read it (SQLite keeps its -wal and -shm files "
        "beside it); run teiten as an account that can write there, or copy the store where you "
        "can")


def _owner(path: Path) -> str:
    try:
        return trust.owner_name(os.stat(path).st_uid)
    except OSError:
        return "unknown"
