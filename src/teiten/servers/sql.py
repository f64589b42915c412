"""SQL that every kind of server shares: reading back the server, prewarming, databases."""

from __future__ import annotations

import contextlib
import logging
from dataclasses import asdict, dataclass

import psycopg
from psycopg import sql

from teiten.host import procs, ticker
from teiten.installs import Install
from teiten.installs.releases import Release
from teiten.model.errors import ProcessError
from teiten.servers.base import Cycle

log = logging.getLogger(__name__)

# teiten's own statements on a server (creating its database, loading it, checkpoints,
# prewarming) run without the study's timeouts: a study's statement_timeout is for what it
# measures, and a CHECKPOINT or a CREATE DATABASE on a busy machine can outlast it. Passed as
# a connection's options, and as PGOPTIONS to pgbench -i.
_TIMEOUTS = ("statement_timeout", "lock_timeout", "idle_in_transaction_session_timeout")


def housekeeping(release: Release) -> str:
    """The options of teiten's own connections to a server of ``release``: a server refuses a
    connection that sets a setting it does not have (idle_in_transaction_session_timeout came
    in 9.6)."""
    return " ".join(f"-c {name}=0" for name in _TIMEOUTS if release.has_setting(name))


# For a server whose release is known only once connected (external): the newest's.
HOUSEKEEPING = housekeeping(Release(999999))

# Settings a server reports as non-default that say nothing about the configuration.
_NOISE = {"application_name", "client_encoding", "DateStyle", "TimeZone", "log_timezone",
          "default_text_search_config", "transaction_isolation", "transaction_read_only",
          "transaction_deferrable",
          # where this particular start put its port, socket and log: not configuration
          "port", "unix_socket_directories", "log_directory", "log_filename"}


# Settings that only report on the build, the cluster or this start (the version, initdb's
# choices, the files of this data directory): compared elsewhere, or not configuration.
_NOT_CONFIGURATION = {
    "server_version", "server_version_num", "server_encoding", "data_checksums", "block_size",
    "wal_block_size", "wal_segment_size", "segment_size", "max_function_args",
    "max_identifier_length", "max_index_keys", "integer_datetimes", "lc_collate", "lc_ctype",
    "data_directory", "config_file", "hba_file", "ident_file", "external_pid_file",
    "data_directory_mode", "shared_memory_size", "shared_memory_size_in_huge_pages",
    "in_hot_standby", "huge_pages_status", "debug_assertions", "ssl_library",
    "num_os_semaphores",
    # read back as 0 in a session over a Unix socket (the documented rule): they tell the
    # session's transport, not the server's configuration
    "tcp_keepalives_idle", "tcp_keepalives_interval", "tcp_keepalives_count", "tcp_user_timeout"}


@dataclass(frozen=True)
class Binaries:
    """Where a described server's PostgreSQL is and how it was built (pg_config's lines): its
    description keeps them, key for key, after what the server says of itself."""

    bindir: str
    origin: str
    pg_config: dict[str, str]


def describe(conn: psycopg.Connection, install: Install | Binaries | None) -> dict[str, object]:
    """Version, build and every non-default setting, read back from the server itself; and
    where its binaries are: ``install`` of this machine, or the binaries found elsewhere."""
    row = conn.execute("SELECT version(), current_setting('server_version'), "
                       "current_setting('server_version_num')::int, "
                       "current_setting('data_checksums')").fetchone()
    assert row is not None
    settings = {
        name: {"setting": setting, "unit": unit, "source": source}
        for name, setting, unit, source in conn.execute(
            "SELECT name, setting, unit, source FROM pg_settings "
            "WHERE source NOT IN ('default', 'override', 'client', 'session') ORDER BY name")
        if name not in _NOISE
    }
    defaults = {
        name: f"{setting} {unit}" if unit else setting
        for name, setting, unit in conn.execute(
            "SELECT name, setting, unit FROM pg_settings "
            "WHERE source IN ('default', 'override') ORDER BY name")
        if name not in _NOISE and name not in _NOT_CONFIGURATION
    }
    made = conn.execute("SELECT current_setting('server_encoding'), datcollate, datctype, "
                        "current_setting('wal_segment_size'), current_setting('block_size') "
                        "FROM pg_database WHERE datname = current_database()").fetchone()
    assert made is not None
    info: dict[str, object] = {
        "version_string": row[0], "version": row[1], "version_num": row[2],
        "data_checksums": row[3] == "on", "settings": settings,
        # what initdb decided, read back (the data checksums are above)
        "cluster": {"encoding": made[0], "collate": made[1], "ctype": made[2],
                    "wal_segment_size": made[3], "block_size": made[4]},
        # every other setting as this version has it by default: what differs between
        # versions is listed beside the study's declared differences
        "defaults": defaults,
    }
    if isinstance(install, Install):
        install = Binaries(str(install.bindir), install.origin, pg_config(install) or _pg_config_view(conn))
    if install is not None:
        info.update(asdict(install))
    return info


