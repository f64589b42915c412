"""Comparing each server with the baseline: the statistics of every point, and the
findings sentences (as data) that repeat them. Pure functions."""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import replace

from teiten.analysis import intervals, judging, stats, verdicts
from teiten.analysis.model import Degradation, DegradationRow, Finding, Point, ServerSeries, WorkloadSection


def with_statistics(point: Point, baseline: Point | None, *, is_baseline: bool,
                    confidence: float = 0.95, alpha: float = stats.ALPHA) -> Point:
    """``point`` with the interval of its median, the ratio's interval, the test against the
    baseline, its noise (CV) and the smallest difference its repetitions could detect (from the
    within-block ratios where the ratio is paired).

    The ratio is paired by block where both points carry the blocks of their values
    (``tps_blocks``; :func:`teiten.analysis.stats.compare` says how). The interval is that of
    this one comparison; :func:`with_family` widens it for the others of a report and reads
    the verdict from it.
    """
    values = list(point.tps_values)
    if not values:
        return point
    ci = stats.median_interval(values, confidence=confidence)
    out = replace(point, tps_ci=(ci.low, ci.high) if ci else None, tps_ci_level=ci.confidence if ci else None,
                  cv=stats.cv(values))
    base = list(baseline.tps_values) if baseline else []
    if not is_baseline and base and baseline is not None:
        diff = stats.compare(values, base, alpha=alpha, confidence=confidence,
                             blocks=point.tps_blocks, baseline_blocks=baseline.tps_blocks)
        r = diff.ratio
        out = replace(out, ratio_ci=(r.low, r.high) if r else None, ratio_ci_level=r.confidence if r else None,
                      estimate=r.value if r else None,
                      ratio_method=r.method if r else
                      intervals.SIGNED_RANK if diff.paired else intervals.HODGES_LEHMANN,
                      p_value=diff.p_value, p_min=diff.p_min, needed=diff.needed)
        cv_a, cv_b = stats.cv(values), stats.cv(base)
        pairs = intervals.blocked_pairs(values, point.tps_blocks, base, baseline.tps_blocks)
        if diff.paired and pairs:
            found = stats.detectable_difference_paired([math.log(a / b) for a, b in pairs], alpha=alpha)
            out = replace(out, detectable_pct=None if found is None else 100 * found)
        elif cv_a is not None and cv_b is not None:
            out = replace(out, detectable_pct=100 * stats.detectable_difference(
                cv_a, cv_b, len(values), len(base), alpha=alpha))
    return out


def comparisons(sections: Sequence[WorkloadSection]) -> list[tuple[int, int, int]]:
    """(section, series, point) indexes of every ratio to a baseline in ``sections``: the
    report's family of comparisons."""
    return [(i, j, k) for i, sec in enumerate(sections) for j, s in enumerate(sec.servers)
            if s.server != sec.baseline for k, p in enumerate(s.points) if p.ratio is not None]


def with_family(sections: Sequence[WorkloadSection], *, alpha: float = stats.ALPHA,
                margin_pct: float = verdicts.MARGIN_PCT, at_least: float = 0.0
                ) -> tuple[WorkloadSection, ...]:
    """The sections with every ratio's interval at the family's level and its verdict read
    from that interval (:mod:`teiten.analysis.verdicts`), and their findings worded again.

    The family is every ratio of the report (m of them): each interval is computed at
    1 - alpha / m (Bonferroni), with its Hodges-Lehmann estimate, so that the printed interval,
    the printed estimate and the verdict are one thing. A point that has no ratio (a server
    without a successful trial there) cannot tell. Holm's adjusted p (over the same family)
    stays in the CSV's p_value_holm column only.

    ``at_least``: the lowest level an interval is printed at. A study whose blocks were added
    until its intervals decided (repetitions: auto, which stops a ratio on the decision unless
    settle: false) was judged by the stopping rule at 99% or more
    (teiten.analysis.stopping.decide_level), and its intervals are printed at that level:
    printed at 1 - alpha/m below it, those of a study of fewer than five ratios that stopped on
    the decision cover up to 2 points less than they state (docs/STATISTICS.md). A study that
    stops on width only keeps its label at the family's level (bench/stopping_coverage.py).
    """
    family = comparisons(sections)
    m = len(family)
    required = max(verdicts.family_level(m, alpha), at_least)
    points = [sections[i].servers[j].points[k] for i, j, k in family]
    tested = [p.p_value is not None and p.p_min is not None and p.p_min * m <= alpha for p in points]
    adjusted = stats.holm([p.p_value if ok and p.p_value is not None else 1.0
                           for p, ok in zip(points, tested, strict=True)]) if m else []
    holm = {at: (p_holm if ok else None) for at, ok, p_holm in zip(family, tested, adjusted, strict=True)}
    out = []
    for i, sec in enumerate(sections):
        by_name = {s.server: s for s in sec.servers}
        series = []
        for j, s in enumerate(sec.servers):
            if s.server == sec.baseline or sec.suite is not None:
                series.append(s)
                continue
            ref = by_name.get(s.reference or sec.baseline)
            pts = []
            for k, p in enumerate(s.points):
                base = ref.points[k] if ref is not None and k < len(ref.points) else None
                pts.append(_judged(p, base, m=m, required=required, alpha=alpha, margin_pct=margin_pct,
                                   p_holm=holm.get((i, j, k))))
            series.append(replace(s, points=tuple(pts)))
        fixed = replace(sec, servers=tuple(series))
        out.append(replace(fixed, findings=findings(fixed)) if sec.suite is None else fixed)
    return tuple(out)


