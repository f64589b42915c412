"""The pieces every table of the report is made of: a column, a cell, a table, and the
context their words depend on. The table modules (:mod:`teiten.report.tables`,
:mod:`teiten.report.app_tables`, :mod:`teiten.report.suite_tables`) build them; the Markdown
and HTML renderers lay them out."""

from __future__ import annotations

from dataclasses import dataclass

from teiten.analysis.model import ReportData
from teiten.report import formats as f


@dataclass(frozen=True)
class Context:
    """What the words of a table depend on besides the section."""

    lang: str = "en"
    confidence: float = 0.95
    alpha: float = 0.05
    margin_pct: float = 5.0  # the study's margin of "no difference within ±m%"

    @classmethod
    def of(cls, data: ReportData) -> Context:
        return cls(data.lang, data.confidence, data.alpha, data.margin_pct)

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


@dataclass(frozen=True)
class Table:
    kind: str  # tps | latency | summary | degradation (the HTML class)
    heading: str
    corner: str  # the header of the row-label column
    columns: tuple[Column, ...]
    rows: tuple[tuple[str, tuple[Cell, ...]], ...]
    notes: tuple[str, ...] = ()
