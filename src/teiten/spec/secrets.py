"""Passwords in a study's connection strings: kept in memory, never stored (issue 20).

A study file may give an external server's password in its connection string
(``password=...`` or ``postgresql://user:secret@host/db``). teiten stores the study file and
its parsed form with every study, shows them and writes them into reports, so the password is
taken out when the file is loaded: the connection string is stored with :data:`PLACEHOLDER`
in its place, and the password itself travels in memory only (:class:`Secrets`) to the server
that connects with it, and from there to pgbench through its environment, never its argv.

A study resumed from its store has no password: libpq then finds one the usual ways
(``PGPASSWORD``, a passfile such as ``~/.pgpass``, a service file).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import psycopg
from psycopg import conninfo as pg_conninfo

PLACEHOLDER = "(not stored)"
# Parameters that name where libpq finds a password or more parameters: not for pgbench, which
# is given what they resolved to.
INDIRECT = ("password", "passfile", "service")


@dataclass(frozen=True)
class Secrets:
    """The passwords a study file gave, by the stored (redacted) connection string."""

    passwords: Mapping[str, str] = field(default_factory=dict)

    def password(self, stored: str) -> str | None:
        return self.passwords.get(stored)

    def __repr__(self) -> str:  # never in a traceback or a log
        return f"Secrets({len(self.passwords)} passwords)"


def redacted(conninfo: str) -> tuple[str, str | None]:
    """``conninfo`` as it may be stored, and the password it held (None: it held none, or
    only the placeholder). A string without a password is returned as it is; one with a
    password comes back in keyword form. Raises ``psycopg.ProgrammingError`` when it cannot be
    read."""
    params = pg_conninfo.conninfo_to_dict(conninfo)
    password = params.get("password")
    if password is None or str(password) == PLACEHOLDER:
        return conninfo, None
    return pg_conninfo.make_conninfo("", **{**params, "password": PLACEHOLDER}), str(password)


def connect_params(stored: str, password: str | None) -> dict[str, str]:
    """The parameters to connect with: the stored string's, without its placeholder, with
    ``password`` (from memory) when there is one."""
    params = {k: str(v) for k, v in pg_conninfo.conninfo_to_dict(stored).items()
              if (k, str(v)) != ("password", PLACEHOLDER)}
    return params if password is None else {**params, "password": password}


def was_redacted(stored: str) -> bool:
    """The study file gave this string's password, which was not stored."""
    try:
        return pg_conninfo.conninfo_to_dict(stored).get("password") == PLACEHOLDER
    except psycopg.ProgrammingError:
        return False
