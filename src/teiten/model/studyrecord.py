"""The stored study as a typed record: what a study was run with and what was decided while it
ran, read once from the store's ``studies.spec_json`` (docs/DESIGN.md, "The store").

``spec_json`` is one JSON object. :mod:`teiten.run.record` writes ``study`` (the study file's
parameters, every field with its default), ``pgbench`` (the one client that drives every
server), ``workloads`` (each as its kind recorded it) and ``omitted`` (optional servers left
out, and why) before the first trial; the run adds ``noise_guard`` (the guard it ran with),
``beside_others``, ``testbed``, ``quiet_check``, ``joined_by`` (runs that started beside it),
``runs`` (each run's clock), ``guard_runs`` (each run's start and whether its noise guard was
on, written before its first trial: the trials a run started are the guarded ones or not),
``auto_decisions`` (repetitions: auto) and ``more_blocks`` (what
``teiten resume --more-blocks`` granted beyond the ceiling and budget). A key an older store
lacks reads as its default here, so that nothing downstream asks which teiten wrote it.
Analysis and report read :class:`StudyRecord`, never the JSON's keys; writers name the keys
they set by the constants below.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Generic, Literal, TypeVar

if TYPE_CHECKING:
    from pydantic import TypeAdapter

T = TypeVar("T")

# The keys a run adds to a stored study (store.update_spec).
NOISE_GUARD = "noise_guard"
BESIDE_OTHERS = "beside_others"
TESTBED = "testbed"
QUIET_CHECK = "quiet_check"
JOINED_BY = "joined_by"
RUNS = "runs"
AUTO_DECISIONS = "auto_decisions"
MORE_BLOCKS = "more_blocks"  # blocks granted by teiten resume --more-blocks: [{after, blocks}]
GUARD_RUNS = "guard_runs"  # each run's noise guard: [{since, enabled}] (issue 53, item 6)


@dataclass(frozen=True)
class _Reader(Generic[T]):
    """Reads a stored body into ``record`` by its fields' names, as teiten.model.details reads a
    trial's details: a key the record does not name is left out, one it names and the store
    lacks takes its default; a body that does not fit raises pydantic's ValidationError (a
    ValueError) naming the field."""

    record: type[T]

    @cached_property
    def _adapter(self) -> TypeAdapter[T]:
        from pydantic import TypeAdapter  # late: the store imports this module; pydantic loads on a read

        return TypeAdapter(self.record)

    def __call__(self, stored: Mapping[str, object]) -> T:
        return self._adapter.validate_python(dict(stored))


@dataclass(frozen=True)
class Append:
    """A change of :meth:`teiten.store.Store.update_spec` that adds ``entry`` at the end of the
    list under its key, read and written in the same transaction (two runs that add at once
    both keep theirs)."""

    entry: Mapping[str, object]


def changed(before: object, change: object) -> object:
    """A stored key's new value: ``change``, or the list ``before`` with an :class:`Append`'s
    entry added (a key that held no list starts one)."""
    if isinstance(change, Append):
        return [*(before if isinstance(before, list) else []), dict(change.entry)]
    return change


@dataclass(frozen=True)
class Grant:
    """Blocks that ``teiten resume --more-blocks`` granted: up to ``blocks`` more after block
    ``after``, past the ceiling and the time budget."""

    after: int
    blocks: int


@dataclass(frozen=True)
class GuardRun:
    """A run of the study (the first or a resume), from ``since`` (the store's UTC timestamp),
    and whether its noise guard was on."""

    since: str
    enabled: bool


@dataclass(frozen=True)
class Resolved:
    """An install as teiten resolved it before the first trial (:mod:`teiten.run.record`): the
    ``ref`` the study file gave, the ``version`` found, where it came from (``origin``), its
    ``bindir``, and a source build's identity (``build``: its key and git identity, as
    :func:`teiten.run.record.build_of` wrote it). A server's ``resolved`` holds them all; the
    study's ``pgbench`` has no origin and no build; an older store may lack any of them."""

    ref: str | None = None
    version: str | None = None
    origin: str | None = None
    bindir: str | None = None
    build: Mapping[str, object] | None = None


@dataclass(frozen=True)
class StoredRun:
    """A run's own wall time (teiten.run.runclock.keep): ``seconds`` by part (start, setup,
    load data, quiet check, trials, finish); ``trials_run`` is None for a run kept before it
    was counted."""

    wall_s: float
    clusters_loaded: int
    trials_run: int | None
    seconds: Mapping[str, float]


