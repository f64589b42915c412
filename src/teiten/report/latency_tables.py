"""The latency percentiles table of a workload that took them (a pgbench workload's
``percentiles: true``, or another driver's histogram): per server and client count, the
medians over the repetitions of p50 ... p99.9 and the largest latency, p95 and p99 with their
intervals, and their ratio to the baseline server's with the ratio's interval, marked by its
verdict (teiten.analysis.percentiles); its data, ``<stem>-percentiles.csv``."""

from __future__ import annotations

from dataclasses import replace

from teiten.analysis.intervals import Interval
from teiten.analysis.model import WorkloadSection
from teiten.analysis.percentiles import NAMES, WITH_INTERVALS, PercentileRow
from teiten.report.cells import Cell, Column, DataTable, Table, Value, data_name, judged_cell
from teiten.report.columns import PERCENTILE_COLUMNS
from teiten.words import formats as f
from teiten.words.context import Context
from teiten.words.i18n import tr
from teiten.words.verdicts import judged_note

LABELS = {"p50": "p50", "p90": "p90", "p95": "p95", "p99": "p99", "p999": "p99.9"}


def _ci(found: Interval | None) -> str:
    return "" if found is None else f.bracketed((found.low, found.high), found.confidence,
                                                 decimals=f.LATENCY_DECIMALS)


def percentiles_table(section: WorkloadSection, ctx: Context) -> Table:
    lang = ctx.lang
    rows_of = section.percentiles
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
    return Table("percentiles", heading, tr("scaleout.server", lang),
                 tuple(columns), tuple(rows), tuple(notes))


def percentiles_tables(section: WorkloadSection, ctx: Context) -> list[Table]:
    if not section.percentiles:
        return []
    w = section.workload
    data = DataTable(data_name(ctx, w, "percentiles"), w, "percentiles", PERCENTILE_COLUMNS,
                     tuple(_percentile_row(w, r) for r in section.percentiles))
    return [replace(percentiles_table(section, ctx), data=(data,))]


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
