"""METHODS S5's tables for a pair of servers: TPS of each, 性能低下率 with its interval and the
TPS difference per client count, and the CPU breakdown of both side by side (environments,
and each tenant alone against beside its neighbours); each with its data
(``<stem>-degradation-<a>-<b>.csv``, ``<stem>-cpu-<a>-<b>.csv``)."""

from __future__ import annotations

from dataclasses import replace

from teiten.analysis import verdicts as v
from teiten.analysis.model import Degradation, DegradationRow, WorkloadSection
from teiten.report.cells import Cell, Column, DataTable, Table, data_name, file_stem, judged_cell
from teiten.report.columns import CPU_PAIR_COLUMNS, DEGRADATION_COLUMNS
from teiten.words import formats as f
from teiten.words.context import Context
from teiten.words.i18n import tr
from teiten.words.verdicts import judged_family

CPU_PARTS = ("user", "sys", "iowait", "steal", "idle")  # the CPU table's, of each server


def degradation_table(deg: Degradation, ctx: Context) -> Table:
    """METHODS S5: clients, TPS(a), TPS(b), 性能低下率 %, TPS difference."""
    lang = ctx.lang
    columns = (Column(tr("degradation.tps", lang, server=deg.a)),
               Column(tr("degradation.tps", lang, server=deg.b)),
               Column(tr("degradation.rate", lang)), Column(tr("degradation.diff", lang)))
    rows = tuple(
        (str(r.clients), (Cell(f.format_tps(r.tps_a)), Cell(f.format_tps(r.tps_b)), _rate_cell(r, ctx),
                          Cell(f.format_tps(r.difference))))
        for r in deg.rows)
    judged = [r.judged for r in deg.rows if r.judged is not None]
    margin = f"{judged[0].margin_pct:g}" if judged else "5"
    family = [] if not judged else [tr("judged.note.reused", lang, m=judged[0].comparisons,
                                       required=v.required_text(judged[0].required))
                                    if deg.reused else judged_family(judged[0], ctx)]
    return Table("degradation", tr("degradation", lang, a=deg.a, b=deg.b), tr("clients", lang),
                 columns, rows, (tr("degradation.note", lang, a=deg.a, b=deg.b, margin=margin), *family))


def _rate_cell(r: DegradationRow, ctx: Context) -> Cell:
    """性能低下率 from the ratio's own estimate, with the rate's interval, marked by the
    ratio's verdict (▼ where b is slower: the rate's interval wholly above 0)."""
    j = r.judged
    if j is None or j.estimate is None:
        return judged_cell(j, ctx)
    return judged_cell(j, ctx, text=f.format_pct((1 - j.estimate) * 100),
                       ci=f.bracketed(r.rate_ci, r.rate_level, decimals=f.PCT_DECIMALS))


def degradation_tables(section: WorkloadSection, ctx: Context) -> list[Table]:
    """Of each pair: the S5 table, and the CPU breakdown of both side by side."""
    out = []
    for deg in section.degradations:
        out.append(replace(degradation_table(deg, ctx), data=(degradation_data(section, deg, ctx),)))
        if deg.cpu:
            out.append(replace(cpu_pair_table(deg, ctx), data=(cpu_pair_data(section, deg, ctx),)))
    return out


def _pair(deg: Degradation) -> str:
    return f"{file_stem(deg.a, 'a')}-{file_stem(deg.b, 'b')}"


def degradation_data(section: WorkloadSection, deg: Degradation, ctx: Context) -> DataTable:
    w = section.workload
    rows = tuple((w, deg.a, deg.b, r.clients, f.round_or_none(r.tps_a, f.TPS_DECIMALS),
                  f.round_or_none(r.tps_b, f.TPS_DECIMALS),
                  f.round_or_none(r.rate_pct, f.PCT_DECIMALS),
                  f.round_or_none(r.difference, f.TPS_DECIMALS),
                  *((f.round_or_none(r.rate_ci[0], f.PCT_DECIMALS),
                     f.round_or_none(r.rate_ci[1], f.PCT_DECIMALS)) if r.rate_ci else (None, None)),
                  f.level_pct(r.rate_level)) for r in deg.rows)
    return DataTable(data_name(ctx, w, f"degradation-{_pair(deg)}"), w, "degradation",
                     DEGRADATION_COLUMNS, rows, (deg.a, deg.b))


def cpu_pair_data(section: WorkloadSection, deg: Degradation, ctx: Context) -> DataTable:
    """The CPU table of a pair: a row per client count and server (a, then b)."""
    w = section.workload
    rows = tuple((w, deg.a, deg.b, clients, server,
                  *(f.round_or_none(cpu.get(part), 1) for part in CPU_PARTS))
                 for clients, ca, cb in deg.cpu for server, cpu in ((deg.a, ca), (deg.b, cb)))
    return DataTable(data_name(ctx, w, f"cpu-{_pair(deg)}"), w, "cpu-pair", CPU_PAIR_COLUMNS, rows,
                     (deg.a, deg.b))



def cpu_pair_table(deg: Degradation, ctx: Context) -> Table:
    """METHODS S5: %usr %sys %iowait %steal %idle of the reference and of the environment,
    per client count (the median over repetitions of each window's mean)."""
    lang = ctx.lang
    columns = tuple(Column(f"%{part}", group=server, md=f"{server} %{part}")
                    for server in (deg.a, deg.b) for part in CPU_PARTS)
    rows = tuple((str(clients), tuple(Cell(f"{cpu.get(part, 0.0):.1f}") for cpu in (ca, cb)
                                      for part in CPU_PARTS)) for clients, ca, cb in deg.cpu)
    return Table("cpu-pair", tr("degradation.cpu", lang, a=deg.a, b=deg.b), tr("clients", lang),
                 columns, rows, (tr("degradation.cpu_note", lang),))
