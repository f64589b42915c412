"""A study: its servers, workloads and the matrix they make, with what to profile."""

from __future__ import annotations

import itertools
from typing import Annotated, Literal

from pydantic import Field, field_validator, model_validator

from teiten.host.cpus import format_list, parse_list
from teiten.spec.base import MAX_SCALE, NAME, AtMost, BudgetSeconds, Model, TrialSeconds
from teiten.spec.servers import LoadClientSpec, ServerSpec, limit_name
from teiten.spec.workloads import WorkloadSpec

# The bounds of a study's numbers (docs/guide/study-files.md, "Bounds"): what no benchmark of one machine
# comes near, and what every program and column downstream holds.
MAX_CLIENTS = 10_000  # pgbench -c and -j
MAX_REPETITIONS = 1000  # blocks, whether given or auto's floor and ceiling
MAX_SEED = (1 << 63) - 1  # a store's INTEGER


class ProfilePoint(Model):
    """Which points to profile; a key left out matches every value."""

    server: str | None = None
    workload: str | None = None
    clients: Annotated[int, Field(ge=1), AtMost(MAX_CLIENTS, "1")] | None = None


class ProfileSpec(Model):
    """perf profiles of the server during the measured window of chosen trials."""

    at: Literal["points", "largest-difference"] = Field(
        "points", description="points: profile one repetition of the chosen points, inside "
        "the blocks; largest-difference: after the blocks, profile each workload's point where "
        "a server differs most from the baseline (its peak with one server), every server "
        "there, in extra trials that no figure counts")
    points: list[ProfilePoint] = Field(
        default_factory=lambda: [ProfilePoint()],
        description="the (server, workload, clients) points to profile; default: all")
    repetition: Annotated[int, Field(ge=1), AtMost(MAX_REPETITIONS, "1")] = Field(
        1, description="which repetition of each point is profiled (the others are not, so "
        "that the profiler's own cost stays out of the medians' other samples)")

    @model_validator(mode="after")
    def _one_way(self) -> ProfileSpec:
        if self.at == "largest-difference" and self.model_fields_set & {"points", "repetition"}:
            raise ValueError("'at: largest-difference' chooses the point itself; remove "
                             "'points' and 'repetition' (or the 'at')")
        return self
    event: str = Field("auto", description="perf event; auto: cycles where the hardware "
                       "counts them, else the cpu-clock software event")
    frequency: Annotated[int, Field(ge=1, le=20000)] = 99

    def wants(self, server: str, workload: str, clients: int, repetition: int,
              purpose: str = "") -> bool:
        if self.at == "largest-difference" or purpose:
            return self.at == "largest-difference" and purpose == "profile"
        return repetition == self.repetition and any(
            (p.server in (None, server)) and (p.workload in (None, workload))
            and (p.clients in (None, clients)) for p in self.points)


TARGET_OF_MARGIN = 0.6  # repetitions: auto's default target, as a share of the margin


def stop_target(target_pct: float | None, margin_pct: float) -> float:
    """The half-width repetitions: auto stops at: the study's, else 0.6 times its margin
    (tests/unit/test_stopping_coverage.py: equal servers then end "no difference" in most
    studies, bench/stopping_coverage.py gives the table)."""
    return target_pct if target_pct is not None else TARGET_OF_MARGIN * margin_pct


