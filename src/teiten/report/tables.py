"""The report's tables as data: words from the catalogue, numbers from
:mod:`teiten.words.formats`. The Markdown and the HTML renderers only lay them out, so
both reports say the same thing in the same words and numbers.

Per workload: the summary (peak, knee, mean differences), the TPS table (medians with
their confidence intervals, 基準比 (the ratio to the baseline server) with its interval and
significance marker, and
the smallest detectable difference), the latency table, and the 性能低下率 tables. Every
TPS and ratio cell carries the HTML id :func:`teiten.analysis.compare.cell_id` gives, so
that a finding can link to it.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TypeVar

from teiten.analysis import compare, verdicts
from teiten.analysis.model import (
    Point,
    ReportData,
    ServerInfo,
    ServerSeries,
    StudyParameters,
    WorkloadSection,
)
from teiten.analysis.stopping import AutoSummary
from teiten.report.cells import Cell, Column, DataTable, Table, Value, data_name, file_stem
from teiten.report.columns import LATENCY_COLUMNS, RATIO_COLUMNS, SUMMARY_COLUMNS, TPS_COLUMNS
from teiten.words import formats as f
from teiten.words.context import Context
from teiten.words.i18n import join, tr, word
from teiten.words.verdicts import legend, marker, tone, verdict_title

T = TypeVar("T")


def baseline_series(section: WorkloadSection) -> ServerSeries:
    """The baseline's series (by name; the first server if the name is not among them)."""
    for s in section.servers:
        if s.server == section.baseline:
            return s
    return section.servers[0]


def reference_series(section: WorkloadSection, series: ServerSeries) -> ServerSeries:
    """The series ``series``' ratios are taken against: its reference, else the baseline."""
    return next((s for s in section.servers if s.server == series.reference), baseline_series(section))


def others(section: WorkloadSection) -> list[ServerSeries]:
    base = baseline_series(section)
    return [s for s in section.servers if s is not base]


def point_at(series: ServerSeries, clients: int) -> Point | None:
    return next((p for p in series.points if p.clients == clients), None)


def _failed(point: Point | None, ctx: Context) -> str:
    return tr("failed", ctx.lang, n=point.n_failed) if point and point.n_failed else ""


def tps_cell(section: WorkloadSection, series: ServerSeries, clients: int, ctx: Context) -> Cell:
    p = point_at(series, clients)
    cid = compare.cell_id("tps", section.workload, series.server, clients)
    if p is None or p.tps_median is None:
        return Cell(f.MISSING, failed=_failed(p, ctx), id=cid, tone="missing")
    title = ""
    values = f.format_values(p.tps_values, f.TPS_DECIMALS)
    if p.tps_ci:
        title = tr("title.tps", ctx.lang, value=f.format_tps(p.tps_median),
                   conf=f.format_level(p.tps_ci_level), ci=f.interval(*p.tps_ci, decimals=f.TPS_DECIMALS),
                   cv=f.format_cv(p.cv), values=values)
    elif p.tps_values:
        title = tr("title.tps_one", ctx.lang, value=f.format_tps(p.tps_median), values=values)
    return Cell(f.format_tps(p.tps_median), f.tps_ci_text(p), failed=_failed(p, ctx), id=cid,
                title=title)


def ratio_cell(section: WorkloadSection, series: ServerSeries, clients: int, ctx: Context) -> Cell:
    p = point_at(series, clients)
    cid = compare.cell_id("ratio", section.workload, series.server, clients)
    if p is None or p.shown_ratio is None:
        return Cell(f.MISSING, marker=marker(p) if p else "", id=cid, tone="missing",
                    title=verdict_title(p, ctx) if p else "")
    return Cell(f.format_ratio(p.shown_ratio), f.ratio_ci_text(p), marker(p), id=cid,
                title=verdict_title(p, ctx), tone=tone(p))


def detectable_cell(series: ServerSeries, clients: int, ctx: Context) -> Cell:
    p = point_at(series, clients)
    if p is None or p.detectable_pct is None:
        return Cell(f.MISSING, tone="missing")
    text = f.format_pct(p.detectable_pct)
    return Cell(text, title=tr("title.detectable", ctx.lang, pct=text))


