"""Every table of the report as CSV (``tables/<workload>-<table>.csv``) and all of them in
one ``tables.json``, for spreadsheets and scripts.

The figures are the ones the tables print, rounded the same way (see
:mod:`teiten.report.formats`), in tidy long form: one row per server and client count,
stable machine-readable column names whatever the report's language. A missing figure is
an empty CSV field and ``null`` in JSON. A CSV text cell that a spreadsheet would evaluate
as a formula starts with ``'`` (:mod:`teiten.report.spreadsheet`); JSON keeps raw values.
"""

from __future__ import annotations

import csv
import io
import json
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

from teiten.analysis import verdicts
from teiten.analysis.model import Point, ReportData, WorkloadSection
from teiten.analysis.percentiles import NAMES, WITH_INTERVALS, PercentileRow
from teiten.report import formats as f
from teiten.report.differences import DIFFERENCES
from teiten.report.i18n import tr
from teiten.report.spreadsheet import cell
from teiten.report.tables import (
    baseline_series,
    file_stem,
    latency_ratio,
    others,
    point_at,
    reference_series,
    section_stems,
)

Value = str | int | float | None

# Columns are only ever appended (docs/DESIGN.md, "The store"): scripts read them by position too.
TPS_COLUMNS = ("workload", "server", "version", "clients", "tps_median", "tps_ci_low", "tps_ci_high",
               "cv_pct", "n_ok", "n_failed", "tps_ci_level_pct")
# ratio_pct: the ratio of the medians; estimate_pct: the interval's own (Hodges-Lehmann) estimate,
# the figure the report prints, always inside [ratio_ci_low_pct, ratio_ci_high_pct], which is at
# 1 - alpha / p_value_family_size (Bonferroni over the report's ratios). ratio_ci_method:
# signed-rank (paired by block) or hodges-lehmann (unpaired); p_value_holm: p after Holm's
# correction over the same family (informative: the verdict is read from the interval).
# verdict: faster | slower | no-difference | cannot-tell, within ±margin_pct; verdict_reason says
# why it cannot tell (no-ratio | no-interval | short | wide). significance keeps its three values:
# significant (faster or slower), not-significant, too-few (the blocks cannot reach the level).
RATIO_COLUMNS = ("workload", "server", "baseline", "clients", "ratio_pct", "ratio_ci_low_pct",
                 "ratio_ci_high_pct", "significance", "p_value", "needed", "detectable_pct",
                 "ratio_ci_level_pct", "ratio_ci_method", "p_value_holm", "p_value_family_size",
                 "estimate_pct", "estimate_method", "verdict", "verdict_reason", "margin_pct")
LATENCY_COLUMNS = ("workload", "server", "clients", "latency_ms_median", "latency_ratio_pct",
                   "n_ok", "n_failed")
SUMMARY_COLUMNS = ("workload", "server", "version", "peak_tps", "peak_clients", "knee_clients",
                   "mean_tps_diff_pct", "mean_latency_diff_pct")
DEGRADATION_COLUMNS = ("workload", "a", "b", "clients", "tps_a", "tps_b", "degradation_pct",
                       "tps_difference", "degradation_ci_low", "degradation_ci_high",
                       "degradation_ci_level")
APP_COLUMNS = ("workload", "server", "clients", "type", "tps", "nopm", "tpm", "tpm_pgbench",
               "theoretical_tps", "share_pct", "target_pct", "avg_ms", "p50_ms", "p95_ms", "p99_ms",
               "response_ms", "n_ok")
STEP_COLUMNS = ("workload", "server", "variant", "step", "param", "occurrence", "seconds_median", "n", "rows",
                "cache", "workers_planned", "workers_launched", "shared_hit", "shared_read",
                "rows_removed_by_filter", "rows_removed_by_index_recheck", "heap_blocks_exact",
                "heap_blocks_lossy", "shape",
                # each relation's scans ("access_log=3; pages=3") and those its processes divided
                "scans", "divided")
SIZE_COLUMNS = ("workload", "server", "variant", "table_bytes", "index_bytes")
RTT_COLUMNS = ("workload", "server", "rtt_ms", "statements_per_transaction", "clients", "tps",
               "ceiling_tps", "of_ceiling_pct", "network_pct")
SCALEOUT_COLUMNS = ("workload", "server", "method", "pgpool", "nodes", "clients", "total_tps",
                    "per_node_tps", "lag_bytes_max", "replay_lag_ms_max", "skew_ms")