def _pg_config_view(conn: psycopg.Connection) -> dict[str, str]:
    """The same from the server's pg_config view (9.6 onwards, superusers), for a build that
    ships no pg_config program (Maven's zonky builds)."""
    try:
        rows = conn.execute("SELECT name, setting FROM pg_config WHERE name = ANY(%s)",
                            (list(_PG_CONFIG_KEYS),)).fetchall()
    except psycopg.Error as exc:
        log.info("no pg_config view: %s", exc)
        return {}
    return {str(name): str(setting) for name, setting in rows}


_PG_CONFIG_KEYS = ("VERSION", "CONFIGURE", "CC", "CFLAGS", "CPPFLAGS", "LDFLAGS")


def pg_config(install: Install) -> dict[str, str]:
    """The build description from pg_config (configure line, CFLAGS, compiler...)."""
    if not install.has("pg_config"):
        return {}
    try:
        done = procs.run([str(install.binary("pg_config"))], timeout=30)
    except ProcessError as exc:
        log.warning("pg_config failed: %s", exc)
        return {}
    out = {}
    for line in done.stdout.splitlines():
        key, sep, value = line.partition(" = ")
        if sep and key in _PG_CONFIG_KEYS:
            out[key] = value
    return out


_USER_RELATIONS = ("FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
                   "WHERE c.relpersistence <> 't' "
                   "AND n.nspname NOT IN ('pg_catalog', 'information_schema') "
                   "AND n.nspname NOT LIKE 'pg_toast%' ")


def prewarm_all(conn: psycopg.Connection) -> int:
    """Load every table and index of the database into shared_buffers: with pg_prewarm where
    the database has it, else by reading them (:func:`read_relations`).

    Returns the number of blocks read. METHODS S1 prewarms before every trial.
    """
    if has_prewarm(conn):
        row = conn.execute("SELECT coalesce(sum(pg_prewarm(c.oid)), 0) " + _USER_RELATIONS
                           + "AND c.relkind IN ('r', 'i', 'm')").fetchone()
        return int(row[0]) if row else 0
    names = [str(name) for (name,) in conn.execute(
        "SELECT c.oid::regclass::text " + _USER_RELATIONS + "AND c.relkind IN ('r', 'm') ORDER BY 1")]
    return read_relations(conn, names)


def has_prewarm(conn: psycopg.Connection) -> bool:
    """Whether pg_prewarm is made in the database ``conn`` is connected to (9.4 on, and a
    build with contrib: :func:`make_extensions` makes it where it can)."""
    return conn.execute("SELECT 1 FROM pg_extension WHERE extname = 'pg_prewarm'").fetchone() is not None


def read_relations(conn: psycopg.Connection, tables: list[str]) -> int:
    """Read each table of ``tables`` and its B-tree indexes into shared_buffers without
    pg_prewarm (9.3 has none). Returns the number of blocks read.

    A sequential scan of a table larger than a quarter of shared_buffers reads through a ring
    of 256 kB and leaves little behind, so each table is read block by block instead: a TID
    scan of the first item of every block reads the block through the buffer pool as any
    query does. An index is read by a full scan in its order (one per B-tree; a GIN, GiST or
    hash index is left to the first queries)."""
    blocks = 0
    for name in tables:
        row = conn.execute("SELECT %s::regclass::text, pg_relation_size(%s::regclass) / "
                           "current_setting('block_size')::int", (name, name)).fetchone()
        assert row is not None
        table = sql.SQL(row[0])  # the name as the server quotes it
        if row[1]:
            conn.execute(sql.SQL("SELECT count(*) FROM {} WHERE ctid = ANY (ARRAY(SELECT "
                                 "format('(%%s,1)', b)::tid FROM generate_series(0, %s) b))"
                                 ).format(table), (int(row[1]) - 1,))
            blocks += int(row[1])
        blocks += _read_indexes(conn, row[0])
    return blocks


