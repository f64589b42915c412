"""A workload's charts: median TPS and median latency against clients, each with its
band, and the ratio to the baseline per client count with its confidence interval.

Words come from the catalogue and numbers from :mod:`teiten.words.formats`, so a
marker's hover text reads like the table cell behind it. A server keeps its palette
colour (its position in the section) in every chart.
"""

from __future__ import annotations

from teiten.analysis.model import CoreScaling, WorkloadSection
from teiten.report.app_tables import app_chart_lines
from teiten.report.cells import DataTable, data_name
from teiten.report.lock_charts import lock_charts
from teiten.report.parts import registered_charts
from teiten.report.recheck_chart import KIND as RECHECK
from teiten.report.suite_tables import suite_charts
from teiten.report.svg import LOG_X_MIN_SPAN, Line, line_chart
from teiten.report.tables import baseline_series
from teiten.words import formats as f
from teiten.words.context import Context
from teiten.words.i18n import clients_phrase, tr
from teiten.words.verdicts import marker, verdict_title

CHART_KINDS = ("tps", "latency", "ratio")


def use_log_x(section: WorkloadSection) -> bool:
    """Whether the client counts span a factor of :data:`LOG_X_MIN_SPAN` or more."""
    clients = [c for c in section.clients if c > 0]
    return bool(clients) and max(clients) / min(clients) >= LOG_X_MIN_SPAN


def workload_charts(section: WorkloadSection,
                    ctx: Context | None = None) -> list[tuple[str, str, str]]:
    """``[(kind, title, svg), ...]``: ``tps``, ``latency``, ``ratio`` when there is a server
    to compare with the baseline, and ``cores-N`` (TPS against cores per client count) for
    each family of servers that ran on different numbers of cores; then the charts of
    teiten/tables/ (S7's total TPS against nodes) and the LWLock figures of builds that count
    their locks (:mod:`teiten.report.lock_charts`)."""
    ctx = ctx or Context()
    if section.suite is not None:
        return suite_charts(section, ctx)
    kinds = ["tps", "latency"] + (["ratio"] if len(section.servers) > 1 else [])
    draw = {"tps": tps_chart, "latency": latency_chart, "ratio": ratio_chart}
    out = [(kind, tr(f"chart.{kind}", ctx.lang, workload=section.workload, baseline=section.baseline),
            draw[kind](section, ctx)) for kind in kinds]
    app = app_chart_lines(section, ctx)
    if app is not None:
        kind, y_label, lines = app
        title = tr(f"chart.{kind}", ctx.lang, workload=section.workload)
        out.append((kind, title, _chart(title, y_label, lines, section, ctx)))
    for i, family in enumerate(section.core_scaling):
        title = tr("chart.cores", ctx.lang, workload=section.workload, family=family.family)
        out.append((f"cores-{i + 1}", title, cores_chart(section, family, title, ctx)))
    if section.history is not None:
        title = tr("chart.history", ctx.lang, workload=section.workload)
        out.append(("history", title, history_chart(section, title, ctx)))
    return out + registered_charts(section, ctx) + lock_charts(section, ctx)


# The charts drawn from a CSV that no table shows as drawn, by kind: the kind of that data.
DRAWN_FROM = {"lock-requests": "lock-bars", "lock-contentions": "lock-bars",
              "lock-contentions-split": "lock-bars", RECHECK: "steps"}

Chart = tuple[str, str, str]  # kind, title, svg


def chart_groups(section: WorkloadSection, ctx: Context) -> list[tuple[tuple[DataTable, ...], list[Chart]]]:
    """The section's charts (:func:`workload_charts`) in groups, each with the data the
    reports name beside it: first those whose figures the tables show (no data), then those
    drawn from a CSV of their own, a group per CSV (the LWLock figures: ``<stem>-lock-bars``;
    S9's searches: ``<stem>-steps``)."""
    w = section.workload
    plain: list[Chart] = []
    apart: dict[str, list[Chart]] = {}
    for chart in workload_charts(section, ctx):
        kind = DRAWN_FROM.get(chart[0])
        if kind is None:
            plain.append(chart)
        else:
            apart.setdefault(kind, []).append(chart)
    return [((), plain), *(((DataTable(data_name(ctx, w, kind), w, kind, (), ()),), charts)
                           for kind, charts in apart.items())]


