"""METHODS S7's scale-out of replication topologies, with its data (``<stem>-scaleout.csv``)."""

from __future__ import annotations

from dataclasses import replace

from teiten.analysis.model import WorkloadSection
from teiten.report.cells import Cell, Column, DataTable, Table, data_name
from teiten.tables.scale_out import ScaleOut
from teiten.words import formats as f
from teiten.words.context import Context
from teiten.words.i18n import tr

SCALEOUT_COLUMNS = ("workload", "server", "method", "pgpool", "nodes", "clients", "total_tps",
                    "per_node_tps", "lag_bytes_max", "replay_lag_ms_max", "skew_ms")


def tables(so: ScaleOut, section: WorkloadSection, ctx: Context) -> list[Table]:
    w, tps = section.workload, f.TPS_DECIMALS
    rows = tuple((w, r.server, r.method, int(r.pgpool), r.nodes, r.clients,
                  f.round_or_none(r.total_tps, tps), f.round_or_none(r.per_node_tps, tps),
                  None if r.lag_bytes_max is None else round(r.lag_bytes_max),
                  f.round_or_none(r.replay_lag_ms_max, 3),
                  f.round_or_none(r.skew_ms, 1)) for r in so.rows)
    data = DataTable(data_name(ctx, w, "scaleout"), w, "scaleout", SCALEOUT_COLUMNS, rows)
    return [replace(scale_out_table(so, ctx), data=(data,))]


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
