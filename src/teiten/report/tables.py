"""The report's tables as data: words from the catalogue, numbers from
:mod:`teiten.report.formats`. The Markdown and the HTML renderers only lay them out, so
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
import re
from collections.abc import Callable, Mapping
from typing import Any

from teiten.analysis import compare, verdicts
from teiten.analysis.model import (
    LockTable,
    Point,
    ReportData,
    Scaleup,
    ScaleupRow,
    ServerInfo,
    ServerSeries,
    StudyParameters,
    WorkloadSection,
)
from teiten.analysis.rtt import RttBound
from teiten.analysis.scaleout import ScaleOut
from teiten.report import formats as f
from teiten.report.app_tables import app_tables
from teiten.report.cells import Cell, Column, Context, Table
from teiten.report.degradation_tables import degradation_tables
from teiten.report.history_tables import history_table
from teiten.report.i18n import clients_phrase, join, tr, word
from teiten.report.latency_tables import percentiles_table
from teiten.report.suite_tables import suite_tables
from teiten.report.verdicts import judged_cell, judged_note, legend, marker, tone, verdict_title


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


def tps_table(section: WorkloadSection, ctx: Context) -> Table:
    """Median TPS per server, then 基準比 (ratio to the baseline) and the smallest detectable difference."""
    lang = ctx.lang
    base = baseline_series(section)
    rest = others(section)
    tps_group, ratio_group = tr("tps.group", lang), tr("ratio.group", lang)
    detect_group = tr("detectable.group", lang)
    columns = [Column(s.server, tps_group, _version_sub(s, base, lang)) for s in section.servers]
    columns += [Column(f"{s.server} / {s.reference or base.server}", ratio_group, tr("ratio.sub", lang),
                       md=f"{ratio_group}: {s.server} / {s.reference or base.server}") for s in rest]
    columns += [Column(s.server, detect_group, md=f"{detect_group}: {s.server}") for s in rest]
    rows = []
    for c in section.clients:
        cells = [tps_cell(section, s, c, ctx) for s in section.servers]
        cells += [ratio_cell(section, s, c, ctx) for s in rest]
        cells += [detectable_cell(s, c, ctx) for s in rest]
        rows.append((str(c), tuple(cells)))
    heading = tr("tps.heading" if rest else "tps.heading_alone", lang)
    return Table("tps", heading, tr("clients", lang), tuple(columns), tuple(rows), tps_notes(section, ctx))


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
    group, ratio_group = tr("latency.group", lang), tr("ratio.group", lang)
    columns = [Column(s.server, group, _version_sub(s, base, lang)) for s in section.servers]
    columns += [Column(f"{s.server} / {s.reference or base.server}", ratio_group,
                       md=f"{ratio_group}: {s.server} / {s.reference or base.server}") for s in rest]
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
                 tuple(rows), notes)


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
        rows.append((s.server, cells))
    return Table("summary", tr("summary", lang), tr("summary.server", lang), columns, tuple(rows),
                 (tr("summary.note", lang),))


def lock_table(lt: LockTable, ctx: Context) -> Table:
    """LWLock requests and contentions per transaction, per lock and client count."""
    lang = ctx.lang
    columns = tuple(col for c in lt.clients for col in (
        Column(tr("locks.requests", lang), clients_phrase([c], lang),
               md=f"{tr('locks.requests', lang)} ({clients_phrase([c], lang)})"),
        Column(tr("locks.contentions", lang), clients_phrase([c], lang),
               md=f"{tr('locks.contentions', lang)} ({clients_phrase([c], lang)})")))
    rows = []
    for name, values in lt.rows:
        cells: list[Cell] = []
        for v in values:
            cells += [Cell(f.MISSING, tone="missing")] * 2 if v is None else [
                Cell(f"{v[0]:.3f}"), Cell(f"{v[1]:.4f}")]
        rows.append((name, tuple(cells)))
    return Table("locks", tr("locks", lang, server=lt.server), tr("locks.lock", lang), columns,
                 tuple(rows), (tr("locks.note", lang),))


def scaleup_table(sc: Scaleup, ctx: Context) -> Table:
    """METHODS S4: per core count, the peak TPS, the gain over the previous count, and the
    evidence at the peak (CPU idle, wait events, hottest functions); the verdict as notes."""
    lang = ctx.lang
    columns = tuple(Column(tr(f"scaleup.{k}", lang)) for k in
                    ("peak", "at", "gain", "idle", "waits", "hot"))

    def shares(items: tuple[tuple[str, float], ...]) -> str:
        return ", ".join(f"{name} {share * 100:.0f}%" for name, share in items) or f.MISSING

    rows = []
    for r in sc.rows:
        rows.append((str(r.cores), (
            Cell(f.format_tps(r.peak_tps), f.bracketed(r.peak_ci, r.peak_level, decimals=f.TPS_DECIMALS)),
            Cell(str(r.peak_clients or f.MISSING)),
            _gain_cell(r, ctx),
            Cell(f.format_pct(r.cpu_idle)),
            Cell(shares(r.waits)),
            Cell(shares(r.hot) + (f" ({clients_phrase([r.hot_clients], lang)})" if r.hot_clients else "")))))
    judged = [r.gain_judged for r in sc.rows] + [sc.beyond_judged]
    return Table("scaleup", tr("scaleup", lang, family=sc.family), tr("axis.cores", lang), columns,
                 tuple(rows), (*scaleup_sentences(sc, ctx), tr("scaleup.note", lang),
                               *judged_note(judged, ctx)))


def _gain_cell(r: ScaleupRow, ctx: Context) -> Cell:
    """A gain over fewer cores: 100 less than its ratio's estimate, marked by the ratio's verdict."""
    j = r.gain_judged
    if j is None or j.estimate is None:
        return judged_cell(j, ctx)
    return judged_cell(j, ctx, text=f.format_diff(r.gain_pct),
                       ci=f.bracketed(r.gain_ci, r.gain_level, decimals=f.PCT_DECIMALS))


def scaleup_sentences(sc: Scaleup, ctx: Context) -> list[str]:
    """Where TPS stops rising with cores, and what changed from the best core count to the
    largest: the IPA paper's evidence for the bottleneck. The largest core count's peak against
    the best one's is said with its estimate, its interval and its verdict."""
    lang = ctx.lang
    if sc.best_cores is None:
        return []

    def cores(n: int | None) -> str:
        return tr("cores.one" if n == 1 else "cores.many", lang, n=n)

    out = [tr("scaleup.knee", lang, knee=cores(sc.knee_cores), best=cores(sc.best_cores))]
    best = next(r for r in sc.rows if r.cores == sc.best_cores)
    last = sc.rows[-1]
    beyond = sc.beyond_judged
    if last.cores != best.cores and beyond is not None and beyond.estimate is not None:
        out.append(tr(f"scaleup.beyond.{beyond.verdict.word}", lang, cores=cores(last.cores),
                      best=cores(best.cores), pct=f.format_diff((beyond.estimate - 1) * 100),
                      ci=f.bracketed(sc.beyond_ci, sc.beyond_level, decimals=f.PCT_DECIMALS),
                      margin=f"{beyond.margin_pct:g}"))
    if last.cpu_idle is not None and best.cpu_idle is not None and last.cores != best.cores:
        out.append(tr("scaleup.say.idle", lang, cores=cores(last.cores), idle=f.format_pct(last.cpu_idle),
                      best=cores(best.cores), best_idle=f.format_pct(best.cpu_idle)))
    for r in (best, last) if last.cores != best.cores else (best,):
        if r.waits:
            name, share = r.waits[0]
            out.append(tr("scaleup.wait", lang, cores=cores(r.cores), event=name,
                          share=f"{share * 100:.0f}%"))
        if r.hot:
            name, share = r.hot[0]
            out.append(tr("scaleup.say.hot", lang, cores=cores(r.cores), function=name,
                          share=f"{share * 100:.0f}%"))
    return out


