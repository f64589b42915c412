"""Comparing each server with the baseline: the statistics of every point, and the
findings sentences (as data) that repeat them. Pure functions."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace

from teiten.analysis import intervals, stats
from teiten.analysis.model import Degradation, DegradationRow, Finding, Point, ServerSeries, WorkloadSection


def with_statistics(point: Point, baseline: Point | None, *, is_baseline: bool,
                    confidence: float = 0.95, alpha: float = stats.ALPHA) -> Point:
    """``point`` with the interval of its median, the ratio's interval, the test against the
    baseline, its noise (CV) and the smallest difference its repetitions could detect (from the
    within-block ratios where the ratio is paired).

    The ratio is paired by block where both points carry the blocks of their values
    (``tps_blocks``; :func:`teiten.analysis.stats.compare` says how). The verdict is that of
    this one comparison; :func:`with_holm` corrects it for the others of a report.
    """
    values = list(point.tps_values)
    if not values:
        return point
    ci = stats.median_interval(values, confidence=confidence)
    extra: dict[str, object] = {"tps_ci": (ci.low, ci.high) if ci else None,
                                "tps_ci_level": ci.confidence if ci else None, "cv": stats.cv(values)}
    base = list(baseline.tps_values) if baseline else []
    if not is_baseline and base and baseline is not None:
        diff = stats.compare(values, base, alpha=alpha, confidence=confidence,
                             blocks=point.tps_blocks, baseline_blocks=baseline.tps_blocks)
        r = diff.ratio
        extra.update(ratio_ci=(r.low, r.high) if r else None, ratio_ci_level=r.confidence if r else None,
                     ratio_method=intervals.SIGNED_RANK if diff.paired else intervals.HODGES_LEHMANN,
                     p_value=diff.p_value, p_min=diff.p_min, significant=diff.significant,
                     needed=diff.needed)
        cv_a, cv_b = stats.cv(values), stats.cv(base)
        pairs = intervals.blocked_pairs(values, point.tps_blocks, base, baseline.tps_blocks)
        if diff.paired and pairs:
            found = stats.detectable_difference_paired([math.log(a / b) for a, b in pairs], alpha=alpha)
            extra["detectable_pct"] = None if found is None else 100 * found
        elif cv_a is not None and cv_b is not None:
            extra["detectable_pct"] = 100 * stats.detectable_difference(
                cv_a, cv_b, len(values), len(base), alpha=alpha)
    return replace(point, **extra)  # type: ignore[arg-type]


def comparisons(sections: Sequence[WorkloadSection]) -> list[tuple[int, int, int]]:
    """(section, series, point) indexes of every ratio to a baseline in ``sections``: the
    report's family of comparisons."""
    return [(i, j, k) for i, sec in enumerate(sections) for j, s in enumerate(sec.servers)
            if s.server != sec.baseline for k, p in enumerate(s.points) if p.ratio is not None]


