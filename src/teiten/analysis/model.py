"""What a report shows, computed from the store (see teiten.analysis.summary): plain frozen
data, which renderers (Markdown, HTML) only format, computing nothing."""

from __future__ import annotations

from dataclasses import dataclass, field

from teiten.analysis.cycle import MachineTime
from teiten.analysis.locks import LockCores, LockTable
from teiten.analysis.stopping import AutoSummary
from teiten.analysis.verdicts import Judged


@dataclass(frozen=True)
class Point:
    """One server at one client count: the median of its repetitions."""

    clients: int
    tps_median: float | None          # None when no repetition succeeded
    latency_ms_median: float | None
    tps_values: tuple[float, ...]     # every successful repetition
    n_ok: int
    n_failed: int
    # tps_median / the baseline's tps_median at these clients: the CSV's ratio_pct, never printed
    # beside an interval (``estimate`` is, the interval's own).
    ratio: float | None
    # The median's order-statistic interval; None for fewer than 2 repetitions.
    tps_ci: tuple[float, float] | None = None
    latency_values: tuple[float, ...] = ()         # latency of every successful repetition (ms)
    ratio_ci: tuple[float, float] | None = None    # the ratio's interval (see ratio_method)
    p_value: float | None = None      # the test's p, when the sizes can reach alpha (see ratio_method)
    needed: int = 0                   # blocks that could reach the family's level (1 - alpha / comparisons)
    cv: float | None = None           # coefficient of variation of the repetitions
    detectable_pct: float | None = None  # smallest difference these repetitions could detect
    # The repetition set (block) of each value of tps_values, aligned with it; empty: unknown.
    tps_blocks: tuple[str, ...] = ()
    tps_ci_level: float | None = None    # the level tps_ci reaches (0.75 for 3 repetitions)
    ratio_ci_level: float | None = None  # the level ratio_ci reaches
    # How the ratio was analysed: "signed-rank", paired by block (Wilcoxon's interval and test on
    # the within-block log ratios), "sign-test", paired where those looked skewed (the sign
    # test's interval of their median), or "hodges-lehmann", unpaired (Hodges-Lehmann interval,
    # Mann-Whitney test); "" for the baseline.
    ratio_method: str = ""
    p_min: float | None = None        # the smallest p the test can give with these sizes
    p_holm: float | None = None       # p after Holm's correction across the report's comparisons (CSV only)
    comparisons: int = 1              # the report's family: ratio_ci is at 1 - alpha / comparisons
    required: float = 0.0             # ratio_ci's level: that, or at least 99% with repetitions: auto
    # The Hodges-Lehmann estimate of ratio_ci's own method (analysis.intervals.ratio_interval),
    # always inside it; None where no interval exists.
    estimate: float | None = None
    # The verdict read from ratio_ci (analysis.verdicts): faster | slower | no-difference |
    # cannot-tell, "" for the baseline; why it cannot tell; the margin it was judged with.
    verdict: str = ""
    reason: str = ""
    margin_pct: float = 5.0

    @property
    def shown_ratio(self) -> float | None:
        """The ratio a report prints: the interval's estimate where there is an interval, else
        the ratio of the medians (with no interval beside it)."""
        return self.estimate if self.estimate is not None else self.ratio


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
    server_cpu_idle: float | None = None  # % idle of a confined server's own CPUs
    # a confined server's own CPUs: the same parts as ``cpu`` (empty for a server on all)
    server_cpu: dict[str, float] = field(default_factory=dict)
    # The server's own host, for a server on another machine (ssh): same parts as ``cpu``,
    # which is then this machine's, the client's. Empty for a server on this machine.
    host_cpu: dict[str, float] = field(default_factory=dict)

    @property
    def idle(self) -> float | None:
        """% idle of the server's CPUs: its own (confined), its host's (ssh), else this machine's."""
        if self.server_cpu_idle is not None:
            return self.server_cpu_idle
        return (self.host_cpu or self.cpu).get("idle")


