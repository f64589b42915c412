"""The 2014 LWLock figures (001 figs 3.6.6-3.6.8) as stacked bars: requests per transaction
with shared and exclusive apart, contentions per transaction, and the contentions with a split
lock divided by its parts, the builds side by side (what is stacked and divided:
teiten.analysis.lock_bars). Their figures are written to ``<stem>-lock-bars``, a row per
segment drawn."""

from __future__ import annotations

from teiten.analysis.lock_bars import ALL, SHARED, LockFigure, lock_figures
from teiten.analysis.model import WorkloadSection
from teiten.report.cells import DataTable, Value, data_name
from teiten.report.columns import LOCK_BAR_COLUMNS
from teiten.report.stacks import Column, Key, stacked_columns
from teiten.report.svg import PALETTE
from teiten.words.context import Context
from teiten.words.i18n import clients_phrase, tr

DECIMALS = 6  # per transaction, as the hover and the data give it (a divided lock's are small)


def figures(section: WorkloadSection) -> tuple[LockFigure, ...]:
    return lock_figures(section.locks, section.lock_cores)


def _x(axis: str, x: int, lang: str) -> str:
    if axis == "clients":
        return clients_phrase([x], lang)
    return tr("cores.one" if x == 1 else "cores.many", lang, n=x)


def _key_name(lock: str, mode: str, divisor: int, lang: str) -> str:
    name = lock if mode == ALL else tr(f"locks.chart.{mode}", lang, lock=lock)
    return tr("locks.chart.divided", lang, lock=name, n=divisor) if divisor > 1 else name


def lock_chart(fig: LockFigure, section: WorkloadSection, ctx: Context) -> tuple[str, str]:
    """(title, svg) of one figure."""
    lang = ctx.lang
    colour = {lock: PALETTE[i % len(PALETTE)] for i, lock in enumerate(dict.fromkeys(k for k, _ in fig.keys))}
    divisors = {(s.lock, s.mode): s.divisor for p in fig.panels for b in p.bars for s in b.segments or ()}
    keys = [Key(_key_name(lock, mode, divisors.get((lock, mode), 1), lang), colour[lock],
                0.45 if mode == SHARED else 1.0) for lock, mode in fig.keys]
    index = {k: i for i, k in enumerate(fig.keys)}
    panels = []
    for p in fig.panels:
        build = ctx.named(p.build) if p.axis == "clients" else p.build
        label = build if p.clients is None else f"{build} ({clients_phrase([p.clients], lang)})"
        cols = [Column(_x(p.axis, b.x, lang), f"{ctx.named(b.server)} · {_x(p.axis, b.x, lang)}",
                       None if b.segments is None else tuple(
                           (index[(s.lock, s.mode)], s.value, f"{s.value:.{DECIMALS}f}") for s in b.segments))
                for b in p.bars]
        panels.append((label, cols))
    title = tr(f"locks.chart.{fig.measure}", lang, workload=section.workload)
    y_label = tr("locks.chart.y.requests" if fig.measure == "requests" else "locks.chart.y.contentions", lang)
    return title, stacked_columns(title, y_label, keys, panels, y_decimals=DECIMALS,
                                  nothing=tr("locks.chart.nothing", lang), no_data=tr("chart.no_data", lang))


def lock_charts(section: WorkloadSection, ctx: Context) -> list[tuple[str, str, str]]:
    """``[(kind, title, svg)]``: ``lock-requests``, ``lock-contentions`` and, where a build has a
    split lock that contended, ``lock-contentions-split``."""
    out = []
    for fig in figures(section):
        title, svg = lock_chart(fig, section, ctx)
        out.append((f"lock-{fig.measure}", title, svg))
    return out


def lock_bars_data(section: WorkloadSection, ctx: Context) -> DataTable | None:
    """Every segment the figures draw: ``<stem>-lock-bars``."""
    found = figures(section)
    if not found:
        return None
    w = section.workload
    rows: list[tuple[Value, ...]] = [
        (w, fig.measure, p.build, p.axis, b.x, b.server, s.lock, s.mode, round(s.value, DECIMALS), s.divisor)
        for fig in found for p in fig.panels for b in p.bars for s in b.segments or ()]
    return DataTable(data_name(ctx, w, "lock-bars"), w, "lock-bars", LOCK_BAR_COLUMNS, tuple(rows))
