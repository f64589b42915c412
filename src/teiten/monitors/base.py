"""What every monitor is: a watch over one trial's measured window, started just before the load
and stopped right after it, that adds its part to the trial's :class:`Evidence` (metrics, series
under a source of its own, details of a kind of its own), and the metrics it declares.

A monitor is a :class:`MonitorKind` registered in :mod:`teiten.monitors.registry`: its name, the
metrics it stores with their unit, kind and label (as pyperf's metadata registry has them), and
``watch``, which gives the trial's :class:`Monitor` (or None when the trial does not want it or
the server cannot offer it). :mod:`teiten.run.window` runs whatever the registry holds; the store
keeps what they add; ``teiten show`` names each metric by its registered label and unit.

Monitors rank below the servers: they see a server only as :class:`Watched`, the capabilities
that :class:`teiten.servers.base.Server` offers them.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, Literal, Protocol, TypeVar

from teiten.host.cgroups import Group
from teiten.host.cpus import Placement
from teiten.model.details import LoadDetails
from teiten.model.results import Evidence, PlannedTrial
from teiten.monitors.system import Backend
from teiten.spec.study import NoiseGuardSpec, ProfileSpec

# What a stored figure counts in (teiten show prints it after the value).
UNITS = ("%", "count", "bytes", "bytes/s", "IOPS", "ms", "s", "CPUs")
# How a figure is made from the window: a level (a mean or a share over it), a counter's growth
# in it, a rate per second over it, the largest value seen in it.
MetricKind = Literal["gauge", "counter", "rate", "peak"]
_FIELD = re.compile(r"\{([a-z_]+)\}")


@dataclass(frozen=True)
class Metric:
    """One figure a monitor stores, or a family of them: ``name`` is exact (``cpu_user``) or has
    fields (``{role}_device_util``, ``server_cpu_{part}``), each matching a part of a stored name
    without dots. ``label`` is its catalogue key (``texts.<part>.yaml``), whose template may use
    the fields."""

    name: str
    unit: str
    kind: MetricKind
    label: str

    def __post_init__(self) -> None:
        if self.unit not in UNITS:
            raise ValueError(f"metric {self.name}: unit {self.unit!r} is none of {', '.join(UNITS)}")

    @property
    def pattern(self) -> re.Pattern[str]:
        parts = _FIELD.split(self.name)  # literal, field, literal, ...
        return re.compile("".join(re.escape(p) if i % 2 == 0 else f"(?P<{p}>[^.]+?)"
                                  for i, p in enumerate(parts)))

    def fields(self, stored: str) -> dict[str, str] | None:
        """The fields of a stored name this metric covers, or None when it covers none."""
        found = self.pattern.fullmatch(stored)
        return found.groupdict() if found else None


class Watched(Protocol):
    """What a server offers the monitors (:class:`teiten.servers.base.Server`)."""

    placement: Placement | None

    def devices(self) -> dict[str, str]: ...
    def server_pid(self) -> int | None: ...
    def server_pids(self) -> list[int]: ...
    def foreign_pids(self) -> list[int]: ...
    def limits_group(self) -> Group | None: ...
    def confined_cpus(self) -> list[int] | None: ...
    def log_mark(self) -> int | None: ...
    def lag_conninfo(self) -> str | None: ...
    def remote_monitor(self) -> Backend | None: ...


@dataclass(frozen=True)
class Window:
    """One trial's window as the monitors are given it: what the study asks of them, the
    trial, its server, the connection its load uses, and the notes the trial keeps."""

    trial: PlannedTrial
    server: Watched
    conninfo: str  # the trial's database (it may hold a password: never log it)
    notes: list[str]
    monitors: bool = True                 # the system, database and topology monitors (--no-monitors)
    profile: ProfileSpec | None = None    # perf profiles of chosen points
    guard: NoiseGuardSpec | None = None   # the noise guard, when it is on
    client_cpus: list[int] | None = None  # where the load's clients were pinned (None: anywhere)


@dataclass(frozen=True)
class Ended:
    """What the end of the trial gives the monitors to finish their part: the server's log
    (from its start), the transactions the load committed, and each process of a load made by
    several."""

    log: str = ""
    transactions: int = 0
    several: LoadDetails | None = None


class Monitor:
    """One monitor's watch over one trial's window."""

    def start(self) -> None:
        """Just before the load."""

    def stop(self) -> None:
        """Right after the load (also after a load that failed)."""

    def contribute(self, evidence: Evidence, ended: Ended) -> None:
        """Add what it saw to the trial's evidence."""

    def warnings(self) -> list[str]:
        """What the trial's notes and its one-line summary should say of the window."""
        return []

    def failure(self) -> str | None:
        """Why the trial failed, when what this monitor saw makes its figures wrong."""
        return None

    def disturbance(self) -> str | None:
        """Why the trial is disturbed (measured, but not to be counted), or None."""
        return None


R = TypeVar("R", covariant=True)


class Sampler(Protocol[R]):
    """Something that samples between start() and stop(), which returns what it saw."""

    def start(self) -> None: ...
    def stop(self) -> R: ...


class Sampling(Monitor, Generic[R]):
    """A monitor over a sampler: what it saw is ``seen`` once stopped."""

    def __init__(self, sampler: Sampler[R]):
        self.sampler = sampler
        self.seen: R | None = None

    def start(self) -> None:
        self.sampler.start()

    def stop(self) -> None:
        self.seen = self.sampler.stop()


@dataclass(frozen=True)
class MonitorKind:
    """A monitor as the registry holds it.

    ``layer``: where it starts, from the outside in (it stops in the reverse order). The outer
    ones cost the most to start (perf attaching) or must see everything; the innermost, the
    foreign-load meter, sees the window only.
    """

    name: str
    watch: Callable[[Window], Monitor | None]
    metrics: tuple[Metric, ...] = ()
    layer: int = 3