def idle_at(series: ServerSeries, clients: int) -> float | None:
    """The median % idle of the server's CPUs at ``clients`` (None where no monitor ran)."""
    act = next((a for a in series.activity if a.clients == clients), None)
    return act.idle if act else None


def idle_cell(series: ServerSeries, clients: int, ctx: Context) -> Cell:
    idle = idle_at(series, clients)
    if idle is None:
        return Cell(f.MISSING, tone="missing")
    act = next(a for a in series.activity if a.clients == clients)
    of = "server" if act.server_cpu_idle is not None else "host" if act.host_cpu else "machine"
    return Cell(f.format_pct(idle), title=tr(f"title.idle.{of}", ctx.lang))


def tps_table(section: WorkloadSection, ctx: Context) -> Table:
    """Median TPS per server, its CPU idle (as the 2014 tables had it, where the monitors ran),
    then 基準比 (ratio to the baseline) and the smallest detectable difference."""
    lang = ctx.lang
    base = baseline_series(section)
    rest = others(section)
    tps_group, ratio_group = tr("tps.group", lang), tr("ratio.group", lang)
    detect_group, idle_group = tr("detectable.group", lang), tr("idle.group", lang)
    idle = [s for s in section.servers if any(a.idle is not None for a in s.activity)]
    name = ctx.named
    columns = [Column(name(s.server), tps_group, _version_sub(s, base, lang)) for s in section.servers]
    columns += [Column(name(s.server), idle_group, md=f"{idle_group}: {name(s.server)}") for s in idle]
    columns += [Column(f"{name(s.server)} / {name(s.reference or base.server)}", ratio_group,
                       tr("ratio.sub", lang),
                       md=f"{ratio_group}: {name(s.server)} / {name(s.reference or base.server)}")
                for s in rest]
    columns += [Column(name(s.server), detect_group, md=f"{detect_group}: {name(s.server)}") for s in rest]
    rows = []
    for c in section.clients:
        cells = [tps_cell(section, s, c, ctx) for s in section.servers]
        cells += [idle_cell(s, c, ctx) for s in idle]
        cells += [ratio_cell(section, s, c, ctx) for s in rest]
        cells += [detectable_cell(s, c, ctx) for s in rest]
        rows.append((str(c), tuple(cells)))
    heading = tr("tps.heading" if rest else "tps.heading_alone", lang)
    return Table("tps", heading, tr("clients", lang), tuple(columns), tuple(rows), tps_notes(section, ctx),
                 tps_data(section, ctx))


def significance(p: Point) -> str:
    """The column as it was before the verdicts (scripts read it): from the verdict now."""
    if p.ratio is None:
        return ""
    if p.verdict in (verdicts.FASTER, verdicts.SLOWER):
        return "significant"
    return "too-few" if p.reason in (verdicts.SHORT, verdicts.NO_INTERVAL) else "not-significant"


def tps_data(section: WorkloadSection, ctx: Context) -> tuple[DataTable, ...]:
    """The TPS table's figures: ``<stem>-tps`` (the medians), and ``<stem>-ratio`` (the ratios,
    their intervals and verdicts, and the smallest detectable difference) when it has any."""
    w = section.workload
    tps: list[tuple[Value, ...]] = []
    ratio: list[tuple[Value, ...]] = []
    for s in section.servers:
        for c in section.clients:
            p = point_at(s, c)
            if p is None:
                continue
            low, high = p.tps_ci or (None, None)
            tps.append((w, s.server, s.version, c, f.round_or_none(p.tps_median, f.TPS_DECIMALS),
                        f.round_or_none(low, f.TPS_DECIMALS), f.round_or_none(high, f.TPS_DECIMALS),
                        f.round_or_none(None if p.cv is None else p.cv * 100, f.PCT_DECIMALS),
                        p.n_ok, p.n_failed, f.level_pct(p.tps_ci_level),
                        f.round_or_none(idle_at(s, c), f.PCT_DECIMALS), ctx.marked(s.server)))
    base = baseline_series(section)
    for s in others(section):
        for c in section.clients:
            p = point_at(s, c)
            if p is None:
                continue
            low, high = p.ratio_ci or (None, None)
            ratio.append((w, s.server, s.reference or base.server, c, f.pct_or_none(p.ratio),
                          f.pct_or_none(low),
                          f.pct_or_none(high), significance(p),
                          f.round_or_none(p.p_value, 4), p.needed if p.ratio is not None else None,
                          f.round_or_none(p.detectable_pct, f.PCT_DECIMALS), f.level_pct(p.ratio_ci_level),
                          (p.ratio_method or None) if p.ratio is not None else None,
                          f.round_or_none(p.p_holm, 4),
                          p.comparisons if p.ratio is not None else None,
                          f.pct_or_none(p.estimate),
                          (p.ratio_method or None) if p.estimate is not None else None,
                          p.verdict or None, p.reason or None, p.margin_pct,
                          ctx.marked(s.server, s.reference or base.server)))
    out = (DataTable(data_name(ctx, w, "tps"), w, "tps", TPS_COLUMNS, tuple(tps)),)
    return out + ((DataTable(data_name(ctx, w, "ratio"), w, "ratio", RATIO_COLUMNS, tuple(ratio)),)
                  if ratio else ())


