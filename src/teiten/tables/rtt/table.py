"""METHODS S11's round-trip bound of each external server, with its data (``<stem>-rtt.csv``)."""

from __future__ import annotations

from dataclasses import replace

from teiten.analysis.model import WorkloadSection
from teiten.report.cells import Cell, Column, DataTable, Table, data_name
from teiten.tables.rtt import RttBound
from teiten.words import formats as f
from teiten.words.context import Context
from teiten.words.i18n import tr

RTT_COLUMNS = ("workload", "server", "rtt_ms", "statements_per_transaction", "clients", "tps",
               "ceiling_tps", "of_ceiling_pct", "network_pct")


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



def tables(bounds: tuple[RttBound, ...], section: WorkloadSection, ctx: Context) -> list[Table]:
    """Each external server's round-trip bound, all written to ``<stem>-rtt``."""
    w, tps, pct = section.workload, f.TPS_DECIMALS, f.PCT_DECIMALS
    rows = tuple((w, b.server, round(b.rtt_ms, 4), b.statements, r.clients,
                  f.round_or_none(r.tps, tps), f.round_or_none(r.ceiling_tps, tps),
                  f.round_or_none(r.of_ceiling_pct, pct), f.round_or_none(r.network_pct, pct))
                 for b in bounds for r in b.rows)
    data = DataTable(data_name(ctx, w, "rtt"), w, "rtt", RTT_COLUMNS, rows)
    return [replace(rtt_table(b, ctx), data=(data,)) for b in bounds]
