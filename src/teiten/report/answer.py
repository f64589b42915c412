"""The report opens with the answer: one line per workload and server, against the baseline,
saying at each client count whether it is faster, slower, no different (within the interval's
bounds), or whether the repetitions cannot tell yet (with the width and level reached). The
numbers are the ratio cells' own (:mod:`teiten.report.formats`), so the line never disagrees
with the table below it."""

from __future__ import annotations

from collections.abc import Sequence

from teiten.analysis.model import Point, ReportData
from teiten.report import formats as f
from teiten.report.i18n import clients_phrase, join, tr


def answer_lines(data: ReportData) -> list[str]:
    """The answer's lines, in the report's language; empty when nothing is compared (one
    server, or only timed-step workloads, whose tables say it)."""
    lines = []
    for section in data.sections:
        if section.suite is not None or len(section.servers) < 2:
            continue
        for series in section.servers:
            if series.server == section.baseline:
                continue
            parts = _parts(series.points, data.lang)
            lines.append(tr("answer.line", data.lang, workload=section.workload,
                            server=series.server, baseline=series.reference or section.baseline,
                            parts=tr("answer.sep", data.lang).join(parts) if parts
                            else tr("answer.nothing", data.lang)))
    return lines


def _verdict(p: Point) -> str:
    if p.significant is None:
        return "unsure"
    if not p.significant:
        return "same"
    assert p.ratio is not None
    return "faster" if p.ratio > 1 else "slower"


def _parts(points: Sequence[Point], lang: str) -> list[str]:
    """Faster and slower points one by one; the points with no difference together, and those
    that cannot tell together, each with the span of their intervals."""
    measured = [p for p in points if p.ratio is not None]
    out = []
    for p in measured:
        verdict = _verdict(p)
        if verdict in ("faster", "slower"):
            assert p.ratio is not None
            ratio = f.pct_number(p.ratio)
            out.append(tr(f"answer.{verdict}", lang, diff=f.diff_from_ratio(ratio),
                          clients=clients_phrase([p.clients], lang), ratio=ratio,
                          conf=f.format_level(p.ratio_ci_level),
                          ci=f.ratio_ci_bounds(p) or f.MISSING))
    for verdict in ("same", "unsure"):
        group = [p for p in measured if _verdict(p) == verdict]
        if not group:
            continue
        clients = clients_phrase([p.clients for p in group], lang)
        bounded = [p for p in group if p.ratio_ci is not None]
        if not bounded:
            out.append(tr("answer.unsure_none", lang, clients=clients))
            continue
        low = min(p.ratio_ci[0] for p in bounded if p.ratio_ci)
        high = max(p.ratio_ci[1] for p in bounded if p.ratio_ci)
        levels = sorted({f.format_level(p.ratio_ci_level) for p in bounded})
        out.append(tr(f"answer.{verdict}", lang, clients=clients,
                      low=f.pct_number(low), high=f.pct_number(high), conf=join(levels, lang),
                      needed=max(p.needed for p in group)))
    return out

