"""METHODS S5's tables for a pair of servers: TPS of each, 性能低下率 with its interval and the
TPS difference per client count, and the CPU breakdown of both side by side (environments,
and each tenant alone against beside its neighbours)."""

from __future__ import annotations

from teiten.analysis import verdicts as v
from teiten.analysis.model import Degradation, DegradationRow
from teiten.report import formats as f
from teiten.report.cells import Cell, Column, Context, Table
from teiten.report.i18n import tr
from teiten.report.verdicts import judged_cell, judged_family


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


def degradation_tables(deg: Degradation, ctx: Context) -> list[Table]:
    """The S5 table of a pair, and the CPU breakdown of both side by side."""
    return [degradation_table(deg, ctx), *([cpu_pair_table(deg, ctx)] if deg.cpu else [])]


def cpu_pair_table(deg: Degradation, ctx: Context) -> Table:
    """METHODS S5: %usr %sys %iowait %steal %idle of the reference and of the environment,
    per client count (the median over repetitions of each window's mean)."""
    lang = ctx.lang
    parts = ("user", "sys", "iowait", "steal", "idle")
    columns = tuple(Column(f"%{part}", group=server, md=f"{server} %{part}")
                    for server in (deg.a, deg.b) for part in parts)
    rows = tuple((str(clients), tuple(Cell(f"{cpu.get(part, 0.0):.1f}") for cpu in (ca, cb)
                                      for part in parts)) for clients, ca, cb in deg.cpu)
    return Table("cpu-pair", tr("degradation.cpu", lang, a=deg.a, b=deg.b), tr("clients", lang),
                 columns, rows, (tr("degradation.cpu_note", lang),))