def _read_indexes(conn: psycopg.Connection, table: str) -> int:
    """Read the B-tree indexes of ``table`` by full scans in their order (the planner told to
    take no other path). Returns their blocks."""
    indexes = conn.execute(
        "SELECT i.indexrelid::regclass::text, pg_get_indexdef(i.indexrelid, 1, true), "
        "pg_relation_size(i.indexrelid) / current_setting('block_size')::int "
        "FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_am a ON a.oid = c.relam "
        "WHERE i.indrelid = %s::regclass AND a.amname = 'btree' AND i.indexprs IS NULL "
        "AND i.indpred IS NULL", (table,)).fetchall()
    blocks = 0
    for _index, first_column, size in indexes:
        with conn.transaction():
            for name in ("enable_seqscan", "enable_bitmapscan", "enable_sort"):
                conn.execute("SELECT set_config(%s, 'off', true)", (name,))
            conn.execute(sql.SQL("SELECT count(*) FROM (SELECT {col} FROM {table} ORDER BY {col}) s").format(
                col=sql.Identifier(first_column.strip('"')), table=sql.SQL(table)))  # server-quoted
        blocks += int(size)
    return blocks


def settle(conn: psycopg.Connection, cycle: Cycle, *, prewarm: bool) -> None:
    """Make a node's data ready for the measured window, over ``conn`` to its database: its
    relations read into shared buffers (``prewarm``: the study's choice), then a checkpoint,
    which moves the next timed one (checkpoint_timeout) out of the window (on a standby: a
    restartpoint). Each is a phase of the trial's ``cycle``."""
    if prewarm:
        with cycle.phase("prewarm"):
            prewarm_all(conn)
    with cycle.phase("checkpoint"):
        conn.execute("CHECKPOINT")


def create_database(conn: psycopg.Connection, name: str, *, comment: str | None = None) -> None:
    conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    if comment:
        conn.execute(sql.SQL("COMMENT ON DATABASE {} IS {}").format(
            sql.Identifier(name), sql.Literal(comment)))


def make_extensions(conn: psycopg.Connection, preloaded: str) -> None:
    """In a workload's database: pg_prewarm, which every trial calls, where the server has it
    (9.4 on, with contrib; else :func:`prewarm_all` reads the relations), and the monitoring
    extensions the settings preload (``preloaded``: shared_preload_libraries), made usable where
    the database monitor looks for them."""
    if Release.of_num(conn.info.server_version).pg_prewarm and conn.execute(
            "SELECT 1 FROM pg_available_extensions WHERE name = 'pg_prewarm'").fetchone():
        conn.execute("CREATE EXTENSION IF NOT EXISTS pg_prewarm")
    else:
        log.info("no pg_prewarm on PostgreSQL %s: trials read the relations instead",
                 Release.of_num(conn.info.server_version))
    for ext in ("pg_wait_sampling", "pg_stat_statements"):
        if ext in preloaded:
            conn.execute(sql.SQL("CREATE EXTENSION IF NOT EXISTS {}").format(sql.Identifier(ext)))


_SO_FAR = ("SELECT count(*) FILTER (WHERE c.relkind IN ('r', 'p')), pg_database_size(current_database()) "
           "FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
           "WHERE n.nspname NOT IN ('pg_catalog', 'information_schema', 'pg_toast')")


def loading_said(conninfo: str) -> contextlib.AbstractContextManager[None]:
    """While the block loads the database of ``conninfo`` by SQL, what it holds so far (its
    tables and their size) is told to the ticker every second (teiten.host.ticker); where
    nothing is said (no ticking command) it does nothing."""
    return ticker.polling(lambda: _so_far(conninfo)) if ticker.active() else contextlib.nullcontext()


def _so_far(conninfo: str) -> str | None:
    try:
        with psycopg.connect(conninfo, autocommit=True, connect_timeout=5) as conn:
            row = conn.execute(_SO_FAR).fetchone()
    except psycopg.Error:  # saying how far it is never fails the load
        return None
    return f"{row[0]} tables, {row[1] / 1e6:.0f} MB so far" if row else None


def drop_database(conn: psycopg.Connection, name: str) -> None:
    conn.execute(sql.SQL("DROP DATABASE IF EXISTS {}").format(sql.Identifier(name)))


def database_comment(conn: psycopg.Connection, name: str) -> str | None:
    row = conn.execute("SELECT shobj_description(oid, 'pg_database') FROM pg_database "
                       "WHERE datname = %s", (name,)).fetchone()
    return row[0] if row else None
