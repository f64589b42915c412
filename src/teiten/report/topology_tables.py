"""Beyond one local server: METHODS S11's round-trip bound of each external server, S7's
scale-out of replication topologies, and each pgbench of the trials that ran several at once;
each with its data (``<stem>-rtt.csv``, ``<stem>-scaleout.csv``, ``<stem>-load.csv``)."""

from __future__ import annotations

from dataclasses import replace

from teiten.analysis.model import WorkloadSection
from teiten.analysis.rtt import RttBound
from teiten.analysis.scaleout import ScaleOut
from teiten.report.cells import Cell, Column, DataTable, Table, data_name
from teiten.report.columns import LOAD_COLUMNS, RTT_COLUMNS, SCALEOUT_COLUMNS
from teiten.words import formats as f
from teiten.words.context import Context
from teiten.words.i18n import tr


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
    if so.same_machine and set(so.same_machine) >= {r.server for r in so.rows if r.nodes > 1}:
        notes.append(tr("scaleout.same_machine", lang))
    elif so.same_machine:
        notes.append(tr("scaleout.same_machine_of", lang, servers=", ".join(so.same_machine)))
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

def rtt_tables(section: WorkloadSection, ctx: Context) -> list[Table]:
    """Each external server's round-trip bound, all written to ``<stem>-rtt``."""
    if not section.rtt:
        return []
    w, tps, pct = section.workload, f.TPS_DECIMALS, f.PCT_DECIMALS
    rows = tuple((w, b.server, round(b.rtt_ms, 4), b.statements, r.clients,
                  f.round_or_none(r.tps, tps), f.round_or_none(r.ceiling_tps, tps),
                  f.round_or_none(r.of_ceiling_pct, pct), f.round_or_none(r.network_pct, pct))
                 for b in section.rtt for r in b.rows)
    data = DataTable(data_name(ctx, w, "rtt"), w, "rtt", RTT_COLUMNS, rows)
    return [replace(rtt_table(b, ctx), data=(data,)) for b in section.rtt]


def scale_out_tables(section: WorkloadSection, ctx: Context) -> list[Table]:
    if section.scale_out is None:
        return []
    w, tps = section.workload, f.TPS_DECIMALS
    rows = tuple((w, r.server, r.method, int(r.pgpool), r.nodes, r.clients,
                  f.round_or_none(r.total_tps, tps), f.round_or_none(r.per_node_tps, tps),
                  None if r.lag_bytes_max is None else round(r.lag_bytes_max),
                  f.round_or_none(r.replay_lag_ms_max, 3),
                  f.round_or_none(r.skew_ms, 1)) for r in section.scale_out.rows)
    data = DataTable(data_name(ctx, w, "scaleout"), w, "scaleout", SCALEOUT_COLUMNS, rows)
    return [replace(scale_out_table(section.scale_out, ctx), data=(data,))]


def load_parts_tables(section: WorkloadSection, ctx: Context) -> list[Table]:
    if not section.load_parts:
        return []
    w = section.workload
    rows = tuple((w, r.server, r.clients, r.client, r.node, f.round_or_none(r.tps, f.TPS_DECIMALS),
                  f.round_or_none(r.latency_ms, f.LATENCY_DECIMALS),
                  f.round_or_none(None if r.share is None else r.share * 100, f.PCT_DECIMALS),
                  f.round_or_none(r.skew_ms, 1)) for r in section.load_parts)
    data = DataTable(data_name(ctx, w, "load"), w, "load", LOAD_COLUMNS, rows)
    return [replace(load_parts_table(section, ctx), data=(data,))]
