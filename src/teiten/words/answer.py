"""The report opens with the answer: one line per workload and server, against the baseline,
saying at each client count whether it is faster, slower, no different within the study's
margin, or that the blocks cannot tell (and why). The phrases are those of the findings and the
numbers those of the ratio cells (:mod:`teiten.words.verdicts`), so the line never disagrees
with the table below it."""

from __future__ import annotations

from teiten.analysis import verdicts
from teiten.analysis.model import ReportData
from teiten.words.context import Context
from teiten.words.i18n import tr
from teiten.words.verdicts import phrases


def answer_lines(data: ReportData) -> list[str]:
    """The answer's lines, in the report's language; empty when nothing is compared (one
    server, or only timed-step workloads, whose tables say it)."""
    ctx = Context.of(data)
    lines = []
    for section in data.sections:
        if section.suite is not None or len(section.servers) < 2:
            continue
        for series in section.servers:
            if series.server == section.baseline:
                continue
            parts = phrases(series.points, ctx)
            lines.append(tr("answer.line", data.lang, workload=section.workload,
                            server=ctx.named(series.server),
                            baseline=ctx.named(series.reference or section.baseline),
                            parts=tr("answer.sep", data.lang).join(parts) if parts
                            else tr("answer.nothing", data.lang)))
    return lines


def answer_intro(data: ReportData) -> str:
    """The sentence above the answer: how its words are read from the intervals."""
    margins = {p.margin_pct for sec in data.sections for s in sec.servers for p in s.points if p.verdict}
    margin = min(margins) if margins else verdicts.MARGIN_PCT
    return tr("answer.intro", data.lang, margin=f"{margin:g}")
