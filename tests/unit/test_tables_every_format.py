"""No report table exists in one format only (issue 37, item 3): every table the report shows
reaches HTML, Markdown, CSV and tables.json, for the report of every built-in study's shape
(the small real stores of tests/golden/report-stores, the compare report of compare-a and
compare-b included, and the stores older teiten wrote, tests/golden/store-*), in English and
in Japanese.

A table's identity is the names of the data it is written to, which each format carries:
the HTML table's ``data-table`` attribute, the "CSV:" line of links under the Markdown table,
the CSV files' names under ``tables/`` and the entries' ``name`` in tables.json. Several shown
tables may share one data table (each server's application tables share ``<stem>-app``); one
shown table may be written to two (the TPS table: ``<stem>-tps`` and ``<stem>-ratio``). Charts
whose figures no table shows carry their data's names the same way (the activity's CPU and
wait-event charts: the HTML element around them, the "CSV:" line under their images).

Not data tables, and so left out: the key-value tables of the study's parameters, of the
machine's fingerprint, and of each server (its properties and settings). They describe what
was run, not what was measured; the store keeps every value of them (``teiten studies``,
``teiten show``), the report's tables.json names the study and its confidence and alpha, and
whatever differs between the servers is a data table of its own (differences). In Markdown
the count of trials by status is also laid out as a one-row table; the HTML gives the same
counts as a list, and ``teiten studies`` gives them as data.
"""

from __future__ import annotations

import csv
import json
import re
import shutil
from collections import Counter
from dataclasses import replace
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote

import pytest
from tests.unit.test_report_render import report_data

from teiten.analysis.locks import LockCores, LockFigures, LockTable
from teiten.report import write_report
from teiten.report.build import write_compare_report, write_study_report
from teiten.report.spreadsheet import cell
from teiten.store import Store
from teiten.words.i18n import tr

GOLDEN = Path(__file__).resolve().parent.parent / "golden"
STORES = GOLDEN / "report-stores"
NAMES = sorted(p.stem for p in STORES.glob("*.db") if not p.stem.startswith("compare-"))
LEGACY = sorted(p.parent.name for p in GOLDEN.glob("store-*/legacy.db"))
COMPARED = ("compare-a", "compare-b")
KV_CLASS = "kv"  # the HTML class of the key-value tables (the machine time's is "kv time": data)
KV_HEADS = ("kv.parameter", "kv.key", "kv.property", "kv.setting")  # their Markdown headers

Identity = tuple[str, ...]  # the names of the data a shown table is written to


