"""Figures of the application workloads (tpcc, bookstore) from each trial's ``app`` details:
medians over repetitions per server and client count, and the bookstore's capacity."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from teiten.analysis.inputs import AppRuns
from teiten.analysis.intervals import median_interval
from teiten.analysis.model import AppPoint, AppResults, TypeFigures, WorkloadSection
from teiten.analysis.stats import median_known as _median
from teiten.model.details import AppDetails, Num, TxType
from teiten.model.results import Point

WITHIN = 0.05  # IPA paper: the limit is where measured BT/s falls more than this below theory


def _types(runs: Sequence[AppDetails]) -> tuple[TypeFigures, ...]:
    """Per transaction type, matched by name across repetitions; a latency figure is the
    median of the repetitions that ran that type in their window."""
    names = list(dict.fromkeys(t.name for r in runs for t in r.types))
    weights = {t.name: t.weight for r in runs for t in r.types}
    total_weight = sum(weights.values()) or 1
    out = []
    for name in names:
        per = [next((t for t in r.types if t.name == name), None) for r in runs]
        shares = [p.count / n if p is not None and (n := sum(q.count for q in r.types)) else None
                  for p, r in zip(per, runs, strict=True)]

        def med(of: Callable[[TxType], Num | None], per: list[TxType | None] = per) -> float | None:
            return _median([of(p) if p is not None else None for p in per])
        out.append(TypeFigures(
            name=name, share=_median(shares), target=weights[name] / total_weight,
            avg_ms=med(lambda p: p.avg_ms), p50_ms=med(lambda p: p.p50_ms), p95_ms=med(lambda p: p.p95_ms),
            p99_ms=med(lambda p: p.p99_ms), response_ms=med(lambda p: p.response_ms)))
    return tuple(out)


def app_point(clients: int, runs: Sequence[AppDetails]) -> AppPoint:
    def med(of: Callable[[AppDetails], Num | None]) -> float | None:
        return _median([of(r) for r in runs])
    shares = tuple(float(r.tps) / float(r.theoretical_tps) for r in runs
                   if r.tps is not None and r.theoretical_tps)
    found = median_interval(shares) if len(shares) > 1 else None
    return AppPoint(clients=clients, runs=len(runs), tps=med(lambda r: r.tps), nopm=med(lambda r: r.nopm),
                    tpm=med(lambda r: r.tpm), tpm_pgbench=med(lambda r: r.tpm_pgbench),
                    theoretical=med(lambda r: r.theoretical_tps), types=_types(runs) if runs else (),
                    shares=shares, share_ci=(found.low, found.high) if found else None,
                    share_level=found.confidence if found else None)


def capacity(points: Sequence[AppPoint]) -> tuple[int | None, int | None]:
    """(the most users up to which no measurement is surely more than 5% below theory, the
    fewest users whose measurement is). Surely: the whole interval of the repetitions'
    share of theory (one repetition: its value) lies below 95%; a point whose interval
    straddles 95% cannot tell, so one dip inside the noise does not end the capacity (the
    IPA paper's rule, held over the noise)."""
    fits, below = None, None
    for p in points:
        bounds = p.share_bounds()
        if bounds is None:
            continue
        if bounds[1] < 1 - WITHIN:
            below = p.clients
            break
        fits = p.clients
    return fits, below


def app_results(sec: WorkloadSection, runs: AppRuns,
                capacity_of: Callable[[str], bool]) -> tuple[AppResults, ...]:
    """Each server's application figures; ``capacity_of(app)``: whether the report finds the
    application's capacity (its clients think between transactions)."""
    out = []
    for s in sec.servers:
        at = {c: Point(s.server, sec.workload, c) for c in sec.clients}
        found = {c: runs[p] for c, p in at.items() if runs.get(p)}
        if not found:
            continue
        first = next(iter(found.values()))[0]
        app, think = first.app, first.think_time_s
        points = tuple(app_point(c, found[c]) for c in sorted(found))
        fits, below = capacity(points) if capacity_of(app) else (None, None)
        out.append(AppResults(app, s.server, points, think, fits, below))
    return tuple(out)