def tps_notes(section: WorkloadSection, ctx: Context) -> tuple[str, ...]:
    """The legend of the markers, the "?" footnote and the detectable-difference line."""
    points = [p for s in others(section) for p in s.points if p.shown_ratio is not None]
    if not points:
        return ()
    notes = [legend(points, ctx)]
    too_few = [p.needed for p in points if p.reason == verdicts.SHORT]
    if too_few:
        notes.append(tr("note.too_few", ctx.lang, needed=max(too_few)))
    detectable = [p.detectable_pct for p in points if p.detectable_pct is not None]
    if detectable:
        low, high = f.format_pct(min(detectable)), f.format_pct(max(detectable))
        notes.append(tr("note.detectable", ctx.lang, pct=low) if low == high else
                     tr("note.detectable_range", ctx.lang, low=low, high=high))
    return tuple(notes)


def latency_ratio(point: Point | None, base: Point | None) -> float | None:
    """Median latency over the baseline's at the same client count (the one figure the
    model does not carry: it is a formatting of two medians)."""
    if point is None or base is None or point.latency_ms_median is None or not base.latency_ms_median:
        return None
    return point.latency_ms_median / base.latency_ms_median


def latency_table(section: WorkloadSection, ctx: Context) -> Table:
    lang = ctx.lang
    base = baseline_series(section)
    rest = others(section)
    group, ratio_group = tr("latency.group", lang), tr("latency.ratio.group", lang)
    name = ctx.named
    columns = [Column(name(s.server), group, _version_sub(s, base, lang)) for s in section.servers]
    columns += [Column(f"{name(s.server)} / {name(s.reference or base.server)}", ratio_group,
                       md=f"{ratio_group}: {name(s.server)} / {name(s.reference or base.server)}")
                for s in rest]
    rows = []
    for c in section.clients:
        cells = []
        for s in section.servers:
            p = point_at(s, c)
            cid = compare.cell_id("latency", section.workload, s.server, c)
            value = None if p is None else p.latency_ms_median
            title = "" if p is None or value is None or not p.latency_values else tr(
                "title.latency", lang, value=f.format_latency(value),
                values=f.format_values(p.latency_values, f.LATENCY_DECIMALS))
            cells.append(Cell(f.format_latency(value), failed=_failed(p, ctx), id=cid, title=title,
                              tone="missing" if value is None else ""))
        for s in rest:
            ratio = latency_ratio(point_at(s, c), point_at(reference_series(section, s), c))
            # No colour, no marker: a ratio of medians without an interval carries no verdict.
            cells.append(Cell(f.format_ratio(ratio), id=compare.cell_id("latency-ratio", section.workload,
                                                                 s.server, c),
                              tone="missing" if ratio is None else ""))
        rows.append((str(c), tuple(cells)))
    notes = (tr("note.ratio", lang),) if rest else ()
    return Table("latency", tr("latency.heading", lang), tr("clients", lang), tuple(columns),
                 tuple(rows), notes, (latency_data(section, ctx),))


def latency_data(section: WorkloadSection, ctx: Context) -> DataTable:
    w = section.workload
    base = baseline_series(section)
    rows = []
    for s in section.servers:
        for c in section.clients:
            p = point_at(s, c)
            if p is None:
                continue
            lat = latency_ratio(p, point_at(reference_series(section, s), c)) if s is not base else None
            rows.append((w, s.server, c, f.round_or_none(p.latency_ms_median, f.LATENCY_DECIMALS),
                         f.pct_or_none(lat), p.n_ok, p.n_failed,
                         ctx.marked(s.server, *([] if s is base else [(s.reference or base.server)]))))
    return DataTable(data_name(ctx, w, "latency"), w, "latency", LATENCY_COLUMNS, tuple(rows))


