"""The noise guard (issue 18, item 3; issue 33, item 4): the rule that says when foreign load
disturbed a trial, and the record of that load as the store keeps it (a trial's ``foreign``
details, the study's ``quiet_check``). The foreign-load meter (:mod:`teiten.monitors.foreign`)
measures it; the runner, the busy watch and the report judge and word it from here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache
from typing import Annotated

from pydantic import BeforeValidator, TypeAdapter, ValidationError

from teiten.messages import tr
from teiten.model.details import DetailsKind
from teiten.model.results import StudyResults

TOP = 5              # consumers kept in ForeignLoad.top, programs in ForeignLoad.programs
NAMED = 3            # programs (or consumers) a message names
NAMED_MIN_CPUS = 0.05  # below this a program is idle: left out of the names while others are not


SHAPES = "foreign load: 'top' and 'programs' are lists and 'memory' a mapping"


def _number(value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"foreign load: expected a number, got {value!r}")
    return float(value)


def _whole(value: object) -> int:
    return int(_number(value))


def _pid_port_or_text(value: object) -> int | str:
    return value if isinstance(value, str) else _whole(value)


def _server(value: object) -> object:
    if value is not None and not isinstance(value, Mapping):
        raise ValueError("foreign load: a program's 'server' is a mapping")
    return value


def _shapes(data: object) -> object:
    """A stored load's lists and mapping, checked before its fields are read."""
    if isinstance(data, Mapping) and (not isinstance(data.get("top", []), list) or
                                      not isinstance(data.get("memory", {}), Mapping) or
                                      not isinstance(data.get("programs"), list | None)):
        raise ValueError(SHAPES)
    return data


# A stored load's fields as from_json reads them: a number is an int or a float (never a bool
# or a string) and is read as a float, a count as an int, a name as its text; in memory a
# number keeps what the meter made of it (an int prints as an int).
Number = Annotated[int | float, BeforeValidator(_number)]
Whole = Annotated[int, BeforeValidator(_whole)]
Text = Annotated[str, BeforeValidator(str)]
Server = Annotated[Mapping[Text, Annotated[int | str, BeforeValidator(_pid_port_or_text)]] | None,
                   BeforeValidator(_server)]


@dataclass(frozen=True)
class Consumer:
    """One foreign process and the CPU it used during the window."""

    pid: Whole
    name: Text      # the process name (comm) only, never its command line: that may hold a password
    cpu_s: Number   # user + system, plus the children it reaped in the window

    def __post_init__(self) -> None:
        if self.cpu_s < 0:
            raise ValueError(f"consumer {self.pid} ({self.name}): cpu_s is not negative, got {self.cpu_s}")


@dataclass(frozen=True)
class Program:
    """The foreign processes of one program over the window, summed (issue 53, item 6): a
    process and its descendants of the same program (stress-ng and its stress-ng-cpu workers;
    a PostgreSQL server's postmaster and its backends). With ``server``, the program is a
    PostgreSQL server (``name`` postgres) or another benchmark: a client (``name`` pgbench)
    together with the server it drives, whose processes ``processes`` and ``cpu_s`` include."""

    name: Text       # the process name (comm) of its first process: never a command line
    pid: Whole       # its first process (the client's, for another benchmark)
    processes: Whole  # how many of its processes were alive at the end of the window
    cpu_s: Number
    server: Server = None  # {pid, port, datadir}: each when it was read

    def __post_init__(self) -> None:
        if self.cpu_s < 0 or self.processes < 1:
            raise ValueError(f"program {self.name} (pid {self.pid}): cpu_s is not negative and "
                             f"processes at least 1, got {self.cpu_s} and {self.processes}")


@dataclass(frozen=True)
class ForeignLoad:
    """What processes outside the trial used during its window (see the module docstring)."""

    window_s: Number
    cpu_s: Number                                 # CPU seconds of foreign user-space processes
    top: tuple[Consumer, ...] = ()                # the largest consumers, largest first
    memory: Mapping[Text, Number] = field(default_factory=dict)  # psi_some_ms, psi_full_ms, swap_*_pages
    # CPU seconds of the trial's own processes, and the CPUs the trial may use (this process's
    # affinity); None in what teiten stored before the relative rule (issue 33, item 4)
    own_cpu_s: Annotated[int | float | None, BeforeValidator(_number)] = None
    capacity: Annotated[int | None, BeforeValidator(_whole)] = None
    # The consumers by program, largest first; None in what teiten stored before (issue 53)
    programs: tuple[Program, ...] | None = None
    # The share of all CPU time the host took from this virtual machine over the window (steal,
    # /proc/stat), in percent; None where it was not read (what teiten stored before)
    steal_pct: Annotated[int | float | None, BeforeValidator(_number)] = None

    def __post_init__(self) -> None:
        if self.window_s < 0 or self.cpu_s < 0 or (self.own_cpu_s or 0) < 0:
            raise ValueError(f"foreign load: window_s, cpu_s and own_cpu_s are not negative, got "
                             f"{self.window_s}, {self.cpu_s} and {self.own_cpu_s}")
        if len(self.top) > TOP:
            raise ValueError(f"foreign load: at most {TOP} top consumers, got {len(self.top)}")
        if self.programs is not None and len(self.programs) > TOP:
            raise ValueError(f"foreign load: at most {TOP} programs, got {len(self.programs)}")
        if self.capacity is not None and self.capacity < 1:
            raise ValueError(f"foreign load: capacity is at least 1 CPU, got {self.capacity}")
        if self.steal_pct is not None and not 0 <= self.steal_pct <= 100:
            raise ValueError(f"foreign load: steal_pct is a percentage, got {self.steal_pct}")

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
        """The load as the store keeps it: its fields in their order, those it lacks (None)
        left out."""
        body: dict[str, object] = _foreign().dump_python(self, mode="json", exclude_none=True)
        return body

    @classmethod
    def from_json(cls, data: Mapping[str, object]) -> ForeignLoad:
        """A stored load; a malformed one is refused with the reason its check gives."""
        try:
            found: ForeignLoad = _foreign().validate_python(data)
        except ValidationError as exc:
            raise _refusal(exc) from None
        return found


