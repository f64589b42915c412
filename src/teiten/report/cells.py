"""The pieces every table of the report is made of: a column, a cell, a table, the
machine-readable table it is written to, and the context their words depend on. The table
modules (:mod:`teiten.report.tables`, :mod:`teiten.report.app_tables`,
:mod:`teiten.report.suite_tables`, ...) build each shown table together with its data: the
Markdown and HTML renderers lay out the one, :mod:`teiten.report.exports` writes the other as
CSV and JSON, so that no table reaches one format and not another."""

from __future__ import annotations

import re
from dataclasses import dataclass

from teiten.analysis.model import ReportData
from teiten.report import formats as f
from teiten.report.i18n import tr


@dataclass(frozen=True)
class Context:
    """What the words of a table depend on besides the section."""

    lang: str = "en"
    confidence: float = 0.95
    alpha: float = 0.05
    margin_pct: float = 5.0  # the study's margin of "no difference within ±m%"
    stem: str = ""  # the section's file stem: its tables' data go to tables/<stem>-<kind>.csv
    emulated: frozenset[str] = frozenset()  # the servers whose figures are an emulation's

    @classmethod
    def of(cls, data: ReportData) -> Context:
        return cls(data.lang, data.confidence, data.alpha, data.margin_pct,
                   emulated=frozenset(s.name for s in data.servers if s.emulated))

    def named(self, server: str) -> str:
        """A server's name where its figures are printed: marked "(emulated)" where they are an
        emulation's (issue 54, item 7), so that no figure of one reads as a measurement."""
        return tr("server.emulated", self.lang, server=server) if server in self.emulated else server

    def marked(self, *servers: str) -> int:
        """The ``emulated`` column of a figure of ``servers`` (a ratio's two): 1 when one of
        them is an emulation's, else 0."""
        return int(any(s in self.emulated for s in servers))

    @property
    def conf(self) -> str:
        return f.format_confidence(self.confidence)


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
