"""Application-shaped workloads: ``tpcc`` (TPROC-C-like, after HammerDB) and ``bookstore``
(TPC-W-like, after DBT-1).

pgbench drives them (docs/DESIGN.md, "Choices already made"): the transactions are PL/pgSQL
in the server, one pgbench script per transaction type, called with the spec's mix by weight.
Each app's SQL lives in its package directory (``tpcc/``, ``bookstore/``, each with a README).
This module

- checks a study's options and turns them into a :class:`~teiten.workloads.Workload`;
- loads the data: the SQL files, then the set-based loaders on several connections at once,
  then the keys (in parallel too), then VACUUM ANALYZE (S11: load, vacuum, run);
- runs the measurement pgbench cannot make alone (:class:`AppTrial`): a window after a
  ramp-up, per-transaction-type latency from pgbench's log, and for tpcc NOPM and TPM sampled
  at the window's ends as HammerDB does.
"""

from __future__ import annotations

import hashlib
import json
import math
import random
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import ClassVar

import psycopg

from teiten.drivers import pgbench, pgbench_log
from teiten.drivers.pgbench_output import PgbenchOutput
from teiten.host import client_account, paths, safefs
from teiten.messages import tr
from teiten.model.details import APP, AppDetails, AppSample, Condition, TxType
from teiten.model.errors import ServerError
from teiten.spec import AppSpec, LoadedStudy
from teiten.workloads.base import TrialOutcome, TrialRequest, Workload
from teiten.workloads.kind import WorkloadKind, defaults_of, read_options

PACKAGE_DIR = Path(__file__).parent
TAIL_S = 1  # pgbench runs a second past the window, so that its end is taken under load
MB = 1 << 20


# TPC-C clause 5.2.3: the minimum mix, as HammerDB runs it.
TPCC_MIX = [("new_order", 45), ("payment", 43), ("order_status", 4), ("delivery", 4),
            ("stock_level", 4)]


@dataclass(frozen=True)
class TpccOptions:
    warehouses: int = 2
    rampup: float = 0.0  # seconds of the run before the measured window
    all_warehouses: bool = False  # each client picks any warehouse, not one of its own
    keying_and_think_time: bool = False  # TPC-C's keying and think times between transactions
    check_consistency: bool = False  # conditions 1-4 after the load and after each trial

    def scripts(self) -> list[tuple[str, int]]:
        """The scripts these options run (script stem, weight)."""
        return list(TPCC_MIX)


@dataclass(frozen=True)
class BookstoreOptions:
    items: int = 1000
    customers: int = 2880
    think_time: float = 0.1  # mean seconds a client thinks between two interactions
    rampup: float = 0.0
    mix: str = "shopping"

    def scripts(self) -> list[tuple[str, int]]:
        mixes = json.loads((PACKAGE_DIR / "bookstore" / "mixes.json").read_text())
        return [(name, int(w)) for name, w in mixes[self.mix].items() if int(w) > 0]


AppOptions = TpccOptions | BookstoreOptions


@dataclass(frozen=True)
class App:
    name: str
    description: str
    options_model: type[TpccOptions] | type[BookstoreOptions]  # every option, with its default
    setup: tuple[str, ...]            # SQL files run once, in this order, before the load
    # Its clients think between transactions, so its report finds its capacity: the most
    # clients whose throughput keeps up with their think time (IPA paper, figure 2).
    capacity: bool = False

    @property
    def directory(self) -> Path:
        return PACKAGE_DIR / self.name

    @property
    def defaults(self) -> dict[str, object]:
        return defaults_of(self.options_model)


APPS: dict[str, App] = {
    "tpcc": App("tpcc", tr("workload.about.tpcc"), TpccOptions,
                ("schema.sql", "load.sql", "procs.sql", "check.sql")),
    "bookstore": App("bookstore", tr("workload.about.bookstore"), BookstoreOptions,
                     ("schema.sql", "load.sql", "procs.sql"), capacity=True),
}


def options_of(workload: Workload) -> AppOptions:
    """An app workload's options, typed (as a study resolved them, or a store kept them)."""
    assert workload.app is not None
    return read_options(APPS[workload.app].options_model, dict(workload.options))

KEY_TABLE = {"tpcc": "district", "bookstore": "item"}  # present once an app is loaded

