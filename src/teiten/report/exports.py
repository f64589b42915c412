"""Every table of the report as CSV (``tables/<name>.csv``) and all of them in one
``tables.json``, for spreadsheets and scripts.

The tables are the report's own: each shown table carries the data it is written to
(:attr:`teiten.report.cells.Table.data`), built by the function that builds it, so that a
table reaches HTML, Markdown, CSV and JSON or none of them. The figures are the ones the
tables print, rounded the same way (see :mod:`teiten.words.formats`), in tidy long form:
one row per server and client count, stable machine-readable column names whatever the
report's language (:mod:`teiten.report.columns`). A missing figure is an empty CSV field and
``null`` in JSON. A CSV text cell that a spreadsheet would evaluate as a formula starts with
``'`` (:mod:`teiten.report.spreadsheet`); JSON keeps raw values.

``tables.json`` lists the tables in the order they came to teiten, so that a script that
reads them by position keeps working: first the kinds of before (:data:`FIRST_KINDS`, each
section's in that order), then every section's newer tables in the order the report shows
them, then those of the whole report.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterable
from pathlib import Path
from urllib.parse import quote

from teiten.analysis.model import ReportData, WorkloadSection
from teiten.report import outdir
from teiten.report.cells import DataTable
from teiten.report.columns import (  # noqa: F401 - their home before teiten.report.columns
    APP_COLUMNS,
    DEGRADATION_COLUMNS,
    LATENCY_COLUMNS,
    RATIO_COLUMNS,
    SIZE_COLUMNS,
    STEP_COLUMNS,
    SUMMARY_COLUMNS,
    TPS_COLUMNS,
)
from teiten.report.differences import differences_data
from teiten.report.machine_time import machine_time_text
from teiten.report.parts import findings_tables, monitor_data, section_body, sections
from teiten.report.series_view import trials_table
from teiten.report.spreadsheet import cell
from teiten.words.context import Context
from teiten.words.i18n import tr

# The kinds of table the exports had before each shown table carried its own data, in the
# order each section listed them.
FIRST_KINDS = ("tps", "ratio", "latency", "summary", "degradation", "app", "rtt", "scaleout", "load",
               "percentiles", "steps", "sizes")


def unique(tables: Iterable[DataTable]) -> list[DataTable]:
    """Each data table once (several shown tables may share one), in the order first met."""
    seen: dict[str, DataTable] = {}
    for t in tables:
        seen.setdefault(t.name, t)
    return list(seen.values())


def section_data(section: WorkloadSection, ctx: Context) -> list[DataTable]:
    """The data of a section's parts (:mod:`teiten.report.parts`): the kinds of before in their
    order, then the rest in the report's (the monitors' last)."""
    tables = [*findings_tables(section, ctx), *section_body(section, ctx)]
    found = unique([d for t in tables for d in t.data] + monitor_data(section, ctx))
    first = sorted((d for d in found if d.kind in FIRST_KINDS), key=lambda d: FIRST_KINDS.index(d.kind))
    return first + [d for d in found if d.kind not in FIRST_KINDS]


def report_wide(data: ReportData) -> list[DataTable]:
    """The data of the tables outside the workload sections: the differences between the
    servers, the machine time, every trial's series."""
    out = [differences_data(data)] if data.differences else []
    if data.machine_time is not None:
        told = machine_time_text(data.machine_time, data.lang)
        out += [d for d in (told.data, told.run_data) if d is not None]
    if data.series:
        out += trials_table(data).data
    return out


def all_tables(data: ReportData) -> list[list[DataTable]]:
    """The data tables of every section, in section order."""
    return [section_data(s, ctx) for s, ctx in sections(data)]


def ordered(data: ReportData) -> list[DataTable]:
    """Every data table of the report, in the order of ``tables.json`` (see the module)."""
    each = all_tables(data)
    return ([t for found in each for t in found if t.kind in FIRST_KINDS] +
            [t for found in each for t in found if t.kind not in FIRST_KINDS] + report_wide(data))


def differences_table(data: ReportData) -> DataTable:
    """Every difference between the servers (tables/differences.csv)."""
    return differences_data(data)


def table_links(tables: Iterable[DataTable], lang: str, *, json_too: bool = True) -> list[tuple[str, str]]:
    """(label, relative href) of each table's CSV file, then of ``tables.json``."""
    links = []
    for t in tables:
        a, b = t.pair or ("", "")
        links.append((tr(f"table.{t.kind}", lang, a=a, b=b), quote(t.file)))
    if json_too:
        links.append((tr("tables.json", lang), "tables.json"))
    return links


def csv_text(table: DataTable) -> str:
    """The table as CSV, its text cells safe to open in a spreadsheet
    (:mod:`teiten.report.spreadsheet`)."""
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow([cell(c) for c in table.columns])
    writer.writerows([[cell(v) for v in row] for row in table.rows])
    return buf.getvalue()


def json_text(data: ReportData, tables: list[DataTable]) -> str:
    doc = {
        "study": data.study,
        "confidence": data.confidence,
        "alpha": data.alpha,
        "tables": [
            {"name": t.name, "workload": t.workload, "kind": t.kind, "file": t.file,
             "columns": list(t.columns),
             "rows": [dict(zip(t.columns, row, strict=True)) for row in t.rows]}
            for t in tables
        ],
    }
    return json.dumps(doc, ensure_ascii=False, indent=1) + "\n"


def write_tables(data: ReportData, out_dir: Path | outdir.Writer) -> dict[str, Path]:
    """Write ``tables/*.csv`` and ``tables.json`` (through :class:`outdir.Writer`); returns
    ``{"csv:<name>": path, ..., "json": path}``."""
    tables = ordered(data)
    written: dict[str, Path] = {}
    with outdir.opened(out_dir) as out:
        out.sub("tables")
        for t in tables:
            written[f"csv:{t.name}"] = out.write_text(t.file, csv_text(t))
        written["json"] = out.write_text("tables.json", json_text(data, tables))
    return written