def history_chart(section: WorkloadSection, title: str, ctx: Context) -> str:
    """The line of versions: median TPS per version in version order, one line per client
    count; the band is the median's confidence interval."""
    assert section.history is not None
    by_name = {s.server: s for s in section.servers}
    names = [name for name, _, _ in section.history.line]
    labels = {float(i + 1): version for i, (_, version, _) in enumerate(section.history.line)}
    lines = []
    for j, clients in enumerate(section.clients):
        pts: list[tuple[float, float | None]] = []
        band, hover = [], {}
        for i, name in enumerate(names):
            point = by_name[name].points[j]
            pts.append((float(i + 1), point.tps_median))
            if point.tps_median is not None:
                hover[float(i + 1)] = (f"{name} ({labels[float(i + 1)]}) · "
                                       f"{clients_phrase([clients], ctx.lang)} · "
                                       f"{f.format_tps(point.tps_median)} TPS {f.tps_ci_text(point)}").strip()
                if point.tps_ci:
                    band.append((float(i + 1), *point.tps_ci))
        lines.append(Line(clients_phrase([clients], ctx.lang), pts, band=band, hover=hover, colour=j))
    return line_chart(title, tr("axis.version", ctx.lang), tr("axis.tps", ctx.lang), lines,
                      x_labels=labels, no_data=tr("chart.no_data", ctx.lang))


def _chart(title: str, y_label: str, lines: list[Line], section: WorkloadSection, ctx: Context, *,
           y_decimals: int = 1, from_zero: bool = True, y_unit: str = "",
           reference: tuple[float, str] | None = None, margin: tuple[float, float, str] | None = None) -> str:
    return line_chart(title, tr("axis.clients", ctx.lang), y_label, lines, log_x=use_log_x(section),
                      y_decimals=y_decimals, from_zero=from_zero, reference=reference, margin=margin,
                      y_unit=y_unit,
                      log_caption=tr("axis.log", ctx.lang, label="{label}"),
                      no_data=tr("chart.no_data", ctx.lang))


def _who(server: str, clients: int, ctx: Context) -> str:
    return f"{ctx.named(server)} · {clients_phrase([clients], ctx.lang)}"


def tps_chart(section: WorkloadSection, ctx: Context) -> str:
    """Median TPS per server; the band is the median's confidence interval."""
    lines = []
    for i, s in enumerate(section.servers):
        band, hover = [], {}
        for p in s.points:
            if p.tps_median is None:
                continue
            text = f"{_who(s.server, p.clients, ctx)} · {f.format_tps(p.tps_median)} TPS"
            if p.tps_ci:
                band.append((float(p.clients), *p.tps_ci))
                text += f" {f.tps_ci_text(p)}"
            hover[float(p.clients)] = text
        lines.append(Line(ctx.named(s.server), [(p.clients, p.tps_median) for p in s.points], band=band,
                          hover=hover, colour=i))
    return _chart(tr("chart.tps", ctx.lang, workload=section.workload), tr("axis.tps", ctx.lang),
                  lines, section, ctx)


