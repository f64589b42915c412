"""The pieces every table of the report is made of: a column, a cell, a table, the
machine-readable table it is written to, and the cell of a judged ratio. The table
modules (:mod:`teiten.report.tables`, :mod:`teiten.report.app_tables`,
:mod:`teiten.report.suite_tables`, ...) build each shown table together with its data: the
Markdown and HTML renderers lay out the one, :mod:`teiten.report.exports` writes the other as
CSV and JSON, so that no table reaches one format and not another."""

from __future__ import annotations

import re
from dataclasses import dataclass

from teiten.analysis.verdicts import Judged
from teiten.words import formats as f
from teiten.words.context import Context
from teiten.words.verdicts import MARKS, TONES, judged_ci_text, judged_title


@dataclass(frozen=True)
class Column:
    label: str
    group: str = ""  # columns with the same group share a header cell in HTML
    sub: str = ""  # a second line under the label (HTML)
    md: str = ""  # the Markdown header, when the label alone would be ambiguous


@dataclass(frozen=True)
class Cell:
    """One table cell: its figure, interval, marker and failures, and how to show it."""

    value: str
    ci: str = ""
    marker: str = ""
    failed: str = ""  # "(1 failed)", already worded
    id: str = ""
    title: str = ""  # hover text
    tone: str = ""  # CSS class: better | worse | same | missing

    @property
    def text(self) -> str:
        """The cell as plain text: ``105.0% [101.9–108.2] *``."""
        return " ".join(part for part in (self.value, self.ci, self.marker, self.failed) if part)


Value = str | int | float | None


@dataclass(frozen=True)
class DataTable:
    """A table's figures for spreadsheets and scripts: ``tables/<name>.csv`` and its entry in
    ``tables.json``, in tidy long form with machine-readable column names
    (:mod:`teiten.report.columns`) and values rounded as the shown table prints them."""

    name: str  # the file stem: "pgecons-read-tps"
    workload: str  # "" for a table of the whole report
    kind: str  # tps | ratio | latency | summary | degradation | ...
    columns: tuple[str, ...]
    rows: tuple[tuple[Value, ...], ...]
    pair: tuple[str, str] | None = None  # (a, b) of a table of a pair of servers

    @property
    def file(self) -> str:
        return f"tables/{self.name}.csv"


@dataclass(frozen=True)
class Table:
    kind: str  # tps | latency | summary | degradation (the HTML class)
    heading: str
    corner: str  # the header of the row-label column
    columns: tuple[Column, ...]
    rows: tuple[tuple[str, tuple[Cell, ...]], ...]
    notes: tuple[str, ...] = ()
    # The machine-readable tables its figures are written to (one may serve several shown
    # tables: each server's application tables share one): the renderers name them under it.
    data: tuple[DataTable, ...] = ()
    # False: nothing to show (no rows), its data still written (a header-only CSV that scripts
    # expect, such as the sizes of a statement workload that records none).
    shown: bool = True


def file_stem(text: str, fallback: str = "workload") -> str:
    """``text`` as a safe part of a file name."""
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("._") or fallback


def data_name(ctx: Context, workload: str, kind: str) -> str:
    """The file stem of a section's table of ``kind``: ``<stem>-<kind>``."""
    return f"{ctx.stem or file_stem(workload)}-{kind}"


def judged_cell(j: Judged | None, ctx: Context, *, text: str | None = None, ci: str | None = None,
                id: str = "") -> Cell:
    """A ratio of a table beside the TPS table's (a step along the versions, a gain with cores,
    a degradation rate, a percentile's ratio), printed, marked and coloured as a TPS ratio cell
    is. ``text`` and ``ci`` print it in another form than a ratio (a rate, a gain)."""
    if j is None:
        return Cell(f.MISSING, id=id, tone="missing")
    title = judged_title(j, ctx)
    if j.estimate is None:
        return Cell(f.MISSING, marker=MARKS[j.verdict.word], id=id, tone="missing", title=title)
    return Cell(f.format_ratio(j.estimate) if text is None else text,
                judged_ci_text(j) if ci is None else ci, MARKS[j.verdict.word], id=id, title=title,
                tone=TONES[j.verdict.word])
