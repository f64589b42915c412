"""The findings of a workload as sentences, worded from :attr:`WorkloadSection.findings`.

Each sentence repeats the numbers of the table cell it points to, printed by the same
functions as the cell (:mod:`teiten.words.formats`): a ratio and its interval come from the
point behind the cell, not from the finding's own rounded copies, and the grouped verdicts are
the answer's own phrases, so a sentence can never disagree with its cell or the answer. The
"3.1% faster" is worked out from the printed "103.1%" in exact decimal arithmetic for the same
reason.
"""

from __future__ import annotations

from dataclasses import dataclass

from teiten.analysis.compare import MIN_TRIALS_FOR_PEAK
from teiten.analysis.model import Finding, Point, WorkloadSection
from teiten.report.tables import point_at
from teiten.words import formats as f
from teiten.words.context import Context
from teiten.words.i18n import clients_phrase, tr
from teiten.words.verdicts import phrases


@dataclass(frozen=True)
class Sentence:
    kind: str  # the finding's kind
    text: str
    cell: str  # the HTML id of the cell it repeats ("" when none)


def sentences(section: WorkloadSection, ctx: Context) -> list[Sentence]:
    """One sentence per finding: the comparisons with the baseline first, then where each
    server peaks (otherwise in the order of the findings)."""
    ordered = sorted(section.findings, key=lambda finding: finding.kind.startswith("peak"))
    return [Sentence(finding.kind, sentence(section, finding, ctx), finding.cell) for finding in ordered]


def sentence(section: WorkloadSection, finding: Finding, ctx: Context) -> str:
    lang = ctx.lang
    who = {"server": ctx.named(finding.server), "baseline": ctx.named(finding.baseline)}
    clients = clients_phrase(finding.clients, lang)
    kind = finding.kind
    if kind in ("faster", "slower"):
        worded = _difference(section, finding, ctx)
        if worded is not None:
            return worded
    if kind == "peak":
        peak = clients_phrase(finding.clients[:1], lang)
        if len(finding.clients) == 2:
            return tr("finding.peak", lang, **who, peak=peak, knee=clients_phrase(finding.clients[1:], lang),
                      tps=f.format_tps(finding.pct))
        return tr("finding.peak_only", lang, **who, peak=peak, tps=f.format_tps(finding.pct))
    if kind == "peak-overlap":
        return tr("finding.peak-overlap", lang, **who, peak=clients, tps=f.format_tps(finding.pct))
    if kind == "peak-unsure":
        return tr("finding.peak-unsure", lang, **who, n=finding.needed, min=MIN_TRIALS_FOR_PEAK)
    if kind in ("no-difference", "cannot-tell"):
        worded = _grouped(section, finding, ctx)
        if worded is not None:
            return worded
    if kind == "failed":
        return tr("finding.failed", lang, **who, clients=clients)
    return tr("finding.other", lang, **who, clients=clients, kind=kind)


def _points(section: WorkloadSection, finding: Finding) -> list[Point]:
    series = next((s for s in section.servers if s.server == finding.server), None)
    found = [point_at(series, c) for c in finding.clients] if series else []
    return [p for p in found if p is not None]


def _grouped(section: WorkloadSection, finding: Finding, ctx: Context) -> str | None:
    """"pg18 vs pg17: no difference within ±5% at 1, 2 clients (…)." — the answer's own
    phrase for these points (:func:`teiten.words.verdicts.phrases`)."""
    parts = phrases(_points(section, finding), ctx)
    if len(parts) != 1:
        return None
    return tr("finding.grouped", ctx.lang, server=ctx.named(finding.server),
              baseline=ctx.named(finding.baseline), part=parts[0])


def _difference(section: WorkloadSection, finding: Finding, ctx: Context) -> str | None:
    """"pg18 is 3.1% faster than pg17 at 4 clients: ratio 103.1% (99.1% CI 101.2–105.0%)." —
    from the point the ratio cell shows: the interval's own estimate, the interval at the
    report's family level, and the level it reaches."""
    point = next(iter(_points(section, finding)), None)
    if point is None or point.shown_ratio is None:
        return None
    ratio = f.pct_number(point.shown_ratio)
    return tr(f"finding.{finding.kind}", ctx.lang, server=ctx.named(finding.server),
              baseline=ctx.named(finding.baseline), clients=clients_phrase(finding.clients, ctx.lang),
              diff=f.diff_from_ratio(ratio), ratio=f"{ratio}%",
              conf=f.format_level(point.ratio_ci_level) if point.ratio_ci else ctx.conf,
              ci=f.ratio_ci_bounds(point) or f.MISSING)
