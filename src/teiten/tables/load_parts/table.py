"""Each pgbench of the trials that ran several at once, with its data (``<stem>-load.csv``)."""

from __future__ import annotations

from dataclasses import replace

from teiten.analysis.model import WorkloadSection
from teiten.report.cells import Cell, Column, DataTable, Table, data_name
from teiten.tables.load_parts import LoadPartRow
from teiten.words import formats as f
from teiten.words.context import Context
from teiten.words.i18n import tr

LOAD_COLUMNS = ("workload", "server", "clients", "load_client", "node", "tps", "latency_ms",
                "share_pct", "skew_ms")


def tables(parts: tuple[LoadPartRow, ...], section: WorkloadSection, ctx: Context) -> list[Table]:
    w = section.workload
    rows = tuple((w, r.server, r.clients, r.client, r.node, f.round_or_none(r.tps, f.TPS_DECIMALS),
                  f.round_or_none(r.latency_ms, f.LATENCY_DECIMALS),
                  f.round_or_none(None if r.share is None else r.share * 100, f.PCT_DECIMALS),
                  f.round_or_none(r.skew_ms, 1)) for r in parts)
    data = DataTable(data_name(ctx, w, "load"), w, "load", LOAD_COLUMNS, rows)
    return [replace(load_parts_table(parts, ctx), data=(data,))]



def load_parts_table(parts: tuple[LoadPartRow, ...], ctx: Context) -> Table:
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
        for r in parts)
    return Table("loads", tr("loads", lang), tr("loads.server", lang), columns, rows,
                 (tr("loads.note", lang),))
