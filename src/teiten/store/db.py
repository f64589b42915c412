"""The results store: SQLite in WAL mode (or a shared PostgreSQL database, teiten.store.pg),
one transaction per finished trial.

Finished results are never lost: each trial's result, series, statements and logs are
committed together, and a store is only ever appended to or updated in place.

It writes and reads the model of teiten.model.results (``finish_trial(study_id, TrialResult)``,
``study_results(study_id) -> StudyResults``) and knows nothing of pgbench or workloads."""

from __future__ import annotations

import contextlib
import json
import sqlite3
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, TypeVar

from teiten.model.details import DetailsKind
from teiten.model.errors import StoreError, StoreVersionError, UnusableStore, UserError
from teiten.model.results import (
    PlannedTrial,
    ProgressPoint,
    ServerRecord,
    StepRecord,
    StudyResults,
    TrialRecord,
    TrialResult,
)
from teiten.model.shown import Wait
from teiten.model.studyrecord import changed
from teiten.model.studyrow import StudyRow
from teiten.store import access, pg, typed
from teiten.store.address import StoreAddress
from teiten.store.lite import SqliteConnection
from teiten.store.schema import MIGRATIONS, SCHEMA_VERSION
from teiten.store.trial_rows import insert_planned as _insert_planned
from teiten.store.trial_rows import record as _record

T = TypeVar("T")


