"""``external`` servers: a connection string to a server teiten does not control.

teiten never changes an external server's settings and never restarts it. It loads data
only when the study says ``allow_init: true``, and then only into a database it creates
(marked with a comment); it drops only such databases. Without ``allow_init`` the
workload's tables must already be in the database the connection string names.
"""

from __future__ import annotations

import logging
import os

import psutil
import psycopg
from psycopg import conninfo as pg_conninfo

from teiten.host import client_account
from teiten.host.probe import parse_conninfo, probe
from teiten.installs import Install
from teiten.model.errors import ServerError
from teiten.servers.base import DataSet, Endpoint, Server, TrialEnd
from teiten.servers.external.here import other_clients, postmaster_here
from teiten.servers.external.spec import ExternalPlace
from teiten.servers.sql import (
    HOUSEKEEPING,
    create_database,
    database_comment,
    describe,
    drop_database,
    prewarm_all,
)
from teiten.spec import ServerSpec, secrets

log = logging.getLogger(__name__)
OURS = "created by teiten for benchmarking; teiten may drop it"


def connect_error(spec: ServerSpec, params: dict[str, str], exc: psycopg.Error) -> ServerError:
    """Why teiten could not connect to the external server ``spec`` with ``params``, in one
    line: libpq's reason (its lines joined), or how to give a password the study file gave
    and teiten did not store."""
    if "password" in str(exc) and "password" not in params \
            and secrets.was_redacted(ExternalPlace.on(spec).external or ""):
        return ServerError(
            f"external server {spec.name}: the study file gave its password, which teiten "
            "never stores; to resume, give it with PGPASSWORD, a passfile (~/.pgpass) or "
            "a service file")
    reason = "; ".join(line.strip() for line in str(exc).splitlines() if line.strip())
    return ServerError(f"cannot connect to external server {spec.name}: {reason}")


def ask(spec: ServerSpec, password: str | None) -> None:
    """Connect to the external server ``spec`` once, as its first connection of a run would,
    and hang up: before anything is stored, a server that does not answer (or refuses teiten)
    is one line (:func:`connect_error`), not a study of failed trials. ``password`` is the
    study file's, from memory."""
    conninfo = ExternalPlace.on(spec).external
    assert conninfo is not None
    params = secrets.connect_params(conninfo, password)
    options = " ".join(filter(None, (params.get("options"), HOUSEKEEPING)))
    given = params.get("connect_timeout", "")
    timeout = int(given) if given.isdigit() and int(given) > 0 else 15  # the string's, if it says
    try:
        with psycopg.connect(pg_conninfo.make_conninfo(**params), autocommit=True,
                             connect_timeout=timeout, options=options):
            pass
    except psycopg.Error as exc:
        raise connect_error(spec, params, exc) from None