class _ForeignKind(DetailsKind[ForeignLoad]):
    """A trial's ``foreign`` details: its load as :class:`ForeignLoad` writes and reads it (the
    fields it lacks left out of the body, a malformed body refused in its checks' words)."""

    def read(self, stored: Mapping[str, object]) -> ForeignLoad:
        return ForeignLoad.from_json(stored)

    def json(self, value: ForeignLoad) -> dict[str, object]:
        return value.to_json()


FOREIGN = _ForeignKind("foreign", ForeignLoad)


@cache
def _foreign() -> TypeAdapter[ForeignLoad]:
    """The reader and writer of a stored load, made once (on the first read or write)."""
    return TypeAdapter(Annotated[ForeignLoad, BeforeValidator(_shapes)])


def _refusal(exc: ValidationError) -> ValueError:
    """Why a stored load is refused: its first error, in its check's words where a check of
    this module (or a record's own) refused it."""
    first = exc.errors(include_url=False)[0]
    cause = first.get("ctx", {}).get("error")
    if isinstance(cause, ValueError):
        return cause
    where = ".".join(str(part) for part in first["loc"])
    return ValueError(f"foreign load: {where}: {first['msg']}")


LIMIT_CPUS = 0.25    # noise_guard.max_foreign_cpus by default
SPARE_FRACTION = 0.0  # noise_guard.spare_fraction by default: see Rule
STEAL_PCT = 2.0      # noise_guard.max_steal_pct by default: see Rule


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

    A trial is disturbed too when the host of this virtual machine took more than
    ``steal_pct`` percent of all CPU time over its window (steal: the vCPUs were ready and
    another guest, or the host, ran instead), which no process here shows. bench/steal.py
    measured on this project's 2-CPU virtual machine, in the sittings whose host was busy, that
    the trials' residual log TPS correlates with their window's steal (-0.64 to -0.71), and that
    leaving out the trials over 2% cut their SD from 16.6% to 12.2% (kept 92%) and from 13.3% to
    10.9% (kept 78%); on a quiet host no trial reached 2%.
    """

    limit_cpus: float = LIMIT_CPUS
    fraction: float = SPARE_FRACTION
    steal_pct: float = STEAL_PCT

    def limit(self, capacity: float | None, own: float | None) -> float:
        """The most foreign CPUs a trial that may use ``capacity`` CPUs and used ``own`` keeps
        undisturbed beside it (``limit_cpus`` when either is unknown)."""
        if self.fraction <= 0 or capacity is None or own is None:
            return self.limit_cpus
        return max(self.limit_cpus, self.fraction * max(capacity - own, 0.0))

    def limit_of(self, found: ForeignLoad) -> float:
        """The limit for the trial whose window ``found`` measured."""
        return self.limit(found.capacity, found.own_cpus)

    def stolen(self, found: ForeignLoad) -> bool:
        """Whether the host took more of the CPUs' time over ``found``'s window than the rule
        allows (never, where the steal was not read)."""
        return found.steal_pct is not None and found.steal_pct > self.steal_pct

    def quiet(self, found: ForeignLoad, limit: float) -> bool:
        """Whether a window is quiet: foreign CPUs within ``limit``, the host's steal within
        the rule's."""
        return found.cpus <= limit and not self.stolen(found)

    def before(self, clients: int, threads: int, capacity: int) -> float:
        """The limit a quiet moment before a trial of ``clients`` and ``threads`` is judged by:
        the trial's own use taken at its most (a busy backend per client and a busy pgbench
        thread each), so that a moment quiet enough for it is quiet enough for the trial."""
        return self.limit(capacity, min(capacity, clients + threads))

    @classmethod
    def of(cls, guard: Mapping[str, object]) -> Rule:
        """The rule of a study's ``noise_guard`` (its spec, as the store keeps it)."""
        return cls(limit_cpus=_number(guard.get("max_foreign_cpus", LIMIT_CPUS)),
                   fraction=_number(guard.get("spare_fraction", SPARE_FRACTION)),
                   steal_pct=_number(guard.get("max_steal_pct", STEAL_PCT)))


