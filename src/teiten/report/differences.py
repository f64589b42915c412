"""The report's first screen on like with like: what the study compares (its declared factor)
and everything else that differs between its servers (analysis.differences), so that a
reader sees at once whether the comparison holds everything else equal."""

from __future__ import annotations

from teiten.analysis.differences import RENAMED
from teiten.analysis.model import Difference, ReportData
from teiten.report.cells import Cell, Column, DataTable, Table
from teiten.words.i18n import tr

# A version has many settings an older one lacks: named in one note, not one row each; a
# server with more than _NAMED of them has its first _FIRST named and the rest counted (every
# one is in the report's tables/differences.csv).
_ONE_NOTE = "version-only"
_NAMED = 12
_FIRST = 6
DIFFERENCES = "differences"  # its table, tables/differences.csv beside the report
DIFFERENCES_CSV = f"tables/{DIFFERENCES}.csv"


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
        groups: dict[tuple[str, ...], list[str]] = {}
        for i, server in enumerate(data.servers):
            have = tuple(f"{d.what} = {d.values[i]}" for d in only if d.values[i] != "—")
            if have:
                groups.setdefault(have, []).append(server.name)
        notes.append(tr("differences.only", lang, items="; ".join(
            f"{', '.join(names)}: {_some(have, lang)}" for have, names in groups.items())))
        if any(len(have) > _NAMED for have in groups):
            notes.append(tr("differences.only.all", lang, file=DIFFERENCES_CSV))
        named = {d.what for d in only}
        renamed = [f"{old} → {new} ({since})" for old, new, since in RENAMED
                   if old in named and new in named]
        if renamed:
            notes.append(tr("differences.renamed", lang, items="; ".join(renamed)))
    columns = (*(Column(s.name) for s in data.servers), Column(tr("differences.why", lang)))
    return Table("differences", tr("differences.heading", lang), tr("differences.what", lang),
                 columns, rows, tuple(notes), (differences_data(data),))


def differences_data(data: ReportData) -> DataTable:
    """Every difference between the servers, the version-only settings included: what, the
    value of each server (— where it has none), and why it differs."""
    return DataTable(DIFFERENCES, "", "differences", ("what", *(s.name for s in data.servers), "cause"),
                     tuple((d.what, *d.values, d.cause) for d in data.differences))


def _some(have: tuple[str, ...], lang: str) -> str:
    if len(have) <= _NAMED:
        return ", ".join(have)
    return tr("differences.only.many", lang, n=len(have), first=", ".join(have[:_FIRST]),
              more=len(have) - _FIRST)


def _cause(d: Difference, lang: str) -> str:
    if d.cause == "same-meaning":
        return tr(f"differences.meaning.{d.what}", lang)
    return tr(f"differences.cause.{d.cause}", lang)