def _judged(p: Point, base: Point | None, *, m: int, required: float, alpha: float,
            margin_pct: float, p_holm: float | None) -> Point:
    """``p`` with its interval at the family's level ``required`` and the verdict read from it."""
    if p.ratio is None or base is None or not p.tps_values or not base.tps_values:
        return replace(p, verdict=verdicts.UNSURE, reason=verdicts.NO_RATIO, margin_pct=margin_pct,
                       comparisons=max(m, 1), estimate=None, ratio_ci=None, ratio_ci_level=None,
                       required=required)
    r = intervals.ratio_interval(p.tps_values, base.tps_values, confidence=required,
                                 blocks=p.tps_blocks, baseline_blocks=base.tps_blocks)
    ci = (r.low, r.high) if r else None
    found = verdicts.judge(ci, r.confidence if r else None, required=required, margin_pct=margin_pct)
    tail = alpha / m if required <= verdicts.family_level(m, alpha) else 1 - required
    needed = stats.repetitions_needed(tail, paired=p.ratio_method in (intervals.SIGNED_RANK,
                                                                          intervals.SIGN_TEST))
    return replace(p, ratio_ci=ci, ratio_ci_level=r.confidence if r else None,
                   estimate=r.value if r else None, verdict=found.word, reason=found.reason,
                   margin_pct=margin_pct, comparisons=m, needed=needed, required=required,
                   p_value=p.p_value if p_holm is not None else None, p_holm=p_holm)


def saturation_of(series: ServerSeries) -> tuple[int, float, int] | None:
    sat = stats.saturation([(p.clients, p.tps_median) for p in series.points
                            if p.tps_median is not None])
    return (sat.peak_clients, sat.peak_tps, sat.knee_clients) if sat else None


def cell_id(kind: str, workload: str, server: str, clients: int) -> str:
    """The HTML id of a table cell, so that a finding can point at it. Names are encoded
    one-to-one (letters and digits kept, anything else as _hex_), so that no two
    (workload, server) pairs share an id."""
    def safe(name: str) -> str:
        return "".join(ch if ch.isascii() and ch.isalnum() else f"_{ord(ch):x}_" for ch in name)
    return f"{kind}--{safe(workload)}--{safe(server)}--{clients}"


def findings(section: WorkloadSection) -> tuple[Finding, ...]:
    """What the tables say, as sentences-to-be: for each server against the baseline, each
    faster or slower point one by one, then the points with no difference within the margin
    together, then those that cannot tell, grouped by why; and the peak, where the repetitions
    can place it (:func:`peak_finding`)."""
    out: list[Finding] = []
    base = section.baseline
    for series in section.servers:
        out.append(peak_finding(section, series))
        if series.server == base:
            continue
        against = series.reference or base  # a tenant beside others: the same server alone
        for p in series.points:
            if p.verdict in (verdicts.FASTER, verdicts.SLOWER):
                shown = p.shown_ratio
                assert shown is not None
                lo, hi = p.ratio_ci or (shown, shown)
                out.append(Finding(
                    "faster" if p.verdict == verdicts.FASTER else "slower", series.server, against,
                    (p.clients,), pct=(shown - 1) * 100, ci_pct=((lo - 1) * 100, (hi - 1) * 100),
                    cell=cell_id("ratio", section.workload, series.server, p.clients)))
        for kind, reasons in (("no-difference", ("",)),
                              ("cannot-tell", (verdicts.WIDE, verdicts.SHORT)),
                              ("cannot-tell", (verdicts.NO_INTERVAL,)),
                              ("cannot-tell", (verdicts.NO_RATIO,))):
            word = verdicts.SAME if kind == "no-difference" else verdicts.UNSURE
            group = [p for p in series.points if p.verdict == word and p.reason in reasons]
            if group:
                out.append(Finding(kind, series.server, against, tuple(p.clients for p in group),
                                   needed=max(p.needed for p in group), reason=group[0].reason,
                                   cell=cell_id("ratio", section.workload, series.server,
                                                group[0].clients)))
    return tuple(f for f in out if f.kind)


MIN_TRIALS_FOR_PEAK = 3  # ok trials each point needs before a peak or knee is stated


