"""The typed model of the middle of the flow: what the plan asks for and what a trial gives.

plan -> :class:`PlannedTrial`; a trial -> :class:`TrialResult`; the store keeps both and gives a
study back as :class:`StudyResults`; analysis reads that. Frozen dataclasses that validate on
construction and do no I/O. This module imports nothing of teiten's but the stored study's
typed record (:mod:`teiten.model.studyrecord`) and a trial's typed details
(:mod:`teiten.model.details`), which import nothing of teiten's, so every other part may import
it (pyperf keeps its ``Run`` and ``Benchmark`` at the bottom the same way).

Units are in the field names: ``_s`` seconds, ``_ms`` milliseconds, ``_bytes`` bytes.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from functools import cached_property
from typing import Any, Literal

from teiten.model.details import LoadDetails
from teiten.model.studyrecord import ServerSetup, StudyRecord

# disturbed: the trial ran while foreign load on the machine exceeded the noise guard's
# threshold; it is kept with its figures, left out of the analysis, and repeated.
Status = Literal["planned", "running", "ok", "failed", "skipped", "disturbed"]
STATUSES: tuple[str, ...] = ("planned", "running", "ok", "failed", "skipped", "disturbed")


def now() -> str:
    """A timestamp as the model keeps them (trials, studies, reports): UTC, to the second."""
    return datetime.now(UTC).isoformat(timespec="seconds")


@dataclass(frozen=True, order=True)
class Point:
    """One point of a study's matrix: a server, a workload, a client count, and the variant of a
    measured-statement workload ("" for pgbench workloads)."""

    server: str
    workload: str
    clients: int
    variant: str = ""

    def __post_init__(self) -> None:
        if self.clients < 1:
            raise ValueError(f"a point has at least 1 client, not {self.clients}")


@dataclass(frozen=True)
class PlannedTrial:
    """One point at one repetition, in the place the plan gave it."""

    trial_id: str
    order_index: int
    server: str
    workload: str
    clients: int
    threads: int
    repetition: int
    duration_s: float
    variant: str = ""  # a measured-statement workload's variant, e.g. "models=jsonb indexes=brin"
    repeat_of: str | None = None  # the disturbed trial this one repeats, in the same block
    # "" for a trial of the blocks; "profile" for one run after them to profile the point
    # where the servers differ most, which no figure of the analysis counts
    purpose: str = ""

    def __post_init__(self) -> None:
        if self.repetition < 1 or self.threads < 1 or self.duration_s < 0:
            raise ValueError(f"trial {self.trial_id}: repetition and threads start at 1, and the "
                             f"duration is not negative")

    @property
    def point(self) -> Point:
        return Point(self.server, self.workload, self.clients, self.variant)

    @property
    def attempt(self) -> int:
        """1 for a planned trial; n for its (n-1)th repeat, ``<id>.n``."""
        return int(self.trial_id.rsplit(".", 1)[1]) if self.repeat_of else 1


@dataclass(frozen=True)
class ProgressPoint:
    """One second of a run: a ``progress:`` line of pgbench ``-P``."""

    t: float  # seconds since start (or epoch seconds with --progress-timestamp)
    tps: float
    latency_ms: float | None
    latency_stddev_ms: float | None
    failed: int | None  # 15+: "N failed"; None when absent


@dataclass(frozen=True)
class StatementLatency:
    """One statement's mean latency: a line of pgbench's ``-r`` report."""

    script_index: int  # 0-based; 0 for a single script
    line_no: int  # 1-based index of the line within that script's listing
    latency_ms: float
    failures: int | None  # 15+ column; None in older versions
    command: str


@dataclass(frozen=True)
class LoadFigures:
    """What a load (one pgbench, or several summed) measured, as the store keeps it."""

    tps: float | None  # excluding the initial connection time
    transactions: int
    failed_transactions: int | None
    duration_s: float | None  # the seconds measured over
    latency_ms_avg: float | None
    latency_ms_stddev: float | None
    initial_connection_ms: float | None
    pgbench_version: str | None
    progress: tuple[ProgressPoint, ...] = ()
    statements: tuple[StatementLatency, ...] = ()

    def __post_init__(self) -> None:
        if self.transactions < 0 or (self.tps is not None and self.tps < 0):
            raise ValueError("transactions and tps are not negative")


@dataclass(frozen=True)
class LoadRun:
    """What a load driver's run of one trial gave (pgbench's, or another driver's), in the
    model's own terms: the runner judges and stores it without knowing which driver ran.

    The driver's producer reads its own output into ``figures`` and decides ``failure``, the
    reason the run does not count in the driver's own words (it exited badly, it measured
    nothing, it was killed for running past its time). A run killed for its time
    (``timed_out``) fails for that before anything else; otherwise a crash of the server
    during the trial outranks the driver's own reason."""

    driver: str  # the program that made the load: "pgbench", "sysbench"
    argv: tuple[str, ...]
    stdout: str
    stderr: str
    figures: LoadFigures | None  # what it measured; None when it printed nothing to read
    failure: str | None = None  # why the run does not count; None when it counts
    timed_out: bool = False
    # Several processes made the load at once (a topology's nodes, several load clients):
    # each one's figures and their start skew, kept as the trial's 'load' details.
    several: LoadDetails | None = None

    def __post_init__(self) -> None:
        if self.timed_out and not self.failure:
            raise ValueError(f"a {self.driver} run killed for its time says so in its failure")