class AutoRepetitions(Model):
    """``repetitions: auto``: blocks (repetition sets) are added one at a time until every
    ratio to the baseline has an interval within ±target_pct of it, judged at the level the
    report's comparisons need (at least 99%; teiten.analysis.stopping says why), the ceiling is
    reached, or the next block would overrun the budget. The study stops on the width of the
    intervals, never on a test being significant (which would inflate false verdicts); the
    report says which ended it. The target is chosen with the study's margin_pct: an interval
    of ±3% can lie inside ±5%, one of ±5% seldom does."""

    target_pct: Annotated[float, Field(gt=0, le=100)] | None = Field(
        None, description="stop when every ratio's interval is within ± this many percent; "
        "default: 0.6 times margin_pct (3 for the default margin of 5), so that equal servers "
        "can end 'no difference within ±margin_pct'")
    floor: Annotated[int, Field(ge=3), AtMost(MAX_REPETITIONS, "3")] = Field(
        8, description="blocks run before the first decision (at least 3; the rule judges "
        "intervals of at least 99%, which need 8 blocks)")
    ceiling: Annotated[int, Field(ge=3), AtMost(MAX_REPETITIONS, "3")] = Field(
        16, description="never more blocks than this")
    budget: BudgetSeconds = Field(
        3600.0, description="no block is added that would end after this much time spent in "
        "trials: seconds, or a string like 10min")
    settle: bool = Field(
        True, description="a ratio also stops getting blocks once its verdict cannot change "
        "(its interval wholly beyond or within ±margin_pct); false: only on width, so that every "
        "interval reaches ±target_pct (teiten bisect's steps, which judge a contrast of their "
        "three servers, not each ratio)")

    @model_validator(mode="after")
    def _order(self) -> AutoRepetitions:
        if self.ceiling < self.floor:
            raise ValueError(f"ceiling {self.ceiling} is below floor {self.floor}; give a "
                             "ceiling at least as large")
        return self


class NoiseGuardSpec(Model):
    """The noise guard: every trial measures the CPU that processes outside it (everything
    but the server's processes, pgbench and teiten) used during its measured window, and the
    CPU time the host of a virtual machine took from it (steal). A trial over either limit is
    kept, marked disturbed, left out of the analysis and repeated in its block
    (teiten.host.guard.Rule)."""

    enabled: bool = Field(True, description="measure and act on foreign load (off: measure "
                          "nothing; 'teiten run --noise-guard off' also turns it off)")
    max_foreign_cpus: Annotated[float, Field(gt=0, le=4096)] = Field(
        0.25, description="a trial is disturbed when processes outside it used more CPUs than "
        "this, on average over its window")
    spare_fraction: Annotated[float, Field(ge=0, le=1)] = Field(
        0.0, description="above 0: a trial may also keep beside it foreign load up to this share "
        "of the CPUs it left idle (the CPUs it may use less those it kept busy), where that is "
        "more than max_foreign_cpus. 0 by default: on a 2-CPU virtual machine a tenth of a CPU "
        "shifted a 1-client trial by 30% (python -m bench.guard_calibration measures a machine)")
    max_steal_pct: Annotated[float, Field(gt=0, le=100)] = Field(
        2.0, description="a trial is disturbed too when the host of this virtual machine took "
        "more than this percentage of all CPU time over its window (steal, which no process here "
        "shows; python -m bench.steal measures how much of a store's noise it explains)")
    repeats: Annotated[int, Field(ge=0, le=10)] = Field(
        2, description="how often a disturbed trial is repeated in its block (the last "
        "disturbed one is kept, and its point has one measurement fewer)")


class TrialsSpec(Model):
    """How each point's trials meet the data (METHODS S2, the 2014 shape: three runs on the
    same data with a CHECKPOINT between them and no restore)."""

    restore: Literal["each", "first"] = Field(
        "each", description="each: a trial that follows one that changed the data starts on "
        "restored data; first: each point's repetitions run back to back as a series, only the "
        "first on restored data, the later ones on the data the runs before them changed "
        "(after a CHECKPOINT), and ratios pair like-numbered runs")