class _Tables(HTMLParser):
    """Every ``<table>`` of a page, and every other element that names data (charts): its
    tag, class and the names in its ``data-table``."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.found: list[tuple[str, str, Identity]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        got = dict(attrs)
        if tag == "table" or "data-table" in got:
            self.found.append((tag, got.get("class") or "", tuple((got.get("data-table") or "").split())))


def html_tables(page: str) -> list[Identity]:
    """The identity of every data table (and chart with data) of the HTML report, in page
    order."""
    parser = _Tables()
    parser.feed(page)
    assert sum(tag == "table" for tag, _, _ in parser.found) == page.count("<table"), "every table is seen"
    return [names for tag, cls, names in parser.found if not (tag == "table" and cls == KV_CLASS)]


def markdown_tables(text: str, lang: str) -> list[Identity]:
    """The identity of every data table of the Markdown report, in page order: the CSV files
    linked by the "CSV:" line that follows it (after its notes), before the next heading or
    table; () for a table with no such line. Charts (lines of images) count where such a line
    follows them at once."""
    data_line = tr("table.data", lang) + " ["
    kv_heads = {(tr(k, lang), tr("kv.value", lang)) for k in KV_HEADS}
    lines = text.splitlines()
    out: list[Identity] = []
    heading = ""
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("#"):
            heading = line
        if line.startswith("!["):
            while i < len(lines) and lines[i].startswith("!["):
                i += 1
            if i + 1 < len(lines) and lines[i] == "" and lines[i + 1].startswith(data_line):
                out.append(tuple(unquote(m) for m in re.findall(r"\]\(tables/([^)]+)\.csv\)", lines[i + 1])))
            continue
        if not line.startswith("|"):
            i += 1
            continue
        head = tuple(cell.strip() for cell in line.strip().strip("|").split("|"))
        while i < len(lines) and lines[i].startswith("|"):
            i += 1
        names: Identity = ()
        j = i
        while j < len(lines) and not lines[j].startswith(("#", "|")):
            if lines[j].startswith(data_line):
                names = tuple(unquote(m) for m in re.findall(r"\]\(tables/([^)]+)\.csv\)", lines[j]))
                break
            j += 1
        if head in kv_heads or heading == f"## {tr('status', lang)}":
            assert not names, f"a key-value table with data: {head}"
            continue
        out.append(names)
    return out


def written(out: Path) -> tuple[dict[str, int], dict[str, int]]:
    """The rows of each CSV file and of each tables.json entry, by name; the two agree."""
    files = {p.stem: list(csv.reader(p.open(encoding="utf-8"))) for p in sorted((out / "tables").glob("*.csv"))}
    doc = json.loads((out / "tables.json").read_text(encoding="utf-8"))
    entries = {t["name"]: t for t in doc["tables"]}
    assert len(entries) == len(doc["tables"]), "each name once in tables.json"
    for name, t in entries.items():
        if name in files:
            assert t["file"] == f"tables/{name}.csv"
            assert files[name][0] == t["columns"], name
            # the same rows, the CSV's text cells safe in a spreadsheet (teiten.report.spreadsheet)
            assert files[name][1:] == [[str(cell(r[c])) for c in t["columns"]] for r in t["rows"]], name
    return {n: len(rows) - 1 for n, rows in files.items()}, {n: len(t["rows"]) for n, t in entries.items()}


def mismatches(html: list[Identity], markdown: list[Identity], csv_rows: dict[str, int],
               json_rows: dict[str, int]) -> list[str]:
    """What reaches some formats and not others: shown tables without data, tables shown in
    one report and not the other, data not shown or shown without its CSV or JSON. A data table
    with no rows may go unshown (a header-only CSV that scripts expect, such as the sizes of a
    workload that records none)."""
    out = [f"{fmt}: a table names no data" for fmt, found in (("HTML", html), ("Markdown", markdown))
           if () in found]
    extra_html, extra_md = Counter(html) - Counter(markdown), Counter(markdown) - Counter(html)
    out += [f"shown in HTML, not in Markdown: {' '.join(t)}" for t in extra_html]
    out += [f"shown in Markdown, not in HTML: {' '.join(t)}" for t in extra_md]
    if not extra_html and not extra_md and html != markdown:
        out.append("HTML and Markdown show the tables in another order")
    shown = {name for found in (html, markdown) for names in found for name in names}
    out += [f"shown, no CSV: {n}" for n in sorted(shown - set(csv_rows))]
    out += [f"shown, not in tables.json: {n}" for n in sorted(shown - set(json_rows))]
    out += [f"CSV, not in tables.json: {n}" for n in sorted(set(csv_rows) - set(json_rows))]
    out += [f"tables.json, no CSV: {n}" for n in sorted(set(json_rows) - set(csv_rows))]
    out += [f"written, not shown: {n}" for n in sorted((set(csv_rows) | set(json_rows)) - shown)
            if csv_rows.get(n) or json_rows.get(n)]
    return out


def report(out: Path, lang: str) -> list[str]:
    return mismatches(html_tables((out / "report.html").read_text(encoding="utf-8")),
                      markdown_tables((out / "report.md").read_text(encoding="utf-8"), lang),
                      *written(out))


def _copy(name: str, tmp: Path) -> Path:
    target = tmp / f"{name}.db"
    source = GOLDEN / name / "legacy.db" if name in LEGACY else STORES / f"{name}.db"
    shutil.copyfile(source, target)  # opening a store may migrate it
    return target


@pytest.mark.parametrize("lang", ["en", "ja"])
@pytest.mark.parametrize("name", NAMES + LEGACY)
def test_every_table_reaches_every_format(name: str, lang: str, tmp_path: Path) -> None:
    store = Store.open(_copy(name, tmp_path))
    try:
        (study,) = [r.id for r in store.studies()]
        write_study_report(store, study, tmp_path / "out", lang=lang)
    finally:
        store.close()
    found = report(tmp_path / "out", lang)
    assert not found, f"{name} ({lang}): " + "\n".join(found)


@pytest.mark.parametrize("lang", ["en", "ja"])
def test_every_table_of_a_compare_report_reaches_every_format(lang: str, tmp_path: Path) -> None:
    stores = [Store.open(_copy(n, tmp_path)) for n in COMPARED]
    try:
        write_compare_report([(s, int(s.studies()[0].id)) for s in stores], tmp_path / "out", lang=lang)
    finally:
        for s in stores:
            s.close()
    found = report(tmp_path / "out", lang)
    assert not found, f"compare ({lang}): " + "\n".join(found)


def test_the_golden_stores_show_every_kind_of_table(tmp_path: Path) -> None:
    """The stores cover the tables this test guards: a report of each shape writes them."""
    kinds: set[str] = set()
    for name in NAMES:
        store = Store.open(_copy(name, tmp_path))
        try:
            write_study_report(store, int(store.studies()[0].id), tmp_path / name)
        finally:
            store.close()
        doc = json.loads((tmp_path / name / "tables.json").read_text(encoding="utf-8"))
        kinds |= {t["kind"] for t in doc["tables"]}
    assert {"tps", "ratio", "latency", "summary", "degradation", "cpu-pair", "history", "scaleup",
            "app", "scaleout", "scaleout-strengths", "load", "percentiles", "steps", "sizes", "speedup",
            "models", "strengths", "devices", "cpu", "waits", "differences", "machine-time",
            "trials"} <= kinds, kinds


def test_the_check_finds_a_table_missing_from_one_format() -> None:
    html: list[Identity] = [("w-summary",), ("w-tps", "w-ratio"), ("w-app",), ("w-app",)]
    rows = {"w-summary": 2, "w-tps": 4, "w-ratio": 2, "w-app": 6, "w-sizes": 0}
    assert mismatches(html, list(html), rows, dict(rows)) == []
    assert mismatches(html[:1] + html[2:], html, rows, rows) == [
        "shown in Markdown, not in HTML: w-tps w-ratio"]
    assert mismatches(html, html[::-1], rows, rows) == ["HTML and Markdown show the tables in another order"]
    assert mismatches(html, html, {k: v for k, v in rows.items() if k != "w-ratio"}, rows) == [
        "shown, no CSV: w-ratio", "tables.json, no CSV: w-ratio"]
    assert mismatches(html, html, rows, {k: v for k, v in rows.items() if k != "w-app"}) == [
        "shown, not in tables.json: w-app", "CSV, not in tables.json: w-app"]
    assert mismatches(html, html, {**rows, "w-locks": 3}, {**rows, "w-locks": 3}) == [
        "written, not shown: w-locks"]
    assert mismatches([*html, ()], [*html, ()], rows, rows) == [
        "HTML: a table names no data", "Markdown: a table names no data"]
    # And the parsers: an HTML table without its names, a Markdown table without its CSV line.
    page = ('<table class="data tps" data-table="w-tps w-ratio"></table><table class="kv"></table>'
            '<div class="charts"><figure></figure></div><div class="charts" data-table="w-cpu">'
            '</div><table class="device"></table>')
    assert html_tables(page) == [("w-tps", "w-ratio"), ("w-cpu",), ()]
    md = ("### TPS\n\n| Clients | a |\n|---:|---:|\n| 1 | 2 |\n\n*a note*\n\n"
          "CSV: [TPS](tables/w-tps.csv) · [ratio](tables/w-ratio.csv)\n\n"
          "![TPS](charts/w-tps.svg)\n\n*a chart's note*\n\n"
          "![CPU](charts/w-cpu.svg)\n![waits](charts/w-waits.svg)\n\n"
          "CSV: [CPU](tables/w-cpu.csv) · [waits](tables/w-waits.csv)\n\n"
          "### Latency\n\n| Clients | a |\n|---:|---:|\n| 1 | 2 |\n\n"
          "## Study\n\n| Parameter | Value |\n|---|---|\n| Study | s |\n")
    assert markdown_tables(md, "en") == [("w-tps", "w-ratio"), ("w-cpu", "w-waits"), ()]


def test_the_lwlock_tables_of_each_server_share_one_data_table(tmp_path: Path) -> None:
    """No golden store has an LWLOCK_STATS build: a report of the render tests' data with a
    LWLock table per server shows them in every format, written to one ``<stem>-locks``, and
    the table by core count (the 2014 figures) to ``<stem>-lock-cores``; a store from before the
    shared and exclusive parts were recorded leaves them empty, and says so."""
    data = report_data("en")
    first = data.sections[0]

    def fig(req: float, cont: float, shared: float | None = None,
            excl: float | None = None) -> LockFigures:
        return LockFigures(req, cont, shared, excl)

    locks = (LockTable("pg17", (1, 2), (("WALWrite", (fig(0.5, 0.01, 0.125, 0.375),
                                                      fig(0.75, 0.02, 0.25, 0.5))),
                                        ("XidGen", (None, fig(0.1234, 0.00005))))),
             LockTable("pg18", (2,), (("WALWrite", (fig(0.25, 0.0, 0.0, 0.25),)),)))
    cores = (LockCores("pg", 2, (1, 2), ("pg17", "pg18"), (
        ("WALWrite", (fig(0.75, 0.02, 0.25, 0.5), fig(0.25, 0.0, 0.0, 0.25))),
        ("XidGen", (fig(0.1234, 0.00005), None)))),)
    data = replace(data, sections=(replace(first, locks=locks, lock_cores=cores), *data.sections[1:]))
    write_report(data, tmp_path)
    assert not report(tmp_path, "en")
    html = (tmp_path / "report.html").read_text(encoding="utf-8")
    assert html.count(f'<table class="data locks" data-table="{first.workload}-locks">') == 2
    # The first lock table also names the data of the LWLock figures drawn above it (issue 57, item 1).
    assert html.count(f'<table class="data lock-cores" data-table="{first.workload}-lock-cores '
                      f'{first.workload}-lock-bars">') == 1
    assert html.count(f'<div class="charts" data-table="{first.workload}-lock-bars">') == 1
    with (tmp_path / "tables" / f"{first.workload}-locks.csv").open(encoding="utf-8") as fh:
        rows = list(csv.reader(fh))
    assert rows == [["workload", "server", "lock", "clients", "requests_per_transaction",
                     "contentions_per_transaction", "shared_per_transaction",
                     "exclusive_per_transaction"],
                    [first.workload, "pg17", "WALWrite", "1", "0.5", "0.01", "0.125", "0.375"],
                    [first.workload, "pg17", "WALWrite", "2", "0.75", "0.02", "0.25", "0.5"],
                    [first.workload, "pg17", "XidGen", "1", "", "", "", ""],
                    [first.workload, "pg17", "XidGen", "2", "0.123", "0.0001", "", ""],
                    [first.workload, "pg18", "WALWrite", "2", "0.25", "0.0", "0.0", "0.25"]]
    with (tmp_path / "tables" / f"{first.workload}-lock-cores.csv").open(encoding="utf-8") as fh:
        rows = list(csv.reader(fh))
    assert rows == [["workload", "family", "clients", "lock", "cores", "server",
                     "requests_per_transaction", "contentions_per_transaction",
                     "shared_per_transaction", "exclusive_per_transaction"],
                    [first.workload, "pg", "2", "WALWrite", "1", "pg17", "0.75", "0.02", "0.25", "0.5"],
                    [first.workload, "pg", "2", "WALWrite", "2", "pg18", "0.25", "0.0", "0.0", "0.25"],
                    [first.workload, "pg", "2", "XidGen", "1", "pg17", "0.123", "0.0001", "", ""],
                    [first.workload, "pg", "2", "XidGen", "2", "pg18", "", "", "", ""]]
    md = (tmp_path / "report.md").read_text(encoding="utf-8")
    assert "| WALWrite | 0.250 | 0.500 | 0.0200 | 0.000 | 0.250 | 0.0000 |" in md
    assert "shared/tx (1 core)" in md and "exclusive/tx (2 cores)" in md
    assert "did not record the shared and exclusive parts" in md
