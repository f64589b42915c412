"""METHODS S9's figure of search time against the rows an index gave before the recheck (2016
report: "Recheck前の件数と時間には相関が見られ"), a scatter with a series per index method (and
server): the figures are those of ``<stem>-steps.csv`` (``rows`` plus
``rows_removed_by_index_recheck`` plus ``rows_removed_by_filter``, against ``seconds_median``);
which searches count is analysis's (:func:`teiten.analysis.suites.rows_before_recheck`)."""

from __future__ import annotations

from collections import defaultdict

from teiten.analysis.model import WorkloadSection
from teiten.analysis.suites import rows_before_recheck
from teiten.report.scatter import Series, scatter
from teiten.words.context import Context
from teiten.words.i18n import tr

KIND = "suite-recheck"


def recheck_chart(section: WorkloadSection, step: str, ctx: Context) -> tuple[str, str, str] | None:
    """(kind, title, svg) of the searches of ``step`` whose plan used an index; None when none
    did or when no plan recorded its rows."""
    res = section.suite
    if res is None or not step:
        return None
    lang = ctx.lang
    timed = [st for st in res.steps if st.step == step and st.seconds is not None and st.shape]
    points: dict[tuple[str, str], list[tuple[float, float, str]]] = defaultdict(list)
    left_out = 0
    for st in timed:
        x = rows_before_recheck(st)
        if x is None or st.seconds is None:
            left_out += 1
            continue
        what = " · ".join(p for p in (st.server, st.variant, st.param) if p)
        hover = tr("chart.recheck.hover", lang, what=what,
                   rows=f"{x:,.0f}", ms=f"{st.seconds * 1000:,.3f}")
        points[(st.server, st.variant)].append((x, st.seconds * 1000, hover))
    if not points:
        return None
    colour = {v: i for i, v in enumerate(res.variants)}
    several = len(res.servers) > 1
    series = [Series(f"{server} · {variant}" if several else variant, pts,
                     colour.get(variant, 0) + (res.servers.index(server) * len(res.variants)
                                               if several and server in res.servers else 0))
              for (server, variant), pts in points.items()]
    title = tr("chart.recheck", lang, workload=section.workload, step=step)
    caption = tr("chart.recheck.left_out", lang, n=left_out) if left_out else ""
    return KIND, title, scatter(title, tr("axis.recheck_rows", lang), tr("axis.ms", lang), series,
                                caption=caption, no_data=tr("chart.no_data", lang))