def latency_chart(section: WorkloadSection, ctx: Context) -> str:
    """Median latency per server; the band is the range of the repetitions' latencies (the
    model carries no interval for latency)."""
    lines = []
    for i, s in enumerate(section.servers):
        band, hover = [], {}
        for p in s.points:
            if p.latency_ms_median is None:
                continue
            text = f"{_who(s.server, p.clients, ctx)} · {f.format_latency(p.latency_ms_median)} ms"
            if len(p.latency_values) > 1:
                low, high = min(p.latency_values), max(p.latency_values)
                band.append((float(p.clients), low, high))
                text += " (" + tr("hover.range", ctx.lang, low=f.format_latency(low),
                                  high=f.format_latency(high)) + ")"
            hover[float(p.clients)] = text
        lines.append(Line(ctx.named(s.server), [(p.clients, p.latency_ms_median) for p in s.points],
                          band=band,
                          hover=hover, colour=i))
    return _chart(tr("chart.latency", ctx.lang, workload=section.workload),
                  tr("axis.latency", ctx.lang), lines, section, ctx, y_decimals=3)


def ratio_chart(section: WorkloadSection, ctx: Context) -> str:
    """基準比 (ratio to the baseline) per client count: one line per server other than the baseline, a
    dashed 100% line for the baseline in the shaded band of "no difference" (100 ± the study's
    margin), the ratio's confidence interval as whiskers around the interval's own estimate (the
    figure the ratio cell prints; an end past the axis is an arrow with its value), and the
    verdict in the hover."""
    base = baseline_series(section)
    others = [(i, s) for i, s in enumerate(section.servers) if s is not base]
    lines = []
    for n, (i, s) in enumerate(others):
        whiskers, hover = [], {}
        for p in s.points:
            if p.shown_ratio is None:
                continue
            text = " ".join(part for part in (f.format_ratio(p.shown_ratio), f.ratio_ci_text(p),
                                              marker(p), verdict_title(p, ctx)) if part)
            hover[float(p.clients)] = f"{_who(s.server, p.clients, ctx)} · {text}"
            if p.ratio_ci:
                whiskers.append((float(p.clients), p.ratio_ci[0] * 100, p.ratio_ci[1] * 100))
        dodge = (n - (len(others) - 1) / 2) * 7.0
        lines.append(Line(f"{ctx.named(s.server)} / {ctx.named(s.reference or base.server)}",
                          [(p.clients, None if p.shown_ratio is None else p.shown_ratio * 100)
                           for p in s.points],
                          whiskers=whiskers, hover=hover, colour=i, dodge=dodge))
    return _chart(tr("chart.ratio", ctx.lang, workload=section.workload, baseline=base.server),
                  tr("axis.ratio", ctx.lang), lines, section, ctx, from_zero=False, y_unit="%",
                  reference=(100.0, tr("chart.reference", ctx.lang, baseline=base.server)),
                  margin=(100.0 - ctx.margin_pct, 100.0 + ctx.margin_pct,
                          tr("chart.margin", ctx.lang, margin=f"{ctx.margin_pct:g}")))


def cores_chart(section: WorkloadSection, family: CoreScaling, title: str, ctx: Context) -> str:
    """Median TPS against the number of cores, one line per client count (the 2014 and
    2016 scale-up figures); the band is the median's confidence interval."""
    by_name = {s.server: s for s in section.servers}
    lines = []
    for i, clients in enumerate(section.clients):
        pts: list[tuple[float, float | None]] = []
        band, hover = [], {}
        for cores, name in family.servers:
            point = next((p for p in by_name[name].points if p.clients == clients), None) \
                if name in by_name else None
            tps = point.tps_median if point else None
            pts.append((float(cores), tps))
            if point is not None and tps is not None:
                hover[float(cores)] = (f"{name} · {clients_phrase([clients], ctx.lang)} · "
                                       f"{f.format_tps(tps)} TPS {f.tps_ci_text(point)}").strip()
                if point.tps_ci:
                    band.append((float(cores), *point.tps_ci))
        lines.append(Line(clients_phrase([clients], ctx.lang), pts, band=band, hover=hover, colour=i))
    return line_chart(title, tr("axis.cores", ctx.lang), tr("axis.tps", ctx.lang), lines,
                      no_data=tr("chart.no_data", ctx.lang))