@dataclass(frozen=True)
class StepRecord:
    """One timed step of a measured-statement trial: its name, what it was given, how long it
    took, the rows it returned, and the rest (plan, sizes, cache state, extra figures)."""

    name: str
    param: str | None
    seconds: float
    rows: int | None = None
    body: Mapping[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "param": self.param, "seconds": self.seconds, "rows": self.rows,
                **self.body}

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> StepRecord:
        return cls(d["name"], d.get("param"), float(d["seconds"]), d.get("rows"),
                   {k: v for k, v in d.items() if k not in ("name", "param", "seconds", "rows")})


@dataclass(frozen=True)
class Evidence:
    """What the monitors saw during a trial. Built up while the trial ends (the lists and dicts
    are filled in place), then handed to the store with the result."""

    series: list[tuple[str, float, str, float]] = field(default_factory=list)  # source, t, name, value
    metrics: dict[str, float] = field(default_factory=dict)
    waits: list[tuple[str, str, str, int]] = field(default_factory=list)  # backend_type, type, event, n
    details: dict[str, object] = field(default_factory=dict)


@dataclass(frozen=True)
class TrialResult:
    """A finished trial, ok, failed or disturbed (measured, but foreign load exceeded the
    noise guard: ``error`` says by whom), with everything it produced."""

    trial_id: str
    status: Literal["ok", "failed", "disturbed"]
    finished_at: str
    error: str | None = None
    figures: LoadFigures | None = None
    argv: tuple[str, ...] = ()
    stdout: str = ""
    stderr: str = ""
    server_log: str = ""
    notes: tuple[str, ...] = ()
    evidence: Evidence | None = None
    steps: tuple[StepRecord, ...] = ()  # kept even when a later step failed

    def __post_init__(self) -> None:
        if self.status not in ("ok", "failed", "disturbed"):
            raise ValueError(f"a finished trial is ok, failed or disturbed, not {self.status!r}")
        if (self.status != "ok") != bool(self.error):
            raise ValueError(f"trial {self.trial_id}: a failed or disturbed trial has an error "
                             "(its reason), an ok one none")


@dataclass(frozen=True)
class TrialRecord:
    """A trial as the store holds it: its place in the plan, its state, and its figures."""

    planned: PlannedTrial
    study_id: int
    study: str
    status: Status
    attempts: int = 0
    started_at: str | None = None
    finished_at: str | None = None
    error: str | None = None
    figures: LoadFigures | None = None  # without progress and statements (read them apart)
    # Its study's place (1 on) among the studies `teiten compare` sets side by side, which may
    # come from several stores, each with its own study 1; 0 where a report reads one study.
    part: int = 0

    def __post_init__(self) -> None:
        if self.status not in STATUSES:
            raise ValueError(f"trial {self.planned.trial_id}: unknown status {self.status!r}")

    @property
    def trial_id(self) -> str:
        return self.planned.trial_id

    @property
    def point(self) -> Point:
        return self.planned.point

    @property
    def tps(self) -> float | None:
        """The measured TPS; None when the trial measured nothing."""
        return self.figures.tps if self.figures else None

    @property
    def latency_ms_avg(self) -> float | None:
        return self.figures.latency_ms_avg if self.figures else None

    def row(self) -> dict[str, object]:
        """The trial with the fields and names of ``teiten results``."""
        p, f = self.planned, self.figures
        return {"trial_id": p.trial_id, "study": self.study, "server": p.server,
                "workload": p.workload, "clients": p.clients, "threads": p.threads,
                "repetition": p.repetition, "order_index": p.order_index, "status": self.status,
                "tps": f.tps if f else None, "transactions": f.transactions if f else None,
                "failed_transactions": f.failed_transactions if f else None,
                "duration_s": f.duration_s if f else None,
                "latency_ms_avg": f.latency_ms_avg if f else None,
                "latency_ms_stddev": f.latency_ms_stddev if f else None,
                "started_at": self.started_at, "finished_at": self.finished_at, "error": self.error,
                "variant": p.variant, "study_id": self.study_id, "purpose": p.purpose}