def options(spec: AppSpec) -> dict[str, object]:
    """The app's options from its options model (teiten.spec.workloads), every default
    filled in."""
    given = {k: getattr(spec, k) for k in type(spec).model_fields}
    return {k: (given[k] if given.get(k) is not None else v)
            for k, v in APPS[spec.key].defaults.items()}


class AppWorkload(Workload):
    """An application-shaped workload (tpcc, bookstore): its data loaded by its own SQL, its
    trials measured from pgbench's transaction log (:class:`AppTrial`)."""

    kind: ClassVar[str] = "app"
    drives_one_server: ClassVar[bool] = True

    def data_bytes(self) -> int:
        return data_bytes(self)

    def load_sql(self, conninfo: str, *, jobs: int) -> dict[str, float]:
        return load(self, conninfo, jobs=jobs)

    def present_table(self) -> tuple[str, str]:
        assert self.app is not None
        return KEY_TABLE[self.app], f"the SQL in teiten/workloads/{self.app}"

    def digest(self) -> str | None:
        assert self.app is not None
        return digest(self.app)

    def run_trial(self, request: TrialRequest,
                  measuring: AbstractContextManager[object]) -> TrialOutcome:
        """pgbench with the app's variables and a transaction log, run past the measured
        window on both sides; the figures cover the window alone (:class:`AppTrial`). An app
        drives one server directly (check.py refuses topologies and remote load clients)."""
        log_dir = paths.make_owned(request.work_dir / f"pgbench-log-{request.trial_id}",
                                   "pgbench's transaction log")
        try:
            client_account.hand_over(log_dir, request.endpoint.password_env)  # pgbench writes it
            app = AppTrial(self, request.endpoint.conninfo(), trial_id=request.trial_id,
                           duration_s=request.duration_s, clients=request.sessions,
                           log_dir=log_dir)  # before anything is started: it reads the database
            with measuring:
                app.start()
                try:
                    run = pgbench.run(request.install, request.endpoint, self,
                                      clients=request.sessions, threads=request.threads,
                                      duration_s=app.total_s, cpus=request.cpus,
                                      extra=app.pgbench_args(), overrun_s=app.overrun_s)
                finally:
                    app.stop()
            measured, details, error = app.finish(run.output)
            return TrialOutcome(load=run.load_run(), measured=measured.figures(),
                                details=APP.entry(details), error=error)
        finally:
            paths.remove_owned(log_dir)


def resolve(loaded: LoadedStudy, loc: tuple[str | int, ...], spec: AppSpec) -> AppWorkload:
    app = APPS[spec.key]
    opts = options(spec)
    typed = read_options(app.options_model, opts)
    if isinstance(typed, BookstoreOptions) and typed.customers < 10:
        raise loaded.error((*loc, "customers"), "a bookstore needs 10 customers or more")
    scripts = tuple((str(app.directory / f"{stem}.pgbench"), w) for stem, w in typed.scripts())
    scale = typed.warehouses if isinstance(typed, TpccOptions) else loaded.study.scale
    shown = ", ".join(f"{k}={v}" for k, v in opts.items())
    return AppWorkload(spec.key, scripts, scale, None,
                    spec.modifies_data if spec.modifies_data is not None else True,
                    f"{app.description} ({shown})", app.name, tuple(sorted(opts.items())))


KIND = WorkloadKind("app", AppWorkload, resolve, tuple(APPS), lambda name: APPS[name].defaults)


def data_bytes(workload: Workload) -> int:
    """The loaded size, roughly (measured on 15-18 after VACUUM ANALYZE)."""
    opts = options_of(workload)
    if isinstance(opts, TpccOptions):
        return opts.warehouses * 117 * MB + 20 * MB  # bench.tpcc: 254 MB at 2, 1188 at 10
    # the bookstore helper measured 13 MB at 1000/2880 and 57 MB at 10000/28800
    return opts.items * 1500 + opts.customers * 1200 + 8 * MB


def digest(name: str) -> str:
    """What an app's SQL and scripts are: a study is resumed only with the same ones."""
    h = hashlib.sha256()
    for path in sorted((PACKAGE_DIR / name).iterdir()):
        if path.suffix in (".sql", ".pgbench", ".json"):
            h.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()[:16]


