"""Figures of the measured-statement workloads: per server, variant and step, the median
time over the repetitions, the plan's figures and the sizes built (METHODS S6, S8-S10)."""

from __future__ import annotations

import statistics
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence

from teiten.analysis import judging, verdicts
from teiten.analysis.intervals import median_interval
from teiten.analysis.model import SizeFigures, StepFigures, SuiteResults
from teiten.model.results import StepRecord, TrialRecord

# The plan figures a report shows (teiten.drivers.explain.PlanSummary).
PLAN_FIELDS = ("workers_planned", "workers_launched", "shared_hit", "shared_read",
               "rows_removed_by_filter", "rows_removed_by_index_recheck", "heap_blocks_exact",
               "heap_blocks_lossy", "partitions_scanned", "planning_ms")

Steps = Mapping[str, Sequence[StepRecord]]  # trial_id -> its steps, in order


def _median(values: Sequence[float]) -> float | None:
    return statistics.median(values) if values else None


def suite_results(suite: str, axes: Sequence[str], variants: Sequence[str],
                  servers: Sequence[str], trials: Sequence[TrialRecord], steps: Steps,
                  workload: str) -> SuiteResults:
    """The results of one suite workload. Steps are matched across repetitions by their
    position among the steps of the same name and param (a trial may run a step twice)."""
    groups: dict[tuple[str, str, str, str | None, int], list[tuple[StepRecord, int]]] = defaultdict(list)
    order: dict[tuple[str, str, str, str | None, int], int] = {}
    sizes: dict[tuple[str, str], list[tuple[float, float]]] = defaultdict(list)
    missing = []
    for t in trials:
        p = t.planned
        if p.workload != workload:
            continue
        if t.status == "skipped" and str(t.error or "").startswith("not installed"):
            missing.append((p.server, p.variant, str(t.error).removeprefix("not installed: ")))
            continue
        if t.status != "ok":
            continue
        seen: Counter[tuple[str, str | None]] = Counter()
        last_sizes = None
        for i, st in enumerate(steps.get(t.trial_id, ())):
            nth = seen[(st.name, st.param)]
            seen[(st.name, st.param)] += 1
            key = (p.server, p.variant, st.name, st.param, nth)
            groups[key].append((st, p.repetition))
            order.setdefault(key, i)
            if st.body.get("sizes"):
                last_sizes = st.body
        if last_sizes is not None:
            indexes = set(last_sizes.get("indexes") or ())
            table = sum(v for k, v in last_sizes["sizes"].items() if k not in indexes)
            index = sum(v for k, v in last_sizes["sizes"].items() if k in indexes)
            sizes[(p.server, p.variant)].append((table, index))
    figures = []
    rank = {v: i for i, v in enumerate(variants)}
    server_rank = {s: i for i, s in enumerate(servers)}
    for key in sorted(groups, key=lambda k: (rank.get(k[1], 1 << 20), server_rank.get(k[0], 0), order[k])):
        server, variant, name, param, nth = key
        runs = [st for st, _ in groups[key]]
        seconds = [float(r.seconds) for r in runs]
        found = median_interval(seconds) if seconds else None
        plans = [r.body["plan"] for r in runs if r.body.get("plan")]
        extras: dict[str, list[float]] = defaultdict(list)
        for r in runs:
            for k, v in (r.body.get("extra") or {}).items():
                if isinstance(v, int | float) and not isinstance(v, bool):
                    extras[k].append(float(v))
        scans: dict[str, list[float]] = defaultdict(list)
        for p in plans:
            for relation, loops in (p.get("scans") or {}).items():
                scans[relation].append(float(loops))
        caches = [str((r.body.get("cache") or {}).get("state", "")) for r in runs]
        labels = {k: v for k, v in (runs[0].body.get("extra") or {}).items() if isinstance(v, str)}
        figures.append(StepFigures(
            server=server, variant=variant, step=name, param=param,
            seconds=_median(seconds), values=tuple(seconds),
            blocks=tuple(rep for _, rep in groups[key]),
            ci=(found.low, found.high) if found else None,
            ci_level=found.confidence if found else None,
            rows=_median([float(r.rows) for r in runs if r.rows is not None]),
            plan={f: m for f in PLAN_FIELDS
                  if (m := _median([float(p[f]) for p in plans if p.get(f) is not None])) is not None},
            shape=Counter(p["shape"] for p in plans).most_common(1)[0][0] if plans else "",
            extra={k: m for k, v in extras.items() if (m := _median(v)) is not None},
            cache=Counter(caches).most_common(1)[0][0] if caches else "", labels=labels,
            occurrence=nth + 1, scans={k: m for k, v in scans.items() if (m := _median(v)) is not None},
            divided=Counter(tuple(p.get("divided") or ()) for p in plans).most_common(1)[0][0]
            if plans else ()))
    size_rows = tuple(SizeFigures(server, variant, _median([a for a, _ in v]) or 0.0,
                                  _median([b for _, b in v]) or 0.0)
                      for (server, variant), v in sorted(
                          sizes.items(), key=lambda kv: (rank.get(kv[0][1], 0), server_rank.get(kv[0][0], 0))))
    return SuiteResults(suite=suite, axes=tuple(axes), servers=tuple(servers),
                        variants=tuple(variants), steps=tuple(figures), sizes=size_rows,
                        not_installed=tuple(sorted(set(missing))))


def variant_values(variant: str) -> dict[str, str]:
    return dict(pair.split("=", 1) for pair in variant.split())


def step_ratio(step: StepFigures, baseline: StepFigures, *, comparisons: int,
               margin_pct: float = verdicts.MARGIN_PCT) -> verdicts.Judged | None:
    """A step's time against the baseline server's, judged as the TPS ratios are
    (:mod:`teiten.analysis.judging`, a lower time is faster) in a family of ``comparisons``: the
    signed-rank interval of the within-block ratios (the two-sample Hodges-Lehmann one where
    they share no blocks), its estimate and its verdict; None without two times."""
    if step.seconds is None or not baseline.seconds or not step.values or not baseline.values:
        return None
    return judging.ratio(step.values, baseline.values, comparisons=comparisons,
                         margin_pct=margin_pct, blocks=[str(b) for b in step.blocks],
                         baseline_blocks=[str(b) for b in baseline.blocks], lower_is_better=True)


def rows_before_recheck(step: StepFigures) -> float | None:
    """The rows an index gave a search before they were rechecked (the 2016 report's
    "Recheck前の件数", the index's own hits): the rows returned plus those the recheck threw away,
    and those the filter threw away (a GIN index of bigram arrays leaves the LIKE to a filter,
    which rechecks the same way). None for a plan that used no index: a sequential scan reads
    every row and rechecks none."""
    if "Index" not in step.shape or step.rows is None:
        return None
    return (step.rows + step.plan.get("rows_removed_by_index_recheck", 0.0)
            + step.plan.get("rows_removed_by_filter", 0.0))