def section_body(section: WorkloadSection, ctx: Context) -> list[Table]:
    """A workload section's tables, in the order both reports show them: TPS, latency, then
    each degradation pair, scale-up analysis, LWLock table and application table."""
    if section.suite is not None:
        return suite_tables(section, ctx)
    return [tps_table(section, ctx),
            *([history_table(section, section.history, ctx)] if section.history else []),
            latency_table(section, ctx),
            *(t for deg in section.degradations for t in degradation_tables(deg, ctx)),
            *(scaleup_table(sc, ctx) for sc in section.scaleups),
            *(lock_table(lt, ctx) for lt in section.locks), *app_tables(section, ctx),
            *(rtt_table(b, ctx) for b in section.rtt),
            *([scale_out_table(section.scale_out, ctx)] if section.scale_out else []),
            *([load_parts_table(section, ctx)] if section.load_parts else []),
            *([percentiles_table(section, ctx)] if section.percentiles else [])]


def load_parts_table(section: WorkloadSection, ctx: Context) -> Table:
    """Each pgbench of the trials that ran several at once (load clients, or one per
    node): its own TPS and latency, its share of the trial's sum, and the start skew."""
    lang = ctx.lang
    columns = tuple(Column(tr(k, lang)) for k in (
        "clients", "loads.client", "loads.node", "loads.tps", "loads.latency", "loads.share",
        "loads.skew"))
    rows = tuple((r.server, (
        Cell(str(r.clients)), Cell(r.client), Cell(r.node), Cell(f.format_tps(r.tps)),
        Cell(f.format_latency(r.latency_ms)),
        Cell(f.format_pct(None if r.share is None else r.share * 100)),
        Cell(f"{r.skew_ms:.0f}" if r.skew_ms is not None else f.MISSING)))
        for r in section.load_parts)
    return Table("loads", tr("loads", lang), tr("scaleout.server", lang), columns, rows,
                 (tr("loads.note", lang),))


