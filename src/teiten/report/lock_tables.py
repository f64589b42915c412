"""The LWLOCK_STATS tables (METHODS S2, 2014): each counting server's locks per client count,
and each core family's locks by core count with shared and exclusive requests apart, as the
2014 figures drew them (teiten.analysis.locks); written to ``<stem>-locks`` and
``<stem>-lock-cores``, and the figures' segments (teiten.report.lock_charts) to
``<stem>-lock-bars``."""

from __future__ import annotations

from dataclasses import replace

from teiten.analysis.lock_bars import SPLIT_PARTS
from teiten.analysis.locks import LockCores, LockFigures, LockTable
from teiten.analysis.model import WorkloadSection
from teiten.report.cells import Cell, Column, DataTable, Table, Value, data_name
from teiten.report.columns import LOCK_COLUMNS, LOCK_CORES_COLUMNS
from teiten.report.lock_charts import lock_bars_data
from teiten.words import formats as f
from teiten.words.context import Context
from teiten.words.i18n import clients_phrase, tr

MISSING = Cell(f.MISSING, tone="missing")


def _per_tx(value: float | None, decimals: int) -> Cell:
    return MISSING if value is None else Cell(f"{value:.{decimals}f}")


def _rounded(value: float | None, decimals: int) -> float | None:
    return None if value is None else round(value, decimals)


def _figures(v: LockFigures | None) -> tuple[Value, ...]:
    """requests, contentions, shared, exclusive per transaction, as the tables print them."""
    if v is None:
        return (None, None, None, None)
    return (round(v.requests, 3), round(v.contentions, 4), _rounded(v.shared, 3),
            _rounded(v.exclusive, 3))


def lock_table(lt: LockTable, ctx: Context) -> Table:
    """LWLock requests and contentions per transaction, per lock and client count."""
    lang = ctx.lang
    columns = tuple(col for c in lt.clients for col in (
        Column(tr("locks.requests", lang), clients_phrase([c], lang),
               md=f"{tr('locks.requests', lang)} ({clients_phrase([c], lang)})"),
        Column(tr("locks.contentions", lang), clients_phrase([c], lang),
               md=f"{tr('locks.contentions', lang)} ({clients_phrase([c], lang)})")))
    rows = []
    for name, values in lt.rows:
        cells: list[Cell] = []
        for v in values:
            cells += [MISSING] * 2 if v is None else [_per_tx(v.requests, 3), _per_tx(v.contentions, 4)]
        rows.append((name, tuple(cells)))
    return Table("locks", tr("locks", lang, server=lt.server), tr("locks.lock", lang), columns,
                 tuple(rows), (tr("locks.note", lang),))


def lock_cores_table(lc: LockCores, ctx: Context) -> Table:
    """One family's locks by core count at one client count: shared and exclusive requests
    and contentions per transaction, a group of three columns per core count."""
    lang = ctx.lang
    parts = (("locks.shared", 3), ("locks.exclusive", 3), ("locks.contentions", 4))
    columns = []
    for cores in lc.cores:
        group = tr("cores.one" if cores == 1 else "cores.many", lang, n=cores)
        columns += [Column(tr(key, lang), group, md=f"{tr(key, lang)} ({group})") for key, _ in parts]
    rows = []
    for name, values in lc.rows:
        cells: list[Cell] = []
        for v in values:
            cells += [MISSING] * 3 if v is None else [
                _per_tx(v.shared, 3), _per_tx(v.exclusive, 3), _per_tx(v.contentions, 4)]
        rows.append((name, tuple(cells)))
    notes = [tr("locks.cores.note", lang, clients=clients_phrase([lc.clients], lang))]
    if any(v is not None and v.shared is None for _, values in lc.rows for v in values):
        notes.append(tr("locks.cores.unsplit", lang))
    return Table("lock-cores", tr("locks.cores", lang, family=lc.family,
                                  clients=clients_phrase([lc.clients], lang)),
                 tr("locks.lock", lang), tuple(columns), tuple(rows), tuple(notes))


def lock_tables(section: WorkloadSection, ctx: Context) -> list[Table]:
    """Each family's table by core count (``<stem>-lock-cores``), then each server's table
    (``<stem>-locks``: a row per server, lock and client count)."""
    w = section.workload
    out = []
    if section.lock_cores:
        data = DataTable(data_name(ctx, w, "lock-cores"), w, "lock-cores", LOCK_CORES_COLUMNS, tuple(
            (w, lc.family, lc.clients, name, cores, server, *_figures(v))
            for lc in section.lock_cores for name, values in lc.rows
            for cores, server, v in zip(lc.cores, lc.servers, values, strict=True)))
        out += [replace(lock_cores_table(lc, ctx), data=(data,)) for lc in section.lock_cores]
    if section.locks:
        data = DataTable(data_name(ctx, w, "locks"), w, "locks", LOCK_COLUMNS, tuple(
            (w, lt.server, name, c, *_figures(v)) for lt in section.locks
            for name, values in lt.rows for c, v in zip(lt.clients, values, strict=True)))
        out += [replace(lock_table(lt, ctx), data=(data,)) for lt in section.locks]
    bars = lock_bars_data(section, ctx)
    if out and bars is not None:  # the figures' data and what they show, under the first table
        out[0] = replace(out[0], data=(*out[0].data, bars),
                         notes=(*out[0].notes, tr("locks.chart.note", ctx.lang, n=SPLIT_PARTS)))
    return out