class Store:
    """A results store at ``address``: an SQLite file or a PostgreSQL database. Use
    :meth:`open`."""

    def __init__(self, address: StoreAddress, conn: pg.Connection):
        self.address = address
        self.path = address.path  # None for a PostgreSQL store
        self.conn = conn
        self.postgres = address.is_postgres
        self._checked: set[tuple[str, int | None]] = set()  # (table, study) read and typed

    # -- opening ---------------------------------------------------------------------------

    @classmethod
    def open(cls, where: Path | str | StoreAddress, *, create: bool = False) -> Store:
        address = StoreAddress.parse(where)
        if address.is_postgres:
            return cls._open_postgres(address, create=create)
        assert address.path is not None
        p = address.path
        access.check_path(p, create=create)  # the cause, where this user cannot open or make it
        if not create and not p.is_file():
            raise UserError(f"no store at {p}; give the --store that 'teiten run' wrote")
        if create:
            p.parent.mkdir(parents=True, exist_ok=True)
        try:
            conn = sqlite3.connect(p, timeout=30, isolation_level=None, factory=SqliteConnection)
            conn.store_path = p
            conn.row_factory = sqlite3.Row
            # Known to be ours (or empty) before anything is written: another program's SQLite
            # file is left exactly as it was, journal mode included.
            try:
                cls(address, conn)._version()
                conn.execute("PRAGMA journal_mode=WAL")
                conn.execute("PRAGMA synchronous=FULL")
                conn.execute("PRAGMA foreign_keys=ON")
            except BaseException:
                conn.close()
                raise
        except sqlite3.DatabaseError as exc:
            raise access.unusable(p, exc) from exc
        store = cls(address, conn)
        store._migrate()
        return store

    @classmethod
    def check(cls, where: Path | str | StoreAddress, texts: tuple[str, ...] = ()) -> None:
        """Refuse, before anything is made or downloaded, a store that a run could not write
        into: reachable, ours or empty, of a schema this teiten knows, of an encoding that holds
        ``texts`` (the study's). Creates nothing."""
        address = StoreAddress.parse(where)
        if address.is_postgres:
            with contextlib.closing(cls(address, pg.connect(address))) as store:
                store._refuse_newer(store._version())
                store.conn.executemany("SELECT ?::text", [(t,) for t in texts])  # in its encoding
        elif address.path is not None:
            access.check_path(address.path, create=True)
            if address.path.exists():
                cls.open(address).close()

    @classmethod
    def _open_postgres(cls, address: StoreAddress, *, create: bool) -> Store:
        store = cls(address, pg.connect(address))
        try:
            if not create and store._version() == 0:
                raise UserError(f"no teiten store in {address} (its schema {pg.SCHEMA} has none); "
                                "give the --store that 'teiten run' wrote")
            store._migrate()
        except BaseException:
            store.close()
            raise
        return store

    def close(self) -> None:
        self.conn.close()

    def __str__(self) -> str:
        return str(self.address)

    def _version(self) -> int:
        if self.postgres:
            return pg.version(self.conn, str(self.address))
        has_meta = self.conn.execute(
            "SELECT 1 FROM sqlite_master WHERE type='table' AND name='meta'").fetchone()
        if not has_meta:
            others = pg.one(self.conn.execute("SELECT count(*) FROM sqlite_master"))[0]
            if others:
                raise UnusableStore(f"{self.path} is an SQLite file but not a teiten store; "
                                    "give another path")
            return 0
        row = self.conn.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
        return int(row[0]) if row else 0

    def _migrate(self) -> None:
        try:
            version = self._version()
        except sqlite3.DatabaseError as exc:
            raise UnusableStore(f"{self.path} is not a teiten store: {exc}") from exc
        self._refuse_newer(version)
        for step in range(version + 1, SCHEMA_VERSION + 1):
            with self.transaction():
                if self.postgres:
                    pg.lock_migrations(self.conn)
                if self._version() >= step:  # another process took this step meanwhile
                    continue
                MIGRATIONS[step](self.conn)
                self.conn.execute("INSERT INTO meta VALUES ('schema_version', ?) ON CONFLICT (key)"
                                  " DO UPDATE SET value = excluded.value", (str(step),))

    @contextlib.contextmanager
    def snapshot(self) -> Iterator[None]:
        """Reads that see one moment of the store, while others write (a copy of a study)."""
        self.conn.execute("BEGIN ISOLATION LEVEL REPEATABLE READ" if self.postgres else "BEGIN")
        try:
            yield
        finally:
            self.conn.execute("COMMIT")

    def _read(self, tables: str, study_id: int | None, sql: str, params: pg.Params = ()) -> pg.Cursor:
        """``sql`` run, once the rows of each of ``tables`` (of the study, else all) are known
        to hold the types teiten writes there (teiten.store.typed), checked once each."""
        for table in tables.split():
            if not self.postgres and not {(table, None), (table, study_id)} & self._checked:
                typed.check(self.conn, self.path, table, study_id)
                self._checked.add((table, study_id))
        return self.conn.execute(sql, params)

    def _refuse_newer(self, version: int) -> None:
        if version > SCHEMA_VERSION:
            raise StoreVersionError(
                f"{self} has store schema {version}, newer than this teiten's "
                f"{SCHEMA_VERSION}; upgrade teiten to read it")

    @contextlib.contextmanager
    def transaction(self) -> Iterator[pg.Connection]:
        try:
            self.conn.execute("BEGIN" if self.postgres else "BEGIN IMMEDIATE")
            yield self.conn
            self.conn.execute("COMMIT")
        except BaseException:
            with contextlib.suppress(sqlite3.Error, pg.psycopg.Error, StoreError):
                self.conn.execute("ROLLBACK")
            raise

    # -- studies -------------------------------------------------------------------------------

    def create_study(self, *, name: str, source: str, spec_yaml: str, spec_json: str, seed: int,
                     created_at: str, fingerprint: Mapping[str, object], teiten_version: str,
                     servers: Sequence[tuple[str, str, str]], trials: Sequence[PlannedTrial],
                     ) -> int:
        """Save a study, its servers and its whole plan in one transaction."""
        with self.transaction() as c:
            study_id = int(pg.one(c.execute(
                "INSERT INTO studies (name, source, spec_yaml, spec_json, seed, state, created_at,"
                " fingerprint, teiten_version) VALUES (?, ?, ?, ?, ?, 'running', ?, ?, ?) "
                "RETURNING id", (name, source, spec_yaml, spec_json, seed, created_at,
                                 json.dumps(fingerprint), teiten_version)))[0])
            c.executemany(
                "INSERT INTO servers (study_id, name, position, kind, spec_json) VALUES (?,?,?,?,?)",
                [(study_id, n, i, kind, spec) for i, (n, kind, spec) in enumerate(servers)])
            _insert_planned(c, study_id, trials)
        return study_id

    def study(self, study_id: int) -> StudyRow:
        row = self._read("studies", study_id, "SELECT * FROM studies WHERE id=?",
                         (study_id,)).fetchone()
        if row is None:
            raise UserError(f"{self} has no study {study_id}; 'teiten studies --store "
                            f"{self}' lists them")
        return StudyRow.of(dict(row))

    @contextlib.contextmanager
    def claimed(self, study_id: int) -> Iterator[None]:
        """Work on one study alone: in a PostgreSQL store that several machines share, run,
        resume and clean hold the study (a session advisory lock, gone with the session);
        one another teiten holds is refused. In an SQLite file the machine lock does it."""
        if not self.postgres:
            yield
            return
        if not pg.claim(self.conn, study_id):
            raise UserError(f"study {study_id} of {self} is being run, resumed or cleaned by "
                            "another teiten (on this machine or another); wait until it ends")
        try:
            yield
        finally:
            with contextlib.suppress(StoreError):
                pg.release(self.conn, study_id)

    def update_spec(self, study_id: int, changes: Mapping[str, object]) -> None:
        """Set top-level keys of a study's stored spec_json, or add to a list under one
        (studyrecord.Append), in one transaction: a key added needs no schema migration."""
        with self.transaction() as c:
            row = pg.one(c.execute("SELECT spec_json FROM studies WHERE id=?", (study_id,)))
            spec = json.loads(row[0])
            spec.update({k: changed(spec.get(k), v) for k, v in changes.items()})
            c.execute("UPDATE studies SET spec_json=? WHERE id=?", (json.dumps(spec), study_id))

    def studies(self) -> list[StudyRow]:
        return [StudyRow.of(dict(r)) for r in self._read("studies", None, "SELECT * FROM studies ORDER BY id")]

    def set_study_state(self, study_id: int, state: str, finished_at: str | None = None) -> None:
        with self.transaction() as c:
            c.execute("UPDATE studies SET state=?, finished_at=? WHERE id=?",
                      (state, finished_at, study_id))

    def servers(self, study_id: int) -> list[ServerRecord]:
        """A study's servers, typed, the baseline first."""
        rows = self._read("servers", study_id, "SELECT name, position, kind, spec_json, description FROM "
                          "servers WHERE study_id=? ORDER BY position", (study_id,))
        return [ServerRecord(name, position, kind, json.loads(spec), json.loads(about) if about else None)
                for name, position, kind, spec, about in rows]

    def set_server_description(self, study_id: int, name: str, description: Mapping[str, object]) -> None:
        with self.transaction() as c:
            c.execute("UPDATE servers SET description=? WHERE study_id=? AND name=?",
                      (json.dumps(description), study_id, name))

    def add_workdir(self, study_id: int, path: Path) -> None:
        with self.transaction() as c:
            c.execute("INSERT INTO workdirs VALUES (?, ?) ON CONFLICT DO NOTHING", (study_id, str(path)))

    def workdirs(self, study_id: int) -> list[Path]:
        return [Path(r[0]) for r in self.conn.execute(
            "SELECT path FROM workdirs WHERE study_id=?", (study_id,))]

    def forget_workdir(self, study_id: int, path: Path) -> None:
        with self.transaction() as c:
            c.execute("DELETE FROM workdirs WHERE study_id=? AND path=?", (study_id, str(path)))

    # -- trials ---------------------------------------------------------------------------------

    def trials(self, study_id: int | None = None) -> list[pg.StoreRow]:
        sql = ("SELECT t.*, s.name AS study FROM trials t JOIN studies s ON s.id = t.study_id")
        if study_id is None:
            return list(self._read("studies trials", None, sql + " ORDER BY t.study_id, t.order_index"))
        return list(self._read("studies trials", study_id, sql + " WHERE t.study_id=? ORDER BY "
                               "t.order_index", (study_id,)))

    def records(self, study_id: int | None = None) -> list[TrialRecord]:
        """Every trial of a study (or of every study), typed, in the order of the plan."""
        return [_record(r) for r in self.trials(study_id)]

    def study_results(self, study_id: int) -> StudyResults:
        """One study in one piece: its spec, fingerprint, servers and trials."""
        row = self.study(study_id)
        servers = tuple(self.servers(study_id))
        return StudyResults(
            study_id=study_id, name=row.name, source=row.source, spec_yaml=row.spec_yaml,
            spec=row.spec, seed=row.seed, state=row.state, created_at=row.created_at,
            finished_at=row.finished_at, fingerprint=row.machine, teiten_version=row.teiten_version,
            servers=servers, trials=tuple(self.records(study_id)))

    def progress(self, study_id: int, trial_id: str) -> list[pg.StoreRow]:
        return list(self._read("progress", study_id,
            "SELECT * FROM progress WHERE study_id=? AND trial_id=? ORDER BY t",
            (study_id, trial_id)))

    def statements(self, study_id: int, trial_id: str) -> list[pg.StoreRow]:
        return list(self._read("statements", study_id,
            "SELECT * FROM statements WHERE study_id=? AND trial_id=? "
            "ORDER BY script_index, line_no", (study_id, trial_id)))

    def metrics(self, study_id: int, trial_id: str) -> dict[str, float]:
        return {r[0]: r[1] for r in self._read("metrics", study_id,
            "SELECT name, value FROM metrics WHERE study_id=? AND trial_id=?", (study_id, trial_id))}

    def waits(self, study_id: int, trial_id: str) -> list[pg.StoreRow]:
        return list(self._read("waits", study_id,
            "SELECT * FROM waits WHERE study_id=? AND trial_id=? ORDER BY samples DESC",
            (study_id, trial_id)))

    def top_waits(self, study_id: int, trial_id: str, n: int = 5) -> list[Wait]:
        """The ``n`` largest wait events of a trial (CPU included), with their shares."""
        rows = list(self._read("waits", study_id,
            "SELECT wait_event_type, wait_event, CAST(sum(samples) AS BIGINT) AS n FROM waits "
            "WHERE study_id=? AND trial_id=? GROUP BY 1, 2 ORDER BY n DESC, 1, 2", (study_id, trial_id)))
        total = sum(samples for _, _, samples in rows)
        return [Wait(etype, event, samples, round(samples / total, 4))
                for etype, event, samples in rows[:n]] if total else []

    def steps(self, study_id: int, trial_id: str | None = None) -> list[tuple[str, StepRecord]]:
        """The timed steps of one trial, or of every trial of a study, each with its trial id,
        in the order they ran."""
        where, args = ("AND trial_id=?", (study_id, trial_id)) if trial_id else ("", (study_id,))
        return [(r[0], StepRecord.from_json({"name": r[1], "param": r[2], "seconds": r[3], "rows": r[4],
                 **json.loads(r[5])})) for r in self._read("steps", study_id,
            f"SELECT trial_id, name, param, seconds, rows, body FROM steps WHERE study_id=? {where} "  # noqa: S608
            "ORDER BY trial_id, step_index", args)]

    def steps_by_trial(self, study_id: int) -> dict[str, tuple[StepRecord, ...]]:
        """The timed steps of every trial of a study that has some, by trial id, in the order
        they ran."""
        out: dict[str, list[StepRecord]] = {}
        for trial_id, step in self.steps(study_id):
            out.setdefault(trial_id, []).append(step)
        return {k: tuple(v) for k, v in out.items()}

    def series(self, study_id: int, trial_id: str, source: str = "system") -> list[pg.StoreRow]:
        return list(self._read("series", study_id,
            "SELECT t, name, value FROM series WHERE study_id=? AND trial_id=? AND source=? "
            "ORDER BY t, name", (study_id, trial_id, source)))

    def details(self, study_id: int, trial_id: str) -> dict[str, object]:
        return {r[0]: json.loads(r[1]) for r in self._read("details", study_id,
            "SELECT kind, body FROM details WHERE study_id=? AND trial_id=?", (study_id, trial_id))}

    def details_of_kind(self, study_id: int, kind: str) -> dict[str, Any]:
        """One kind of details (profile, lwlock, ...) of every trial of a study that has it."""
        return {r[0]: json.loads(r[1]) for r in self._read("details", study_id,
            "SELECT trial_id, body FROM details WHERE study_id=? AND kind=?", (study_id, kind))}

    def details_of(self, study_id: int, kind: DetailsKind[T]) -> dict[str, T]:
        """One kind of details of every trial of a study that has it, read as its records."""
        return {tid: kind.read(body) for tid, body in self.details_of_kind(study_id, kind.name).items()}

    def metrics_by_trial(self, study_id: int) -> dict[str, dict[str, float]]:
        """The monitors' figures of every trial of a study that has some, by trial id."""
        out: dict[str, dict[str, float]] = {}
        for trial_id, name, value in self._read("metrics", study_id,
                "SELECT trial_id, name, value FROM metrics WHERE study_id=? ORDER BY trial_id, name",
                (study_id,)):
            out.setdefault(trial_id, {})[name] = value
        return out

    def waits_by_trial(self, study_id: int) -> dict[str, list[tuple[str, str, int]]]:
        """The sampled wait events of every trial of a study that has some, by trial id: (type,
        event, samples), one per backend type, largest first (as :meth:`waits`)."""
        out: dict[str, list[tuple[str, str, int]]] = {}
        for trial_id, etype, event, samples in self._read("waits", study_id,
                "SELECT trial_id, wait_event_type, wait_event, samples FROM waits WHERE study_id=? "
                "ORDER BY trial_id, samples DESC", (study_id,)):
            out.setdefault(trial_id, []).append((etype, event, samples))
        return out

    def system_by_trial(self, study_id: int) -> dict[str, list[tuple[float, str, float]]]:
        """The system monitor's CPU idle and device %util samples of every trial of a study
        that has some, by trial id: (seconds since the window opened, name, value)."""
        out: dict[str, list[tuple[float, str, float]]] = {}
        for trial_id, t, name, value in self._read("series", study_id,
                "SELECT trial_id, t, name, value FROM series WHERE study_id=? AND source='system' "
                "AND (name='cpu.idle' OR name LIKE 'disk.%.util') ORDER BY trial_id, t", (study_id,)):
            out.setdefault(trial_id, []).append((t, name, value))
        return out

    def progress_by_trial(self, study_id: int) -> dict[str, tuple[ProgressPoint, ...]]:
        """The per-second progress of every trial of a study that has some, by trial id."""
        out: dict[str, list[ProgressPoint]] = {}
        for trial_id, t, tps, latency, stddev, failed in self._read("progress", study_id,
                "SELECT trial_id, t, tps, latency_ms, latency_stddev_ms, failed FROM progress "
                "WHERE study_id=? ORDER BY trial_id, t", (study_id,)):
            out.setdefault(trial_id, []).append(ProgressPoint(t, tps, latency, stddev, failed))
        return {k: tuple(v) for k, v in out.items()}

    def mark_running(self, study_id: int, trial_id: str, started_at: str) -> None:
        with self.transaction() as c:
            c.execute("UPDATE trials SET status='running', started_at=?, attempts=attempts+1 "
                      "WHERE study_id=? AND trial_id=?", (started_at, study_id, trial_id))

    def reset_interrupted(self, study_id: int, *, retry_failed: bool = False) -> int:
        """Trials left 'running' by a killed run (and failed ones, if asked) go back to
        'planned'. Returns how many."""
        states = ("running", "failed", "skipped") if retry_failed else ("running",)
        with self.transaction() as c:
            cur = c.execute(
                f"UPDATE trials SET status='planned' WHERE study_id=? AND status IN "
                f"({','.join('?' * len(states))})", (study_id, *states))
        return cur.rowcount

    def finish_trial(self, study_id: int, result: TrialResult) -> None:
        """Record a finished trial (ok or failed) with everything it produced, atomically.
        A measured-statement trial's steps are kept even when it failed."""
        trial_id, o = result.trial_id, result.figures
        with self.transaction() as c:
            for table in ("series", "metrics", "waits", "details", "steps", "progress", "statements"):
                c.execute(f"DELETE FROM {table} WHERE study_id=? AND trial_id=?",  # noqa: S608
                          (study_id, trial_id))
            c.executemany("INSERT INTO steps VALUES (?,?,?,?,?,?,?,?)", [
                (study_id, trial_id, i, st.name, st.param, st.seconds, st.rows, json.dumps(dict(st.body)))
                for i, st in enumerate(result.steps)])
            evidence = result.evidence
            if evidence is not None:
                c.executemany("INSERT INTO series VALUES (?,?,?,?,?,?)",
                              [(study_id, trial_id, *row) for row in evidence.series])
                c.executemany("INSERT INTO metrics VALUES (?,?,?,?)",
                              [(study_id, trial_id, k, v) for k, v in evidence.metrics.items()])
                c.executemany("INSERT INTO waits VALUES (?,?,?,?,?,?)",
                              [(study_id, trial_id, *row) for row in evidence.waits])
                c.executemany("INSERT INTO details VALUES (?,?,?,?)",
                              [(study_id, trial_id, k, json.dumps(v))
                               for k, v in evidence.details.items()])
            c.execute(
                "UPDATE trials SET status=?, finished_at=?, error=?, tps=?, transactions=?,"
                " failed_transactions=?, duration_s=?, latency_ms_avg=?, latency_ms_stddev=?,"
                " initial_connection_ms=?, pgbench_version=?, argv=?, stdout=?, stderr=?,"
                " server_log=?, notes=? WHERE study_id=? AND trial_id=?",
                (result.status, result.finished_at, result.error,
                 o.tps if o else None, o.transactions if o else None,
                 o.failed_transactions if o else None, o.duration_s if o else None,
                 o.latency_ms_avg if o else None, o.latency_ms_stddev if o else None,
                 o.initial_connection_ms if o else None, o.pgbench_version if o else None,
                 json.dumps(list(result.argv)), result.stdout, result.stderr, result.server_log,
                 json.dumps(list(result.notes)), study_id, trial_id))
            if o is not None:
                c.executemany(
                    "INSERT INTO progress VALUES (?,?,?,?,?,?,?) ON CONFLICT (study_id, trial_id, t)"
                    " DO UPDATE SET tps = excluded.tps, latency_ms = excluded.latency_ms, "
                    "latency_stddev_ms = excluded.latency_stddev_ms, failed = excluded.failed",
                    [(study_id, trial_id, p.t, p.tps, p.latency_ms, p.latency_stddev_ms,
                      p.failed) for p in o.progress])
                c.executemany(
                    "INSERT INTO statements VALUES (?,?,?,?,?,?,?) ON CONFLICT (study_id, trial_id,"
                    " script_index, line_no) DO UPDATE SET latency_ms = excluded.latency_ms, "
                    "failures = excluded.failures, command = excluded.command",
                    [(study_id, trial_id, s.script_index, s.line_no, s.latency_ms, s.failures,
                      s.command) for s in o.statements])

    def add_block(self, study_id: int, trials: Sequence[PlannedTrial]) -> list[PlannedTrial]:
        """Plan one more block (repetitions: auto) after every trial planned so far, in the
        order given. Returns the trials as stored (their order_index)."""
        with self.transaction() as c:
            last = pg.one(c.execute("SELECT coalesce(max(order_index), -1) FROM trials WHERE "
                                    "study_id=?", (study_id,)))[0]
            added = [replace(t, order_index=last + 1 + i) for i, t in enumerate(trials)]
            _insert_planned(c, study_id, added)
        return added

    def add_repeat(self, study_id: int, of: PlannedTrial, *, right_after: bool = False) -> PlannedTrial:
        """Plan a repeat of the disturbed trial ``of`` in its block: ``<id>.2``, ``<id>.3`` ...,
        after the block's last trial (``right_after``: after ``of``, in its series), the later
        trials one place on. Saved before it runs, so that resume runs it too."""
        original = of.repeat_of or of.trial_id
        with self.transaction() as c:
            n = pg.one(c.execute("SELECT count(*) FROM trials WHERE study_id=? AND repeat_of=?",
                                 (study_id, original)))[0]
            after = of.order_index if right_after else pg.one(c.execute(
                "SELECT max(order_index) FROM trials WHERE study_id=? AND repetition=?",
                (study_id, of.repetition)))[0]
            # UNIQUE(order_index) holds after every row: move the later trials out of the
            # way (negative), then back one place on.
            c.execute("UPDATE trials SET order_index = -order_index - 2 WHERE study_id=? AND "
                      "order_index > ?", (study_id, after))
            c.execute("UPDATE trials SET order_index = -order_index - 1 WHERE study_id=? AND "
                      "order_index < 0", (study_id,))
            repeat = replace(of, trial_id=f"{original}.{n + 2}", order_index=after + 1,
                             repeat_of=original)
            _insert_planned(c, study_id, [repeat])
        return repeat

    def skip_trial(self, study_id: int, trial_id: str, reason: str, finished_at: str) -> None:
        with self.transaction() as c:
            c.execute("UPDATE trials SET status='skipped', error=?, finished_at=? "
                      "WHERE study_id=? AND trial_id=?", (reason, finished_at, study_id, trial_id))

    def status_counts(self, study_id: int) -> dict[str, int]:
        return {r[0]: r[1] for r in self.conn.execute(
            "SELECT status, count(*) FROM trials WHERE study_id=? GROUP BY status", (study_id,))}