def script_names(workload: Workload) -> list[str]:
    return [Path(path).stem for path, _ in workload.scripts]


# -- loading -----------------------------------------------------------------------------

def _statements(text: str) -> list[str]:
    """The statements of a keys file: each ends with ';' at the end of a line."""
    out, current = [], []
    for line in text.splitlines():
        if line.strip().startswith("--") or not line.strip():
            continue
        current.append(line)
        if line.rstrip().endswith(";"):
            out.append("\n".join(current))
            current = []
    return out


def _parallel(conninfo: str, statements: list[str], jobs: int) -> None:
    def one(stmt: str) -> None:
        with psycopg.connect(conninfo, autocommit=True, connect_timeout=15) as conn:
            conn.execute(stmt.encode())
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        for future in [pool.submit(one, s) for s in statements]:
            future.result()


def load(workload: Workload, conninfo: str, *, jobs: int, seed: int = 0) -> dict[str, float]:
    """Create and fill the app's tables in an empty database. Returns seconds per step.
    Raises ServerError when the SQL fails or the loaded data is inconsistent."""
    assert workload.app is not None
    app = APPS[workload.app]
    opts = options_of(workload)
    took: dict[str, float] = {}
    try:
        t0 = time.monotonic()
        with psycopg.connect(conninfo, autocommit=True, connect_timeout=15) as conn:
            for name in app.setup:
                conn.execute((app.directory / name).read_bytes())
            loaders = _loaders(opts, conn, seed)
        took["setup_s"] = time.monotonic() - t0
        t0 = time.monotonic()
        _parallel(conninfo, loaders, jobs)
        took["data_s"] = time.monotonic() - t0
        t0 = time.monotonic()
        _parallel(conninfo, _statements((app.directory / "keys.sql").read_text()), jobs)
        took["keys_s"] = time.monotonic() - t0
        t0 = time.monotonic()
        with psycopg.connect(conninfo, autocommit=True, connect_timeout=15) as conn:
            conn.execute("VACUUM ANALYZE")
            took["vacuum_s"] = time.monotonic() - t0
            if isinstance(opts, TpccOptions) and opts.check_consistency:
                _raise_inconsistent(consistency(conn), "after the load")
    except psycopg.Error as exc:
        raise ServerError(f"loading the {app.name} workload failed: {exc}") from exc
    return took


def _loaders(opts: AppOptions, conn: psycopg.Connection, seed: int) -> list[str]:
    """The loader calls, biggest first, to be spread over the connections."""
    if isinstance(opts, TpccOptions):
        # The run-time C constants are drawn per trial against this one (clause 2.1.6.1).
        c_last = random.Random(seed).randrange(256)
        conn.execute("INSERT INTO tpcc_meta VALUES (%s, %s, now())", (opts.warehouses, c_last))
        return [f"SELECT tpcc_load_warehouse({w}, {c_last})"
                for w in range(1, opts.warehouses + 1)] + ["SELECT tpcc_load_items()"]
    return [f"SELECT bookstore_load({int(opts.items)}, {int(opts.customers)})"]


def consistency(conn: psycopg.Connection) -> list[Condition]:
    """TPC-C consistency conditions 1-4 (clause 3.3.2): violations of each."""
    rows = conn.execute("SELECT condition, description, violations FROM tpcc_consistency() "
                        "ORDER BY condition").fetchall()
    return [Condition(int(c), str(d), int(v)) for c, d, v in rows]


def _inconsistent(found: list[Condition]) -> str | None:
    bad = [f"condition {r.condition} ({r.description}) fails in {r.violations}"
           for r in found if r.violations]
    return "; ".join(bad) if bad else None


def _raise_inconsistent(found: list[Condition], when: str) -> None:
    bad = _inconsistent(found)
    if bad:
        raise ServerError(f"the tpcc data is inconsistent {when}: {bad}")


# -- one trial ---------------------------------------------------------------------------

@dataclass(frozen=True)
class Sample:
    """What HammerDB samples at each end of the window."""

    at: float            # server clock, epoch seconds
    new_orders: int      # sum(d_next_o_id)
    transactions: int    # xact_commit + xact_rollback of the benchmark database
    client_at: float     # client clock when the answer came, epoch seconds (pgbench's log clock)

    def record(self) -> AppSample:
        return AppSample(self.at, self.new_orders, self.transactions, self.client_at)


