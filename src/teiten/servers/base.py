"""The one interface every kind of server offers the runner, with its defaults."""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field, fields
from typing import Protocol

from psycopg import conninfo as pg_conninfo

from teiten.host.cgroups import Group
from teiten.host.cpus import Placement
from teiten.monitors.remote_system import RemoteBackend
from teiten.monitors.system import StepMeter


@dataclass(frozen=True)
class Endpoint:
    """How a client reaches a prepared workload database."""

    host: str
    port: int
    user: str
    dbname: str
    password_env: dict[str, str] = field(default_factory=dict)
    conninfo_string: str | None = None  # external servers: the user's own connection string

    def pgbench_args(self) -> list[str]:
        if self.conninfo_string is not None:
            return []  # pgbench takes the whole connection string as its dbname argument
        return ["-h", self.host, "-p", str(self.port), "-U", self.user]

    def conninfo(self) -> str:
        """A libpq connection string for teiten's own connections."""
        if self.conninfo_string is not None:  # an external server's password: in memory only
            return pg_conninfo.make_conninfo(self.conninfo_string,
                                             password=self.password_env.get("PGPASSWORD"))
        # An ssh server's password (kept in memory only): never store or log this string.
        return pg_conninfo.make_conninfo(host=self.host, port=self.port, user=self.user,
                                         dbname=self.dbname,
                                         password=self.password_env.get("PGPASSWORD"))

    @property
    def pgbench_dbname(self) -> str:
        return self.conninfo_string if self.conninfo_string is not None else self.dbname


@dataclass
class TrialEnd:
    """What a server reports after a trial: its log, and whether it survived."""

    log: str = ""
    crashed: str | None = None  # reason, when the server died or restarted during the trial
    notes: list[str] = field(default_factory=list)


# A trial's data as the runs of its series before it changed it (trials: {restore: first}).
UPDATED = "as the runs of its series before it changed it"

# A backend that dies makes the postmaster restart all the others (or give up): what the
# trial measured is not the server's normal work, so the trial is not valid.
_CRASH = re.compile(r"terminated by signal|terminating any other active server processes|"
                    r"was terminated by exception|all server processes terminated")


def crash_verdict(alive: Mapping[str, bool], logs: Mapping[str, str]) -> str | None:
    """Why a trial is not valid, or None: a postmaster that is gone, or a log that shows
    a crash and restart. ``alive`` and ``logs`` are per node ("" for a single server)."""
    if down := [name for name, up in alive.items() if not up]:
        if down == [""]:
            return "the postmaster died during the trial"
        return f"{', '.join(down)} died during the trial"
    for name, text in logs.items():
        if m := _CRASH.search(text):
            who = f"{name} restarted" if name else "the server restarted"
            return f"{who} after a crash during the trial ({m.group(0)})"
    return None


class DataSet(Protocol):
    """What a server needs of a workload to make its data and keep it in a known state. The
    workloads (teiten.workloads) provide it; servers never import them."""

    @property
    def key(self) -> str: ...

    @property
    def database(self) -> str: ...

    @property
    def modifies_data(self) -> bool:
        """Whether a trial changes the data (then it is restored before the next one)."""
        ...

    @property
    def sql_loaded(self) -> bool:
        """Whether the data is loaded by :meth:`load_sql` rather than by ``pgbench -i``."""
        ...

    def init_args(self) -> list[str]:
        """The ``pgbench -i`` arguments that load the data (when not sql_loaded)."""
        ...

    def load_sql(self, conninfo: str, *, jobs: int) -> dict[str, float]:
        """Fill the empty database by SQL over ``jobs`` connections; seconds per step."""
        ...

    def server_settings(self) -> dict[str, str]:
        """Settings the workload needs of the server (the study's own settings win)."""
        ...

    def present_table(self) -> tuple[str, str]:
        """A table that exists once the data is loaded, and how the data is loaded."""
        ...


@dataclass
class Cycle:
    """Where one trial's machine time went, phase by phase, and how the state it started
    from was made (``start``: data restored how, or left as it was; server restarted or
    not). The runner opens one per trial and times begin, load, end and collect; the
    server's begin_trial times restore, start, prewarm, checkpoint (and stop_leftover, a
    server an interrupted trial left running) inside begin, its end_trial stop inside end."""

    seconds: dict[str, float] = field(default_factory=dict)
    start: Started = field(default_factory=lambda: Started())

    @contextmanager
    def phase(self, name: str) -> Iterator[None]:
        began = time.monotonic()
        try:
            yield
        finally:
            self.seconds[name] = self.seconds.get(name, 0.0) + time.monotonic() - began

    def to_json(self) -> dict[str, object]:
        return {"seconds": {k: round(v, 4) for k, v in self.seconds.items()}, "start": self.start.to_json()}


