"""The workload of a trial as the runner, the servers and the drivers see it.

:class:`Workload` is a pgbench workload (built-in scripts or the user's); the application
workloads (:mod:`teiten.workloads.apps`) and the measured-statement suites
(:mod:`teiten.workloads.statements`) are subclasses that load their data by SQL and run their
own trials. This module imports neither, so both build on it.

Each kind runs its own trial (:meth:`Workload.run_trial`): the runner gives it a
:class:`TrialRequest` (where to connect, the targets and load clients, the sizes) and a
``measuring`` context manager that starts and stops the monitors around exactly what is
measured; the workload gives back a :class:`TrialOutcome`. The runner keeps the failure
policy, the monitors and the store, and never asks which kind of workload it holds.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from teiten.drivers import load, pgbench, pgbench_log
from teiten.host import client_account, paths, safefs
from teiten.installs import Install
from teiten.model.results import LoadFigures, LoadRun, StepRecord
from teiten.monitors.system import StepMeter
from teiten.servers.base import Endpoint, Target
from teiten.servers.profiles import pgbench_data_bytes
from teiten.spec import LoadedStudy


@dataclass(frozen=True)
class TrialRequest:
    """One trial as the runner hands it to its workload."""

    trial_id: str
    install: Install  # whose pgbench drives the load
    endpoint: Endpoint  # where begin_trial said to connect
    targets: tuple[Target, ...]  # one pgbench each when ``several``
    several: bool  # several pgbench at once: a topology's nodes, or several load clients
    clients: tuple[load.Client, ...]  # the study's load clients (() : this machine)
    sessions: int  # pgbench -c
    threads: int
    duration_s: float
    variant: str  # a measured-statement trial's variant ("" otherwise)
    cpus: list[int] | None  # where pgbench is pinned
    work_dir: Path  # a directory of teiten's where the trial may keep files
    cold_restart: Callable[[], tuple[str, dict[str, object]]] | None = None
    meter: StepMeter | None = None  # the machine around each timed step (monitors on, server here)


@dataclass
class TrialOutcome:
    """What a workload's trial gave, before the runner judges and stores it: the load in the
    model's own terms (:class:`~teiten.model.results.LoadRun`, whichever driver made it), or the
    timed steps of a measured-statement trial."""

    load: LoadRun | None = None  # what the load driver ran and measured (summed over several)
    measured: LoadFigures | None = None  # the measured window, when not the whole run (apps)
    details: dict[str, object] = field(default_factory=dict)  # added to the trial's evidence
    error: str | None = None  # why the trial does not count, beyond the driver's own verdict
    steps: tuple[StepRecord, ...] = ()  # a measured-statement trial's timed steps
    notes: tuple[str, ...] = ()
    not_installed: str | None = None  # what the server lacks: the trial is skipped, not failed

    @property
    def figures(self) -> LoadFigures | None:
        """The figures the trial reports: the measured window's, else the driver's own."""
        if self.measured is not None:
            return self.measured
        return self.load.figures if self.load is not None else None

    def summary(self) -> str:
        """One line for the progress display of an ok trial."""
        out = self.figures
        if out is not None and out.tps is not None:
            return f"{out.tps:.1f} tps, {out.latency_ms_avg or 0:.3f} ms"
        return f"{len(self.steps)} steps, {sum(st.seconds for st in self.steps):.2f} s timed"


@dataclass(frozen=True)
class Workload:
    """A resolved workload of a study. ``scripts`` holds (pgbench selector, weight) pairs,
    where a selector is ``builtin:NAME`` or an absolute script path."""

    key: str
    scripts: tuple[tuple[str, int], ...]
    scale: int
    fillfactor: int | None
    modifies_data: bool
    description: str
    app: str | None = None  # "tpcc" | "bookstore": loaded by SQL, measured by teiten.workloads.apps
    # The kind's options, every default filled in; Any: each kind reads its own, knowing their types.
    options: tuple[tuple[str, Any], ...] = ()
    suite: str | None = None  # a measured-statement workload (teiten.workloads.statements)

    # The kind of workload (teiten.workloads.kind): "pgbench" here, "app" and "suite" for the
    # subclasses of teiten.workloads.apps and .statements, a kind's own name for any other.
    kind: ClassVar[str] = "pgbench"
    # Whether it runs its trial against one server directly: not with the several pgbench of a
    # topology, of several load clients or of tenants, which are pgbench workloads' only.
    drives_one_server: ClassVar[bool] = False

    def option(self, name: str) -> Any:
        """One of the options of the workload's kind, which knows its type (Any: each kind
        reads its own, as its options model resolved them)."""
        return dict(self.options)[name]

    def data_bytes(self) -> int:
        """The size of the loaded data, roughly: sizes shared_buffers."""
        return pgbench_data_bytes(self.scale, self.fillfactor)

    # -- what a server needs of the workload (teiten.servers.base.DataSet) --------------------

    @property
    def sql_loaded(self) -> bool:
        """Whether the data is loaded by the workload's own code (load_sql), not pgbench -i."""
        return self.app is not None or self.suite is not None

    def check(self, loaded: LoadedStudy, index: int) -> None:
        """Refuse, with one line (``loaded.error``), what the study asks of this workload
        (``workloads[index]``) that it cannot do here, before anything is made: nothing for the
        built-in kinds, whose needs teiten.run.check knows. A kind with needs of its own (a
        program, servers of some kinds only) overrides it."""

    def load_sql(self, conninfo: str, *, jobs: int) -> dict[str, float]:
        """Fill the empty database by SQL over ``jobs`` connections; seconds per step."""
        raise NotImplementedError(f"the {self.key} workload is loaded with pgbench -i")

    def server_settings(self) -> dict[str, str]:
        """Settings the workload needs of the server (the study's own settings win)."""
        return {}

    def present_table(self) -> tuple[str, str]:
        """A table that exists once the data is loaded, and how the data is loaded."""
        return "pgbench_accounts", "pgbench -i"

    @property
    def prewarm(self) -> bool:
        """Whether the study's prewarm applies before a trial (a suite sets its own cache)."""
        return True

    def run_trial(self, request: TrialRequest,
                  measuring: AbstractContextManager[object]) -> TrialOutcome:
        """Run pgbench for the trial's duration (one per target when ``several``), measured
        from its start to its end. Raises TeitenError (or psycopg.Error, OSError) when the
        trial cannot start; pgbench's own failures are in the outcome's load."""
        if self.pgbench_option("percentiles") and not request.several:
            return self._logged_trial(request, measuring)
        with measuring:
            if request.several:
                together = load.run(request.install, list(request.clients) or [load.Client("local")],
                                    list(request.targets), self, sessions=request.sessions,
                                    threads=request.threads, duration_s=request.duration_s,
                                    cpus=request.cpus)
                return TrialOutcome(load=together.combined().load_run(several=together.details()))
            run = pgbench.run(request.install, request.endpoint, self, clients=request.sessions,
                              threads=request.threads, duration_s=request.duration_s,
                              cpus=request.cpus)
            limits = run.output.limits()
            return TrialOutcome(load=run.load_run(), details={"pgbench": limits} if limits else {})

    def _logged_trial(self, request: TrialRequest,
                      measuring: AbstractContextManager[object]) -> TrialOutcome:
        """pgbench with a transaction log (-l), read into a histogram after the run: the
        latency percentiles of every transaction (skipped and failed ones counted apart)."""
        log_dir = paths.make_owned(request.work_dir / f"pgbench-log-{request.trial_id}",
                                   "pgbench's transaction log")
        try:
            client_account.hand_over(log_dir, request.endpoint.password_env)  # pgbench writes it
            with measuring:
                run = pgbench.run(request.install, request.endpoint, self,
                                  clients=request.sessions, threads=request.threads,
                                  duration_s=request.duration_s, cpus=request.cpus,
                                  extra=["-l", "--log-prefix", str(log_dir / "tx")])
            details: dict[str, object] = dict(run.output.limits() or {})
            try:
                limit = self.pgbench_option("latency_limit_ms")
                hist = pgbench_log.histogram_of_files(
                    log_dir, "tx", latency_limit_ms=limit if isinstance(limit, int | float) else None)
            except (OSError, ValueError, safefs.UnsafePath) as exc:
                return TrialOutcome(load=run.load_run(), details={"pgbench": details},
                                    error=f"reading pgbench's transaction log failed: {exc}")
            details["percentiles"] = hist.summary()
            return TrialOutcome(load=run.load_run(), details={"pgbench": details})
        finally:
            paths.remove_owned(log_dir)

    def pgbench_option(self, name: str) -> object:
        """A pgbench option the study gave this pgbench workload (protocol, rate,
        latency_limit_ms, percentiles, max_tries, defines, random_seed), None when not given
        (or not a pgbench workload)."""
        given = dict(self.options) if self.kind == "pgbench" else {}
        return given.get(name)

    def digest(self) -> str | None:
        """What the workload's SQL and scripts are, for those teiten ships: a study is
        resumed only with the same ones."""
        return None

    @property
    def database(self) -> str:
        return "teiten_" + re.sub(r"[^a-z0-9_]", "_", self.key.lower())

    def init_args(self) -> list[str]:
        """pgbench arguments that initialise the data (server-side generation is faster)."""
        args = ["-i", "-s", str(self.scale), "-I", "dtGvp"]
        if self.fillfactor is not None:
            args += ["-F", str(self.fillfactor)]
        return args

    def script_args(self) -> list[str]:
        """-M/-R/-L, --max-tries, --random-seed and -D as the study asked (a pgbench workload's
        options), then ``-b NAME@W`` / ``-f PATH@W`` for each script."""
        args: list[str] = []
        for key, flag in (("protocol", "-M"), ("rate", "-R"), ("latency_limit_ms", "-L")):
            if (value := self.pgbench_option(key)) is not None:
                args += [flag, str(value) if key == "protocol" else f"{value:g}"]
        for key, flag in (("max_tries", "--max-tries"), ("random_seed", "--random-seed")):
            if (value := self.pgbench_option(key)) is not None:
                args.append(f"{flag}={value}")
        defines = self.pgbench_option("defines")  # NAME=VALUE texts
        for define in defines if isinstance(defines, tuple | list) else ():
            args += ["-D", str(define)]
        for selector, weight in self.scripts:
            if selector.startswith("builtin:"):
                args += ["-b", f"{selector.removeprefix('builtin:')}@{weight}"]
            else:
                args += ["-f", f"{selector}@{weight}"]
        return args

    def to_json(self) -> dict[str, object]:
        digest = self.digest()
        return {"key": self.key, "scripts": [list(s) for s in self.scripts], "scale": self.scale,
                "fillfactor": self.fillfactor, "modifies_data": self.modifies_data,
                "description": self.description, "app": self.app, "options": dict(self.options),
                **({"suite": self.suite} if self.suite else {}),
                **({"digest": digest} if digest is not None else {}),
                **({"kind": self.kind} if self.kind not in _KNOWN_BY_FIELDS else {})}


# The kinds a stored workload is known by without a "kind" of its own, as before kinds were
# named: its "app" or "suite" field, else pgbench.
_KNOWN_BY_FIELDS = ("pgbench", "app", "suite")
