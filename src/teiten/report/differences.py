"""The report's first screen on like with like: what the study compares (its declared factor)
and everything else that differs between its servers (analysis.differences), so that a
reader sees at once whether the comparison holds everything else equal."""

from __future__ import annotations

from teiten.analysis.model import Difference, ReportData
from teiten.report.cells import Cell, Column, Table
from teiten.report.i18n import tr

# A version has many settings an older one lacks: named in one note, not one row each.
_ONE_NOTE = "version-only"


def declared_sentence(data: ReportData) -> str:
    """One sentence: what the study sets differently between its servers."""
    declared = [d for d in data.differences if d.cause == "declared"]
    if not declared:
        return tr("differences.none_declared", data.lang)
    return tr("differences.declared", data.lang, factors="; ".join(
        f"{d.what} ({' / '.join(d.values)})" for d in declared))


def difference_table(data: ReportData) -> Table:
    """Every difference, one row each (declared first), with the reason it differs; the
    settings only some versions have, in the table's note."""
    lang = data.lang
    rows = tuple((d.what, (*(Cell(v) for v in d.values), Cell(_cause(d, lang))))
                 for d in data.differences if d.cause != _ONE_NOTE)
    only = [d for d in data.differences if d.cause == _ONE_NOTE]
    notes = [tr("differences.undeclared", lang)] if any(
        d.cause != "declared" for d in data.differences) else [tr("differences.alike", lang)]
    if only:
        # servers with the same such settings (the same version) share one list
        groups: dict[str, list[str]] = {}
        for i, server in enumerate(data.servers):
            have = ", ".join(f"{d.what} = {d.values[i]}" for d in only if d.values[i] != "—")
            if have:
                groups.setdefault(have, []).append(server.name)
        notes.append(tr("differences.only", lang, items="; ".join(
            f"{', '.join(names)}: {have}" for have, names in groups.items())))
    columns = (*(Column(s.name) for s in data.servers), Column(tr("differences.why", lang)))
    return Table("differences", tr("differences.heading", lang), tr("differences.what", lang),
                 columns, rows, tuple(notes))


def _cause(d: Difference, lang: str) -> str:
    return tr(f"differences.cause.{d.cause}", lang)