@dataclass(frozen=True)
class AutoDecision:
    """What ``repetitions: auto`` decided after a block, as :func:`teiten.run.blocks.after_blocks`
    wrote it: the blocks run, the decision, the trials of the block it added, the widest ratio's
    interval (%), the blocks it projected to decide every open ratio, and a ceiling raised by
    ``teiten resume --more-blocks``; what a store of before lacks reads as its default."""

    blocks: int
    decision: str = ""
    trials: int = 0
    widest_pct: float | None = None
    to_decide: int | None = None
    ceiling: int | None = None


@dataclass(frozen=True)
class AutoRule:
    """The rule of ``repetitions: auto`` as the study stored it (``auto_repetitions``): what a
    store lacks reads as None (``settle``: on), the report showing it as stored."""

    target_pct: int | float | None = None
    floor: int | None = None
    ceiling: int | None = None
    settle: bool = True  # stop a ratio on the decision too (auto_repetitions.settle)


@dataclass(frozen=True)
class Parameters:
    """The study's parameters as stored (the study file with its defaults). ``fields`` holds
    every one of them, for what compares studies field by field; the rest are the ones the
    report reads. ``margin_pct`` is None in a store from before the margin existed."""

    clients: tuple[int, ...]
    duration_s: float
    repetitions: int | Literal["auto"]
    scale: int
    order: str
    seed: int
    description: str
    margin_pct: float | None
    tenants: tuple[tuple[str, ...], ...]
    environments: bool
    fields: Mapping[str, object]
    settles: bool = True  # repetitions: auto stops a ratio on the decision too (auto_repetitions.settle)
    auto_repetitions: AutoRule = field(default_factory=AutoRule)

    def of_some_servers(self) -> dict[str, object]:
        """The study's fields for a study restricted to some of its servers: without its groups
        of tenants or its environments, which name servers it may no longer hold."""
        return {k: v for k, v in self.fields.items() if k not in ("tenants", "environments")}

    @classmethod
    def from_json(cls, study: Mapping[str, object]) -> Parameters:
        reps = study.get("repetitions", 1)
        margin = study.get("margin_pct")
        rule = _AUTO_RULE(_mapping(study.get("auto_repetitions")))
        return cls(
            clients=tuple(_int(c) for c in _list(study.get("clients"))),
            duration_s=_float(study.get("duration") or 0),
            repetitions="auto" if reps == "auto" else _int(reps),
            scale=_int(study.get("scale") or 0), order=str(study.get("order") or ""),
            seed=_int(study.get("seed") or 0), description=str(study.get("description") or ""),
            margin_pct=_float(margin) if margin else None,
            tenants=tuple(tuple(str(m) for m in _list(g)) for g in _list(study.get("tenants"))),
            environments=bool(study.get("environments")), fields=dict(study),
            settles=rule.settle, auto_repetitions=rule)


@dataclass(frozen=True)
class WorkloadRecord:
    """One workload as its kind recorded it: ``key`` names it in trials, ``scripts`` are a
    pgbench workload's (file, weight), ``suite`` a measured-statement suite's name (None for
    pgbench's), and ``fields`` the whole record, for the kind that describes it."""

    key: str
    scripts: tuple[tuple[str, int], ...]
    suite: str | None
    fields: Mapping[str, object]

    @classmethod
    def from_json(cls, w: Mapping[str, object]) -> WorkloadRecord:
        return cls(key=str(w["key"]),
                   scripts=tuple((str(f), _int(n)) for f, n in map(_pair, _list(w.get("scripts")))),
                   suite=str(suite) if (suite := w.get("suite")) else None, fields=dict(w))

    @property
    def options(self) -> dict[str, object]:
        """The workload's options as its kind stored them (a suite's, an application's)."""
        found = self.fields.get("options")
        return dict(found) if isinstance(found, Mapping) else {}


@dataclass(frozen=True)
class Placement:
    """The CPUs a confined server ran on (``cores`` or ``cpus``), and its client's; written in
    this order by :func:`teiten.run.record.create`."""

    cpus: str
    cores: int = 0
    client_cpus: str = "any"  # pgbench's CPUs, or "any"


# The limits a server can be held to (``limits`` of a server): its memory, and its I/O.
LIMITS = ("memory", "read_iops", "write_iops", "read_bps", "write_bps")


