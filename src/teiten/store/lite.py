"""The SQLite store's connection: "database or disk is full" becomes one line that says what
to do (:class:`teiten.model.errors.StoreFull`)."""

from __future__ import annotations

import shutil
import sqlite3
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from teiten.model.errors import StoreFull

if TYPE_CHECKING:
    from _typeshed import SupportsLenAndGetItem

    # What sqlite3 takes as a statement's parameters: by position or by name.
    Parameters = SupportsLenAndGetItem[object] | Mapping[str, object]


class SqliteConnection(sqlite3.Connection):
    """SQLite's connection, whose "database or disk is full" is :class:`StoreFull`: one line
    that names the store and says that resume finishes the study once there is space (a
    transaction cut short by it is rolled back, so every finished trial is intact)."""

    store_path: Path = Path()

    def execute(self, sql: str, parameters: Parameters = (), /) -> sqlite3.Cursor:
        try:
            return super().execute(sql, parameters)
        except sqlite3.OperationalError as exc:
            if _is_full(exc):
                raise _full(self.store_path, exc) from None
            raise

    def executemany(self, sql: str, parameters: Iterable[Parameters], /) -> sqlite3.Cursor:
        try:
            return super().executemany(sql, parameters)
        except sqlite3.OperationalError as exc:
            if _is_full(exc):
                raise _full(self.store_path, exc) from None
            raise


def _is_full(exc: sqlite3.OperationalError) -> bool:
    return getattr(exc, "sqlite_errorcode", None) == sqlite3.SQLITE_FULL or "disk is full" in str(exc)


def _full(path: Path, exc: sqlite3.OperationalError) -> StoreFull:
    try:
        free = f"{shutil.disk_usage(path.parent).free / 2**20:.1f} MiB free"
    except OSError:
        free = "its free space unknown"
    return StoreFull(f"the disk of the store {path} is full ({free}: {exc}); every finished "
                     f"trial is kept in it: free some space, then 'teiten resume --store {path}' "
                     "finishes the study")