def _sample(conn: psycopg.Connection) -> Sample:
    row = conn.execute(
        "SELECT extract(epoch FROM clock_timestamp())::float8,"
        " (SELECT sum(d_next_o_id) FROM district)::bigint,"
        " (SELECT xact_commit + xact_rollback FROM pg_stat_database"
        "  WHERE datname = current_database())::bigint").fetchone()
    assert row is not None
    return Sample(float(row[0]), int(row[1]), int(row[2]), time.time())


def run_time_constants(c_last_load: int, rng: random.Random) -> dict[str, int]:
    """C constants for the run (clause 2.1.6.1): C_LAST's distance to the load's value must be
    in 65..119 and neither 96 nor 112; the others are free."""
    delta = rng.choice([d for d in range(65, 120) if d not in (96, 112)])
    return {"c_last_run": (c_last_load + delta) % 256, "c_id_run": rng.randrange(1024),
            "ol_i_id_run": rng.randrange(8192)}


class AppTrial:
    """The measured window of one trial: pgbench runs ``rampup + duration + 1`` seconds and
    the figures cover [start + rampup, start + rampup + duration)."""

    def __init__(self, workload: Workload, conninfo: str, *, trial_id: str, duration_s: float,
                 clients: int, log_dir: Path):
        self.workload = workload
        self.conninfo = conninfo
        self.opts = options_of(workload)
        self.rampup = float(self.opts.rampup or 0.0)
        self.duration = duration_s
        self.total_s = math.ceil(self.rampup + duration_s) + TAIL_S
        self.clients = clients
        self.log_dir = log_dir
        self.defines = self._defines(random.Random(trial_id))
        self.started: float | None = None
        self.samples: list[Sample] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._error: str | None = None

    def _defines(self, rng: random.Random) -> dict[str, int]:
        if isinstance(self.opts, TpccOptions):
            with psycopg.connect(self.conninfo, autocommit=True, connect_timeout=15) as conn:
                row = conn.execute("SELECT warehouses, c_last_load FROM tpcc_meta").fetchone()
            if row is None:
                raise ServerError("the tpcc database has no row in tpcc_meta (warehouses, "
                                  "c_last_load); load it with teiten or fill tpcc_meta")
            return {"warehouses": int(row[0]), "all_warehouses": int(self.opts.all_warehouses),
                    "think": int(self.opts.keying_and_think_time),
                    **run_time_constants(int(row[1]), rng)}
        return {"items": int(self.opts.items), "customers": int(self.opts.customers),
                "think_ms": round(float(self.opts.think_time) * 1000)}

    @property
    def overrun_s(self) -> float:
        """The longest a client's last transaction may run past -T: its sleeps (TPC-C
        keying 18 s + think capped at 120 s; the bookstore's think time capped at 10x)."""
        if not self._thinks():
            return 0.0
        return 138.0 if isinstance(self.opts, TpccOptions) else 10 * float(self.opts.think_time)

    def pgbench_args(self) -> list[str]:
        args = ["-l", "--log-prefix", str(self.log_dir / "tx")]
        for key, value in self.defines.items():
            args += ["-D", f"{key}={value}"]
        return args

    def start(self) -> None:
        """Call right before pgbench starts. The window is timed from here."""
        conn = None
        if self.workload.app == "tpcc":
            conn = psycopg.connect(self.conninfo, autocommit=True, connect_timeout=15)
        self.started = time.time()
        if conn is not None:
            self._thread = threading.Thread(target=self._sampler, args=(conn,), daemon=True,
                                            name="tpcc-window")
            self._thread.start()

    def _sampler(self, conn: psycopg.Connection) -> None:
        assert self.started is not None
        try:
            with conn:
                for at in (self.rampup, self.rampup + self.duration):
                    if self._stop.wait(max(0.0, self.started + at - time.time())):
                        return
                    self.samples.append(_sample(conn))
        except psycopg.Error as exc:
            self._error = f"sampling the window failed: {exc}"

    def stop(self) -> None:
        """Stop sampling (when pgbench has ended, or was interrupted) and close its
        connection, which would otherwise keep the database busy."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=30)

    def _window(self) -> tuple[float, float]:
        """The window on the client's clock: between the two samples where they were
        taken (so that TPS and NOPM cover the same seconds), else from the start."""
        if len(self.samples) == 2:
            return self.samples[0].client_at, self.samples[1].client_at
        assert self.started is not None
        return self.started + self.rampup, self.started + self.rampup + self.duration

    def finish(self, output: PgbenchOutput) -> tuple[PgbenchOutput, AppDetails, str | None]:
        """The trial's figures over the window: pgbench's output restricted to it, the
        details to store, and why the trial does not count (or None)."""
        self.stop()
        start, end = self._window()
        names = script_names(self.workload)
        try:
            overall, per = pgbench_log.window_of_files(self.log_dir, "tx", start, end, len(names))
        except (OSError, ValueError, MemoryError, safefs.UnsafePath) as exc:
            why = f"reading pgbench's transaction log failed: {exc}"
            return output, AppDetails(self.workload.app or ""), why
        response = _response_ms(output, len(names))
        thinking = self._thinks()
        # the log's latencies include the sleeps when they think: only -r's SQL time is response
        types = tuple(TxType(n, w, s.count, s.failed, *((None,) * 4 if thinking else
                                                        (s.avg_ms, s.p50_ms, s.p95_ms, s.p99_ms)), r)
                      for n, (_, w), s, r in zip(names, self.workload.scripts, per, response, strict=True))
        tps = overall.count / (end - start)
        details = AppDetails(self.workload.app or "", self.rampup, self.duration, self.defines, thinking, types,
                             tps, (start, end))
        error = self._error
        if isinstance(self.opts, TpccOptions):
            details, failed = self._tpcc(details, tps, self.opts)
            error = failed or error
        else:
            think = float(self.opts.think_time)
            details = replace(details, think_time_s=think,
                              theoretical_tps=self.clients / think if think > 0 else None)
        measured = [(t.count, t.response_ms) for t in details.types if t.response_ms]
        latency = (sum(c * r for c, r in measured) / sum(c for c, _ in measured)
                   if thinking and measured and sum(c for c, _ in measured) else overall.avg_ms)
        out = replace(output, tps=tps, transactions=overall.count, duration_s=end - start,
                      failed_transactions=overall.failed, latency_ms_avg=latency,
                      latency_ms_stddev=None if thinking else overall.stddev_ms)
        if not overall.count and output.transactions:
            error = error or "no transaction finished inside the measured window"
        return out, details, error

    def _thinks(self) -> bool:
        if isinstance(self.opts, TpccOptions):
            return bool(self.opts.keying_and_think_time)
        return float(self.opts.think_time) > 0

    def _tpcc(self, details: AppDetails, tps: float, opts: TpccOptions) -> tuple[AppDetails, str | None]:
        """tpcc's figures of the window (its samples, NOPM and TPM, its consistency when asked),
        and why the trial does not count (or None)."""
        error = None
        if len(self.samples) == 2:
            a, b = self.samples
            minutes = (b.at - a.at) / 60
            details = replace(
                details, samples=(a.record(), b.record()), new_orders=b.new_orders - a.new_orders,
                nopm=(b.new_orders - a.new_orders) / minutes,
                # sample a's own transaction commits inside the window: not the load's
                tpm=(b.transactions - a.transactions - 1) / minutes)
        else:
            error = self._error or "the window's end was not sampled (pgbench ended early)"
        details = replace(details, tpm_pgbench=tps * 60)
        if opts.check_consistency:
            try:
                with psycopg.connect(self.conninfo, autocommit=True, connect_timeout=15) as conn:
                    found = consistency(conn)
            except psycopg.Error as exc:
                return details, f"the consistency check failed to run: {exc}"
            details = replace(details, consistency=tuple(found))
            bad = _inconsistent(found)
            if bad:
                error = f"the tpcc data is inconsistent after the run: {bad}"
        return details, error


def _response_ms(output: PgbenchOutput, scripts: int) -> list[float | None]:
    """Per script, the mean time of its SQL commands from pgbench -r (sleeps excluded)."""
    out: list[float | None] = []
    for i in range(scripts):
        sql = [s.latency_ms for s in output.statements
               if s.script_index == i and not s.command.lstrip().startswith("\\")]
        out.append(sum(sql) if sql else None)
    return out