@dataclass(frozen=True)
class ServerSeries:
    server: str
    version: str
    points: tuple[Point, ...]         # ordered by clients, one per client count of the study
    mean_tps_diff_pct: float | None   # mean over client counts of (ratio - 1) * 100; None for the baseline
    mean_latency_diff_pct: float | None
    saturation: tuple[int, float, int] | None = None  # (peak clients, peak TPS, knee clients)
    activity: tuple[Activity, ...] = ()  # one per client count where the monitors ran
    profiles: tuple[tuple[int, str], ...] = ()  # (clients, relative path of a flame graph SVG)
    profile_diffs: tuple[tuple[int, str], ...] = ()  # (clients, differential graph vs the baseline)
    # (clients, share of samples through frames perf could not name, share ending in one)
    profile_unnamed: tuple[tuple[int, float, float], ...] = ()
    # The server its ratios are taken against when not the section's baseline: a tenant beside
    # its neighbours against the same server alone (tenants:).
    reference: str | None = None


@dataclass(frozen=True)
class Finding:
    """A sentence of the findings, as data: each one points at a table cell (``cell``, an
    HTML id such as "tps-pgecons-read-pg18-4") whose numbers it repeats."""

    # faster | slower | no-difference | cannot-tell | peak | peak-unsure | peak-overlap | failed
    kind: str
    server: str
    baseline: str
    clients: tuple[int, ...]
    pct: float | None = None            # (ratio - 1) * 100
    ci_pct: tuple[float, float] | None = None
    needed: int = 0                     # cannot-tell: blocks needed; peak-unsure: fewest ok trials
    cell: str = ""
    reason: str = ""                    # cannot-tell: why (analysis.verdicts)


@dataclass(frozen=True)
class TrialSeries:
    """The per-second progress of one trial, for the series viewer."""

    trial_id: str
    server: str
    workload: str
    clients: int
    repetition: int
    status: str
    tps: tuple[float, ...]
    latency_ms: tuple[float | None, ...]
    steady_from: int                    # seconds before it are ramp-up
    stalls: int
    drift_pct_per_min: float
    tps_figure: float | None = None     # the trial's TPS as analysed (None: it measured none)
    # per second: "cpu" (% busy of this machine) and each device role's %util (inputs.system_seconds)
    system: tuple[tuple[str, tuple[float | None, ...]], ...] = ()
    runs_before: int = 0  # the runs of its series whose changes its data held (trials: {restore: first})


@dataclass(frozen=True)
class DegradationRow:
    """One client count of the S5 table: the medians, 性能低下率 = (1 - b/a) * 100 of the
    medians (the CSV's), the ratio b/a judged (its estimate, which the report prints as a rate,
    its interval, by block where the two share blocks, and its verdict), the rate's interval
    and the level it reaches, and the TPS difference a - b."""

    clients: int
    tps_a: float | None
    tps_b: float | None
    rate_pct: float | None
    difference: float | None
    rate_ci: tuple[float, float] | None = None
    rate_level: float | None = None
    judged: Judged | None = None


@dataclass(frozen=True)
class Degradation:
    """METHODS S5's table for a pair of servers (environments): per client count, TPS of
    a (the reference, e.g. physical) and b (e.g. a VM), 性能低下率 and the TPS difference."""

    a: str
    b: str
    rows: tuple[DegradationRow, ...]
    # (clients, CPU shares of a, of b): user, sys, iowait, steal, irq, idle -> percent
    cpu: tuple[tuple[int, dict[str, float], dict[str, float]], ...] = ()
    reused: bool = False  # the ratios are the TPS table's (a is b's reference there)


@dataclass(frozen=True)
class CoreScaling:
    """Servers alike but for the CPUs they ran on (a ``cores`` axis or servers that differ
    only in ``cores``), for TPS against cores per client count (the 2014/2016 figures)."""

    family: str
    servers: tuple[tuple[int, str], ...]   # (cores, server name), fewest cores first


