"""How the report words a ratio's verdict (:mod:`teiten.analysis.verdicts`), one way everywhere:
the answer's phrases (which the findings repeat), the marker and colour of a ratio cell, its
hover text, and the legend under the TPS table, which names the methods behind its intervals.

Every phrase is built from the point behind the cell, with the functions that print the cell
(:mod:`teiten.report.formats`), so that the answer, the finding, the cell and the chart say the
same thing in the same digits."""

from __future__ import annotations

from collections.abc import Sequence

from teiten.analysis import verdicts as v
from teiten.analysis.model import Point
from teiten.report import formats as f
from teiten.report.cells import Context
from teiten.report.i18n import clients_phrase, join, tr

MARKS = {v.FASTER: "▲", v.SLOWER: "▼", v.SAME: "≈", v.UNSURE: "?"}
TONES = {v.FASTER: "better sig", v.SLOWER: "worse sig", v.SAME: "same", v.UNSURE: ""}


def marker(p: Point) -> str:
    """The verdict's marker in a ratio cell: ▲ faster, ▼ slower, ≈ no difference, ? cannot tell."""
    return MARKS.get(p.verdict, "")


def tone(p: Point) -> str:
    """The cell's colour follows the verdict alone: green faster, red slower, grey no
    difference, none where it cannot tell (however far the estimate is from 100%)."""
    return TONES.get(p.verdict, "")


def _margin(p: Point) -> str:
    return f"{p.margin_pct:g}"


def _required(p: Point, ctx: Context) -> str:
    return v.required_text(v.family_level(p.comparisons, ctx.alpha))


def verdict_title(p: Point, ctx: Context) -> str:
    """The hover text of a ratio cell: the verdict and what in the interval gives it."""
    lang = ctx.lang
    common = {"conf": f.format_level(p.ratio_ci_level), "ci": f.ratio_ci_bounds(p) or f.MISSING,
              "test": method_words(p, lang), "margin": _margin(p)}
    if p.verdict in (v.FASTER, v.SLOWER):
        return tr(f"title.{p.verdict}", lang, **common)
    if p.verdict == v.SAME:
        return tr("title.no-difference", lang, **common, low=f"{100 - p.margin_pct:g}",
                  high=f"{100 + p.margin_pct:g}")
    if p.reason == v.SHORT:
        return tr("title.short", lang, conf=common["conf"], required=_required(p, ctx),
                  m=p.comparisons, needed=p.needed)
    if p.reason == v.WIDE:
        return tr("title.wide", lang, **common)
    if p.reason == v.NO_INTERVAL:
        return tr("title.no-interval", lang)
    return tr("title.no-ratio", lang) if p.reason == v.NO_RATIO else ""


def method_words(p: Point, lang: str) -> str:
    """The method behind a ratio's interval, in words."""
    return tr("test.signed-rank" if p.ratio_method == "signed-rank" else "test.mann-whitney", lang)


def legend(points: Sequence[Point], ctx: Context) -> str:
    """The legend of a TPS table whose ratios are ``points``: the interval's notation and the
    level it reaches, the methods actually used, and the markers."""
    used = ["order-statistic", *sorted({p.ratio_method for p in points if p.ratio_ci}, reverse=True)]
    methods = " ".join(tr(f"legend.{m}", ctx.lang) for m in used)
    margin = points[0].margin_pct if points else v.MARGIN_PCT
    return tr("note.legend", ctx.lang, conf=ctx.conf, alpha=f.format_alpha(ctx.alpha), methods=methods,
              margin=f"{margin:g}", low=f"{100 - margin:g}", high=f"{100 + margin:g}")


def phrases(points: Sequence[Point], ctx: Context) -> list[str]:
    """What the points of one server against its baseline say, in the order a reader wants it:
    the faster and slower points one by one; then those with no difference together; then
    those that cannot tell, grouped by why, each group with the span of its intervals."""
    lang = ctx.lang
    out = []
    for p in points:
        if p.verdict in (v.FASTER, v.SLOWER) and p.shown_ratio is not None:
            ratio = f.pct_number(p.shown_ratio)
            out.append(tr(f"answer.{p.verdict}", lang, diff=f.diff_from_ratio(ratio),
                          clients=clients_phrase([p.clients], lang), ratio=ratio,
                          conf=f.format_level(p.ratio_ci_level), ci=f.ratio_ci_bounds(p) or f.MISSING))
    for word, reasons, key in ((v.SAME, ("",), "answer.same"), (v.UNSURE, (v.WIDE,), "answer.unsure"),
                               (v.UNSURE, (v.SHORT,), "answer.unsure_short"),
                               (v.UNSURE, (v.NO_INTERVAL,), "answer.unsure_none"),
                               (v.UNSURE, (v.NO_RATIO,), "answer.unsure_ratio")):
        group = [p for p in points if p.verdict == word and p.reason in reasons]
        if group:
            out.append(group_phrase(group, key, ctx))
    return out


def group_phrase(group: Sequence[Point], key: str, ctx: Context) -> str:
    """One phrase for points that share a verdict and its reason: their client counts, the span
    of their intervals and the levels those reach."""
    lang = ctx.lang
    fields: dict[str, object] = {"clients": clients_phrase([p.clients for p in group], lang),
                                 "margin": _margin(group[0]), "needed": max(p.needed for p in group),
                                 "m": group[0].comparisons, "required": _required(group[0], ctx)}
    bounded = [p.ratio_ci for p in group if p.ratio_ci]
    if bounded:
        fields.update(low=f.pct_number(min(lo for lo, _ in bounded)),
                      high=f.pct_number(max(hi for _, hi in bounded)),
                      conf=join(sorted({f.format_level(p.ratio_ci_level) for p in group if p.ratio_ci}),
                                lang))
    return tr(key, lang, **fields)