@dataclass(frozen=True)
class ServerRecord:
    """A server of a study as stored: its place (0 is the baseline), kind, the spec it was run
    with and what teiten found it to be."""

    name: str
    position: int
    kind: str
    spec: Mapping[str, object]
    description: Mapping[str, Any] | None = None
    part: int = 0  # its study's place in a compare, as TrialRecord.part; 0 where one study is read

    @cached_property
    def setup(self) -> ServerSetup:
        """The stored spec as a typed record: what analysis and report read."""
        return ServerSetup.from_json(self.spec)


@dataclass(frozen=True)
class StudyResults:
    """One study as the store holds it, in one piece: what analysis reads."""

    study_id: int
    name: str
    source: str
    spec_yaml: str
    spec: Mapping[str, object]  # the stored spec_json, as written; read it as ``record``
    seed: int
    state: str
    created_at: str
    finished_at: str | None
    fingerprint: Mapping[str, object]
    teiten_version: str
    servers: tuple[ServerRecord, ...]
    trials: tuple[TrialRecord, ...]

    def ok(self) -> tuple[TrialRecord, ...]:
        return tuple(t for t in self.trials if t.status == "ok")

    def measured(self) -> StudyResults:
        """The study without its profile trials: what every figure of the analysis counts."""
        return replace(self, trials=tuple(t for t in self.trials if not t.planned.purpose))

    def spec_json(self) -> str:
        return json.dumps(self.spec)

    @cached_property
    def record(self) -> StudyRecord:
        """The stored spec as a typed record: what analysis and report read."""
        return StudyRecord.from_json(self.spec)


@dataclass(frozen=True)
class PointSummary:
    """One server at one point of a finished study, as the report judged it: kept in the store
    (``point_summaries``, read through the view ``teiten_points``) for the tools and timelines
    that read many studies. The baseline's own row has no ``baseline`` and no ratio. Ratios,
    bounds and levels are in percent; timestamps ISO 8601 with their offset."""

    study_id: int
    study: str
    testbed: str
    workload: str
    clients: int
    threads: int | None
    server: str
    baseline: str | None
    tps_median: float | None
    tps_low: float | None
    tps_high: float | None
    tps_level_pct: float | None
    n_ok: int
    n_failed: int
    baseline_tps_median: float | None
    ratio_pct: float | None
    estimate_pct: float | None
    low_pct: float | None
    high_pct: float | None
    level_pct: float | None
    required_pct: float | None
    method: str | None
    margin_pct: float | None
    verdict: str | None
    verdict_reason: str | None
    version: str | None
    build_key: str | None
    git_commit: str | None
    git_subject: str | None
    git_position: int | None
    committed_at: str | None
    finished_at: str
    emulated: int | None = None  # 1: an emulation's figures (the server's or its baseline's)
    # the medians over the repetitions of its latency percentiles (ms), where its workload
    # measured them (the report's percentiles table); None elsewhere
    p50_ms: float | None = None
    p90_ms: float | None = None
    p95_ms: float | None = None
    p99_ms: float | None = None
    p999_ms: float | None = None

    def row(self) -> tuple[object, ...]:
        """Its values in the order of the table's columns."""
        return tuple(getattr(self, f) for f in POINT_SUMMARY_FIELDS)


# The columns of point_summaries, in the table's order (store/schema.py, step 6).
POINT_SUMMARY_FIELDS: tuple[str, ...] = tuple(PointSummary.__dataclass_fields__)


@dataclass(frozen=True)
class PointRow:
    """A row of the view ``teiten_points`` (store/schema.py), the columns in its order: a point
    summary as the tools outside teiten read it, with its ``time`` (when its study finished),
    ``build`` (the git commit, else the install key, else the version) and ``benchmark``
    (STUDY/WORKLOAD/clients=N). Timestamps are ISO 8601 in UTC."""

    time: str = ""
    testbed: str = ""
    build: str = ""
    benchmark: str = ""
    value: float | None = None  # the median TPS
    low: float | None = None
    high: float | None = None
    study_id: int = 0
    study: str = ""
    workload: str = ""
    clients: int = 0
    threads: int | None = None
    server: str = ""
    baseline: str | None = None
    tps_level_pct: float | None = None
    n_ok: int = 0
    n_failed: int = 0
    baseline_tps_median: float | None = None
    ratio_pct: float | None = None
    estimate_pct: float | None = None
    low_pct: float | None = None
    high_pct: float | None = None
    level_pct: float | None = None
    required_pct: float | None = None
    method: str | None = None
    margin_pct: float | None = None
    verdict: str | None = None
    verdict_reason: str | None = None
    version: str | None = None
    build_key: str | None = None
    git_commit: str | None = None
    git_subject: str | None = None
    git_position: int | None = None
    committed_at: str | None = None
    emulated: int | None = None  # 1: an emulation's figures; None in a summary kept before
    p50_ms: float | None = None  # latency percentiles (ms) where measured; None elsewhere and before
    p90_ms: float | None = None
    p95_ms: float | None = None
    p99_ms: float | None = None
    p999_ms: float | None = None