@dataclass(frozen=True)
class ServerSetup:
    """A server as a study stored it (``servers.spec_json``): the study file's entry with its
    defaults, plus what teiten resolved before the first trial: ``version`` and ``build`` of
    the install it resolved (``build``: a source build's key and git identity, as
    :func:`teiten.run.record.build_of` wrote it) and its ``placement``. ``fields`` is all of it,
    for what compares servers as a whole."""

    version: str | None
    build: Mapping[str, object] | None
    placement: Placement | None
    limits: Mapping[str, object]
    replicas: int
    replication: str
    synchronous_commit: str | None
    pgpool: bool
    profile: str | None
    fields: Mapping[str, object]
    # The dotted keys the study file wrote (teiten.run.record.server_spec); None: a store from before
    # they were kept, where every field counts as written.
    written: frozenset[str] | None = None
    resolved: Resolved | None = None  # the install it resolved; None in a spec not yet stored
    install: str | None = None  # the study file's install (what resolved it)

    def limit_values(self) -> dict[str, int]:
        """The memory and I/O limits it ran with, one value each (a sweep made one server per
        value), in the order the study file wrote them."""
        return {k: _int(v[0] if isinstance(v, list) else v) for k, v in self.limits.items()
                if k in LIMITS and v is not None}

    @classmethod
    def from_json(cls, spec: Mapping[str, object]) -> ServerSetup:
        stored = spec.get("resolved")
        resolved = _RESOLVED(_mapping(stored)) if stored else None
        placed = _mapping(spec.get("placement"))
        commit, profile = spec.get("synchronous_commit"), spec.get("profile")
        written, install = spec.get("written"), spec.get("install")
        return cls(
            version=str(resolved.version) if resolved and resolved.version else None,
            build=(resolved.build or None) if resolved else None,
            placement=_PLACEMENT(placed) if placed else None,
            limits=dict(_mapping(spec.get("limits"))), replicas=_int(spec.get("replicas") or 0),
            replication=str(spec.get("replication") or "async"),
            synchronous_commit=str(commit) if commit is not None else None,
            pgpool=bool(spec.get("pgpool")), profile=str(profile) if profile else None,
            fields=dict(spec),
            written=frozenset(str(k) for k in _list(written)) if written is not None else None,
            resolved=resolved, install=str(install) if install is not None else None)


@dataclass(frozen=True)
class Omitted:
    """An optional server left out before the first trial, and why."""

    server: str
    reason: str


@dataclass(frozen=True)
class Joined:
    """A run of another study that started beside this one (``--beside-others``)."""

    study: str
    store: str
    pid: int
    since: str
    trial: str


