"""The noise guard (issue 18, item 3; issue 33, item 4): the rule that says when foreign load
disturbed a trial, and the record of that load as the store keeps it (a trial's ``foreign``
details, the study's ``quiet_check``). The foreign-load meter (:mod:`teiten.monitors.foreign`)
measures it; the runner, the busy watch and the report judge and word it from here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from teiten.messages import tr

TOP = 5              # consumers kept in ForeignLoad.top


@dataclass(frozen=True)
class Consumer:
    """One foreign process and the CPU it used during the window."""

    pid: int
    name: str       # the process name (comm) only, never its command line: that may hold a password
    cpu_s: float    # user + system, plus the children it reaped in the window

    def __post_init__(self) -> None:
        if self.cpu_s < 0:
            raise ValueError(f"consumer {self.pid} ({self.name}): cpu_s is not negative, got {self.cpu_s}")


@dataclass(frozen=True)
class ForeignLoad:
    """What processes outside the trial used during its window (see the module docstring)."""

    window_s: float
    cpu_s: float                                  # CPU seconds of foreign user-space processes
    top: tuple[Consumer, ...] = ()                # the largest consumers, largest first
    memory: Mapping[str, float] = field(default_factory=dict)  # psi_some_ms, psi_full_ms, swap_*_pages
    # CPU seconds of the trial's own processes, and the CPUs the trial may use (this process's
    # affinity); None in what teiten stored before the relative rule (issue 33, item 4)
    own_cpu_s: float | None = None
    capacity: int | None = None

    def __post_init__(self) -> None:
        if self.window_s < 0 or self.cpu_s < 0 or (self.own_cpu_s or 0) < 0:
            raise ValueError(f"foreign load: window_s, cpu_s and own_cpu_s are not negative, got "
                             f"{self.window_s}, {self.cpu_s} and {self.own_cpu_s}")
        if len(self.top) > TOP:
            raise ValueError(f"foreign load: at most {TOP} top consumers, got {len(self.top)}")
        if self.capacity is not None and self.capacity < 1:
            raise ValueError(f"foreign load: capacity is at least 1 CPU, got {self.capacity}")

    @property
    def cpus(self) -> float:
        """The average number of CPUs foreign processes kept busy over the window."""
        return self.cpu_s / self.window_s if self.window_s > 0 else 0.0

    @property
    def own_cpus(self) -> float | None:
        """The average number of CPUs the trial's own processes kept busy over the window."""
        if self.own_cpu_s is None:
            return None
        return self.own_cpu_s / self.window_s if self.window_s > 0 else 0.0

    def to_json(self) -> dict[str, object]:
        out: dict[str, object] = {
            "window_s": self.window_s, "cpu_s": self.cpu_s,
            "top": [{"pid": c.pid, "name": c.name, "cpu_s": c.cpu_s} for c in self.top],
            "memory": dict(self.memory)}
        if self.own_cpu_s is not None:
            out["own_cpu_s"] = self.own_cpu_s
        if self.capacity is not None:
            out["capacity"] = self.capacity
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, object]) -> ForeignLoad:
        top = data.get("top", [])
        memory = data.get("memory", {})
        if not isinstance(top, list) or not isinstance(memory, Mapping):
            raise ValueError("foreign load: 'top' is a list and 'memory' a mapping")
        return cls(window_s=_number(data["window_s"]), cpu_s=_number(data["cpu_s"]),
                   top=tuple(Consumer(int(_number(c["pid"])), str(c["name"]), _number(c["cpu_s"]))
                             for c in top),
                   memory={str(k): _number(v) for k, v in memory.items()},
                   own_cpu_s=_number(data["own_cpu_s"]) if "own_cpu_s" in data else None,
                   capacity=int(_number(data["capacity"])) if "capacity" in data else None)


LIMIT_CPUS = 0.25    # noise_guard.max_foreign_cpus by default
SPARE_FRACTION = 0.0  # noise_guard.spare_fraction by default: see Rule


@dataclass(frozen=True)
class Rule:
    """When foreign load disturbs a trial (issue 33, item 4): when processes outside it used more
    than ``limit_cpus`` CPUs on average over its window, or, with a ``fraction`` above 0, more
    than that share of the CPUs the trial left idle (the CPUs it may use, ``capacity``, less
    those its own processes kept busy) where that is more.

    The share is 0 by default, which makes the rule the absolute limit: bench/guard_calibration.py
    measured on this project's 2-CPU virtual machine that foreign load shifts a trial that leaves
    CPUs idle as much as one that saturates them, and the other way: a tenth of a CPU made a
    1-client trial 30% faster (a busy neighbour keeps the vCPUs awake), a quarter 48%, half
    230%; beside a saturating trial a quarter of a CPU cost 24%. A rule that allowed a 1-client
    trial more foreign load because it left a CPU idle would keep exactly those trials. A
    machine where idle CPUs do shield a trial (many cores, no virtualisation) can say so with
    ``spare_fraction`` after running that benchmark there.
    """

    limit_cpus: float = LIMIT_CPUS
    fraction: float = SPARE_FRACTION

    def limit(self, capacity: float | None, own: float | None) -> float:
        """The most foreign CPUs a trial that may use ``capacity`` CPUs and used ``own`` keeps
        undisturbed beside it (``limit_cpus`` when either is unknown)."""
        if self.fraction <= 0 or capacity is None or own is None:
            return self.limit_cpus
        return max(self.limit_cpus, self.fraction * max(capacity - own, 0.0))

    def limit_of(self, found: ForeignLoad) -> float:
        """The limit for the trial whose window ``found`` measured."""
        return self.limit(found.capacity, found.own_cpus)

    def before(self, clients: int, threads: int, capacity: int) -> float:
        """The limit a quiet moment before a trial of ``clients`` and ``threads`` is judged by:
        the trial's own use taken at its most (a busy backend per client and a busy pgbench
        thread each), so that a moment quiet enough for it is quiet enough for the trial."""
        return self.limit(capacity, min(capacity, clients + threads))

    @classmethod
    def of(cls, guard: Mapping[str, object]) -> Rule:
        """The rule of a study's ``noise_guard`` (its spec, as the store keeps it)."""
        return cls(limit_cpus=_number(guard.get("max_foreign_cpus", LIMIT_CPUS)),
                   fraction=_number(guard.get("spare_fraction", SPARE_FRACTION)))


def _number(value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"foreign load: expected a number, got {value!r}")
    return float(value)


def who(found: ForeignLoad) -> str:
    """The largest foreign consumers, by process name and pid (never a command line)."""
    return ", ".join(f"{c.name} (pid {c.pid}) {c.cpu_s:.1f} s" for c in found.top[:3]) or "?"


def disturbance(found: ForeignLoad, rule: Rule) -> str | None:
    """Why a trial is disturbed, or None: processes outside it used more CPUs than ``rule``
    allows beside it, on average over its window."""
    limit = rule.limit_of(found)
    if found.cpus <= limit:
        return None
    own = found.own_cpus
    if rule.fraction <= 0 or found.capacity is None or own is None:
        return tr("reason.disturbed", "en", cpus=f"{found.cpus:.2f}",
                  window=f"{found.window_s:.0f}", limit=f"{limit:g}", who=who(found))
    return tr("reason.disturbed_spare", "en", cpus=f"{found.cpus:.2f}",
              window=f"{found.window_s:.0f}", limit=f"{limit:.2f}", own=f"{own:.2f}",
              capacity=found.capacity, fraction=f"{rule.fraction:g}",
              floor=f"{rule.limit_cpus:g}", who=who(found))