LOAD_COLUMNS = ("workload", "server", "clients", "load_client", "node", "tps", "latency_ms",
                "share_pct", "skew_ms")
# Medians over the repetitions (ms); the p95 and p99 intervals and levels; their ratios to the
# baseline server's in percent (empty for the baseline) with their intervals and levels.
PERCENTILE_COLUMNS = ("workload", "server", "clients", "n_ok", "p50_ms", "p90_ms", "p95_ms",
                      "p99_ms", "p999_ms", "max_ms", "p95_ci_low_ms", "p95_ci_high_ms",
                      "p95_ci_level_pct", "p99_ci_low_ms", "p99_ci_high_ms", "p99_ci_level_pct",
                      "p95_ratio_pct", "p95_ratio_ci_low_pct", "p95_ratio_ci_high_pct",
                      "p95_ratio_ci_level_pct", "p99_ratio_pct", "p99_ratio_ci_low_pct",
                      "p99_ratio_ci_high_pct", "p99_ratio_ci_level_pct", "precision_pct",
                      "p95_estimate_pct", "p95_verdict", "p99_estimate_pct", "p99_verdict",
                      "margin_pct")


@dataclass(frozen=True)
class DataTable:
    name: str  # the file stem: "pgecons-read-tps"
    workload: str
    kind: str  # tps | ratio | latency | summary | degradation
    columns: tuple[str, ...]
    rows: tuple[tuple[Value, ...], ...]
    pair: tuple[str, str] | None = None  # (a, b) of a degradation table

    @property
    def file(self) -> str:
        return f"tables/{self.name}.csv"


def significance(p: Point) -> str:
    """The column as it was before the verdicts (scripts read it): from the verdict now."""
    if p.ratio is None:
        return ""
    if p.verdict in (verdicts.FASTER, verdicts.SLOWER):
        return "significant"
    return "too-few" if p.reason in (verdicts.SHORT, verdicts.NO_INTERVAL) else "not-significant"


def section_tables(section: WorkloadSection, stem: str) -> list[DataTable]:
    """The tables of one workload: tps, ratio (when there is more than one server),
    latency, summary, and one per degradation pair."""
    w = section.workload
    if section.suite is not None:
        return suite_data_tables(section, stem)
    base = baseline_series(section)
    tps, ratio, latency, summary = [], [], [], []
    for s in section.servers:
        for c in section.clients:
            p = point_at(s, c)
            if p is None:
                continue
            low, high = p.tps_ci or (None, None)
            tps.append((w, s.server, s.version, c, f.round_or_none(p.tps_median, f.TPS_DECIMALS),
                        f.round_or_none(low, f.TPS_DECIMALS), f.round_or_none(high, f.TPS_DECIMALS),
                        f.round_or_none(None if p.cv is None else p.cv * 100, f.PCT_DECIMALS),
                        p.n_ok, p.n_failed, f.level_pct(p.tps_ci_level)))
            lat = latency_ratio(p, point_at(reference_series(section, s), c)) if s is not base else None
            latency.append((w, s.server, c, f.round_or_none(p.latency_ms_median, f.LATENCY_DECIMALS),
                            f.pct_or_none(lat), p.n_ok, p.n_failed))
        peak = s.saturation
        summary.append((w, s.server, s.version, f.round_or_none(peak[1], f.TPS_DECIMALS) if peak else None,
                        peak[0] if peak else None, peak[2] if peak else None,
                        f.round_or_none(s.mean_tps_diff_pct, f.PCT_DECIMALS),
                        f.round_or_none(s.mean_latency_diff_pct, f.PCT_DECIMALS)))
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
                          p.verdict or None, p.reason or None, p.margin_pct))
    out = [DataTable(f"{stem}-tps", w, "tps", TPS_COLUMNS, tuple(tps))]
    if ratio:
        out.append(DataTable(f"{stem}-ratio", w, "ratio", RATIO_COLUMNS, tuple(ratio)))
    out.append(DataTable(f"{stem}-latency", w, "latency", LATENCY_COLUMNS, tuple(latency)))
    out.append(DataTable(f"{stem}-summary", w, "summary", SUMMARY_COLUMNS, tuple(summary)))
    for deg in section.degradations:
        rows = tuple((w, deg.a, deg.b, r.clients, f.round_or_none(r.tps_a, f.TPS_DECIMALS),
                      f.round_or_none(r.tps_b, f.TPS_DECIMALS),
                      f.round_or_none(r.rate_pct, f.PCT_DECIMALS),
                      f.round_or_none(r.difference, f.TPS_DECIMALS),
                      *((f.round_or_none(r.rate_ci[0], f.PCT_DECIMALS),
                         f.round_or_none(r.rate_ci[1], f.PCT_DECIMALS)) if r.rate_ci else (None, None)),
                      f.level_pct(r.rate_level)) for r in deg.rows)
        name = f"{stem}-degradation-{file_stem(deg.a, 'a')}-{file_stem(deg.b, 'b')}"
        out.append(DataTable(name, w, "degradation", DEGRADATION_COLUMNS, rows, (deg.a, deg.b)))
    if section.apps:
        out.append(DataTable(f"{stem}-app", w, "app", APP_COLUMNS, app_rows(section)))
    return out + topology_tables(section, stem)