class ExternalServer(Server):
    kind = "external"

    def __init__(self, spec: ServerSpec, client: Install, *, password: str | None = None):
        conninfo = ExternalPlace.on(spec).external
        assert conninfo is not None
        self.name = spec.name
        self.spec = spec
        self.allow_init = ExternalPlace.on(spec).allow_init
        self.client = client  # whose pgbench drives the load
        parse_conninfo(conninfo)  # a clean line for a string that cannot be read
        # In memory only: the study file's password (never stored; see teiten.spec.secrets).
        self.params = secrets.connect_params(conninfo, password)
        # What libpq resolved on the first connection (passfile, service, PG* variables),
        # for pgbench, which runs without them: parameters and the password it used.
        self.resolved: dict[str, str] | None = None
        self.password: str | None = None
        self.created: set[str] = set()
        self.dirty: set[str] = set()
        self.began: set[str | None] = set()  # databases a trial has begun in (before: as loaded)
        self.description: dict[str, object] | None = None
        # Its postmaster, when it runs on this machine (looked for once, at the first trial):
        # the noise guard counts its processes that serve the trial as the trial's.
        self.here: psutil.Process | None | bool = False  # False: not looked for yet

    def _conninfo(self, dbname: str | None = None) -> str:
        """teiten's own connections (in this process: never an argv)."""
        params = dict(self.params)
        if dbname is not None:
            params["dbname"] = dbname
        return pg_conninfo.make_conninfo(**params)

    def _client_conninfo(self, dbname: str | None = None) -> str:
        """pgbench's connection string: no password (that goes in its environment, see
        :meth:`_client_env`), nothing it would have to look up in a file."""
        if self.resolved is None:
            with self._connect(dbname):
                pass
        assert self.resolved is not None
        params = dict(self.resolved)
        if dbname is not None:
            params["dbname"] = dbname
        return pg_conninfo.make_conninfo(**params)

    def _client_env(self) -> dict[str, str]:
        return {"PGPASSWORD": self.password} if self.password else {}

    def _connect(self, dbname: str | None = None) -> psycopg.Connection:
        try:
            # teiten's own statements, after the user's options: without the study's timeouts
            options = " ".join(filter(None, (self.params.get("options"), HOUSEKEEPING)))
            conn = psycopg.connect(self._conninfo(dbname), autocommit=True, connect_timeout=15,
                                   options=options)
        except psycopg.Error as exc:
            raise connect_error(self.spec, self.params, exc) from None
        if self.resolved is None:
            self.password = conn.info.password or None
            self.resolved = {k: v for k, v in conn.info.get_parameters().items()
                             if k not in secrets.INDIRECT}
        return conn

    def _dbname(self, workload: DataSet) -> str | None:
        return workload.database if self.allow_init else None

    def _init(self, workload: DataSet) -> None:
        name = workload.database
        with self._connect() as conn:
            if database_comment(conn, name) is not None or name in self.created:
                drop_database(conn, name)
            create_database(conn, name, comment=OURS)
        self.created.add(name)
        with self._connect(name) as conn:
            try:
                conn.execute("CREATE EXTENSION IF NOT EXISTS pg_prewarm")
            except psycopg.Error as exc:
                log.warning("pg_prewarm unavailable on %s: %s", self.name, exc)
        if workload.sql_loaded:
            workload.load_sql(self._conninfo(name), jobs=os.cpu_count() or 1)
            return
        client_account.run([str(self.client.binary("pgbench")), *workload.init_args(),
                    self._client_conninfo(name)], timeout=7200, what="pgbench -i",
                   extra_env={**self._client_env(), "PGOPTIONS": HOUSEKEEPING})

    def prepare(self, workload: DataSet) -> None:
        if self.allow_init and workload.database in self.created:
            return  # loaded; begin_trial loads it again after a trial that changed it
        if self.allow_init:
            with self._connect() as conn:
                exists = conn.execute("SELECT 1 FROM pg_database WHERE datname=%s",
                                      (workload.database,)).fetchone()
                if exists and database_comment(conn, workload.database) != OURS:
                    raise ServerError(
                        f"external server {self.name} already has a database "
                        f"{workload.database} that teiten did not create; refusing to touch it")
            self._init(workload)
        else:
            table, how = workload.present_table()
            with self._connect() as conn:
                row = conn.execute("SELECT to_regclass(%s) IS NOT NULL", (table,)).fetchone()
                if not row or not row[0]:
                    raise ServerError(
                        f"external server {self.name}: database {self.params.get('dbname', '?')} "
                        f"has no table {table}; load the {workload.key} data yourself ({how}) or "
                        "set allow_init: true to let teiten create its own database")
        if self.description is None:
            with self._connect(self._dbname(workload)) as conn:
                self.description = describe(conn, None)
            try:  # S11: the round trip from this client bounds what one connection can do
                self.description["probe"] = probe(self._conninfo(self._dbname(workload)),
                                                  round_trips=200).to_json()
            except ServerError as exc:
                log.warning("%s: no round-trip probe: %s", self.name, exc)

    def begin_trial(self, workload: DataSet, trial_id: str, *, prewarm: bool) -> Endpoint:
        dbname, cycle = self._dbname(workload), self.cycle
        if dbname is not None and dbname in self.dirty and self.keep_data:  # trials: {restore: first}
            cycle.start.kept(self.keep_data)
        elif dbname is not None and dbname in self.dirty:
            with cycle.phase("restore"):
                self._init(workload)  # S11: load, vacuum, run, drop, for every trial
            self.dirty.discard(dbname)
            cycle.start.restored("loaded again", crashed=False)
        else:
            cycle.start.unrestored(dbname in self.began)
        cycle.start.server = "not restarted (external)"
        self.began.add(dbname)
        with self._connect(dbname) as conn:
            if self.here is False:
                self.here = postmaster_here(conn)
            if prewarm:
                try:
                    with cycle.phase("prewarm"):
                        prewarm_all(conn)
                except psycopg.Error as exc:
                    log.info("no prewarm on %s: %s", self.name, exc)
            try:
                with cycle.phase("checkpoint"):
                    conn.execute("CHECKPOINT")
            except psycopg.Error as exc:
                log.info("no CHECKPOINT on %s: %s", self.name, exc)
        if dbname is not None and workload.modifies_data:
            self.dirty.add(dbname)
        return Endpoint(host=self.params.get("host", ""), port=int(self.params.get("port", 5432)),
                        user=self.params.get("user", ""), dbname=dbname or "",
                        conninfo_string=self._client_conninfo(dbname),
                        password_env=self._client_env())

    def end_trial(self) -> TrialEnd:
        try:
            with self._connect() as conn:
                conn.execute("SELECT 1")
        except ServerError as exc:
            return TrialEnd(crashed=f"external server unreachable after the trial: {exc}")
        return TrialEnd(notes=["external server: its log is not available to teiten"])

    def server_pids(self) -> list[int]:
        """Where the server runs on this machine: its postmaster, whose processes the noise
        guard counts as the trial's (but :meth:`foreign_pids`)."""
        here = self._here()
        return [here.pid] if here is not None else []

    def foreign_pids(self) -> list[int]:
        """The backends of another program's clients of the server on this machine."""
        here = self._here()
        return other_clients(here) if here is not None else []

    def _here(self) -> psutil.Process | None:
        here = self.here
        return here if isinstance(here, psutil.Process) and here.is_running() else None

    def describe(self) -> dict[str, object]:
        return self.description or {}

    def close(self) -> None:
        if not self.created:
            return
        with self._connect() as conn:
            for name in sorted(self.created):
                if database_comment(conn, name) == OURS:
                    drop_database(conn, name)
        self.created.clear()
