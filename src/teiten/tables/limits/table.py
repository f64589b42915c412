"""METHODS S11: each limited server's use of its limits, per client count (the 2020 report's
"IOPS as a % of the provisioned limit"), with its data (``<stem>-limits.csv``)."""

from __future__ import annotations

from dataclasses import replace

from teiten.analysis.model import WorkloadSection
from teiten.report.cells import Cell, Column, DataTable, Table, data_name
from teiten.tables.limits import LimitUse
from teiten.words import formats as f
from teiten.words.context import Context
from teiten.words.i18n import tr

LIMIT_COLUMNS = ("workload", "server", "clients", "limit", "limit_value", "used", "used_pct",
                 "trials")


def value_text(limit: str, value: float | None, *, whole: bool = False) -> str:
    """A limit (``whole``) or a use of it as the table prints it: ``512.0 MB``, ``240`` (a use:
    ``239.1``), ``100.0 MB/s``."""
    if value is None:
        return f.MISSING
    if limit.endswith("iops"):
        return f"{value:,.0f}" if whole else f"{value:,.1f}"
    return f.format_bytes(value) + ("" if limit == "memory" else "/s")


def tables(uses: tuple[LimitUse, ...], section: WorkloadSection, ctx: Context) -> list[Table]:
    """The limited servers' use of their limits."""
    lang, w = ctx.lang, section.workload
    columns = tuple(Column(tr(k, lang)) for k in (
        "clients", "limits.limit", "limits.value", "limits.used", "limits.pct"))
    rows = tuple((u.server, (Cell(str(u.clients)), Cell(tr(f"limits.name.{u.limit}", lang)),
                             Cell(value_text(u.limit, u.value, whole=True)),
                             Cell(value_text(u.limit, u.used)),
                             Cell(f.format_pct(u.pct))))
                 for u in uses)
    data = DataTable(data_name(ctx, w, "limits"), w, "limits", LIMIT_COLUMNS,
                     tuple(_row(w, u) for u in uses))
    table = Table("limits", tr("limits", lang), tr("limits.server", lang), columns, rows,
                  (tr("limits.note", lang),))
    return [replace(table, data=(data,))]


def _row(w: str, u: LimitUse) -> tuple[str | int | float | None, ...]:
    return (w, u.server, u.clients, u.limit, u.value,
            None if u.used is None else round(u.used, 1), f.round_or_none(u.pct, f.PCT_DECIMALS),
            u.trials)