def peak_finding(section: WorkloadSection, series: ServerSeries) -> Finding:
    """Where ``series`` peaks, only where its repetitions show it (:func:`placed_peak`), "scales
    until" the knee added only where each step up to it grew beyond the intervals (no finding
    for a series of one client count)."""
    if not series.saturation or len(series.points) < 2:
        return Finding("", series.server, section.baseline, ())
    peak, tps, knee = series.saturation
    pts = sorted(series.points, key=lambda p: p.clients)
    at = [p.clients for p in pts]
    kind, fewest, scales = placed_peak(pts, at.index(peak), at.index(knee))
    cell = cell_id("tps", section.workload, series.server, peak)
    if kind == "peak-unsure":
        return Finding(kind, series.server, section.baseline, (), needed=fewest, cell=cell)
    return Finding(kind, series.server, section.baseline, (peak, knee) if scales else (peak,),
                   pct=tps, cell=cell)


def placed_peak(pts: Sequence[Point | None], peak: int, knee: int) -> tuple[str, int, bool]:
    """The peak rule of every finding that names a peak, over points in the order of their axis
    (a server's client counts; a family's core counts, each at its peak), ``peak`` and ``knee``
    their indexes: "peak" only where every point has at least :data:`MIN_TRIALS_FOR_PEAK` ok
    trials and the peak's median interval lies above every other point's; otherwise
    "peak-unsure" (too few trials somewhere) or "peak-overlap" (the intervals overlap). With it
    the fewest ok trials of a point, and whether it scales until the knee: the knee is not the
    first point and each step up to it grew beyond the intervals."""

    def above(a: Point | None, b: Point | None) -> bool:  # a's median interval wholly above b's
        return a is not None and b is not None and a.tps_ci is not None and b.tps_ci is not None \
            and a.tps_ci[0] > b.tps_ci[1]

    fewest = min(p.n_ok if p is not None else 0 for p in pts)
    if fewest < MIN_TRIALS_FOR_PEAK:
        return "peak-unsure", fewest, False
    if not all(above(pts[peak], p) for i, p in enumerate(pts) if i != peak):
        return "peak-overlap", fewest, False
    return "peak", fewest, knee > 0 and all(above(b, a) for a, b in itertools.pairwise(pts[:knee + 1]))


def degradation(section: WorkloadSection, a: str, b: str) -> Degradation:
    """The S5 degradation-rate table of server ``b`` against ``a`` in one workload. Where ``a``
    is the server the TPS table compares ``b`` with, each rate is that judged ratio (the same
    interval and verdict); otherwise the table's ratios are a family of their own
    (:mod:`teiten.analysis.judging`)."""
    by_name = {s.server: s for s in section.servers}
    reused = (by_name[b].reference or section.baseline) == a and b != section.baseline \
        and any(p.verdict for p in by_name[b].points)
    m = len(by_name[b].points)
    margin = next((p.margin_pct for s in section.servers for p in s.points if p.verdict),
                  verdicts.MARGIN_PCT)  # the study's, as with_family gave it
    rows = []
    for pa, pb in zip(by_name[a].points, by_name[b].points, strict=True):
        ta, tb = pa.tps_median, pb.tps_median
        found = judging.as_judged(pb.shown_ratio, pb.ratio_ci, pb.ratio_ci_level, pb.verdict, pb.reason,
                                  comparisons=pb.comparisons, margin_pct=pb.margin_pct,
                                  required=pb.required) \
            if reused else judging.ratio(
                pb.tps_values, pa.tps_values, comparisons=m, margin_pct=margin,
                blocks=pb.tps_blocks, baseline_blocks=pa.tps_blocks)
        rows.append(DegradationRow(
            pa.clients, ta, tb, (1 - tb / ta) * 100 if ta and tb is not None else None,
            ta - tb if ta is not None and tb is not None else None,
            rate_ci=((1 - found.ci[1]) * 100, (1 - found.ci[0]) * 100) if found.ci else None,
            rate_level=found.level, judged=found))
    # A server on another host: its own machine's CPU (the environment being compared),
    # not that of the client that ran pgbench.
    cpu_a = {act.clients: act.host_cpu or act.cpu for act in by_name[a].activity}
    cpu_b = {act.clients: act.host_cpu or act.cpu for act in by_name[b].activity}
    cpu = tuple((r.clients, cpu_a[r.clients], cpu_b[r.clients]) for r in rows
                if r.clients in cpu_a and r.clients in cpu_b)
    return Degradation(a, b, tuple(rows), cpu, reused)


def noisy_points(section: WorkloadSection, *, limit: float = 0.1) -> Sequence[tuple[str, int, float]]:
    """(server, clients, CV) where the repetitions vary by more than ``limit``."""
    return [(s.server, p.clients, p.cv) for s in section.servers for p in s.points
            if p.cv is not None and p.cv > limit]