def topology_tables(section: WorkloadSection, stem: str) -> list[DataTable]:
    """Beyond one local server: S11's round-trip bound, S7's scale-out, and each pgbench
    of the trials that ran several at once."""
    w, out = section.workload, []
    tps, pct = f.TPS_DECIMALS, f.PCT_DECIMALS
    rows: tuple[tuple[Value, ...], ...]
    if section.rtt:
        rows = tuple((w, b.server, round(b.rtt_ms, 4), b.statements, r.clients,
                      f.round_or_none(r.tps, tps), f.round_or_none(r.ceiling_tps, tps),
                      f.round_or_none(r.of_ceiling_pct, pct), f.round_or_none(r.network_pct, pct))
                     for b in section.rtt for r in b.rows)
        out.append(DataTable(f"{stem}-rtt", w, "rtt", RTT_COLUMNS, rows))
    if section.scale_out:
        rows = tuple((w, r.server, r.method, int(r.pgpool), r.nodes, r.clients,
                      f.round_or_none(r.total_tps, tps), f.round_or_none(r.per_node_tps, tps),
                      None if r.lag_bytes_max is None else round(r.lag_bytes_max),
                      f.round_or_none(r.replay_lag_ms_max, 3),
                      f.round_or_none(r.skew_ms, 1)) for r in section.scale_out.rows)
        out.append(DataTable(f"{stem}-scaleout", w, "scaleout", SCALEOUT_COLUMNS, rows))
    if section.load_parts:
        rows = tuple((w, r.server, r.clients, r.client, r.node, f.round_or_none(r.tps, tps),
                      f.round_or_none(r.latency_ms, f.LATENCY_DECIMALS),
                      f.round_or_none(None if r.share is None else r.share * 100, pct),
                      f.round_or_none(r.skew_ms, 1)) for r in section.load_parts)
        out.append(DataTable(f"{stem}-load", w, "load", LOAD_COLUMNS, rows))
    if section.percentiles:
        out.append(DataTable(f"{stem}-percentiles", w, "percentiles", PERCENTILE_COLUMNS,
                             tuple(_percentile_row(w, r) for r in section.percentiles)))
    return out


def _percentile_row(w: str, r: PercentileRow) -> tuple[Value, ...]:
    ms = f.LATENCY_DECIMALS
    out: list[Value] = [w, r.server, r.clients, r.n,
                        *(f.round_or_none(r.medians.get(n), ms) for n in NAMES)]
    for n in WITH_INTERVALS:
        ci = r.ci.get(n)
        out += [None, None, None] if ci is None else [
            round(ci.low, ms), round(ci.high, ms), f.level_pct(ci.confidence)]
    for n in WITH_INTERVALS:
        j = r.judged.get(n)
        out += [f.pct_or_none(r.ratio.get(n)), *([None, None, None] if j is None or j.ci is None else [
            f.pct_or_none(j.ci[0]), f.pct_or_none(j.ci[1]), f.level_pct(j.level)])]
    out.append(round(r.precision * 100, 2))
    for n in WITH_INTERVALS:
        j = r.judged.get(n)
        out += [None, None] if j is None else [f.pct_or_none(j.estimate), j.verdict.word]
    judged = [j for j in r.judged.values()]
    return (*out, judged[0].margin_pct if judged else None)