def who(found: ForeignLoad, lang: str = "en", rule: Rule | None = None) -> str:
    """The largest foreign programs with the CPUs each kept busy over the window, by process
    name (never a command line): "stress-ng (3 processes) 1.9 CPUs", "python3 (pid 812) 1.0
    CPUs", "another benchmark: pgbench against the server on port 5433 (data directory /x),
    1.2 CPUs". Idle ones are left out while a busier one is named, and so is pid 1 (it holds
    the orphans it reaped, not a program of its own). A load stored before programs were kept
    names its processes one by one. With the guard's ``rule``, a host that took more of the
    CPUs' time than it allows is named first ("the host of this virtual machine: steal 4.6% of
    the CPU time ..."), and then the programs only where any used CPU."""
    window = found.window_s or 1.0
    host = [tr("foreign.steal", lang, pct=f"{found.steal_pct:.1f}", limit=f"{rule.steal_pct:g}")
            ] if rule is not None and rule.stolen(found) else []
    if found.programs is not None:
        named = [p for p in found.programs if p.pid != 1]
        busy = [p for p in named if p.cpu_s / window >= NAMED_MIN_CPUS]
        names = [program_text(p, window, lang) for p in (busy or ([] if host else named))[:NAMED]]
    else:
        consumers = [c for c in found.top if c.pid != 1]
        busy_ones = [c for c in consumers if c.cpu_s / window >= NAMED_MIN_CPUS]
        names = [tr("foreign.one", lang, name=c.name, pid=c.pid, cpus=f"{c.cpu_s / window:.1f}")
                 for c in (busy_ones or ([] if host else consumers))[:NAMED]]
    return tr("list.sep", lang).join(host + names) or "?"


def program_text(p: Program, window_s: float, lang: str = "en") -> str:
    """One program as :func:`who` names it."""
    cpus = f"{p.cpu_s / window_s:.1f}" if window_s > 0 else "0.0"
    if p.server is None:
        if p.processes == 1:
            return tr("foreign.one", lang, name=p.name, pid=p.pid, cpus=cpus)
        return tr("foreign.many", lang, name=p.name, n=p.processes, cpus=cpus)
    port, datadir = p.server.get("port"), p.server.get("datadir")
    if port is not None and datadir is not None:
        server = tr("foreign.server_at", lang, port=port, datadir=datadir)
    elif port is not None or datadir is not None:
        server = tr("foreign.server_port" if port is not None else "foreign.server_dir", lang,
                    port=port, datadir=datadir)
    else:
        server = tr("foreign.server_pid", lang, pid=p.server.get("pid", "?"))
    if p.name == POSTGRES:
        return tr("foreign.postgres" if p.processes > 1 else "foreign.postgres_one", lang,
                  server=server, n=p.processes, cpus=cpus)
    return tr("foreign.benchmark", lang, client=p.name, server=server, cpus=cpus)


POSTGRES = "postgres"  # the process name of a PostgreSQL server's processes


def disturbance(found: ForeignLoad, rule: Rule) -> str | None:
    """Why a trial is disturbed, or None: processes outside it used more CPUs than ``rule``
    allows beside it, on average over its window, or the host took more of the CPUs' time."""
    limit = rule.limit_of(found)
    if found.cpus <= limit:
        if not rule.stolen(found):
            return None
        return tr("reason.stolen", "en", pct=f"{found.steal_pct:.1f}", window=f"{found.window_s:.0f}",
                  limit=f"{rule.steal_pct:g}")
    own = found.own_cpus
    if rule.fraction <= 0 or found.capacity is None or own is None:
        return tr("reason.disturbed", "en", cpus=f"{found.cpus:.2f}",
                  window=f"{found.window_s:.0f}", limit=f"{limit:g}", who=who(found, rule=rule))
    return tr("reason.disturbed_spare", "en", cpus=f"{found.cpus:.2f}",
              window=f"{found.window_s:.0f}", limit=f"{limit:.2f}", own=f"{own:.2f}",
              capacity=found.capacity, fraction=f"{rule.fraction:g}",
              floor=f"{rule.limit_cpus:g}", who=who(found, rule=rule))


def run_choice(stored: StudyResults, in_file: bool, given: bool | None) -> tuple[bool, str | None]:
    """Whether the noise guard is on for this run, and the note that says it changed (issue 53,
    item 6): a resumed study keeps the guard its run before had (stored with the study) unless
    --noise-guard or TEITEN_NOISE_GUARD says otherwise, and then the note says so; a first run
    has what is given, else the study file's."""
    before = stored.record.guard_enabled() if stored.record.noise_guard is not None else None
    enabled = given if given is not None else before if before is not None else in_file
    if before is None or enabled == before:
        return enabled, None
    ran = sum(1 for t in stored.trials if t.status not in ("planned", "running"))  # running: cut short
    return enabled, tr("guard.changed", now=tr("on" if enabled else "off"),
                       was=tr("on" if before else "off"), n=ran)
