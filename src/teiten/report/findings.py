"""The findings of a workload as sentences, worded from :attr:`WorkloadSection.findings`.

Each sentence repeats the numbers of the table cell it points to, printed by the same
functions as the cell (:mod:`teiten.report.formats`): a ratio, its interval and its p
come from the point behind the cell, not from the finding's own rounded copies, so a
sentence can never disagree with its cell. The "3.1% faster" is worked out from the
printed "103.1%" in exact decimal arithmetic for the same reason.
"""

from __future__ import annotations

from dataclasses import dataclass

from teiten.analysis.model import Finding, WorkloadSection
from teiten.report import formats as f
from teiten.report.cells import Context
from teiten.report.i18n import clients_phrase, tr
from teiten.report.tables import point_at


@dataclass(frozen=True)
class Sentence:
    kind: str  # the finding's kind
    text: str
    cell: str  # the HTML id of the cell it repeats ("" when none)


def sentences(section: WorkloadSection, ctx: Context) -> list[Sentence]:
    """One sentence per finding: the comparisons with the baseline first, then where each
    server peaks (otherwise in the order of the findings)."""
    ordered = sorted(section.findings, key=lambda finding: finding.kind == "peak")
    return [Sentence(finding.kind, sentence(section, finding, ctx), finding.cell) for finding in ordered]


def sentence(section: WorkloadSection, finding: Finding, ctx: Context) -> str:
    lang = ctx.lang
    who = {"server": finding.server, "baseline": finding.baseline}
    clients = clients_phrase(finding.clients, lang)
    kind = finding.kind
    if kind in ("faster", "slower"):
        worded = _difference(section, finding, ctx)
        if worded is not None:
            return worded
    if kind == "peak" and len(finding.clients) == 2:
        peak, knee = finding.clients
        return tr("finding.peak", lang, **who, peak=clients_phrase([peak], lang),
                  knee=clients_phrase([knee], lang), tps=f.format_tps(finding.pct))
    if kind == "no-difference":
        return tr("finding.no-difference", lang, **who, clients=clients)
    if kind == "too-few":
        return tr("finding.too-few", lang, **who, clients=clients, needed=finding.needed)
    if kind == "failed":
        return tr("finding.failed", lang, **who, clients=clients)
    return tr("finding.other", lang, **who, clients=clients, kind=kind)


def _difference(section: WorkloadSection, finding: Finding, ctx: Context) -> str | None:
    """"pg18 is 3.1% faster than pg17 at 4 clients: ratio 103.1% (97.1% CI 101.2–105.0%),
    significant (p = 0.029)." — from the point the ratio cell shows, with the level its
    interval reaches, and the p after Holm's correction when the report makes several
    comparisons (the p the cell's hover text starts with)."""
    series = next((s for s in section.servers if s.server == finding.server), None)
    point = point_at(series, finding.clients[0]) if series and finding.clients else None
    if point is None or point.ratio is None:
        return None
    ratio = f.pct_number(point.ratio)
    holm = point.p_holm is not None and point.comparisons > 1
    return tr(f"finding.{finding.kind}" + ("_holm" if holm else ""), ctx.lang, server=finding.server,
              baseline=finding.baseline, clients=clients_phrase(finding.clients, ctx.lang),
              diff=f.diff_from_ratio(ratio), ratio=f"{ratio}%",
              conf=f.format_level(point.ratio_ci_level) if point.ratio_ci else ctx.conf,
              ci=f.ratio_ci_bounds(point) or f.MISSING, m=point.comparisons,
              p=f.format_p(point.p_holm if holm else point.p_value))