def suite_data_tables(section: WorkloadSection, stem: str) -> list[DataTable]:
    """A measured-statement workload: every step's medians, and the sizes per variant."""
    res = section.suite
    assert res is not None
    w = section.workload
    steps = tuple((w, st.server, st.variant, st.step, st.param, st.occurrence,
                   f.round_or_none(st.seconds, 6),
                   len(st.values), st.rows, st.cache,
                   *(st.plan.get(k) for k in STEP_COLUMNS[10:18]), st.shape,
                   "; ".join(f"{r}={n:g}" for r, n in sorted(st.scans.items())) or None,
                   "; ".join(st.divided) or None) for st in res.steps)
    sizes = tuple((w, s.server, s.variant, round(s.table_bytes), round(s.index_bytes)) for s in res.sizes)
    return [DataTable(f"{stem}-steps", w, "steps", STEP_COLUMNS, steps),
            DataTable(f"{stem}-sizes", w, "sizes", SIZE_COLUMNS, sizes)]


def app_rows(section: WorkloadSection) -> tuple[tuple[Value, ...], ...]:
    """tpcc and bookstore figures: a row per point with type "all", then one per type."""
    rows: list[tuple[Value, ...]] = []
    r1 = f.round_or_none
    for res in section.apps:
        for p in res.points:
            rows.append((section.workload, res.server, p.clients, "all", r1(p.tps, f.TPS_DECIMALS),
                         r1(p.nopm, 1), r1(p.tpm, 1), r1(p.tpm_pgbench, 1),
                         r1(p.theoretical, f.TPS_DECIMALS), None, None, None, None, None, None, None,
                         p.runs))
            for t in p.types:
                rows.append((section.workload, res.server, p.clients, t.name, None, None, None, None,
                             None, f.pct_or_none(t.share), f.pct_or_none(t.target),
                             *(r1(v, f.LATENCY_DECIMALS) for v in
                               (t.avg_ms, t.p50_ms, t.p95_ms, t.p99_ms, t.response_ms)), p.runs))
    return tuple(rows)


def table_links(tables: list[DataTable], lang: str) -> list[tuple[str, str]]:
    """(label, relative href) of each table's CSV file, then of ``tables.json``."""
    links = []
    for t in tables:
        a, b = t.pair or ("", "")
        links.append((tr(f"table.{t.kind}", lang, a=a, b=b), quote(t.file)))
    links.append((tr("tables.json", lang), "tables.json"))
    return links


def differences_table(data: ReportData) -> DataTable:
    """Every difference between the servers, the version-only settings included: what, the
    value of each server (— where it has none), and why it differs."""
    return DataTable(DIFFERENCES, "", "differences",
                     ("what", *(s.name for s in data.servers), "cause"),
                     tuple((d.what, *d.values, d.cause) for d in data.differences))


def all_tables(data: ReportData) -> list[list[DataTable]]:
    """The tables of every section, in section order."""
    return [section_tables(s, stem) for s, stem in zip(data.sections, section_stems(data), strict=True)]


def csv_text(table: DataTable) -> str:
    """The table as CSV, its text cells safe to open in a spreadsheet
    (:mod:`teiten.report.spreadsheet`)."""
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow([cell(c) for c in table.columns])
    writer.writerows([[cell(v) for v in row] for row in table.rows])
    return buf.getvalue()


def json_text(data: ReportData, tables: list[list[DataTable]]) -> str:
    doc = {
        "study": data.study,
        "confidence": data.confidence,
        "alpha": data.alpha,
        "tables": [
            {"name": t.name, "workload": t.workload, "kind": t.kind, "file": t.file,
             "columns": list(t.columns),
             "rows": [dict(zip(t.columns, row, strict=True)) for row in t.rows]}
            for section in tables for t in section
        ],
    }
    return json.dumps(doc, ensure_ascii=False, indent=1) + "\n"


def write_tables(data: ReportData, out_dir: Path) -> dict[str, Path]:
    """Write ``tables/*.csv`` and ``tables.json``; returns ``{"csv:<name>": path, ...,
    "json": path}``."""
    tables = all_tables(data)
    (out_dir / "tables").mkdir(parents=True, exist_ok=True)
    written: dict[str, Path] = {}
    for section in tables:
        for t in section:
            path = out_dir / t.file
            path.write_text(csv_text(t), encoding="utf-8")
            written[f"csv:{t.name}"] = path
    if data.differences:
        table = differences_table(data)
        path = out_dir / table.file
        path.write_text(csv_text(table), encoding="utf-8")
        written[f"csv:{table.name}"] = path
    path = out_dir / "tables.json"
    path.write_text(json_text(data, tables), encoding="utf-8")
    written["json"] = path
    return written