@dataclass
class Started:
    """How a trial's starting state was made, as the server's begin_trial finds it out: its
    data (restored how and after what, or left as it was; a clone's seconds at prepare), what
    dropping the install's programs from the page cache did, its server (restarted, kept
    running, ...); a group of tenants: each member's, by name. Stored as its fields in this
    order, those set (``teiten.model.cycles.Start`` reads it back)."""

    data: str | None = None
    restore: str | None = None
    after: str | None = None
    clone_at_prepare_s: float | None = None
    runs_before: int | None = None  # trials: {restore: first}: the runs whose changes it kept
    programs_evicted: dict[str, object] | None = None
    server: str | None = None
    tenants: dict[str, dict[str, object]] | None = None

    def unrestored(self, begun: bool) -> None:
        """Nothing restored its data: as loaded (no trial has begun on it yet), or as the
        trial before left it (that trial changed nothing)."""
        self.data = "as the last trial left it" if begun else "as loaded"

    def kept(self, runs: int) -> None:
        """Its data was not restored though ``runs`` runs of its series changed it since it
        was (trials: {restore: first})."""
        self.data, self.runs_before = UPDATED, runs

    def restored(self, how: str, *, crashed: bool) -> None:
        """Its data was restored (``how``), after a trial that changed it or crashed."""
        self.data, self.restore, self.after = "restored", how, "crash" if crashed else "changed"

    def to_json(self) -> dict[str, object]:
        return {f.name: value for f in fields(self) if (value := getattr(self, f.name)) is not None}


@dataclass(frozen=True)
class Target:
    """Where one pgbench goes: a node (or its Pgpool-II) of the server under test."""

    node: str
    endpoint: Endpoint


class Server:
    """A place where PostgreSQL runs, as the runner sees it: local, ssh, docker or external,
    alone or as a replication topology. The runner never asks which kind it holds: what only
    some kinds can do is a method here, whose default says "not this kind"."""

    name: str
    kind: str
    placement: Placement | None = None  # the CPUs it is confined to, once they are
    # restart: after-changes: a read-only trial's server may be left running for the next
    # trial of the same workload (where the kind of server can; others restart every trial).
    keep_running: bool = False
    # trials: {restore: first}: the next begin_trial keeps the changes of this many runs of the
    # series before it (0: restore after a trial that changed the data, as always); the runner
    # sets it before each trial (teiten.run.series)
    keep_data: int = 0
    _cycle: Cycle | None = None

    @property
    def cycle(self) -> Cycle:
        """The record of the current trial's cycle, which begin_trial and end_trial fill."""
        if self._cycle is None:
            self._cycle = Cycle()
        return self._cycle

    def new_cycle(self) -> Cycle:
        """A fresh record for the next trial."""
        self._cycle = Cycle()
        return self._cycle

    def prepare(self, workload: DataSet) -> None:
        """Make the workload's data exist (and a snapshot of it, where teiten can)."""
        raise NotImplementedError

    def begin_trial(self, workload: DataSet, trial_id: str, *, prewarm: bool) -> Endpoint:
        """Bring the server to the known state for one trial and return where to connect."""
        raise NotImplementedError

    def end_trial(self) -> TrialEnd:
        """Finish the trial: stop what teiten started, collect the log."""
        raise NotImplementedError

    def describe(self) -> dict[str, object]:
        """Version, build (pg_config) and non-default settings, for the fingerprint."""
        raise NotImplementedError

    def close(self) -> None:
        """Stop everything and remove what teiten created. Safe to call twice."""
        raise NotImplementedError

    def park(self, keep: str | None = None) -> float:
        """Stop what a trial left running on purpose (keep_running), except the cluster of
        workload ``keep``, which the next trial uses. Returns the seconds it took."""
        return 0.0

    def devices(self) -> dict[str, str]:
        """The block devices of the current trial's data and WAL ({} when unknown)."""
        return {}

    def server_pid(self) -> int | None:
        """The postmaster of the current trial, when one runs on this machine (to profile)."""
        return None

    def server_pids(self) -> list[int]:
        """Every postmaster of the current trial that runs on this machine (several for a
        group of tenants): their processes are the trial's, not foreign load."""
        pid = self.server_pid()
        return [pid] if pid is not None else []

    def foreign_pids(self) -> list[int]:
        """Processes under :meth:`server_pids` that serve another program (the backends of
        another client of an external server on this machine): foreign load after all."""
        return []

    def limits_group(self) -> Group | None:
        """The cgroup that holds the server to the study's memory and I/O limits, whose
        counters say how much of them it used (None: not limited)."""
        return None

    def members(self) -> list[Server]:
        """The study's own servers this one loads at once (a group of tenants), which are
        prepared and described as themselves; [] for a server of its own."""
        return []

    def confined_cpus(self) -> list[int] | None:
        """The CPUs this server's processes are confined to (None: not confined by teiten)."""
        return None

    def log_mark(self) -> int | None:
        """How much the running server has logged so far, as an offset into the log that
        end_trial returns (the start of the load's window of it); None when unknown."""
        return None

    def targets(self) -> list[Target]:
        """Where a trial's pgbench processes go when the server has several nodes (one
        pgbench each, started together); [] for one server, loaded at begin_trial's endpoint."""
        return []

    def lag_conninfo(self) -> str | None:
        """The primary whose pg_stat_replication the lag monitor samples (None: no standbys)."""
        return None

    def remote_monitor(self) -> RemoteBackend | None:
        """The system monitor's backend for the server's host, when it is another machine."""
        return None

    def step_meter(self) -> StepMeter | None:
        """The machine around each timed statement of the current trial: this one's CPU and
        the data directory's device, when the server runs here (a postmaster of this machine);
        None elsewhere (a remote host is sampled once a second: too coarse for a step)."""
        if not self.server_pids():
            return None
        return StepMeter(self.devices().get("data"))

    def cold_restarter(self) -> Callable[[], tuple[str, dict[str, object]]] | None:
        """A restart of the current trial's server with nothing cached, for measured
        statements that ask for a cold cache (None: teiten cannot restart this server)."""
        return None
