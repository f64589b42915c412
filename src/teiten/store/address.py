"""Where a store is: the path of an SQLite file, or a PostgreSQL database that a team shares.

``--store`` takes either. A ``postgresql://`` (or ``postgres://``) URI, or a libpq keyword
string such as ``host=db1 dbname=teiten``, names a PostgreSQL store; anything else is a file
path (a file whose name looks like ``key=value`` is given as ``./key=value``). A password is
never part of the address: libpq takes it from ``PGPASSWORD``, a passfile or a service file, as
for the servers of a study, so that it reaches no argv, store, log or report.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import Path

import psycopg
from psycopg import conninfo as pg_conninfo

from teiten.model.errors import UserError

URI = re.compile(r"postgres(?:ql)?://", re.IGNORECASE)
KEYWORDS = re.compile(r"(?:^|\s)(?:host|hostaddr|port|dbname|user|password|service)\s*=")


def password_in(text: str) -> bool:
    """A password written into a connection string or URI (``password=``, ``user:secret@``)."""
    return bool(re.search(r"(?:^|\s)password\s*=", text)) or bool(
        URI.match(text) and re.match(r"[^:/]+://[^/@]*:[^/@]*@", text))


def is_conninfo(text: str) -> bool:
    """``text`` names a PostgreSQL database rather than a file."""
    return bool(URI.match(text) or KEYWORDS.search(text))


@dataclass(frozen=True)
class StoreAddress:
    """A store's address: ``path`` for SQLite, ``conninfo`` for PostgreSQL."""

    path: Path | None = None
    conninfo: str | None = None

    @classmethod
    def parse(cls, text: str | Path | StoreAddress) -> StoreAddress:
        if isinstance(text, StoreAddress):
            return text
        if isinstance(text, Path) or not is_conninfo(text):
            return cls(path=Path(text))
        if password_in(text):
            raise UserError("a store's password is never written in its address (it would reach "
                            "argv, logs and reports): give it with PGPASSWORD, a passfile "
                            "(~/.pgpass) or a service file")
        try:
            pg_conninfo.conninfo_to_dict(text)
        except psycopg.ProgrammingError as exc:
            raise UserError(f"--store {text!r} is not a connection string libpq can read: "
                            f"{str(exc).splitlines()[0]}") from None
        return cls(conninfo=text)

    @property
    def is_postgres(self) -> bool:
        return self.conninfo is not None

    def __str__(self) -> str:
        """For messages and ``teiten resume --store ...``: the path or the connection string,
        as given (a connection string holds no password), quoted for a shell where it needs
        it (host=db1 dbname=perf)."""
        return shlex.quote(self.conninfo if self.conninfo is not None else str(self.path))

    def absolute(self) -> str:
        """For reports and the machine lock: the absolute path, or the connection string."""
        return self.conninfo if self.conninfo is not None else str(Path(str(self.path)).absolute())

    def report_dir(self) -> Path:
        """Where ``teiten run`` writes its report by default: beside an SQLite file, or
        ``teiten-report-DBNAME`` in the current directory for a PostgreSQL store."""
        if self.path is not None:
            return self.path.with_name(self.path.stem + "-report")
        dbname = str(pg_conninfo.conninfo_to_dict(self.conninfo or "").get("dbname") or "store")
        return Path(f"teiten-report-{re.sub(r'[^A-Za-z0-9_.-]', '_', dbname)}")