@dataclass(frozen=True)
class ScaleupRow:
    """One core count of a family: its peak, and the evidence beside it."""

    cores: int
    server: str
    peak_clients: int | None
    peak_tps: float | None
    gain_pct: float | None             # peak TPS against the previous core count's, in % (the estimate)
    cpu_idle: float | None             # % idle of the server's CPUs at the peak (median)
    waits: tuple[tuple[str, float], ...]        # top wait events at the peak: (event, share)
    hot: tuple[tuple[str, float], ...] = ()     # hottest functions (self share) where profiled
    hot_clients: int | None = None              # the client count the profile was taken at
    callers: tuple[tuple[tuple[str, ...], float], ...] = ()  # hot[0]'s callers (analysis.callers)
    peak_ci: tuple[float, float] | None = None  # the peak median's order-statistic interval
    peak_level: float | None = None             # ... and the level it reaches
    gain_ci: tuple[float, float] | None = None  # gain_pct's interval (from the ratio's), in %
    gain_level: float | None = None             # ... and the level it reaches
    gain_judged: Judged | None = None           # the gain's ratio judged (analysis.judging)


@dataclass(frozen=True)
class Scaleup:
    """The IPA paper's procedure (METHODS S4) for one family: where TPS stops rising with
    cores, and CPU idle, wait events and the profile at the largest core count against the
    best one."""

    family: str
    rows: tuple[ScaleupRow, ...]       # fewest cores first
    best_cores: int | None             # the core count with the highest peak TPS
    knee_cores: int | None             # the last core count still scaling (>= 80% of linear)
    # The largest core count's peak against the best one's, in %: its interval and level.
    beyond_ci: tuple[float, float] | None = None
    beyond_level: float | None = None
    beyond_judged: Judged | None = None
    placed: Finding | None = None      # the core count it peaks at, by the client-count rule


@dataclass(frozen=True)
class TypeFigures:
    """One transaction type (pgbench script) of an application workload at one point:
    medians over repetitions of figures over each trial's measured window."""

    name: str
    share: float | None               # of the window's transactions, 0..1
    target: float                     # its weight's share of the mix, 0..1
    avg_ms: float | None              # None when the latencies include think time
    p50_ms: float | None
    p95_ms: float | None
    p99_ms: float | None
    response_ms: float | None         # its SQL's mean time from pgbench -r (sleeps excluded)


@dataclass(frozen=True)
class AppPoint:
    """An application workload's figures at one client count (medians over repetitions)."""

    clients: int
    runs: int                         # ok trials
    tps: float | None                 # transactions (tpcc) or interactions (bookstore) per second
    nopm: float | None = None         # tpcc: new orders per minute
    tpm: float | None = None          # tpcc: commits + rollbacks of the database per minute
    tpm_pgbench: float | None = None  # tpcc: pgbench's transactions per minute
    theoretical: float | None = None  # bookstore: users / mean think time
    types: tuple[TypeFigures, ...] = ()
    # bookstore: measured / theoretical of each repetition, and their median's
    # order-statistic interval with the level it reaches
    shares: tuple[float, ...] = ()
    share_ci: tuple[float, float] | None = None
    share_level: float | None = None

    def share_bounds(self) -> tuple[float, float] | None:
        """The share of theory as an interval: the repetitions' (one repetition: its value)."""
        if self.share_ci is not None:
            return self.share_ci
        if self.tps is None or not self.theoretical:
            return None
        return self.tps / self.theoretical, self.tps / self.theoretical


@dataclass(frozen=True)
class AppResults:
    """tpcc (HammerDB's NOPM and TPM) or bookstore (BT/s against users / think time, IPA
    paper figure 2) results of one server."""

    app: str
    server: str
    points: tuple[AppPoint, ...]
    think_time_s: float | None = None
    capacity: int | None = None       # bookstore: most users still within 5% of theory
    first_below: int | None = None    # bookstore: fewest users more than 5% below theory


