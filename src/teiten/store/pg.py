"""A PostgreSQL store: the same tables, schema versions and transactions as the SQLite file,
in the schema ``teiten`` of a database that a team shares (several machines write their own
studies into it at once).

:class:`PgConnection` lets :class:`teiten.store.db.Store` speak one SQL to both: ``?``
parameters, rows readable by position and by column name (as ``sqlite3.Row``), ``executemany``
on the connection. Floats travel at full precision (``extra_float_digits = 3``), so a figure
read back is the one written. PostgreSQL's text cannot hold a NUL character: one in a captured
log becomes U+FFFD. The password comes from libpq (``PGPASSWORD``, a passfile, a service file),
never from the address (see :mod:`teiten.store.address`).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Any, Protocol

import psycopg
from psycopg import conninfo as pg_conninfo
from psycopg.rows import RowMaker

from teiten.model.errors import StoreError, StoreFull, StoreUnreachable, UnusableStore, UserError
from teiten.store.address import StoreAddress

SCHEMA = "teiten"
# pg_advisory_xact_lock's key while a store's schema is created or migrated ("teiten" in ASCII):
# two machines that open a new store at once create it once.
MIGRATION_LOCK = 0x746569746560


class StoreRow(Protocol):
    """A row of either dialect's (``sqlite3.Row``, :class:`Row`): read by position or by column
    name, unpacked, or made a dict (``keys()``). Its values are the columns' as the driver gives
    them, each read as the type its column holds (an SQLite store's are checked by
    teiten.store.typed)."""

    def __getitem__(self, key: int | str, /) -> Any: ...

    def __iter__(self) -> Iterator[Any]: ...

    def __len__(self) -> int: ...

    def keys(self) -> list[str]: ...


class Cursor(Protocol):
    @property
    def rowcount(self) -> int: ...

    def fetchone(self) -> StoreRow | None: ...

    def fetchall(self) -> Sequence[StoreRow]: ...

    def __iter__(self) -> Iterator[StoreRow]: ...


# A statement's parameters: the store writes ``?`` ones, by position.
Params = Sequence[object]


class Connection(Protocol):
    """What the store needs of a connection: sqlite3's, or :class:`PgConnection`."""

    def execute(self, sql: str, parameters: Params = (), /) -> Cursor: ...

    def executemany(self, sql: str, parameters: Iterable[Params], /) -> Cursor: ...

    def close(self) -> None: ...


def one(cursor: Cursor) -> StoreRow:
    """The one row of a statement that always gives one (an aggregate, RETURNING)."""
    row = cursor.fetchone()
    if row is None:
        raise StoreError("the store gave no row where one was certain")
    return row


class Row:
    """A PostgreSQL row read by position or by column name, with ``keys()``, as ``sqlite3.Row``."""

    __slots__ = ("_index", "_values")

    def __init__(self, index: dict[str, int], values: Sequence[object]):
        self._index = index
        self._values = values

    def __getitem__(self, key: int | str) -> object:
        return self._values[self._index[key] if isinstance(key, str) else key]

    def __iter__(self) -> Iterator[object]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def keys(self) -> list[str]:
        return list(self._index)


def _rows(cursor: psycopg.Cursor[Row]) -> RowMaker[Row]:
    index = {d.name: i for i, d in enumerate(cursor.description or ())}
    return lambda values: Row(index, values)


def _first_line(exc: BaseException) -> str:
    """An error's first line (its name when it says nothing), for a one-line message."""
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def _sql(statement: str) -> str:
    return statement.replace("%", "%%").replace("?", "%s")


def _param(value: object) -> object:
    return value.replace("\x00", "\ufffd") if isinstance(value, str) else value


def _params(values: Params) -> tuple[object, ...]:
    return tuple(_param(v) for v in values)


