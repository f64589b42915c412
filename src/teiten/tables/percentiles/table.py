"""The latency percentiles table of a workload that took them (a pgbench workload's
``percentiles: true``, or another driver's histogram): per server and client count, the
medians over the repetitions of p50 ... p99.9 and the largest latency, p95 and p99 with their
intervals, and their ratio to the baseline server's with the ratio's interval, marked by its
verdict (teiten.tables.percentiles); its data, ``<stem>-percentiles.csv``."""

from __future__ import annotations

from dataclasses import replace

from teiten.analysis.intervals import Interval
from teiten.analysis.model import WorkloadSection
from teiten.report.cells import Cell, Column, DataTable, Table, Value, data_name, judged_cell
from teiten.tables.percentiles import NAMES, WITH_INTERVALS, PercentileRow
from teiten.words import formats as f
from teiten.words.context import Context
from teiten.words.i18n import tr
from teiten.words.verdicts import judged_note

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
LABELS = {"p50": "p50", "p90": "p90", "p95": "p95", "p99": "p99", "p999": "p99.9"}


def _ci(found: Interval | None) -> str:
    return "" if found is None else f.bracketed((found.low, found.high), found.confidence,
                                                 decimals=f.LATENCY_DECIMALS)


def percentiles_table(rows_of: tuple[PercentileRow, ...], section: WorkloadSection, ctx: Context) -> Table:
    lang = ctx.lang
    others = [s.server for s in section.servers if s.server != section.baseline
              and any(r.server == s.server for r in rows_of)]
    columns = [Column(tr("clients", lang)), *(Column(LABELS[n], tr("percentiles.group", lang))
                                              for n in LABELS),
               Column(tr("percentiles.max", lang), tr("percentiles.group", lang))]
    if others:
        group = tr("percentiles.ratio.group", lang, baseline=section.baseline)
        columns += [Column(LABELS[n], group, md=f"{LABELS[n]}: {group}") for n in ("p95", "p99")]
    rows = []
    for r in rows_of:
        cells = [Cell(str(r.clients))]
        for name in LABELS:
            cells.append(Cell(f.format_latency(r.medians.get(name)), _ci(r.ci.get(name))))
        cells.append(Cell(f.format_latency(r.medians.get("max"))))
        if others:
            for name in ("p95", "p99"):
                if r.server == section.baseline:
                    cells.append(Cell(""))
                    continue
                cells.append(judged_cell(r.judged.get(name), ctx))
        rows.append((r.server, tuple(cells)))
    precision = max(r.precision for r in rows_of) * 100
    driver = next((r.driver for r in rows_of if r.driver), None)  # None: pgbench's log
    notes = [tr("percentiles.note", lang, precision=f"{precision:.1f}%") if driver is None else
             tr("percentiles.note.histogram", lang, driver=driver, precision=f"{precision:.1f}%")]
    if others:
        notes.append(tr("percentiles.note.ratio", lang, baseline=section.baseline))
        notes += judged_note([j for r in rows_of for j in r.judged.values()], ctx)
    heading = tr("percentiles.heading", lang) if driver is None else \
        tr("percentiles.heading.histogram", lang, driver=driver)
    return Table("percentiles", heading, tr("percentiles.server", lang),
                 tuple(columns), tuple(rows), tuple(notes))


def tables(rows: tuple[PercentileRow, ...], section: WorkloadSection, ctx: Context) -> list[Table]:
    w = section.workload
    data = DataTable(data_name(ctx, w, "percentiles"), w, "percentiles", PERCENTILE_COLUMNS,
                     tuple(_percentile_row(w, r) for r in rows))
    return [replace(percentiles_table(rows, section, ctx), data=(data,))]


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
