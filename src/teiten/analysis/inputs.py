"""What analysis reads, in two pieces: a study's results with the per-trial extras the report
needs (:class:`StudyData`), and how the report is to be made (:class:`ReportOptions`); and what
it asks of the features teiten has (:class:`Features`), which the caller gives it.

The store fills them (teiten.analysis.gather); :func:`teiten.analysis.summary.report_data` turns
them into the report's figures. Frozen and free of I/O, like the model they carry.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from teiten.analysis.callers import Callers
from teiten.analysis.cycle import MachineTime
from teiten.analysis.locks import Locks  # per point, per ok repetition: LWLOCK_STATS rows
from teiten.analysis.model import Notice, StudyParameters, SuiteResults
from teiten.model.details import AppDetails, LatencyDetails, LoadDetails
from teiten.model.results import Point, ProgressPoint, StepRecord, StudyResults

# Per point of the matrix: the hottest functions of its profile, (function, self share).
Hot = Mapping[Point, Sequence[tuple[str, float]]]
# Per point: the 'app' details (tpcc, bookstore) of its ok trials.
AppRuns = Mapping[Point, Sequence[AppDetails]]
# Per point: the relative path of a flame graph written beside the report.
Graphs = Mapping[Point, str]
# (share of samples through a frame perf could not name, share ending in one) per profile
Unnamed = Mapping[Point, tuple[float, float]]


class DiffDrawer(Protocol):
    """Draws the differential flame graph from one profiled point to another beside the report
    (the report's :class:`teiten.report.build.ChangeDrawer`), for a change point that analysis
    chose it for."""

    @property
    def profiled(self) -> frozenset[Point]:
        """The points whose profiles kept their stacks: those a graph can be drawn from."""
        ...

    def __call__(self, before: Point, after: Point) -> str | None:
        """The graph's path relative to the report, or None where none could be drawn."""
        ...


class KindFacts(Protocol):
    """What analysis asks of a stored server's kind (a ``teiten.servers.kind.Kind`` answers)."""

    @property
    def name(self) -> str: ...

    @property
    def origin(self) -> str | None: ...

    def cpus(self, spec: Mapping[str, object],
             description: Mapping[str, object]) -> tuple[str, dict[str, str]] | None: ...

    def notices(self, server: str, description: Mapping[str, object]) -> list[tuple[str, dict[str, str]]]: ...

    def facts(self, description: Mapping[str, object]) -> list[tuple[str, str, dict[str, str]]]: ...

    def emulated(self, description: Mapping[str, object]) -> bool: ...


class SuiteFacts(Protocol):
    """What analysis asks of a measured-statement suite (a ``teiten.workloads.statements.Suite``)."""

    @property
    def axes(self) -> tuple[str, ...]: ...

    @property
    def judge(self) -> Callable[[SuiteResults], tuple[dict[str, object], ...]] | None: ...


class Features(Protocol):
    """The kinds of server, workloads, suites and applications teiten has, as analysis asks
    them: given by the caller (``teiten.features.FEATURES``), so that analysis imports none of
    them (tests/unit/test_decision_seams.py) and a test can give it others."""

    def server_kind(self, kind: str, spec: Mapping[str, object]) -> KindFacts:
        """The kind of a server as the store keeps it (its recorded kind and spec)."""
        ...

    def about(self, workload: Mapping[str, object], lang: str) -> str:
        """What a stored workload is, in ``lang``."""
        ...

    def suite(self, name: str) -> SuiteFacts: ...

    def variants(self, suite: str, options: dict[str, object]) -> list[str]:
        """Every variant of a suite with these options, in the order of its axes."""
        ...

    def app_capacity(self, app: str) -> bool:
        """Whether the report finds the capacity of an application (its clients think)."""
        ...


@dataclass(frozen=True)
class StudyData:
    """One study (or several compared as one) and what its trials left beside their figures.

    Maps named by trial id hold an entry for each trial that has one; maps named by point
    are keyed by :class:`teiten.model.results.Point`.
    """

    study: StudyResults
    # What the monitors saw: their figures, and the wait events sampled as (wait_event_type,
    # wait_event, samples), one per backend type, largest first.
    metrics: Mapping[str, Mapping[str, float]] = field(default_factory=dict)
    waits: Mapping[str, Sequence[tuple[str, str, int]]] = field(default_factory=dict)
    progress: Mapping[str, Sequence[ProgressPoint]] = field(default_factory=dict)  # per second
    # per second of the window, as the viewer draws them: "cpu" (% busy of this machine) and
    # each device role's %util ("data", "wal"); None for a second without a sample
    system: Mapping[str, Mapping[str, Sequence[float | None]]] = field(default_factory=dict)
    steps: Mapping[str, Sequence[StepRecord]] = field(default_factory=dict)  # in the order they ran
    loads: Mapping[str, LoadDetails] = field(default_factory=dict)  # several pgbench at once
    # the latency percentiles of the trials that took them (details 'pgbench', with no driver
    # named, or another driver's 'latency')
    latencies: Mapping[str, LatencyDetails] = field(default_factory=dict)
    apps: AppRuns = field(default_factory=dict)
    hot: Hot = field(default_factory=dict)
    callers: Callers = field(default_factory=dict)  # who calls each point's hottest function
    locks: Locks = field(default_factory=dict)
    graphs: Graphs = field(default_factory=dict)
    graph_diffs: Graphs = field(default_factory=dict)  # differential graphs against the baseline
    unnamed: Unnamed = field(default_factory=dict)
    # What the tables of teiten/tables/ read of the store for themselves, by table key, then by
    # trial id (teiten.analysis.tables.gathered)
    gathered: Mapping[str, Mapping[str, object]] = field(default_factory=dict)
    # server -> how it was held to its CPUs (details 'placement'): cgroup-v2, cpuset-cgroup
    # (v1) or affinity
    confined: Mapping[str, str] = field(default_factory=dict)
    # trial id -> the runs of its series whose changes its data held (trials: {restore: first})
    updated: Mapping[str, int] = field(default_factory=dict)
    # What analysis asks of the features teiten has; None: a study read for its figures alone
    features: Features | None = None
    # The trials' cycles summed (None: none kept one, or a compare report)
    machine_time: MachineTime | None = None
    # (workload, clients) profiled after the blocks, where the servers differ most
    profiled_after: tuple[tuple[str, int], ...] = ()
    # Draws a change point's differential flame graph (None: no graphs, as in a compare report)
    draw_diff: DiffDrawer | None = None

    def asked(self) -> Features:
        """The features, which the report's analysis needs (the gatherer gives them)."""
        if self.features is None:
            raise ValueError("StudyData.features: give the features teiten has (teiten.features.FEATURES)")
        return self.features


@dataclass(frozen=True)
class ReportOptions:
    """How to make the report: its language, where it came from, and what to leave out."""

    store_path: str
    generated_at: str
    lang: str = "en"
    # Each trial's TPS is the mean of its per-second series from the steady state on.
    exclude_rampup: bool = False
    extra_notices: tuple[Notice, ...] = ()
    # compare: how each compared study ran, for the Study table (see summary.study_parameters)
    compared: tuple[StudyParameters, ...] = ()
    # METHODS S5's degradation-rate tables to add: (server a, server b), b against a
    degradations: tuple[tuple[str, str], ...] = ()


def system_seconds(samples: Sequence[tuple[float, str, float]], devices: Mapping[str, str]
                   ) -> dict[str, list[float | None]]:
    """One trial's system samples (seconds since its window opened, name, value) as the viewer
    draws them: "cpu", % busy of this machine (100 - cpu.idle), and each device role's %util
    (``devices``: role -> device, as the trial recorded them), one value per second of the
    window. The monitor samples once a second, each sample covering the second before it: one
    taken at t goes to second round(t) (1.002 s: the first), the x of pgbench's per-second line
    for about the same second (the window opens just before pgbench starts); a second without
    one is None."""
    keys_of: dict[str, list[str]] = {"cpu.idle": ["cpu"]}
    for role, dev in devices.items():  # data and WAL may share a device
        keys_of.setdefault(f"disk.{dev}.util", []).append(role)
    out: dict[str, dict[int, float]] = {}
    for t, name, value in samples:
        second = max(1, math.floor(t + 0.5))
        for key in keys_of.get(name, ()):
            out.setdefault(key, {})[second] = 100.0 - value if key == "cpu" else value
    return {key: [by.get(s) for s in range(1, max(by) + 1)] for key, by in out.items()}