class Study(Model):
    """A study: servers x workloads x clients x repetitions, run in a seeded order."""

    study: Annotated[str, Field(pattern=NAME)]
    description: str = ""
    servers: Annotated[list[ServerSpec], Field(min_length=1)]
    workloads: Annotated[list[WorkloadSpec], Field(min_length=1)]
    scale: Annotated[int, Field(ge=1), AtMost(MAX_SCALE, "1")] = 10
    clients: Annotated[list[Annotated[int, Field(ge=1), AtMost(MAX_CLIENTS, "1")]],
                       Field(min_length=1)] = [1]
    threads: Literal["half"] | Annotated[int, Field(ge=1), AtMost(MAX_CLIENTS, "1")] = "half"
    duration: TrialSeconds = Field(
        60.0, description="length of each measured run: seconds, or a string like 5s or 5min")
    repetitions: Annotated[int, Field(ge=1, le=1000)] | Literal["auto"] = Field(
        3, description="blocks (repetition sets) of every point; auto: add blocks until every "
        "ratio is known within auto_repetitions.target_pct")
    auto_repetitions: AutoRepetitions = Field(
        default_factory=AutoRepetitions,  # type: ignore[arg-type]
        description="with repetitions: auto, when to stop adding blocks")
    margin_pct: Annotated[float, Field(gt=0, le=50)] = Field(
        5.0, description="a ratio whose interval lies within ± this many percent of 100% is "
        "reported as no difference; one that lies wholly above or below 100% as faster or slower; "
        "anything else as cannot tell")
    order: Literal["random", "pairs", "sequential"] = Field(
        "random", description="the order of the trials within each block: random; pairs (random, "
        "with the servers of each point back to back, so that a ratio's two trials run seconds "
        "apart); or sequential (as written)")
    seed: Annotated[int, Field(ge=0), AtMost(MAX_SEED, "0")] = 0
    prewarm: bool = Field(True, description="pg_prewarm the workload's relations before each trial")
    trials: TrialsSpec = Field(
        default_factory=TrialsSpec,  # type: ignore[arg-type]
        description="how each point's trials meet the data (restore: each or first)")
    restart: Literal["every-trial", "after-changes"] = Field(
        "every-trial", description="restart a local server before every trial, or only after a "
        "trial that changed its data (PGECons restarted only for updates): a read-only trial "
        "then starts on the server the read-only trial before it left running, when it is the "
        "same server and workload; every trial records which")
    connect: Literal["socket", "tcp"] = Field(
        "socket", description="how pgbench reaches local clusters: unix socket or TCP loopback")
    profile: ProfileSpec | None = Field(
        None, description="take perf profiles (flame graphs) of chosen points")
    cores: Annotated[list[Annotated[int, Field(ge=1, le=4096)]], Field(min_length=1)] | None = Field(
        None, description="an axis: every local server is run at each of these core counts, "
        "as servers named NAME-1core, NAME-2cores, ...")
    pgbench: str | None = Field(
        None, description="the install whose pgbench drives every server of the study (a "
        "version such as 18, a name or a bindir); default: the newest of the study's own "
        "installs that has pgbench, else the newest on this machine")
    client_cpus: str = Field(
        "any", description="where pgbench runs when servers are confined to cores: any (not "
        "pinned), same (the server's CPUs), others (the CPUs the server does not use), or a "
        "CPU list such as 2-3")
    load_clients: Annotated[list[LoadClientSpec], Field(min_length=1)] | None = Field(
        None, description="the machines pgbench runs on, all at once: each runs one pgbench "
        "(with the trial's clients) against every node; unset: this machine only")
    environments: bool = Field(
        False, description="the servers are environments of the same PostgreSQL (METHODS S5): "
        "the report gives each one's degradation against the first, with the CPU breakdown")
    tenants: list[list[str]] | None = Field(
        None, description="groups of servers loaded at once (METHODS S5: two guests at once; "
        "noisy neighbours): each server of a group gets its own pgbench with the trial's "
        "clients, all started together, in trials beside the servers' own, in the same blocks; "
        "the report gives each one's degradation against running alone")
    noise_guard: NoiseGuardSpec = Field(
        default_factory=NoiseGuardSpec,  # type: ignore[arg-type]
        description="detect trials disturbed by other load on the machine, and repeat them")

    @field_validator("clients", mode="before")
    @classmethod
    def _clients_list(cls, value: object) -> object:
        if isinstance(value, int) and not isinstance(value, bool):
            raise ValueError(f"write a list of client counts, e.g. clients: [{value}]")
        return value

    @field_validator("repetitions", mode="before")
    @classmethod
    def _repetitions(cls, value: object) -> object:
        """A count or auto, checked here so that a bad one gets one plain message (not one per
        member of the union)."""
        if value == "auto":
            return value
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValueError(f"got {value!r}; write a number of repetitions or auto")
        if value < 1:
            raise ValueError(f"input should be greater than or equal to 1 (got {value})")
        if value > MAX_REPETITIONS:
            raise ValueError(f"{value} is out of range; allowed: 1 to {MAX_REPETITIONS}, or auto")
        return value

    @field_validator("threads", mode="before")
    @classmethod
    def _threads(cls, value: object) -> object:
        if isinstance(value, int) and not isinstance(value, bool) and value > MAX_CLIENTS:
            raise ValueError(f"{value} is out of range; allowed: half, or 1 to {MAX_CLIENTS}")
        if value == "half" or (isinstance(value, int) and not isinstance(value, bool) and value >= 1):
            return value
        raise ValueError(f"got {value!r}; write 'half' (clients/2) or a number of threads >= 1")


    @field_validator("clients")
    @classmethod
    def _unique_clients(cls, value: list[int]) -> list[int]:
        dupes = sorted({n for n in value if value.count(n) > 1})
        if dupes:
            raise ValueError(f"{dupes[0]} appears twice; list each client count once")
        return value

    @field_validator("client_cpus")
    @classmethod
    def _client_cpus(cls, value: str) -> str:
        if value in ("any", "same", "others"):
            return value
        try:
            return format_list(parse_list(value))
        except ValueError as exc:
            raise ValueError(f"{exc}; or write any, same or others") from None

    @model_validator(mode="after")
    def _core_axis(self) -> Study:
        if self.cores is not None:
            dupes = sorted({n for n in self.cores if self.cores.count(n) > 1})
            if dupes:
                raise ValueError(f"'cores' lists {dupes[0]} twice; list each core count once")
            fixed = [s.name for s in self.servers if s.cores is not None or s.cpus is not None]
            if fixed:
                raise ValueError(f"'cores' is an axis for every server, but server {fixed[0]} "
                                 "sets its own cores or cpus; drop one of them")
        if self.load_clients is not None:
            names = [c.name for c in self.load_clients]
            named = sorted({n for n in names if names.count(n) > 1})
            if named:
                raise ValueError(f"load client '{named[0]}' is listed twice; give each a name "
                                 "of its own")
        if self.environments and len(self.servers) < 2:
            raise ValueError("'environments' compares servers: list two or more")
        self._check_tenants()
        if self.series and self.repetitions == "auto":
            raise ValueError("trials: {restore: first} runs each point's repetitions as one series "
                             "on changing data, which repetitions: auto cannot add to; give a "
                             "number of repetitions")
        if self.series and self.tenants:
            raise ValueError("trials: {restore: first} keeps one server's data between runs; "
                             "'tenants' load several at once: remove one of them")
        if "auto_repetitions" in self.model_fields_set and self.repetitions != "auto":
            raise ValueError("'auto_repetitions' applies to repetitions: auto; remove it or "
                             "write repetitions: auto")
        return self

    def _check_tenants(self) -> None:
        by_name = {s.name: s for s in self.servers}
        groups = [tuple(g) for g in self.tenants or []]
        if twice := sorted({"+".join(g) for g in groups if groups.count(g) > 1}):
            raise ValueError(f"'tenants' lists the group {twice[0]} twice; list each group once")
        if groups and self.repetitions == "auto":
            raise ValueError("repetitions: auto stops on the servers' ratios, not on the "
                             "tenants' degradations; with 'tenants', give a number of repetitions")
        for group in self.tenants or []:
            if len(group) < 2:
                raise ValueError(f"a group of 'tenants' loads two servers or more at once; "
                                 f"[{', '.join(group)}] has {len(group)}")
            if self.cores is not None:
                raise ValueError("'tenants' names servers, and the 'cores' axis renames them; "
                                 "give each server its own cores instead")
            if self.load_clients is not None:
                raise ValueError("'tenants' loads each server from this machine; remove "
                                 "'load_clients' or 'tenants'")
            for name in group:
                if name not in by_name:
                    raise ValueError(f"'tenants' names server '{name}', which is not in "
                                     f"'servers' ({', '.join(by_name)})")
                if group.count(name) > 1:
                    raise ValueError(f"'tenants' lists server '{name}' twice in one group")
                if by_name[name].replicas or by_name[name].pgpool:
                    raise ValueError(f"server '{name}' has several nodes, which 'tenants' cannot "
                                     "load as one tenant; give it alone")
            if "+".join(group) in by_name:
                raise ValueError(f"a server is named '{'+'.join(group)}', the name of a "
                                 "tenants group; rename it")

    def tenant_groups(self) -> list[tuple[str, list[str]]]:
        """Each group of tenants, with its name (its servers joined by +, e.g. guest1+guest2),
        in the order written."""
        return [("+".join(g), list(g)) for g in self.tenants or []]

    def points(self) -> list[str]:
        """What a trial loads: every server of the matrix, then every group of tenants."""
        return [s.name for _, s in self.server_matrix()] + [n for n, _ in self.tenant_groups()]

    @property
    def series(self) -> bool:
        """Whether each point's repetitions run as one series on data its runs change
        (trials: {restore: first})."""
        return self.trials.restore == "first"

    @property
    def blocks(self) -> int:
        """The blocks planned before the first trial: the repetitions, or auto's floor."""
        return self.auto_repetitions.floor if self.repetitions == "auto" else self.repetitions

    @property
    def target_pct(self) -> float:
        """repetitions: auto's target: the one given, else 0.6 times the margin."""
        return stop_target(self.auto_repetitions.target_pct, self.margin_pct)

    def server_matrix(self) -> list[tuple[int, ServerSpec]]:
        """The servers the study runs, with the index of the entry each comes from: the
        servers as written, each local one at every count of the ``cores`` axis, and each at
        every value of a limit that lists several (SERVER-LIMIT-VALUE)."""
        out: list[tuple[int, ServerSpec]] = []
        for i, server in enumerate(self.servers):
            if self.cores is None or server.place() is not None:  # cores: this machine's own
                cored = [server]
            else:
                cored = [server.model_copy(update={"name": f"{server.name}-{n}core" + ("s" if n > 1 else ""),
                                                   "cores": n}) for n in self.cores]
            out += [(i, one) for s in cored for one in _limits_swept(s)]
        return out

    def threads_for(self, clients: int) -> int:
        """pgbench -j: half the clients by default (METHODS S1: -j C/2), never more than -c."""
        if self.threads == "half":
            return max(1, clients // 2)
        return min(int(self.threads), clients)


def _limits_swept(server: ServerSpec) -> list[ServerSpec]:
    """``server`` at each point of the product of its limits that list several values."""
    if server.limits is None:
        return [server]
    axes = [(k, v) for k, v in server.limits.given().items() if len(v) > 1]
    out = []
    for values in itertools.product(*(v for _, v in axes)):
        chosen = dict(zip((k for k, _ in axes), values, strict=True))
        name = server.name + "".join(f"-{limit_name(k, v)}" for k, v in chosen.items())
        limits = server.limits.model_copy(update={k: [v] for k, v in chosen.items()})
        out.append(server.model_copy(update={"name": name, "limits": limits}))
    return out