@dataclass(frozen=True)
class StudyRecord:
    """What a study was run with and what was decided while it ran (module docstring)."""

    parameters: Parameters
    pgbench: Resolved | None  # {ref, version, bindir}; None before one drove all
    workloads: tuple[WorkloadRecord, ...]
    omitted: tuple[Omitted, ...]
    beside_others: bool
    joined_by: tuple[Joined, ...]
    auto_decisions: tuple[Mapping[str, object], ...]
    more_blocks: tuple[Grant, ...]
    runs: tuple[StoredRun, ...]
    noise_guard: Mapping[str, object] | None  # the guard's spec as it ran (NoiseGuardSpec, with enabled)
    quiet_check: Mapping[str, object] | None  # the foreign load before the first trial (guard.ForeignLoad)
    testbed: str | None
    guard_runs: tuple[GuardRun, ...] = ()

    @classmethod
    def from_json(cls, spec: Mapping[str, object]) -> StudyRecord:
        guard, quiet, testbed = spec.get(NOISE_GUARD), spec.get(QUIET_CHECK), spec.get(TESTBED)
        pgbench = spec.get("pgbench")
        return cls(
            parameters=Parameters.from_json(_mapping(spec.get("study"))),
            pgbench=_RESOLVED(pgbench) if isinstance(pgbench, Mapping) else None,
            workloads=tuple(WorkloadRecord.from_json(_mapping(w)) for w in _list(spec.get("workloads"))),
            omitted=tuple(_OMITTED(_mapping(o)) for o in _list(spec.get("omitted"))),
            beside_others=bool(spec.get(BESIDE_OTHERS)),
            joined_by=tuple(_JOINED(_mapping(j)) for j in _list(spec.get(JOINED_BY))),
            auto_decisions=_mappings(spec.get(AUTO_DECISIONS)),
            more_blocks=tuple(Grant(_int(g.get("after") or 0), _int(g.get("blocks") or 0))
                              for g in _mappings(spec.get(MORE_BLOCKS))),
            runs=tuple(_run(r) for r in _mappings(spec.get(RUNS))),
            noise_guard=guard if isinstance(guard, Mapping) else None,
            quiet_check=quiet if isinstance(quiet, Mapping) else None,
            testbed=str(testbed) if testbed else None,
            guard_runs=tuple(_GUARD_RUN(r)
                             for r in _mappings(spec.get(GUARD_RUNS)) if "since" in r and "enabled" in r))

    def last_decision(self) -> AutoDecision | None:
        """repetitions: auto's last decision; None before the first."""
        return _AUTO_DECISION(self.auto_decisions[-1]) if self.auto_decisions else None

    def granted_until(self) -> int | None:
        """The block up to which ``teiten resume --more-blocks`` lets the study go on, past its
        ceiling and its time budget; None when none was granted."""
        ends = [g.after + g.blocks for g in self.more_blocks]
        return max(ends) if ends else None

    def guard_enabled(self) -> bool:
        """The noise guard was on (a guard recorded without ``enabled`` was)."""
        return self.noise_guard is not None and bool(self.noise_guard.get("enabled", True))

    def guarded(self, started_at: str | None) -> bool | None:
        """Whether the noise guard was on for a trial that started at ``started_at`` (the
        store's UTC timestamp): the guard of the last run that began by then. None when that
        cannot be told: a trial that never started, or a study run before runs kept their guard
        (then the one guard recorded, if any, is every trial's)."""
        if started_at is None:
            return None
        runs = sorted((r.since, r.enabled) for r in self.guard_runs)
        if not runs:
            return self.guard_enabled() if self.noise_guard is not None else None
        began = [enabled for since, enabled in runs if since <= started_at]
        return began[-1] if began else runs[0][1]

    def guard_mixed(self) -> bool:
        """Some runs of the study had the noise guard on and others off."""
        return len({r.enabled for r in self.guard_runs}) > 1


def _run(r: Mapping[str, object]) -> StoredRun:
    counted = r.get("trials_run")
    return StoredRun(_float(r.get("wall_s") or 0.0), _int(r.get("clusters_loaded") or 0),
                     None if counted is None else _int(counted),
                     {str(k): _float(v) for k, v in _mapping(r.get("seconds")).items()})


def _mappings(value: object) -> tuple[Mapping[str, object], ...]:
    if not isinstance(value, Sequence) or isinstance(value, str):
        return ()
    return tuple(v for v in value if isinstance(v, Mapping))


_RESOLVED = _Reader(Resolved)
_AUTO_RULE = _Reader(AutoRule)
_AUTO_DECISION = _Reader(AutoDecision)
_PLACEMENT = _Reader(Placement)
_OMITTED = _Reader(Omitted)
_JOINED = _Reader(Joined)
_GUARD_RUN = _Reader(GuardRun)


# A stored body's values, read as what they hold: what does not fit raises TypeError, as int(),
# float() and iterating did when these were read untyped.
def _int(value: object) -> int:
    if isinstance(value, int | float | str):
        return int(value)
    raise TypeError(f"a stored study holds {value!r} where a number belongs")


def _float(value: object) -> float:
    if isinstance(value, int | float | str):
        return float(value)
    raise TypeError(f"a stored study holds {value!r} where a number belongs")


def _list(value: object) -> Sequence[object]:
    """A stored list; () for none (null, or a key an older store lacks)."""
    if not value:
        return ()
    if isinstance(value, list | tuple):
        return value
    raise TypeError(f"a stored study holds {value!r} where a list belongs")


def _pair(value: object) -> tuple[object, object]:
    """A stored pair ([file, weight])."""
    if isinstance(value, list | tuple) and len(value) == 2:
        return value[0], value[1]
    raise TypeError(f"a stored study holds {value!r} where a pair belongs")


def _mapping(value: object) -> Mapping[str, object]:
    """A stored object; {} for none (null, or a key an older store lacks)."""
    if not value:
        return {}
    if isinstance(value, Mapping):
        return value
    raise TypeError(f"a stored study holds {value!r} where an object belongs")
