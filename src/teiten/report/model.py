"""What a report shows, computed from the store (see teiten.analysis.summary).

Plain frozen data: renderers (Markdown, HTML) only format it, they compute nothing.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Point:
    """One server at one client count: the median of its repetitions."""

    clients: int
    tps_median: float | None          # None when no repetition succeeded
    latency_ms_median: float | None
    tps_values: tuple[float, ...]     # every successful repetition
    n_ok: int
    n_failed: int
    ratio: float | None               # tps_median / the baseline's tps_median at these clients


@dataclass(frozen=True)
class Activity:
    """What the monitors saw for one server at one client count: for each figure, the
    median over the repetitions of its mean over the measured window."""

    clients: int
    cpu: dict[str, float]             # user, sys, iowait, idle, steal, irq -> percent (sums to ~100)
    waits: dict[str, float]           # "WaitEventType:WaitEvent" (or "CPU:CPU") -> share 0..1, largest first
    device_util: dict[str, float]     # "data" / "wal" -> percent busy
    checkpoints: int                  # checkpoints inside the measured windows (sum over repetitions)
    autovacuum: int                   # trials in which autovacuum ran inside the window


@dataclass(frozen=True)
class ServerSeries:
    server: str
    version: str
    points: tuple[Point, ...]         # ordered by clients, one per client count of the study
    mean_tps_diff_pct: float | None   # mean over client counts of (ratio - 1) * 100; None for the baseline
    mean_latency_diff_pct: float | None
    activity: tuple[Activity, ...] = ()  # one per client count where the monitors ran
    profiles: tuple[tuple[int, str], ...] = ()  # (clients, relative path of a flame graph SVG)
    profile_diffs: tuple[tuple[int, str], ...] = ()  # (clients, differential graph vs the baseline)


@dataclass(frozen=True)
class WorkloadSection:
    workload: str
    description: str
    baseline: str                     # name of the baseline server (the study's first)
    clients: tuple[int, ...]
    servers: tuple[ServerSeries, ...] # baseline first


@dataclass(frozen=True)
class ServerInfo:
    name: str
    kind: str                         # local | external
    version: str
    origin: str
    bindir: str
    data_checksums: bool | None
    settings: dict[str, str] = field(default_factory=dict)  # non-default settings, name -> value with unit


@dataclass(frozen=True)
class ReportData:
    title: str
    study: str
    description: str
    generated_at: str
    store_path: str
    duration_s: float
    repetitions: int
    scale: int
    order: str
    seed: int
    fingerprint: dict[str, object]
    servers: tuple[ServerInfo, ...]
    sections: tuple[WorkloadSection, ...]
    status_counts: dict[str, int]     # planned / running / ok / failed / skipped -> count
    warnings: tuple[str, ...]
