"""What the words of a figure depend on besides the figure: the language, the level of the
intervals, the margin of "no difference", the section's file stem, and which servers' figures are
an emulation's (named so wherever they are printed)."""

from __future__ import annotations

from dataclasses import dataclass

from teiten.analysis.model import ReportData
from teiten.words import formats as f
from teiten.words.i18n import tr


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
