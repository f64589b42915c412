"""One trial as ``teiten show`` reads it, typed: its place and figures (a
:class:`~teiten.model.results.TrialRecord`), what its load printed, its monitors' figures, and
the details its drivers and workloads stored, each a record of its own.

A details record is read from the stored JSON by its fields' names (:func:`details`): a key the
record does not name is left out, one it names and the store lacks takes its default, so an
older store reads as what it recorded. Nothing here reads a key by hand. The records of the
kinds that others read too are :mod:`teiten.model.details`'.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from pydantic import TypeAdapter

from teiten.model.details import AppDetails, LatencyDetails, Num, PgbenchDetails
from teiten.model.results import TrialRecord


@dataclass(frozen=True)
class Design:
    """How the trial was run (``design``, teiten.run.plan.trial_design)."""

    block: Num | None = None
    order: str | None = None
    duration_s: Num | None = None
    restart: str | bool | None = None
    prewarm: bool | None = None
    client_cpus: str | None = None
    restore: str | None = None  # trials: {restore: each | first}; None: a store from before it


@dataclass(frozen=True)
class Details:
    """The details a trial stored, by kind; the cycle and the statistics views are read where
    they are analysed (teiten.analysis.cycle) and kept as stored."""

    pgbench: PgbenchDetails | None = None
    latency: LatencyDetails | None = None
    design: Design | None = None
    app: AppDetails | None = None
    cycle: Mapping[str, object] | None = None
    stats: Mapping[str, object] | None = None


@dataclass(frozen=True)
class Plan:
    """What EXPLAIN (ANALYZE, BUFFERS) said of a timed step's statement."""

    shape: str = ""
    workers_launched: Num | None = None
    workers_planned: Num | None = None
    shared_hit: Num | None = None
    shared_read: Num | None = None
    rows_removed_by_index_recheck: Num | None = None
    rows_removed_by_filter: Num | None = None


@dataclass(frozen=True)
class Cache:
    """The cache state a timed step ran in."""

    state: str | None = None


@dataclass(frozen=True)
class Machine:
    """What the machine did during a timed step (the freeze suite's)."""

    window_s: Num = 0.0
    cpu_busy_pct: Num | None = None
    cpu_iowait_pct: Num | None = None
    device: str | None = None
    device_util_pct: Num | None = None
    read_mb_s: Num | None = None
    write_mb_s: Num | None = None


@dataclass(frozen=True)
class Step:
    """One timed step of a measured-statement trial."""

    name: str
    seconds: Num
    param: str | None = None
    rows: Num | None = None
    plan: Plan | None = None
    cache: Cache | None = None
    extra: Machine | None = None


@dataclass(frozen=True)
class Wait:
    """One of the largest wait events of a trial, with its share of the samples."""

    wait_event_type: str
    wait_event: str
    samples: Num
    share: Num


@dataclass(frozen=True)
class Shown:
    """Everything ``teiten show`` prints of one trial."""

    trial: TrialRecord
    argv: tuple[str, ...]
    notes: tuple[str, ...]
    stdout: str | None
    stderr: str | None
    server_log: str | None
    metrics: Mapping[str, float]
    top_waits: tuple[Wait, ...]
    statements: tuple[Mapping[str, object], ...]  # per script line: as the table prints them
    progress: tuple[Mapping[str, object], ...]  # per second: as the table prints them
    series: tuple[str, ...]  # the names of its system series
    details: Details = field(default_factory=Details)
    steps: tuple[Step, ...] = ()


_DETAILS = TypeAdapter(Details)
_STEPS = TypeAdapter(tuple[Step, ...])
_WAITS = TypeAdapter(tuple[Wait, ...])


def details(stored: Mapping[str, object]) -> Details:
    """A trial's stored details (kind -> JSON body) as their records."""
    return _DETAILS.validate_python(dict(stored))


def steps(stored: list[dict[str, object]]) -> tuple[Step, ...]:
    return _STEPS.validate_python(stored)


def waits(stored: list[dict[str, object]]) -> tuple[Wait, ...]:
    return _WAITS.validate_python(stored)
