"""A workload's charts: median TPS and median latency against clients, each with its
band, and the ratio to the baseline per client count with its confidence interval.

Words come from the catalogue and numbers from :mod:`teiten.report.formats`, so a
marker's hover text reads like the table cell behind it. A server keeps its palette
colour (its position in the section) in every chart.
"""

from __future__ import annotations

from teiten.report import formats as f
from teiten.report.i18n import clients_phrase, tr
from teiten.report.model import WorkloadSection
from teiten.report.svg import LOG_X_MIN_SPAN, Line, line_chart
from teiten.report.tables import Context, baseline_series

CHART_KINDS = ("tps", "latency", "ratio")


def use_log_x(section: WorkloadSection) -> bool:
    """Whether the client counts span a factor of :data:`LOG_X_MIN_SPAN` or more."""
    clients = [c for c in section.clients if c > 0]
    return bool(clients) and max(clients) / min(clients) >= LOG_X_MIN_SPAN


def workload_charts(section: WorkloadSection, ctx: Context | None = None) -> list[tuple[str, str]]:
    """``[(kind, svg), ...]``: ``tps``, ``latency``, and ``ratio`` when there is a server
    to compare with the baseline."""
    ctx = ctx or Context()
    out = [("tps", tps_chart(section, ctx)), ("latency", latency_chart(section, ctx))]
    if len(section.servers) > 1:
        out.append(("ratio", ratio_chart(section, ctx)))
    return out


def _chart(title: str, y_label: str, lines: list[Line], section: WorkloadSection, ctx: Context, *,
           y_decimals: int = 1, from_zero: bool = True,
           reference: tuple[float, str] | None = None) -> str:
    return line_chart(title, tr("axis.clients", ctx.lang), y_label, lines, log_x=use_log_x(section),
                      y_decimals=y_decimals, from_zero=from_zero, reference=reference,
                      log_caption=tr("axis.log", ctx.lang, label="{label}"),
                      no_data=tr("chart.no_data", ctx.lang))


def _who(server: str, clients: int, lang: str) -> str:
    return f"{server} · {clients_phrase([clients], lang)}"


def tps_chart(section: WorkloadSection, ctx: Context) -> str:
    """Median TPS per server; the band is the median's confidence interval."""
    lines = []
    for i, s in enumerate(section.servers):
        band, hover = [], {}
        for p in s.points:
            if p.tps_median is None:
                continue
            text = f"{_who(s.server, p.clients, ctx.lang)} · {f.format_tps(p.tps_median)} TPS"
            if p.tps_ci:
                band.append((float(p.clients), *p.tps_ci))
                text += f" {f.tps_ci_text(p)}"
            hover[float(p.clients)] = text
        lines.append(Line(s.server, [(p.clients, p.tps_median) for p in s.points], band=band,
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
            text = f"{_who(s.server, p.clients, ctx.lang)} · {f.format_latency(p.latency_ms_median)} ms"
            if len(p.latency_values) > 1:
                low, high = min(p.latency_values), max(p.latency_values)
                band.append((float(p.clients), low, high))
                text += " (" + tr("hover.range", ctx.lang, low=f.format_latency(low),
                                  high=f.format_latency(high)) + ")"
            hover[float(p.clients)] = text
        lines.append(Line(s.server, [(p.clients, p.latency_ms_median) for p in s.points], band=band,
                          hover=hover, colour=i))
    return _chart(tr("chart.latency", ctx.lang, workload=section.workload),
                  tr("axis.latency", ctx.lang), lines, section, ctx, y_decimals=3)


def ratio_chart(section: WorkloadSection, ctx: Context) -> str:
    """前バージョン比 per client count: one line per server other than the baseline, a
    dashed 100% line for the baseline, the ratio's confidence interval as whiskers."""
    base = baseline_series(section)
    others = [(i, s) for i, s in enumerate(section.servers) if s is not base]
    lines = []
    for n, (i, s) in enumerate(others):
        whiskers, hover = [], {}
        for p in s.points:
            if p.ratio is None:
                continue
            text = " ".join(part for part in (f.format_ratio(p.ratio), f.ratio_ci_text(p), f.marker(p))
                            if part)
            hover[float(p.clients)] = f"{_who(s.server, p.clients, ctx.lang)} · {text}"
            if p.ratio_ci:
                whiskers.append((float(p.clients), p.ratio_ci[0] * 100, p.ratio_ci[1] * 100))
        dodge = (n - (len(others) - 1) / 2) * 7.0
        lines.append(Line(f"{s.server} / {base.server}",
                          [(p.clients, None if p.ratio is None else p.ratio * 100) for p in s.points],
                          whiskers=whiskers, hover=hover, colour=i, dodge=dodge))
    return _chart(tr("chart.ratio", ctx.lang, workload=section.workload, baseline=base.server),
                  tr("axis.ratio", ctx.lang), lines, section, ctx, from_zero=False,
                  reference=(100.0, tr("chart.reference", ctx.lang, baseline=base.server)))
