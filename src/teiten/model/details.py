"""The details a trial stores beside its figures, each kind a typed record: a monitor, driver or
workload writes its record with :meth:`DetailsKind.put` and whoever reads a study reads it back
typed (:meth:`teiten.store.db.Store.details_of`), so that neither spells a key of its JSON.

A record is read from the stored JSON by its fields' names: a key the record does not name is
left out, one it names and the store lacks takes its default, so an older store reads as what it
recorded. A record is written as its fields, by name, in their order.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Generic, TypeVar

if TYPE_CHECKING:
    from pydantic import TypeAdapter

T = TypeVar("T")
Num = int | float  # a stored number, as the store gave it: an int prints as an int


@dataclass(frozen=True)
class DetailsKind(Generic[T]):
    """A kind of details: its name in the store, and the record it holds."""

    name: str
    record: type[T]

    @cached_property
    def _adapter(self) -> TypeAdapter[T]:
        """The validator of its record, made once."""
        from pydantic import TypeAdapter  # late: the store imports this module; pydantic loads on a read

        return TypeAdapter(self.record)

    def read(self, stored: Mapping[str, object]) -> T:
        """The record of a stored body (its JSON, parsed)."""
        return self._adapter.validate_python(dict(stored))

    def json(self, value: T) -> dict[str, object]:
        """The body a record is stored as."""
        body: dict[str, object] = self._adapter.dump_python(value, mode="json")
        return body

    def entry(self, value: T) -> dict[str, object]:
        """A trial's details holding ``value`` alone (a workload's ``TrialOutcome.details``)."""
        return {self.name: self.json(value)}

    def put(self, details: dict[str, object], value: T) -> None:
        """Keep ``value`` as a trial's details of this kind (``Evidence.details``)."""
        details[self.name] = self.json(value)


@dataclass(frozen=True)
class Percentiles:
    """A trial's latency percentiles (ms), of ``count`` transactions, within ``precision``."""

    count: Num = 0
    precision: Num = 0.0
    p50_ms: Num | None = None
    p90_ms: Num | None = None
    p95_ms: Num | None = None
    p99_ms: Num | None = None
    p999_ms: Num | None = None
    max_ms: Num | None = None

    def ms(self, name: str) -> Num | None:
        """The percentile ``name`` (``p50`` ... ``p999``, ``max``) in ms."""
        found: Num | None = getattr(self, f"{name}_ms")
        return found


@dataclass(frozen=True)
class PgbenchDetails:
    """What a rate-limited, latency-limited or retrying pgbench run reported (``pgbench``)."""

    percentiles: Percentiles | None = None  # from its transaction log, when the trial asked
    latency_limit_ms: Num | None = None
    late: Num | None = None
    skipped: Num | None = None
    retried: Num | None = None
    retries: Num | None = None
    lag_ms_avg: Num | None = None
    lag_ms_max: Num | None = None


@dataclass(frozen=True)
class LatencyDetails:
    """Another driver's latency percentiles, from its own histogram (``latency``)."""

    driver: str | None = None
    percentiles: Percentiles | None = None


@dataclass(frozen=True)
class LoadPart:
    """One pgbench of a load that several made at once: the load client it ran on, the node it
    connected to, its own figures, and when it started (epoch seconds, on its client's clock)."""

    client: str = ""
    node: str = ""
    tps: Num | None = None
    transactions: Num | None = None
    latency_ms_avg: Num | None = None
    returncode: int | None = None
    started_at: Num = 0.0
    errors: tuple[str, ...] = ()


@dataclass(frozen=True)
class LoadDetails:
    """A load made by several pgbench at once (``load``): each part, and how far apart they
    started."""

    parts: tuple[LoadPart, ...] = ()
    skew_s: Num = 0.0
    clients: tuple[str, ...] = ()
    nodes: tuple[str, ...] = ()


@dataclass(frozen=True)
class TxType:
    """One transaction type of an application's window: its weight in the mix, the
    transactions that finished in the window (and failed), their latency (ms; None where the
    latencies include think time) and the mean time of its SQL alone (``response_ms``)."""

    name: str = ""
    weight: Num = 0
    count: Num = 0
    failed: Num = 0
    avg_ms: Num | None = None
    p50_ms: Num | None = None
    p95_ms: Num | None = None
    p99_ms: Num | None = None
    response_ms: Num | None = None


@dataclass(frozen=True)
class AppSample:
    """What HammerDB samples at each end of the window: the server's clock, the new orders
    (sum of d_next_o_id), the benchmark database's transactions, and the client's clock."""

    at: Num
    new_orders: int
    transactions: int
    client_at: Num


@dataclass(frozen=True)
class Condition:
    """One of TPC-C's consistency conditions 1-4 (clause 3.3.2), and how many rows break it."""

    condition: int
    description: str
    violations: int


@dataclass(frozen=True)
class AppDetails:
    """The measured window of a tpcc or bookstore trial (``app``): its figures, its
    transaction types, and tpcc's samples, NOPM and TPM or the bookstore's theoretical TPS."""

    app: str = ""
    rampup_s: Num = 0.0
    window_s: Num | None = None
    defines: dict[str, int] = field(default_factory=dict)
    latency_includes_think_time: bool = False
    types: tuple[TxType, ...] = ()
    tps: Num | None = None
    window: tuple[Num, Num] | None = None
    think_time_s: Num | None = None
    theoretical_tps: Num | None = None
    samples: tuple[AppSample, ...] = ()
    new_orders: Num | None = None
    nopm: Num | None = None
    tpm: Num | None = None
    tpm_pgbench: Num | None = None
    consistency: tuple[Condition, ...] | None = None


@dataclass(frozen=True)
class ProfileDetails:
    """A perf profile of the server over a trial's window (``profile``): the event sampled, at
    what frequency, how many samples, the folded stacks (one "frame;frame;frame count" line
    per stack; empty without inferno) and the flame graph, with notes on what was missing."""

    event: str = ""
    frequency: int = 0
    samples: int = 0
    folded: str = ""
    svg: str | None = None
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class AffinityRecord:
    """What the CPU placement monitor's watch saw (teiten.host.cpus.AffinityReport): the CPUs
    expected, how often it looked, the processes it saw (by kind), and those that ran elsewhere."""

    expected: str = ""
    checks: int = 0
    processes: int = 0
    kinds: dict[str, int] = field(default_factory=dict)
    escaped: tuple[str, ...] = ()


@dataclass(frozen=True)
class PlacementDetails:
    """A confined server's placement over a trial (``placement``): its CPUs, how it was held to
    them (taskset or a cgroup), what the watch saw, and where the load's clients ran."""

    cpus: str = "all"
    cores: int | None = None
    mechanism: str | None = None
    cgroup: str | None = None
    watch: AffinityRecord = field(default_factory=AffinityRecord)
    client_cpus: str = "any"


PGBENCH = DetailsKind("pgbench", PgbenchDetails)
PLACEMENT = DetailsKind("placement", PlacementDetails)
PROFILE = DetailsKind("profile", ProfileDetails)
APP = DetailsKind("app", AppDetails)
LATENCY = DetailsKind("latency", LatencyDetails)
LOAD = DetailsKind("load", LoadDetails)