@dataclass(frozen=True)
class StepFigures:
    """One step of one variant on one server, over its repetitions (medians)."""

    server: str
    variant: str
    step: str
    param: str | None
    seconds: float | None             # median; None when no repetition finished the step
    values: tuple[float, ...]         # every repetition's seconds
    blocks: tuple[int, ...] = ()      # the repetition (block) of each value, aligned with values
    ci: tuple[float, float] | None = None  # the median's order-statistic interval
    ci_level: float | None = None     # the level ci reaches (3 repetitions: 75%)
    rows: float | None = None
    plan: dict[str, float] = field(default_factory=dict)  # medians of the plan's figures
    shape: str = ""                   # the most common plan shape
    extra: dict[str, float] = field(default_factory=dict)  # medians of numeric extras
    cache: str = ""                   # warm | cold, as recorded
    labels: dict[str, str] = field(default_factory=dict)  # text extras (a keyword's class, ...)
    occurrence: int = 1               # 2 for the second step of the same name and param in a trial
    # per relation, the median loops of its scans (under a Gather: the processes that scanned
    # it), and the relations those processes divided between them (the most common plan's)
    scans: dict[str, float] = field(default_factory=dict)
    divided: tuple[str, ...] = ()


@dataclass(frozen=True)
class SizeFigures:
    """What a variant built on one server: bytes of tables and indexes after its last step
    that recorded sizes (median over repetitions)."""

    server: str
    variant: str
    table_bytes: float
    index_bytes: float


@dataclass(frozen=True)
class SuiteResults:
    """A measured-statement workload's results (METHODS S6, S8-S10)."""

    suite: str
    axes: tuple[str, ...]
    servers: tuple[str, ...]          # baseline first
    variants: tuple[str, ...]         # in the order of the axes
    steps: tuple[StepFigures, ...]
    sizes: tuple[SizeFigures, ...] = ()
    not_installed: tuple[tuple[str, str, str], ...] = ()  # (server, variant, why)
    judgements: tuple[dict[str, object], ...] = ()        # fulltext: per server and method


@dataclass(frozen=True)
class HistoryCell:
    """One version against the one before it at one client count."""

    clients: int
    ratio: float | None                      # the interval's estimate; None: a side measured nothing
    ci: tuple[float, float] | None = None    # the ratio's interval
    level: float | None = None               # the level it reaches
    judged: Judged | None = None             # ... and its verdict (analysis.judging)


@dataclass(frozen=True)
class HistoryStep:
    server: str
    version: str
    previous: str           # the server of the version before
    previous_version: str
    cells: tuple[HistoryCell, ...]
    build: tuple[tuple[str, str, str], ...] = ()  # how the build changes too (differences.build_changes)
    apart: bool = False  # the two versions share no block: they ran in different studies


@dataclass(frozen=True)
class ChangePoint:
    """Where performance changed along the line of versions, at one client count: between
    the version before and the version after, the ratio of the medians of the segments on
    either side (up to the neighbouring change points) with its interval, and the
    permutation p of the split (teiten.analysis.changepoints)."""

    clients: int
    before: str             # the server of the last version before the change
    before_version: str
    after: str
    after_version: str
    ratio: float
    ci: tuple[float, float] | None
    level: float | None
    p: float
    # the differential flame graph from before to after (relative path), where both were
    # profiled at one client count of the workload, and that client count
    graph: str | None = None
    graph_clients: int | None = None
    build: tuple[tuple[str, str, str], ...] = ()  # how the build changes too at the change


@dataclass(frozen=True)
class History:
    """Versions in order: each step, and the medians along the line (for its chart)."""

    steps: tuple[HistoryStep, ...]
    line: tuple[tuple[str, str, tuple[float | None, ...]], ...]  # (server, version, median TPS per clients)
    # with three versions or more: the change points found, and the level each client
    # count's search was held to (None: not searched)
    changes: tuple[ChangePoint, ...] = ()
    change_alpha: float | None = None


