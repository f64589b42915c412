"""Latency percentiles of the pgbench workloads that asked for them (``percentiles: true``,
issue 21): per server and client count, the median over the ok repetitions of each trial's
p50 ... p99.9 and largest latency, with the same intervals as TPS (docs/STATISTICS.md): the
median's order-statistic interval for p95 and p99, and their ratio to the baseline server's
at the same client count, paired by block where the two share blocks, judged as the TPS
ratios are (:mod:`teiten.analysis.judging`; the table's ratios are one family, a lower
latency is "faster"). A ratio above 100% is a slower tail."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from teiten.analysis import intervals, judging, verdicts
from teiten.analysis.stats import median_known
from teiten.analysis.tables import SectionInputs
from teiten.model.details import LatencyDetails, Percentiles
from teiten.model.results import TrialRecord

# Its place among the registered tables (teiten.analysis.tables).
ORDER = 40

# trial id -> its percentiles: pgbench's (details 'pgbench', no driver named), or another
# driver's histogram's (details 'latency', with the driver's name)
Latencies = Mapping[str, LatencyDetails]
NAMES = ("p50", "p90", "p95", "p99", "p999", "max")  # the figures, each "{name}_ms"
WITH_INTERVALS = ("p95", "p99")


@dataclass(frozen=True)
class PercentileRow:
    server: str
    clients: int
    n: int                              # ok repetitions with percentiles
    medians: Mapping[str, float | None]  # name -> median over the repetitions (ms)
    # name -> the median's interval (p95, p99); None for a single repetition
    ci: Mapping[str, intervals.Interval | None]
    # name -> the ratio of the medians to the baseline server's at these clients (p95, p99:
    # the CSV's ratio column), and that ratio judged in the table's family: its estimate (what
    # the report prints), interval and verdict; both empty for the baseline
    ratio: Mapping[str, float | None]
    judged: Mapping[str, verdicts.Judged]
    precision: float                    # the histogram's relative precision
    driver: str | None = None           # whose latency histogram: None for pgbench's log


def percentile_rows(workload: str, trials: Sequence[TrialRecord], found: Latencies, *,
                    servers: Sequence[str], baseline: str,
                    block_of: Callable[[TrialRecord], str], confidence: float = 0.95,
                    margin_pct: float = verdicts.MARGIN_PCT) -> tuple[PercentileRow, ...]:
    """One row per server (in ``servers`` order) and client count where an ok trial of
    ``workload`` has percentiles; empty when none has."""
    groups: dict[tuple[str, int], list[tuple[TrialRecord, Percentiles, str | None]]] = {}
    for t in trials:
        taken = found.get(t.trial_id) if t.planned.workload == workload and t.status == "ok" else None
        if taken is not None and taken.percentiles is not None:
            groups.setdefault((t.planned.server, t.planned.clients), []).append(
                (t, taken.percentiles, taken.driver))
    m = len(WITH_INTERVALS) * sum(1 for server, _ in groups if server != baseline)
    rows = []
    for (server, clients), seen in sorted(groups.items(), key=lambda kv: (
            servers.index(kv[0][0]) if kv[0][0] in servers else len(servers), kv[0][1])):
        base = groups.get((baseline, clients)) if server != baseline else None
        ci: dict[str, intervals.Interval | None] = {}
        ratio: dict[str, float | None] = {}
        judged: dict[str, verdicts.Judged] = {}
        for name in WITH_INTERVALS:
            values, blocks = _values(seen, name, block_of)
            ci[name] = intervals.median_interval(values, confidence=confidence) if values else None
            if server == baseline:
                continue
            theirs, their_blocks = _values(base or [], name, block_of)
            mine, below = median_known(values), median_known(theirs)
            ratio[name] = mine / below if mine is not None and below else None
            judged[name] = judging.ratio(values, theirs, comparisons=m, margin_pct=margin_pct,
                                         blocks=blocks, baseline_blocks=their_blocks,
                                         lower_is_better=True)
        rows.append(PercentileRow(
            server=server, clients=clients, n=len(seen),
            medians={name: median_known(p.ms(name) for _, p, _ in seen) for name in NAMES},
            ci=ci, ratio=ratio, judged=judged,
            precision=max(float(p.precision or 0.0) for _, p, _ in seen),
            driver=next((driver for _, _, driver in seen if driver), None)))
    return tuple(rows)


def _values(seen: Sequence[tuple[TrialRecord, Percentiles, str | None]], name: str,
            block_of: Callable[[TrialRecord], str]) -> tuple[list[float], list[str]]:
    pairs = [(float(v), block_of(t)) for t, p, _ in seen if (v := p.ms(name)) is not None]
    return [v for v, _ in pairs], [b for _, b in pairs]



def figures(given: SectionInputs) -> tuple[PercentileRow, ...] | None:
    return percentile_rows(given.workload, given.trials, given.data.latencies,
                           servers=[s.name for s in given.servers], baseline=given.section.baseline,
                           block_of=given.block_of, margin_pct=given.margin_pct) or None


SUMMARY_NAMES = ("p50", "p90", "p95", "p99", "p999")  # the percentiles a point's summary keeps


def point_figures(rows: tuple[PercentileRow, ...]) -> dict[tuple[str, int], dict[str, float | None]]:
    """Each server's and client count's ``p50_ms`` ... ``p999_ms`` for its point's summary (the
    store's point_summaries): the medians over the repetitions the table prints."""
    return {(r.server, r.clients): {f"{name}_ms": r.medians.get(name) for name in SUMMARY_NAMES}
            for r in rows}
