"""How the report words an interval's method and a ratio's verdict: the hover text of a ratio
cell (the test, its p, Holm's correction when the report makes several comparisons) and the
legend under the TPS table, which names the methods behind its intervals."""

from __future__ import annotations

from collections.abc import Sequence

from teiten.analysis.model import Point
from teiten.report import formats as f
from teiten.report.cells import Context
from teiten.report.i18n import tr


def verdict_title(p: Point, ctx: Context) -> str:
    """The hover text of a ratio cell: the test, its p (after Holm's correction when the report
    makes several comparisons), and the verdict; or the repetitions a verdict would need."""
    mark = f.marker(p)
    holm = p.p_holm is not None and p.comparisons > 1
    if mark == "?":
        return tr("title.too_few_holm", ctx.lang, needed=p.needed, m=p.comparisons) \
            if p.comparisons > 1 else tr("title.too_few", ctx.lang, needed=p.needed)
    key = ("title.significant" if mark == "*" else "title.ns") + ("_holm" if holm else "")
    return tr(key, ctx.lang, p=f.format_p(p.p_value), p_holm=f.format_p(p.p_holm), m=p.comparisons,
              test=method_words(p, ctx.lang), alpha=f.format_alpha(ctx.alpha))


def method_words(p: Point, lang: str) -> str:
    """The test behind a ratio's verdict, in words."""
    return tr("test.signed-rank" if p.ratio_method == "signed-rank" else "test.mann-whitney", lang)


def legend(points: Sequence[Point], ctx: Context) -> str:
    """The legend of a TPS table whose ratios are ``points``: the interval's notation and the
    level it reaches, the methods actually used, and the markers."""
    used = ["order-statistic", *sorted({p.ratio_method for p in points if p.ratio_ci}, reverse=True)]
    methods = " ".join(tr(f"legend.{m}", ctx.lang) for m in used)
    return tr("note.legend", ctx.lang, conf=ctx.conf, alpha=f.format_alpha(ctx.alpha), methods=methods)