@dataclass(frozen=True)
class WorkloadSection:
    workload: str
    description: str
    baseline: str                     # name of the baseline server (the study's first)
    clients: tuple[int, ...]
    servers: tuple[ServerSeries, ...] # baseline first
    findings: tuple[Finding, ...] = ()
    degradations: tuple[Degradation, ...] = ()
    core_scaling: tuple[CoreScaling, ...] = ()
    scaleups: tuple[Scaleup, ...] = ()
    locks: tuple[LockTable, ...] = ()
    lock_cores: tuple[LockCores, ...] = ()  # each core family's locks by core count
    apps: tuple[AppResults, ...] = ()
    suite: SuiteResults | None = None  # a measured-statement workload: no TPS, steps instead
    history: History | None = None     # a line of versions: each against the one before it
    # the figures of each registered table (teiten.analysis.tables) that has some here, by its
    # key: a folder of teiten/tables/ makes them, and its table.py draws them
    tables: tuple[tuple[str, object], ...] = ()

    def figures(self, key: str) -> object | None:
        """The figures the registered table ``key`` made of this section; None: it has none."""
        return dict(self.tables).get(key)
    # client counts profiled after the blocks, where the servers differ most (profile: {at:
    # largest-difference}); empty when the profiles were taken inside the blocks, or none
    profiled_after: tuple[int, ...] = ()


@dataclass(frozen=True)
class ServerInfo:
    name: str
    kind: str                         # local | external
    version: str
    origin: str
    bindir: str
    data_checksums: bool | None
    settings: dict[str, str] = field(default_factory=dict)  # non-default settings, name -> value with unit
    cpus: str | None = None           # the CPUs the server was confined to ("0-3"); None: all
    cpus_said: tuple[str, tuple[tuple[str, str], ...]] | None = None  # its kind's own CPUs (Kind.cpus)
    client_cpus: str | None = None    # where pgbench ran: a CPU list, or "any" (not pinned)
    confined_by: str | None = None    # how it was held to cpus: cgroup-v2, cpuset-cgroup, affinity
    limits: tuple[tuple[str, int], ...] = ()  # its memory and I/O limits: (limit, value)
    delay: tuple[float, float, float] | None = None  # added RTT asked, measured through, direct (ms)
    bandwidth: tuple[float, float | None] | None = None  # the delay proxy's rate asked, measured (Mbit/s)
    facts: tuple[tuple[str, str, tuple[tuple[str, str], ...]], ...] = ()  # its kind's rows (Kind.facts)
    emulated: bool = False            # its figures are an emulation's (Kind.emulated): marked everywhere


@dataclass(frozen=True)
class Difference:
    """One way the servers differ (analysis.differences): what, its value per server in
    server order ("—": the server has no such thing), and why it differs: declared (the study
    file sets it differently), default (teiten's, of a key the file did not set), profile (the
    profiles the study chose), version, same-meaning, version-default, version-only, initdb,
    setting, build or client."""

    what: str
    values: tuple[str, ...]
    cause: str


@dataclass(frozen=True)
class Notice:
    """A warning as data, worded by the renderer in the report's language.

    Keys: trial-failed, trial-skipped, unfinished, checkpoint-in-window,
    autovacuum-in-window, too-few-repetitions, comparisons, comparison-one, unstable-series, high-noise,
    mixed-fingerprints, software-changed, different-parameters, waits-unavailable. ``params`` holds the
    figures the sentence needs.
    """

    key: str
    params: dict[str, object] = field(default_factory=dict)


@dataclass(frozen=True)
class StudyParameters:
    """How one study ran: in a compare report, each compared study's own values, so that its
    Study table shows every study's where they differ (not the first one's)."""

    label: str
    duration_s: float
    repetitions: int                  # the blocks run (repetitions: auto decided how many)
    scale: int
    order: str
    seed: int
    auto: AutoSummary | None = None  # repetitions: auto: its rule and last decision


@dataclass(frozen=True)
class ReportData:
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
    warnings: tuple[Notice, ...]
    lang: str = "en"
    confidence: float = 0.95
    alpha: float = 0.05
    margin_pct: float = 5.0  # the study's margin_pct
    series: tuple[TrialSeries, ...] = ()
    differences: tuple[Difference, ...] = ()  # between the servers: declared ones first
    auto: AutoSummary | None = None  # repetitions: auto: its rule and last decision
    compared: tuple[StudyParameters, ...] = ()  # compare: each study's own (empty for one study)
    machine_time: MachineTime | None = None  # the trials' cycles summed (None: none kept one)