def with_holm(sections: Sequence[WorkloadSection], *,
              alpha: float = stats.ALPHA) -> tuple[WorkloadSection, ...]:
    """The sections with every verdict corrected for the report's m comparisons (Holm's
    step-down method, :func:`teiten.analysis.stats.holm`), and their findings worded again.

    A comparison is tested only when its smallest possible p could pass Holm's first
    threshold, alpha / m; otherwise it stays "too few repetitions to tell", with the
    repetitions that would let it. The untested ones count in m as p = 1, so the correction
    stays valid (conservative) whichever comparisons could be tested.
    """
    family = comparisons(sections)
    m = len(family)
    if m == 0:
        return tuple(sections)
    points = [sections[i].servers[j].points[k] for i, j, k in family]
    tested = [p.p_value is not None and p.p_min is not None and p.p_min * m <= alpha for p in points]
    adjusted = stats.holm([p.p_value if ok and p.p_value is not None else 1.0
                           for p, ok in zip(points, tested, strict=True)])
    changed: dict[tuple[int, int, int], Point] = {}
    for at, p, ok, p_holm in zip(family, points, tested, adjusted, strict=True):
        needed = stats.repetitions_needed(alpha / m, paired=p.ratio_method == intervals.SIGNED_RANK)
        changed[at] = replace(p, comparisons=m, needed=needed, p_value=p.p_value if ok else None,
                              p_holm=p_holm if ok else None, significant=(p_holm <= alpha) if ok else None)
    out = []
    for i, sec in enumerate(sections):
        series = tuple(replace(s, points=tuple(changed.get((i, j, k), p) for k, p in enumerate(s.points)))
                       for j, s in enumerate(sec.servers))
        fixed = replace(sec, servers=series)
        out.append(replace(fixed, findings=findings(fixed)) if sec.suite is None else fixed)
    return tuple(out)


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
    """What the tables say, as sentences-to-be: for each server against the baseline, the
    significant differences one by one, then one line for the rest; and the peak."""
    out: list[Finding] = []
    base = section.baseline
    for series in section.servers:
        if series.saturation:
            peak, tps, knee = series.saturation
            out.append(Finding("peak", series.server, base, (peak, knee), pct=tps,
                               cell=cell_id("tps", section.workload, series.server, peak)))
        if series.server == base:
            continue
        against = series.reference or base  # a tenant beside others: the same server alone
        rest: list[int] = []
        too_few: list[int] = []
        needed = 0
        for p in series.points:
            if p.ratio is None:
                continue
            if p.significant:
                lo, hi = p.ratio_ci or (p.ratio, p.ratio)
                out.append(Finding(
                    "faster" if p.ratio > 1 else "slower", series.server, against, (p.clients,),
                    pct=(p.ratio - 1) * 100, ci_pct=((lo - 1) * 100, (hi - 1) * 100),
                    cell=cell_id("ratio", section.workload, series.server, p.clients)))
            elif p.significant is None:
                too_few.append(p.clients)
                needed = max(needed, p.needed)
            else:
                rest.append(p.clients)
        if rest:
            out.append(Finding("no-difference", series.server, against, tuple(rest),
                               cell=cell_id("ratio", section.workload, series.server, rest[0])))
        if too_few:
            out.append(Finding("too-few", series.server, against, tuple(too_few), needed=needed,
                               cell=cell_id("ratio", section.workload, series.server,
                                            too_few[0])))
    return tuple(out)


def degradation(section: WorkloadSection, a: str, b: str) -> Degradation:
    """The S5 degradation-rate table of server ``b`` against ``a`` in one workload."""
    by_name = {s.server: s for s in section.servers}
    rows = []
    for pa, pb in zip(by_name[a].points, by_name[b].points, strict=True):
        ta, tb = pa.tps_median, pb.tps_median
        rate = (1 - tb / ta) * 100 if ta and tb is not None else None
        found = intervals.ratio_interval(
            pb.tps_values, pa.tps_values, blocks=pb.tps_blocks, baseline_blocks=pa.tps_blocks) \
            if pa.tps_values and pb.tps_values else None
        rows.append(DegradationRow(
            pa.clients, ta, tb, rate, ta - tb if ta is not None and tb is not None else None,
            rate_ci=((1 - found.high) * 100, (1 - found.low) * 100) if found else None,
            rate_level=found.confidence if found else None))
    # A server on another host: its own machine's CPU (the environment being compared),
    # not that of the client that ran pgbench.
    cpu_a = {act.clients: act.host_cpu or act.cpu for act in by_name[a].activity}
    cpu_b = {act.clients: act.host_cpu or act.cpu for act in by_name[b].activity}
    cpu = tuple((r.clients, cpu_a[r.clients], cpu_b[r.clients]) for r in rows
                if r.clients in cpu_a and r.clients in cpu_b)
    return Degradation(a, b, tuple(rows), cpu)


def noisy_points(section: WorkloadSection, *, limit: float = 0.1) -> Sequence[tuple[str, int, float]]:
    """(server, clients, CV) where the repetitions vary by more than ``limit``."""
    return [(s.server, p.clients, p.cv) for s in section.servers for p in s.points
            if p.cv is not None and p.cv > limit]
