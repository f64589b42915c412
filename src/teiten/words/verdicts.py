"""How the report words a ratio's verdict (:mod:`teiten.analysis.verdicts`), one way everywhere:
the answer's phrases (which the findings repeat), the marker and colour of a ratio cell, its
hover text, and the legend under the TPS table, which names the methods behind its intervals;
and the same for the ratios of the tables beside it (:mod:`teiten.analysis.judging`).

Every phrase is built from the point behind the cell, with the functions that print the cell
(:mod:`teiten.words.formats`), so that the answer, the finding, the cell and the chart say the
same thing in the same digits."""

from __future__ import annotations

from collections.abc import Sequence

from teiten.analysis import verdicts as v
from teiten.analysis.model import Point
from teiten.analysis.verdicts import Judged
from teiten.words import formats as f
from teiten.words.context import Context
from teiten.words.i18n import clients_phrase, join, tr

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
    return v.required_text(p.required or v.family_level(p.comparisons, ctx.alpha))


def verdict_title(p: Point, ctx: Context) -> str:
    """The hover text of a ratio cell: the verdict and what in the interval gives it."""
    lang = ctx.lang
    conf = f.format_level(p.ratio_ci_level)
    common = {"conf": conf, "ci": f.ratio_ci_bounds(p) or f.MISSING,
              "test": method_words(p, lang), "margin": _margin(p)}
    if p.verdict in (v.FASTER, v.SLOWER):
        return tr(f"title.{p.verdict}", lang, **common)
    if p.verdict == v.SAME:
        return tr("title.no-difference", lang, **common, low=f"{100 - p.margin_pct:g}",
                  high=f"{100 + p.margin_pct:g}")
    if p.reason == v.SHORT:
        return tr("title.short", lang, conf=conf, required=_required(p, ctx),
                  m=p.comparisons, needed=p.needed)
    if p.reason == v.WIDE:
        return tr("title.wide", lang, **common)
    if p.reason == v.NO_INTERVAL:
        return tr("title.no-interval", lang)
    return tr("title.no-ratio", lang) if p.reason == v.NO_RATIO else ""


def method_words(p: Point, lang: str) -> str:
    """The method behind a ratio's interval, in words."""
    return tr(f"test.{p.ratio_method}" if p.ratio_method in ("signed-rank", "sign-test")
              else "test.mann-whitney", lang)


def legend(points: Sequence[Point], ctx: Context) -> str:
    """The legend of a TPS table whose ratios are ``points``: the interval's notation and the
    level it reaches, the methods actually used, and the markers."""
    used = ["order-statistic", *sorted({p.ratio_method for p in points if p.ratio_ci}, reverse=True)]
    methods = " ".join(tr(f"legend.{m}", ctx.lang) for m in used)
    margin = points[0].margin_pct if points else v.MARGIN_PCT
    auto = tr("note.legend.auto", ctx.lang) if any(
        p.required > v.family_level(p.comparisons, ctx.alpha) + 1e-12 for p in points) else ""
    return tr("note.legend", ctx.lang, conf=ctx.conf, alpha=f.format_alpha(ctx.alpha), methods=methods,
              margin=f"{margin:g}", low=f"{100 - margin:g}", high=f"{100 + margin:g}", auto=auto)


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


def judged_bounds(j: Judged) -> str:
    """``80.1–90.2``: a judged ratio's interval in percent, as its cell prints it."""
    return "" if j.ci is None else f"{f.pct_number(j.ci[0])}{f.DASH}{f.pct_number(j.ci[1])}"


def judged_ci_text(j: Judged) -> str:
    """``[80.1–90.2, 98.8%]``: a judged ratio's interval and the level it reaches."""
    bounds = judged_bounds(j)
    return f"[{bounds}, {f.format_level(j.level)}%]" if bounds else ""


def judged_title(j: Judged, ctx: Context) -> str:
    """The hover text of a judged ratio: its verdict and what in its interval gives it."""
    lang, word = ctx.lang, j.verdict.word
    conf = f.format_level(j.level)
    common = {"conf": conf, "ci": judged_bounds(j) or f.MISSING,
              "margin": f"{j.margin_pct:g}"}
    if word in (v.FASTER, v.SLOWER):
        return tr(f"judged.{word}" + (".latency" if j.lower_is_better else ""), lang, **common)
    if word == v.SAME:
        return tr("judged.no-difference", lang, **common, low=f"{100 - j.margin_pct:g}",
                  high=f"{100 + j.margin_pct:g}")
    reason = j.verdict.reason
    if reason == v.SHORT:
        return tr("judged.short", lang, conf=conf, required=v.required_text(j.required),
                  m=j.comparisons)
    if reason == v.WIDE:
        return tr("title.wide", lang, **common, test=tr("judged.method", lang))
    return tr("title.no-interval" if reason == v.NO_INTERVAL else "title.no-ratio", lang)


def judged_note(judged: Sequence[Judged | None], ctx: Context) -> list[str]:
    """The note under a table of judged ratios: the estimate, the family's level, the markers."""
    found = [j for j in judged if j is not None]
    if not found:
        return []
    j = found[0]
    marks = tr("judged.marks.latency" if j.lower_is_better else "judged.marks", ctx.lang,
               margin=f"{j.margin_pct:g}", low=f"{100 - j.margin_pct:g}", high=f"{100 + j.margin_pct:g}")
    return [f"{judged_family(j, ctx)} {marks}"]


def judged_family(j: Judged, ctx: Context) -> str:
    """What the intervals of ``j``'s table hold together: the family and its level."""
    return tr("judged.family", ctx.lang, m=j.comparisons, required=v.required_text(j.required),
              alpha=f.format_alpha(ctx.alpha), conf=ctx.conf)