def summary_table(section: WorkloadSection, ctx: Context) -> Table:
    """Per server: version, peak TPS and where, the knee, and the mean differences."""
    lang = ctx.lang
    base = baseline_series(section)
    columns = tuple(Column(tr(k, lang, baseline=base.server)) for k in (
        "summary.version", "summary.peak_tps", "summary.peak_clients", "summary.knee",
        "summary.tps_diff", "summary.latency_diff"))
    rows = []
    for s in section.servers:
        peak = s.saturation
        is_base = s is base
        diff = tr("summary.baseline", lang) if is_base else f.format_diff(s.mean_tps_diff_pct)
        lat = tr("summary.baseline", lang) if is_base else f.format_diff(s.mean_latency_diff_pct)
        # Where it peaks and scales until: only where the repetitions place it (the finding's rule).
        found = compare.peak_finding(section, s)
        unsure = Cell("?", title=tr("summary.unsure", lang)) if found.kind.startswith("peak-") else None
        cells = (
            Cell(s.version),
            Cell(f.format_tps(peak[1] if peak else None)),
            unsure or Cell(str(peak[0]) if peak else f.MISSING),
            unsure or Cell(str(found.clients[1]) if len(found.clients) > 1 else f.MISSING),
            # No colour: a mean over client counts carries no test, and would look like a verdict.
            Cell(diff),
            Cell(lat),
        )
        rows.append((ctx.named(s.server), cells))
    return Table("summary", tr("summary", lang), tr("summary.server", lang), columns, tuple(rows),
                 (tr("summary.note", lang),), (summary_data(section, ctx),))


def summary_data(section: WorkloadSection, ctx: Context) -> DataTable:
    w = section.workload
    rows = []
    for s in section.servers:
        peak = s.saturation
        rows.append((w, s.server, s.version, f.round_or_none(peak[1], f.TPS_DECIMALS) if peak else None,
                     peak[0] if peak else None, peak[2] if peak else None,
                     f.round_or_none(s.mean_tps_diff_pct, f.PCT_DECIMALS),
                     f.round_or_none(s.mean_latency_diff_pct, f.PCT_DECIMALS), ctx.marked(s.server)))
    return DataTable(data_name(ctx, w, "summary"), w, "summary", SUMMARY_COLUMNS, tuple(rows))


def _version_sub(series: ServerSeries, base: ServerSeries, lang: str) -> str:
    return tr("baseline.sub", lang, version=series.version) if series is base else series.version


def study_rows(data: ReportData) -> list[tuple[str, str]]:
    """The Study table. A compare report gives each study's own value, by study, of what the
    studies differ in (repetitions, order and seed may differ freely; duration and scale with
    --allow-different-parameters)."""
    lang = data.lang
    pgbench = any(sec.suite is None for sec in data.sections)  # duration and scale are theirs

    def each(value: Callable[[StudyParameters], T], word: Callable[[T], str], whole: str) -> str:
        values = [value(p) for p in data.compared]
        if len(set(map(repr, values))) < 2:
            return whole
        return ", ".join(f"{word(v)} ({p.label})" for v, p in zip(values, data.compared, strict=True))

    def repetitions(blocks: int, auto: AutoSummary | None) -> str:
        if auto is None:
            return str(blocks)
        said = tr(f"study.auto.{auto.decision}", lang, blocks=blocks,
                  target=f"{auto.target_pct:g}", floor=auto.floor, ceiling=auto.ceiling,
                  margin=f"{auto.margin_pct:g}")
        per_point = auto.per_point and blocks > (auto.floor or blocks)
        more = (tr("study.auto.more", lang, more=auto.more_blocks,
                   minutes=f"{max(1, round(auto.more_s / 60))}")
                if auto.more_blocks and auto.more_s is not None else "")
        return said + (tr("study.auto.points", lang, floor=auto.floor) if per_point else "") + more

    return [
        (tr("study.name", lang), data.study),
        *([(tr("study.duration", lang), each(lambda p: p.duration_s, f.format_seconds,
                                              f.format_seconds(data.duration_s)))] if pgbench else []),
        (tr("study.repetitions", lang), each(lambda p: (p.repetitions, p.auto),
                                             lambda v: repetitions(*v),
                                             repetitions(data.repetitions, data.auto))),
        *([(tr("study.scale", lang), each(lambda p: p.scale, str, str(data.scale)))] if pgbench else []),
        (tr("study.order", lang), each(lambda p: p.order, lambda v: word("study.order", v, lang),
                                       word("study.order", data.order, lang))),
        (tr("study.seed", lang), each(lambda p: p.seed, str, str(data.seed))),
        (tr("study.confidence", lang), f"{f.format_confidence(data.confidence)}%"),
        (tr("study.alpha", lang), f.format_alpha(data.alpha)),
        (tr("study.generated", lang), data.generated_at),
        (tr("study.store", lang), data.store_path),
    ]