class PgConnection:
    """A psycopg connection in autocommit mode (the store says BEGIN and COMMIT itself)."""

    dialect = "postgresql"

    def __init__(self, conn: psycopg.Connection[Row], location: str):
        self.conn = conn
        self.location = location

    def execute(self, sql: str, parameters: Params = (), /) -> Cursor:
        try:
            return self.conn.execute(_sql(sql), _params(parameters))
        except psycopg.Error as exc:
            raise self._failed(exc) from None

    def executemany(self, sql: str, parameters: Iterable[Params], /) -> Cursor:
        cur = self.conn.cursor()
        try:
            cur.executemany(_sql(sql), [_params(p) for p in parameters])
        except psycopg.Error as exc:
            raise self._failed(exc) from None
        return cur

    def _failed(self, exc: psycopg.Error) -> Exception:
        """One line for every error of the store's database: a lost connection or a full
        disk (resume finishes the study), a missing privilege (bad input), anything else."""
        if isinstance(exc, psycopg.OperationalError):
            return self._lost(exc)
        line = _first_line(exc)
        if isinstance(exc, psycopg.errors.UntranslatableCharacter):
            encoding = self.conn.info.parameter_status("server_encoding")
            return UnusableStore(f"the database of the store {self.location} has the encoding "
                                 f"{encoding}, which cannot hold a text of this study ({line}); "
                                 "give a database made with ENCODING 'UTF8'")
        if isinstance(exc, psycopg.errors.InsufficientPrivilege):
            return UnusableStore(f"the store {self.location} refused: {line}; give a role that "
                                 f"may create the schema {SCHEMA} and its tables there (GRANT "
                                 "CREATE ON DATABASE ...), or another database")
        return StoreError(f"the store {self.location} refused a statement ({line}); every "
                          "finished trial is kept in it")

    def close(self) -> None:
        self.conn.close()

    def _lost(self, exc: psycopg.OperationalError) -> Exception:
        line = _first_line(exc)
        gone = self.conn.broken or self.conn.closed or (exc.sqlstate or "08").startswith("08")
        if not gone and not isinstance(exc, psycopg.errors.DiskFull):
            return StoreError(f"the store {self.location} refused a statement ({line}); every "
                              "finished trial is kept in it")
        if isinstance(exc, psycopg.errors.DiskFull):
            return StoreFull(f"the disk of the store {self.location} is full ({line}); every "
                             "finished trial is kept in it: free some space, then 'teiten resume "
                             f"--store {self.location}' finishes the study")
        return StoreUnreachable(
            f"the store {self.location} stopped answering ({line}); every finished trial is kept "
            f"in it: once it answers again, 'teiten resume --store {self.location}' finishes the "
            "study")


def connect(address: StoreAddress) -> PgConnection:
    """Connect to a PostgreSQL store; a clean line when it cannot be reached."""
    assert address.conninfo is not None
    params = pg_conninfo.conninfo_to_dict(address.conninfo)
    params.setdefault("application_name", "teiten")
    params.setdefault("connect_timeout", "10")
    # The store writes and reads UTF-8 whatever the database's encoding: on an SQL_ASCII one
    # (initdb --no-locale without a UTF-8 locale) psycopg would otherwise hand text back as bytes.
    params["client_encoding"] = "UTF8"
    try:
        conn = psycopg.connect(pg_conninfo.make_conninfo(**params), autocommit=True,  # type: ignore[arg-type]
                               row_factory=_rows)
    except psycopg.Error as exc:
        line = _first_line(exc)
        raise UserError(f"cannot reach the store {address} ({line}); check its address, and give "
                        "a password with PGPASSWORD, a passfile (~/.pgpass) or a service "
                        "file") from None
    conn.execute("SET extra_float_digits = 3")
    conn.execute(f"SET search_path TO {SCHEMA}")
    return PgConnection(conn, str(address))


def version(conn: Connection, location: str) -> int:
    """The schema version of the store in the database (0: there is none yet)."""
    # pg_tables lists the schema's tables to any role, but without USAGE on the schema the
    # search path skips it, and reading them says 'relation "meta" does not exist'.
    usage = conn.execute("SELECT has_schema_privilege(oid, 'USAGE'), quote_ident(current_user) "
                         "FROM pg_namespace WHERE nspname = ?", (SCHEMA,)).fetchone()
    if usage is not None and not usage[0]:
        raise UnusableStore(f"the role {usage[1]} may not use the schema {SCHEMA} of the store "
                            f"{location} (it lacks the USAGE privilege on it); grant it with "
                            f"GRANT USAGE ON SCHEMA {SCHEMA} TO {usage[1]}, or give another role")
    tables = {r[0] for r in conn.execute(
        "SELECT tablename FROM pg_tables WHERE schemaname = ?", (SCHEMA,))}
    if "meta" not in tables:
        if tables:
            raise UnusableStore(f"the schema {SCHEMA} of {location} holds tables that are not a "
                                "teiten store's; give another database")
        return 0
    row = conn.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
    return int(row[0]) if row else 0


STUDY_LOCK = 0x7465  # pg_try_advisory_lock(STUDY_LOCK, study id): a study one teiten works on


def claim(conn: Connection, study_id: int) -> bool:
    """Hold the study for this session (released when it ends, even by a kill); False when
    another session holds it."""
    return bool(one(conn.execute("SELECT pg_try_advisory_lock(CAST(? AS integer), CAST(? AS integer))",
                                 (STUDY_LOCK, study_id)))[0])


def release(conn: Connection, study_id: int) -> None:
    conn.execute("SELECT pg_advisory_unlock(CAST(? AS integer), CAST(? AS integer))",
                 (STUDY_LOCK, study_id))


def lock_migrations(conn: Connection) -> None:
    """Inside a step's transaction: wait for any other process that migrates the store."""
    conn.execute("SELECT pg_advisory_xact_lock(?)", (MIGRATION_LOCK,))