def scale_out_table(so: ScaleOut, ctx: Context) -> Table:
    """METHODS S7: per topology and client count, the total TPS of its pgbench processes
    (one per node, all at once), the mean per node, and the replication lag seen."""
    lang = ctx.lang
    columns = tuple(Column(tr(k, lang)) for k in (
        "scaleout.method", "scaleout.nodes", "clients", "scaleout.total", "scaleout.per_node",
        "scaleout.lag", "scaleout.replay", "scaleout.skew"))
    rows = tuple((r.server, (
        Cell(r.method + (" + Pgpool-II" if r.pgpool else "")), Cell(str(r.nodes)),
        Cell(str(r.clients)), Cell(f.format_tps(r.total_tps)), Cell(f.format_tps(r.per_node_tps)),
        Cell(f.format_bytes(r.lag_bytes_max)),
        Cell(f"{r.replay_lag_ms_max:.1f}" if r.replay_lag_ms_max is not None else f.MISSING),
        Cell(f"{r.skew_ms:.0f}" if r.skew_ms is not None else f.MISSING))) for r in so.rows)
    notes = [tr("scaleout.note", lang)]
    if so.same_machine:
        notes.append(tr("scaleout.same_machine", lang))
    if so.no_lag_times:
        notes.append(tr("scaleout.no_lag_times", lang, servers=", ".join(so.no_lag_times)))
    return Table("scaleout", tr("scaleout", lang), tr("scaleout.server", lang), columns, rows,
                 tuple(notes))


def rtt_table(b: RttBound, ctx: Context) -> Table:
    """METHODS S11: measured TPS against the ceiling the round trip alone sets."""
    lang = ctx.lang
    columns = tuple(Column(tr(k, lang)) for k in ("rtt.tps", "rtt.ceiling", "rtt.of", "rtt.network"))
    rows = tuple((str(r.clients), (
        Cell(f.format_tps(r.tps)), Cell(f.format_tps(r.ceiling_tps)),
        Cell(f.format_pct(r.of_ceiling_pct)), Cell(f.format_pct(r.network_pct)))) for r in b.rows)
    return Table("rtt", tr("rtt", lang, server=b.server, rtt=f"{b.rtt_ms:.3f}",
                           statements=f"{b.statements:g}"),
                 tr("clients", lang), columns, rows, (tr("rtt.note", lang),))


def _version_sub(series: ServerSeries, base: ServerSeries, lang: str) -> str:
    return tr("baseline.sub", lang, version=series.version) if series is base else series.version


def study_rows(data: ReportData) -> list[tuple[str, str]]:
    """The Study table. A compare report gives each study's own value, by study, of what the
    studies differ in (repetitions, order and seed may differ freely; duration and scale with
    --allow-different-parameters)."""
    lang = data.lang
    pgbench = any(sec.suite is None for sec in data.sections)  # duration and scale are theirs

    def each(value: Callable[[StudyParameters], object], word: Callable[[Any], str],
             whole: str) -> str:
        values = [value(p) for p in data.compared]
        if len(set(map(repr, values))) < 2:
            return whole
        return ", ".join(f"{word(v)} ({p.label})" for v, p in zip(values, data.compared, strict=True))

    def repetitions(blocks: int, auto: Mapping[str, Any] | None) -> str:
        if auto is None:
            return str(blocks)
        said = tr(f"study.auto.{auto['decision']}", lang, blocks=blocks,
                  target=f"{auto['target_pct']:g}", floor=auto["floor"], ceiling=auto["ceiling"])
        per_point = auto.get("per_point") and blocks > (auto["floor"] or blocks)
        return said + (tr("study.auto.points", lang, floor=auto["floor"]) if per_point else "")

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
        (tr("server.cpus", lang), tr("server.cpus.all", lang) if info.cpus is None else info.cpus
         if info.confined_by is None else f"{info.cpus} ({tr(f'server.confined.{info.confined_by}', lang)})"),
        *([(tr("server.client_cpus", lang), info.client_cpus if info.client_cpus != "any"
            else tr("server.client_cpus.any", lang))] if info.client_cpus else []),
        *([(tr("server.limits", lang), limits_text(info.limits, lang))] if info.limits else []),
    ]


def limit_value(limit: str, value: float) -> str:
    """A limit's value, or a use of it: ``2GB``, ``500``, ``100MB/s``."""
    if limit.endswith("iops"):
        return f"{value:.0f}"
    return f.format_bytes(value) + ("" if limit == "memory" else "/s")


def limits_text(limits: tuple[tuple[str, int], ...], lang: str) -> str:
    """A server's limits as people read them: ``memory 2GB, write 500 IOPS``."""
    return join([tr(f"limit.{k}", lang, value=limit_value(k, v)) for k, v in limits], lang)


def file_stem(text: str, fallback: str = "workload") -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("._") or fallback


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
