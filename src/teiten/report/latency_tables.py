"""The latency percentiles table of a workload that took them (a pgbench workload's
``percentiles: true``, or another driver's histogram): per server and client count, the
medians over the repetitions of p50 ... p99.9 and the largest latency, p95 and p99 with their
intervals, and their ratio to the baseline server's with the ratio's interval, marked by its
verdict (teiten.analysis.percentiles)."""

from __future__ import annotations

from teiten.analysis.intervals import Interval
from teiten.analysis.model import WorkloadSection
from teiten.report import formats as f
from teiten.report.cells import Cell, Column, Context, Table
from teiten.report.i18n import tr
from teiten.report.verdicts import judged_cell, judged_note

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
