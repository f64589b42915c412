"""The parts of a workload's section, each registered once: the core report (the HTML and
Markdown renderers, the CSV and JSON exports) lays out and writes what these lists give, in
their order, and has no slot of its own for any kind of workload, server or monitor.

A part is a function ``(section, ctx) -> tables``: the tables it adds to the section, each with
the data it is written to (:attr:`teiten.report.cells.Table.data`), and none where the section
has nothing of it. A table that is its own folder (teiten/tables/KEY/) is registered by that
folder (docs/DESIGN.md, "A report table"); a part of the core's is registered here.
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Callable, Sequence
from dataclasses import replace

from teiten.analysis import tables
from teiten.analysis.model import ReportData, WorkloadSection
from teiten.report.activity import chart_data, device_table
from teiten.report.app_tables import app_tables
from teiten.report.cells import DataTable, Table
from teiten.report.degradation_tables import degradation_tables
from teiten.report.history_tables import history_tables
from teiten.report.lock_tables import lock_tables
from teiten.report.scaleup_tables import scaleup_tables
from teiten.report.suite_tables import suite_tables
from teiten.report.tables import latency_table, section_stems, summary_table, tps_table
from teiten.words.context import Context

Part = Callable[[WorkloadSection, Context], Sequence[Table]]
DataPart = Callable[[WorkloadSection, Context], Sequence[DataTable]]


def _load(build: Callable[[WorkloadSection, Context], Table]) -> Part:
    """A table of every workload that runs a load (pgbench, an application): none of a
    measured-statement workload, which has steps instead."""
    def part(section: WorkloadSection, ctx: Context) -> list[Table]:
        return [] if section.suite is not None else [build(section, ctx)]
    return part


@functools.cache
def _drawers() -> dict[str, Callable[[object, WorkloadSection, Context], Sequence[Table]]]:
    """Each registered table's ``tables(figures, section, ctx)``, by key."""
    return {key: importlib.import_module(f"{tables.PACKAGE}.{key}.table").tables for key in tables.in_order()}


def registered_tables(section: WorkloadSection, ctx: Context) -> list[Table]:
    """The tables of teiten/tables/ that have figures in ``section``, in their order: each
    folder's table.py draws what its figures made (teiten.analysis.tables)."""
    found = dict(section.tables)
    return [t for key, draw in _drawers().items() if key in found for t in draw(found[key], section, ctx)]


@functools.cache
def _chart_drawers() -> dict[str, Callable[[object, WorkloadSection, Context], Sequence[tuple[str, str, str]]]]:
    """Each registered table's ``charts(figures, section, ctx)``, by key, where its table.py
    gives one."""
    found = {key: getattr(importlib.import_module(f"{tables.PACKAGE}.{key}.table"), "charts", None)
             for key in tables.in_order()}
    return {key: draw for key, draw in found.items() if draw is not None}


def registered_charts(section: WorkloadSection, ctx: Context) -> list[tuple[str, str, str]]:
    """The charts of teiten/tables/ that have figures in ``section``, in their order: ``(kind,
    title, svg)``, drawn with the section's other charts."""
    found = dict(section.tables)
    return [c for key, draw in _chart_drawers().items() if key in found for c in draw(found[key], section, ctx)]


# Shown with the findings, before the charts.
FINDINGS: tuple[Part, ...] = (_load(summary_table),)
# The section's tables after its charts, in this order.
BODY: tuple[Part, ...] = (
    _load(tps_table),
    history_tables,       # a line of versions
    _load(latency_table),
    degradation_tables,   # METHODS S5: pairs of servers (environments, tenants, --degradation)
    scaleup_tables,       # S4: servers that differ only in their cores
    lock_tables,          # LWLOCK_STATS builds: by core count, then per server
    app_tables,           # application workloads (tpcc, bookstore)
    registered_tables,    # each folder of teiten/tables/ (S11's round-trip bound first)
    suite_tables,         # measured-statement workloads (S6, S8-S10)
)


def _charts(section: WorkloadSection, ctx: Context) -> Sequence[DataTable]:
    return chart_data(section, ctx.stem) if any(s.activity for s in section.servers) else ()


def _devices(section: WorkloadSection, ctx: Context) -> Sequence[DataTable]:
    return device_table(section, ctx.lang, ctx.stem).data if any(s.activity for s in section.servers) else ()


# The monitors' data, shown in the section's activity part (:mod:`teiten.report.activity`): the
# figures of its CPU and wait-event charts, its device table.
MONITORS: tuple[DataPart, ...] = (_charts, _devices)


def findings_tables(section: WorkloadSection, ctx: Context) -> list[Table]:
    return [t for part in FINDINGS for t in part(section, ctx)]


def section_body(section: WorkloadSection, ctx: Context) -> list[Table]:
    """A workload section's tables after its charts, in the order both reports show them;
    each with the data it is written to (``ctx.stem`` names their files)."""
    return [t for part in BODY for t in part(section, ctx)]


def monitor_data(section: WorkloadSection, ctx: Context) -> list[DataTable]:
    return [d for part in MONITORS for d in part(section, ctx)]


def sections(data: ReportData) -> list[tuple[WorkloadSection, Context]]:
    """Each workload section with its context: the report's words, and its file stem."""
    ctx = Context.of(data)
    return [(s, replace(ctx, stem=stem)) for s, stem in zip(data.sections, section_stems(data), strict=True)]
