"""The latency percentiles table of a pgbench workload that took them (``percentiles:
true``): per server and client count, the medians over the repetitions of p50 ... p99.9 and
the largest latency, p95 and p99 with their intervals, and their ratio to the baseline
server's with the ratio's interval (teiten.analysis.percentiles)."""

from __future__ import annotations

from teiten.analysis.intervals import Interval
from teiten.analysis.model import WorkloadSection
from teiten.report import formats as f
from teiten.report.cells import Cell, Column, Context, Table
from teiten.report.i18n import tr

LABELS = {"p50": "p50", "p90": "p90", "p95": "p95", "p99": "p99", "p999": "p99.9"}


def _ci(found: Interval | None, scale: float = 1.0, decimals: int = f.LATENCY_DECIMALS) -> str:
    if found is None:
        return ""
    return f.bracketed((found.low * scale, found.high * scale), found.confidence, decimals=decimals)


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
                ratio = r.ratio.get(name)
                cells.append(Cell(f.format_ratio(ratio), _ci(r.ratio_ci.get(name), 100, f.PCT_DECIMALS),
                                  tone="missing" if ratio is None else ""))
        rows.append((r.server, tuple(cells)))
    precision = max(r.precision for r in rows_of) * 100
    notes = [tr("percentiles.note", lang, precision=f"{precision:.1f}%")]
    if others:
        notes.append(tr("percentiles.note.ratio", lang, baseline=section.baseline))
    return Table("percentiles", tr("percentiles.heading", lang), tr("scaleout.server", lang),
                 tuple(columns), tuple(rows), tuple(notes))