def fingerprint_rows(data: ReportData) -> list[tuple[str, str]]:
    """Every key of the fingerprint; nested values as compact JSON."""
    return [(str(key), fingerprint_value(value)) for key, value in data.fingerprint.items()]


def fingerprint_value(value: object) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), sort_keys=True, default=str)


def server_rows(info: ServerInfo, lang: str) -> list[tuple[str, str]]:
    checksums = tr({True: "on", False: "off", None: "unknown"}[info.data_checksums], lang)
    return [
        (tr("server.kind", lang), word("server.kind", info.kind, lang)),
        (tr("server.version", lang), info.version),
        (tr("server.origin", lang), info.origin),
        (tr("server.bindir", lang), info.bindir),
        (tr("server.checksums", lang), checksums),
        (tr("server.cpus", lang), cpus_text(info, lang)),
        *([(tr("server.client_cpus", lang), info.client_cpus if info.client_cpus != "any"
            else tr("server.client_cpus.any", lang))] if info.client_cpus else []),
        *([(tr("server.limits", lang), limits_text(info.limits, lang))] if info.limits else []),
        *([(tr("server.delay", lang), tr("server.delay.value", lang, asked=f"{info.delay[0]:g}",
                                           measured=f"{info.delay[1]:.3f}",
                                           direct=f"{info.delay[2]:.3f}"))]
          if info.delay else []),
        *([(tr("server.bandwidth", lang), tr("server.bandwidth.value", lang, asked=f"{info.bandwidth[0]:g}",
                                               measured="?" if info.bandwidth[1] is None
                                               else f"{info.bandwidth[1]:.1f}"))]
          if info.bandwidth else []),
        *[(tr(label, lang, **dict(fields)), tr(value, lang, **dict(fields)))
          for label, value, fields in info.facts],
    ]


def cpus_text(info: ServerInfo, lang: str) -> str:
    """Where the server's processes ran: its kind's own CPUs (a guest's vCPUs), the CPUs of
    this machine it was confined to and how, or all of them."""
    if info.cpus_said is not None:
        key, fields = info.cpus_said
        return tr(key, lang, **dict(fields))
    if info.cpus is None:
        return tr("server.cpus.all", lang)
    if info.confined_by is None:
        return info.cpus
    return f"{info.cpus} ({tr(f'server.confined.{info.confined_by}', lang)})"


def limit_value(limit: str, value: float) -> str:
    """A limit's value, or a use of it: ``2GB``, ``500``, ``100MB/s``."""
    if limit.endswith("iops"):
        return f"{value:.0f}"
    return f.format_bytes(value) + ("" if limit == "memory" else "/s")


def limits_text(limits: tuple[tuple[str, int], ...], lang: str) -> str:
    """A server's limits as people read them: ``memory 2GB, write 500 IOPS``."""
    return join([tr(f"limit.{k}", lang, value=limit_value(k, v)) for k, v in limits], lang)


def section_stems(data: ReportData) -> list[str]:
    """One safe, distinct file stem per workload section, in section order (for the chart
    and table files)."""
    stems: list[str] = []
    for section in data.sections:
        stem = file_stem(section.workload)
        candidate, n = stem, 2
        while candidate in stems:
            candidate, n = f"{stem}-{n}", n + 1
        stems.append(candidate)
    return stems
