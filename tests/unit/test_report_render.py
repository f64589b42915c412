"""Tests of the Markdown and HTML reports, their charts and their CSV/JSON tables, on the
hand-built ReportData of :mod:`tests.unit.report_fixture` (two workloads, pg17 against
pg18 and a server whose name carries markup; 3 repetitions in one workload, 4 in the
other).

The expected texts are worked out here from the data with plain f-strings, not with the
report's own formatting functions, so a formatting slip shows.
"""

from __future__ import annotations

import csv
import html
import json
import math
import re
from dataclasses import replace
from decimal import Decimal
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote

import pytest
from tests.unit.report_fixture import EVIL, SERIES, report_data

from teiten.analysis.compare import cell_id
from teiten.analysis.model import Notice, Point, ReportData, ServerSeries, WorkloadSection
from teiten.report import write_report
from teiten.report.html import render_html
from teiten.report.markdown import render_markdown
from teiten.report.series_view import choice_labels, legend_labels, payload, viewer_model
from teiten.report.svg import PALETTE, line_chart, nice_range, nice_ticks
from teiten.words.answer import answer_lines

CI = "–"  # between the bounds of an interval


class _Dom(HTMLParser):
    """Checks that elements nest and close; collects every table's rows, the text and
    title of every element with an id, and the links of the findings."""

    VOID = {"meta", "br", "hr", "img", "input", "link", "col", "wbr", "source"}

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.stack: list[str] = []
        self.errors: list[str] = []
        self.tables: list[tuple[str, list[list[str]]]] = []  # (class, rows of cell texts)
        self.ids: dict[str, dict[str, str]] = {}  # id -> {"tag", "text", "title"}
        self.duplicate_ids: list[str] = []
        self.findings: list[tuple[str, str]] = []  # (href, text)
        self.options: list[str] = []
        self._open: list[tuple[str, int, list[str]]] = []  # (id, depth, text) of open elements
        self._cell: list[str] | None = None
        self._in_findings = 0
        self._link: tuple[str, list[str]] | None = None
        self._option: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        if tag in self.VOID:
            return
        self.stack.append(tag)
        if "id" in a:
            if a["id"] in self.ids:
                self.duplicate_ids.append(a["id"])
            self.ids[a["id"]] = {"tag": tag, "text": "", "title": a.get("title", "")}
            self._open.append((a["id"], len(self.stack), []))
        if tag == "table":
            self.tables.append((a.get("class", ""), []))
        elif tag == "tr":
            self.tables[-1][1].append([])
        elif tag in ("td", "th"):
            self._cell = []
        elif tag == "ul" and "findings" in a.get("class", ""):
            self._in_findings = len(self.stack)
        elif tag == "a" and self._in_findings:
            self._link = (a.get("href", ""), [])
        elif tag == "option":
            self._option = []

    def handle_endtag(self, tag: str) -> None:
        if tag in self.VOID:
            return
        if not self.stack or self.stack[-1] != tag:
            self.errors.append(f"</{tag}> closes {self.stack[-1:]}")
            return
        depth = len(self.stack)
        self.stack.pop()
        if self._open and self._open[-1][1] == depth:
            ident, _, text = self._open.pop()
            self.ids[ident]["text"] = " ".join("".join(text).split())
        if tag in ("td", "th") and self._cell is not None:
            self.tables[-1][1][-1].append(" ".join("".join(self._cell).split()))
            self._cell = None
        elif tag == "ul" and self._in_findings == depth:
            self._in_findings = 0
        elif tag == "a" and self._link is not None:
            self.findings.append((self._link[0], "".join(self._link[1])))
            self._link = None
        elif tag == "option" and self._option is not None:
            self.options.append("".join(self._option))
            self._option = None

    def handle_data(self, data: str) -> None:
        for _, _, text in self._open:
            text.append(data)
        for sink in (self._cell, self._link[1] if self._link else None, self._option):
            if sink is not None:
                sink.append(data)


def _parse(doc: str) -> _Dom:
    parser = _Dom()
    parser.feed(doc)
    parser.close()
    return parser


@pytest.fixture(scope="module")
def data() -> ReportData:
    return report_data("en")


@pytest.fixture(scope="module")
def ja() -> ReportData:
    return report_data("ja")


@pytest.fixture(scope="module")
def doc(data: ReportData) -> str:
    return render_html(data)


@pytest.fixture(scope="module")
def dom(doc: str) -> _Dom:
    return _parse(doc)


def _section(data: ReportData, workload: str) -> WorkloadSection:
    return next(s for s in data.sections if s.workload == workload)


def _point(section: WorkloadSection, server: str, clients: int) -> Point:
    series = next(s for s in section.servers if s.server == server)
    return next(p for p in series.points if p.clients == clients)


def _level(level: float | None) -> str:
    """The level an interval reaches, as printed: in percent, rounded down to 0.1."""
    assert level is not None
    return f"{math.floor(level * 1000 + 1e-6) / 10:g}%"


def _tps_text(p: Point) -> str:
    if p.tps_median is None:
        return f"— ({p.n_failed} failed)"
    assert p.tps_ci is not None
    text = f"{p.tps_median:.1f} [{p.tps_ci[0]:.1f}{CI}{p.tps_ci[1]:.1f}, {_level(p.tps_ci_level)}]"
    return f"{text} ({p.n_failed} failed)" if p.n_failed else text


MARKS = {"faster": "▲", "slower": "▼", "no-difference": "≈", "cannot-tell": "?"}


def _mark(p: Point) -> str:
    return MARKS[p.verdict]


def _ratio_text(p: Point) -> str:
    """The cell: the interval's own estimate (never the ratio of the medians), its interval at
    the family's level, the level it reaches, the verdict's marker."""
    if p.estimate is None:
        return "— ?" if p.verdict == "cannot-tell" else "—"
    assert p.ratio_ci is not None
    low, high = p.ratio_ci
    assert low <= p.estimate <= high
    return (f"{p.estimate * 100:.1f}% [{low * 100:.1f}{CI}{high * 100:.1f}, {_level(p.ratio_ci_level)}] "
            f"{_mark(p)}")


def _ci(p: Point) -> str:
    assert p.ratio_ci is not None
    return f"{p.ratio_ci[0] * 100:.1f}{CI}{p.ratio_ci[1] * 100:.1f}"


def _points(data: ReportData) -> list[tuple[WorkloadSection, ServerSeries, Point]]:
    return [(sec, s, p) for sec in data.sections for s in sec.servers for p in s.points]


# --- The document ----------------------------------------------------------------------

@pytest.mark.parametrize("lang", ["en", "ja"])
def test_html_is_well_formed(lang: str) -> None:
    doc = render_html(report_data(lang))
    parser = _parse(doc)
    assert parser.errors == [] and parser.stack == []
    assert parser.duplicate_ids == []
    assert doc.startswith("<!DOCTYPE html>")
    assert f'<html lang="{lang}">' in doc
    assert '<meta charset="utf-8">' in doc
    for table_class, rows in parser.tables:
        if table_class.startswith("data"):
            grouped = len(rows) > 1 and len(rows[0]) < len(rows[-1])
            widths = {len(r) for r in rows[2 if grouped else 1:]}
            assert len(widths) == 1, table_class


def test_html_has_no_external_resources(doc: str) -> None:
    urls = set(re.findall(r"https?://[^\s\"'<>)]*", doc))
    assert urls == {"http://www.w3.org/2000/svg"}
    assert not re.search(r"<(link|img|iframe)\b", doc, re.IGNORECASE)
    assert not re.search(r"\bsrc\s*=", doc, re.IGNORECASE)
    scripts = re.findall(r"<script\b[^>]*>", doc)
    assert scripts == ["<script>", '<script type="application/json" id="series-data">', "<script>"]
    assert "@import" not in doc and "url(" not in doc


def test_a_long_list_of_warnings_folds(data: ReportData) -> None:
    many = tuple(Notice("high-noise", {"server": "pg18", "workload": "w", "clients": c, "cv_pct": 12.5})
                 for c in range(1, 21))
    doc = render_html(replace(data, warnings=many))
    assert doc.count("the repetitions vary by 12.5%") == 20
    shown, folded = doc.split("<details><summary>14 more warnings</summary>")
    assert shown.count("the repetitions vary by") == 6
    assert render_html(replace(data, warnings=many[:8])).count("more warnings") == 0


def _trial(key: str, n: int, error: str, **more: object) -> Notice:
    return Notice(key, {"trial": f"t{n}", "server": "pg18", "workload": "w", "clients": 1,
                        "repetition": n, "error": error, **more})


@pytest.mark.parametrize("lang", ["en", "ja"])
def test_warnings_of_single_trials_are_grouped_by_cause_with_counts(
        data: ReportData, lang: str, tmp_path: Path) -> None:
    """Twenty disturbed trials are one line that says how many more and which; failed trials
    group by their error; a point's warnings stay one line each."""
    disturbed = tuple(_trial("trial-disturbed", n, f"foreign load {n / 10:.2f} CPUs",
                             repeat=f"t{n}.2") for n in range(1, 21))
    failed = (_trial("trial-failed", 30, "server crashed"), _trial("trial-failed", 31, "timeout"),
              _trial("trial-failed", 32, "server crashed"))
    noisy = tuple(Notice("high-noise", {"server": "pg18", "workload": "w", "clients": c,
                                        "cv_pct": 12.5}) for c in (1, 2))
    warned = replace(data, warnings=disturbed[:1] + failed[:1] + noisy + disturbed[1:] + failed[1:],
                     lang=lang)
    text = render_markdown(warned, tmp_path).read_text(encoding="utf-8")
    part = text.split(f"## {'Warnings' if lang == 'en' else '注意事項'}\n\n")[1].split("\n\n")[0]
    lines = part.splitlines()
    assert len(lines) == 5, lines
    assert lines[0].startswith("- Trial t1 (pg18, w, 1 client, repetition 1) was left out" if lang == "en"
                               else "- 試行 t1（pg18, w, クライアント数 1, 1 回目）は集計から除外し")
    assert lines[0].endswith(
        "foreign load 0.10 CPUs (19 more of this kind: t2, t3, t4, t5, t6, t7, t8, t9, …)" if lang == "en"
        else "foreign load 0.10 CPUs (同種ほか 19 件: t2, t3, t4, t5, t6, t7, t8, t9, …)"), lines[0]
    assert "server crashed (1 more of this kind: t32)" in lines[1] or \
        "server crashed (同種ほか 1 件: t32)" in lines[1], lines[1]
    assert "12.5%" in lines[2] and "12.5%" in lines[3] and "timeout" in lines[4]
    assert " more of this kind" not in lines[4] and "同種" not in lines[4]
    doc = render_html(warned)
    assert doc.count("<li>") - render_html(replace(warned, warnings=())).count("<li>") == 5
    assert "t20" not in doc and "t20" not in text, "the ids past the eighth are one ellipsis"


def test_html_escapes_user_text(doc: str) -> None:
    assert EVIL not in doc and "dev<script" not in doc
    assert "dev&lt;script&gt;&amp;&quot;x" in doc
    assert "<b>x</b>" not in doc and "&lt;b&gt;x&lt;/b&gt;" in doc
    assert "teiten report: s1-read &lt;test&gt;" in doc
    assert "Trial t2 (&lt;b&gt;x&lt;/b&gt;, w, 1 client, repetition 1) was skipped: e" in doc


# --- Tables ----------------------------------------------------------------------------

def test_tps_cells_show_median_ci_and_cv_on_hover(data: ReportData, dom: _Dom) -> None:
    for section, series, p in _points(data):
        cell = dom.ids[cell_id("tps", section.workload, series.server, p.clients)]
        assert cell["tag"] == "td"
        assert cell["text"] == _tps_text(p)
        if p.tps_values:
            assert f"CV {p.cv * 100:.1f}%" in cell["title"]
            assert ", ".join(f"{v:.1f}" for v in p.tps_values) in cell["title"]
    read = _point(_section(data, "pgecons-read"), "pg18", 1)
    # 3 repetitions: [min, max], which covers the median with 75%, not 95%.
    assert dom.ids["tps--pgecons_2d_read--pg18--1"]["text"] == "1050.0 [1049.0–1052.0, 75%]"
    assert read.tps_ci == (1049.0, 1052.0) and read.tps_ci_level == 0.75
    assert "75% CI 1049.0–1052.0 (order statistics)" in dom.ids["tps--pgecons_2d_read--pg18--1"]["title"]
    assert dom.ids["tps--pgecons_2d_read--pg18--2"]["text"] == "— (3 failed)"


def test_ratio_cells_show_ci_and_significance(data: ReportData, dom: _Dom) -> None:
    for section, series, p in _points(data):
        ident = cell_id("ratio", section.workload, series.server, p.clients)
        if series.server == section.baseline:
            assert ident not in dom.ids
            continue
        cell = dom.ids[ident]
        assert cell["text"] == _ratio_text(p)
        if p.reason == "short":
            assert cell["title"] == (f"cannot tell: these blocks reach 90%, short of the 99.38% each of the "
                                     f"report's 8 comparisons needs ({p.needed} blocks reach it)")
        elif p.verdict in ("faster", "slower"):
            side = "above" if p.verdict == "faster" else "below"
            assert cell["title"] == (f"{p.verdict}: the 99.5% interval {_ci(p)}% (Hodges–Lehmann interval "
                                     f"of the two sets of repetitions) lies wholly {side} 100%")
    update = {c: dom.ids[f"ratio--pgecons_2d_update--pg18--{c}"]["text"] for c in (1, 2, 4)}
    # 98.0% [96.4–99.6]: inside ±5%, so no difference, though the interval excludes 100%.
    assert update[1].endswith(" ≈") and update[2].endswith(" ▲") and update[4].endswith(" ≈")
    assert update[2].startswith("110.0% [")
    assert dom.ids["ratio--pgecons_2d_update--pg18--1"]["title"] == (
        "no difference within ±5%: the 99.5% interval 98.0–104.3% (Hodges–Lehmann interval of the two "
        "sets of repetitions) lies inside 95–105%")
    assert dom.ids["ratio--pgecons_2d_read--pg18--2"]["text"] == "— ?"
    assert dom.ids["ratio--pgecons_2d_read--pg18--2"]["title"] == (
        "cannot tell: a server has no successful trial here, so there is no ratio")


def test_too_few_repetitions_marker_and_footnote(data: ReportData, doc: str, dom: _Dom,
                                                 tmp_path: Path) -> None:
    read_html, update_html = html.unescape(doc).split('<section class="workload"')[1:3]
    for c in (1, 4):
        assert dom.ids[f"ratio--pgecons_2d_read--pg18--{c}"]["text"].endswith(" ?")
        # 8 comparisons: each interval at 1 - 0.05/8; 3 repetitions a side reach 90%, 6 reach it.
        assert _point(_section(data, "pgecons-read"), "pg18", c).needed == 6
    footnote = "?: where the blocks are too few for the level the report's comparisons need, 6 blocks reach it."
    assert footnote in read_html and footnote not in update_html
    assert '<span class="mark unsure">?</span>' in read_html
    assert '<span class="mark sig">▲</span>' in update_html and '<span class="mark sig">▼</span>' in update_html
    assert '<span class="mark ns">≈</span>' in update_html
    text = render_markdown(data, tmp_path).read_text(encoding="utf-8")
    assert f"*{footnote}*" in text
    assert "| 1 | 1000.0 \\[999.0–1002.0, 75%\\] | 1050.0 \\[1049.0–1052.0, 75%\\] | 105.0% \\[" in text


def test_smallest_detectable_difference_is_stated(data: ReportData, dom: _Dom) -> None:
    tps_tables = [rows for c, rows in dom.tables if c == "data tps"]
    update = tps_tables[1]
    assert update[0][-1] == "Smallest detectable difference"
    for row in update[2:]:
        clients = int(row[0])
        for server, text in zip(("pg18", EVIL), row[-2:], strict=True):
            p = _point(_section(data, "pgecons-update"), server, clients)
            assert text == f"{p.detectable_pct:.1f}%"
    pcts = [p.detectable_pct for s in _section(data, "pgecons-update").servers for p in s.points
            if p.detectable_pct is not None]
    line = (f"With this noise and these repetitions, differences below {min(pcts):.1f}% to "
            f"{max(pcts):.1f}%, depending on the client count, could not be detected")
    assert line in render_html(data)


def test_summary_table(data: ReportData, dom: _Dom) -> None:
    summaries = [rows for c, rows in dom.tables if c == "data summary"]
    assert len(summaries) == 2
    header, *rows = summaries[1]
    assert header == ["Server", "Version", "Peak TPS", "Peak at (clients)", "Scales until (clients)",
                      "Mean TPS difference vs pg17", "Mean latency difference vs pg17"]
    for row, series in zip(rows, _section(data, "pgecons-update").servers, strict=True):
        assert series.saturation is not None
        peak, tps, knee = series.saturation
        diff = "baseline" if series.mean_tps_diff_pct is None else f"{series.mean_tps_diff_pct:+.1f}%"
        assert row[:6] == [EVIL if series.server == EVIL else series.server, series.version,
                           f"{tps:.1f}", str(peak), str(knee), diff]
    assert rows[1] == ["pg18", "18.1", "1470.0", "4", "2", "+3.0%", "-2.7%"]


def test_latency_table(data: ReportData, dom: _Dom) -> None:
    latency = [rows for c, rows in dom.tables if c == "data latency"][0]
    assert latency[2:] == [["1", "1.000", "0.952", "95.2%"], ["2", "1.111", "— (3 failed)", "—"],
                           ["4", "1.250", "1.290", "103.2%"]]
    # No colour, no marker: a ratio of medians without an interval carries no verdict.
    assert '<td id="latency-ratio--pgecons_2d_read--pg18--1">95.2%</td>' in render_html(data)


def test_degradation_table(data: ReportData, dom: _Dom) -> None:
    (table,) = [rows for c, rows in dom.tables if c == "data degradation"]
    assert table[0] == ["Clients", "TPS (pg17)", "TPS (pg18)",
                        "Degradation rate, %", "TPS difference"]
    (deg,) = _section(data, "pgecons-update").degradations
    marks = {"faster": "▲", "slower": "▼", "no-difference": "≈", "cannot-tell": "?"}
    assert table[1:] == [[str(r.clients), f"{r.tps_a:.1f}", f"{r.tps_b:.1f}",
                          f"{(1 - r.judged.estimate) * 100:.1f}% [{r.rate_ci[0]:.1f}{CI}{r.rate_ci[1]:.1f}, "
                          f"{_level(r.rate_level)}] {marks[r.judged.verdict.word]}", f"{r.difference:.1f}"]
                         for r in deg.rows if r.rate_ci is not None and r.judged is not None]
    # pg18 against pg17, its reference: the TPS table's own interval and verdict, as a rate.
    update = _section(data, "pgecons-update")
    for r, p in zip(deg.rows, update.servers[1].points, strict=True):
        assert r.judged is not None and (r.judged.estimate, r.judged.ci) == (p.estimate, p.ratio_ci)
    assert table[3][:3] == ["4", "1500.0", "1470.0"]


# --- Findings --------------------------------------------------------------------------

NUMBER = re.compile(r"\d+(?:\.\d+)?")


@pytest.mark.parametrize("lang", ["en", "ja"])
def test_every_finding_repeats_the_numbers_of_its_cell(lang: str) -> None:
    data = report_data(lang)
    dom = _parse(render_html(data))
    expected = sum(len(s.findings) for s in data.sections)
    assert len(dom.findings) == expected > 0
    kinds = {f.kind for s in data.sections for f in s.findings}
    assert kinds == {"faster", "slower", "no-difference", "cannot-tell", "peak", "peak-unsure"}
    for href, text in dom.findings:
        assert href.startswith("#")
        cell = dom.ids[href[1:]]  # the link points at an existing cell
        ratio = re.search(r"(?:ratio to baseline|基準比) (\d+\.\d)%", text)
        if ratio:  # faster / slower
            interval = re.search(rf"(\d+\.\d){CI}(\d+\.\d)%", text)
            diff = re.search(r"(\d+\.\d)% (?:faster|slower|高速|低速)", text)
            assert interval and diff, text
            level = re.search(r"[(（](\d+(?:\.\d)?)% (?:CI|信頼区間)", text)
            assert level, text
            mark = "▲" if re.search("faster|高速", text) else "▼"
            assert cell["text"] == f"{ratio[1]}% [{interval[1]}{CI}{interval[2]}, {level[1]}%] {mark}"
            assert Decimal(diff[1]) == abs(Decimal(ratio[1]) - 100)
            assert cell["title"].startswith(("faster", "slower", "高速", "低速"))
        elif "TPS" in text:  # peak
            tps = re.search(r"(\d+\.\d) TPS", text)
            assert tps and cell["text"].startswith(f"{tps[1]} ["), text
        elif "peak" in text or "最大" in text:  # where it peaks cannot be told: the cell is its TPS
            assert href.startswith("#tps--"), (text, href)
        else:  # no difference / cannot tell: the span of the intervals, as the cells print them
            assert cell["text"].split()[-1] in ("≈", "?"), (text, cell)
            span = re.search(rf"(\d+\.\d){CI}(\d+\.\d)%", text)
            if span:
                low, high = re.search(rf"\[(\d+\.\d){CI}(\d+\.\d),", cell["text"]).groups()  # type: ignore[union-attr]
                assert Decimal(span[1]) <= Decimal(low) and Decimal(high) <= Decimal(span[2]), (text, cell)


def test_finding_sentences(data: ReportData, dom: _Dom) -> None:
    p = _point(_section(data, "pgecons-update"), "pg18", 2)
    assert p.ratio_ci is not None
    low, high = (f"{v * 100:.1f}" for v in p.ratio_ci)
    texts = {text for _, text in dom.findings}
    # 6 repetitions a side, unpaired, 8 comparisons: the Hodges-Lehmann interval at 1 - 0.05/8
    # reaches 99.5%.
    assert (f"pg18 is 10.0% faster than pg17 at 2 clients: ratio to baseline 110.0% "
            f"(99.5% CI {low}{CI}{high}%).") in texts
    same = ("pg18 vs pg17: no difference within ±5% at 1, 4 clients (every interval within 96.4–104.3%, "
            "99.5% CI).")
    assert same in texts
    assert ("pg18 vs pg17: cannot tell at 1, 4 clients: the intervals span 96.8–105.3% at 90%, short of the "
            "99.38% this report's 8 comparisons need each (6 blocks reach it).") in texts
    assert ("pg18 vs pg17: cannot tell at 2 clients: no ratio, as a server has no successful trial there "
            "(see the warnings).") in texts
    assert "pg17 peaks at 4 clients (1500.0 TPS) and scales until 2 clients." in texts
    assert ("pg18: cannot tell where it peaks (as few as 0 successful trials at a client count; stating a "
            "peak needs 3 at each).") in texts
    links = dict((text, href) for href, text in dom.findings)
    assert links[same] == "#ratio--pgecons_2d_update--pg18--1"
    assert links["pg17 peaks at 4 clients (1500.0 TPS) and scales until 2 clients."] == \
        "#tps--pgecons_2d_update--pg17--4"


def test_findings_in_markdown(data: ReportData, tmp_path: Path) -> None:
    text = render_markdown(data, tmp_path).read_text(encoding="utf-8")
    assert "### Findings" in text
    assert ("- pg18 vs pg17: no difference within ±5% at 1, 4 clients (every interval within 96.4–104.3%, "
            "99.5% CI).") in text
    assert "- dev&lt;script&gt;&amp;\"x is 20.0% slower than pg17 at 1 client: ratio to baseline 80.0%" in text


# --- Japanese --------------------------------------------------------------------------

def test_japanese_report_uses_the_pgecons_vocabulary(ja: ReportData, tmp_path: Path) -> None:
    doc = render_html(ja)
    text = render_markdown(ja, tmp_path).read_text(encoding="utf-8")
    dom = _parse(doc)
    headings = re.findall(r"<h[23][^>]*>([^<]*)</h[23]>", doc)
    assert "参照系: pgecons-read" in headings and "更新系: pgecons-update" in headings
    assert "TPS の中央値と基準比" in headings
    assert "性能低下率: pg17 に対する pg18" in headings
    assert "## 参照系: pgecons-read" in text and "## 更新系: pgecons-update" in text
    for word in ("クライアント数", "基準比", "中央値", "性能低下率", "信頼区間", "差なし", "判定できません"):
        assert word in doc and word in text, word
    tps = [rows for c, rows in dom.tables if c == "data tps"][0]
    assert tps[0] == ["クライアント数", "TPS 中央値", "基準比", "検出可能な最小差"]
    texts = {t for _, t in dom.findings}
    assert ("pg18 と pg17: クライアント数 1、4 で差なし（±5% 以内。区間はすべて 96.4–104.3%、99.5% 信頼区間）。"
            in texts)
    assert any(t.startswith("pg18 は pg17 よりクライアント数 2 で 10.0% 高速です: 基準比 110.0%")
               for t in texts)
    assert "?: ブロック数がこの報告の比較に必要な水準に届かない点は、6 ブロックで届きます。" in doc
    # Nothing of the English interface is left over.
    for english in ("Findings", "Summary", "Workload:", "Ratio to baseline", "Median TPS",
                    "Trial status", "Warnings", " clients", "nothing recorded", "log scale",
                    "Machine fingerprint", "Generated by"):
        assert english not in doc, english
        assert english not in text, english


# --- CSV and JSON ----------------------------------------------------------------------

def _csv(path: Path) -> list[dict[str, str]]:
    with path.open(encoding="utf-8", newline="") as fh:
        return list(csv.DictReader(fh))


def test_csv_and_json_match_the_tables(data: ReportData, tmp_path: Path) -> None:
    written = write_report(data, tmp_path)
    names = sorted(k for k in written if k.startswith("csv:"))
    assert names == [f"csv:pgecons-read-{t}" for t in ("latency", "ratio", "summary", "tps")] + [
        "csv:pgecons-update-cpu", "csv:pgecons-update-cpu-pg17-pg18",
        "csv:pgecons-update-degradation-pg17-pg18", "csv:pgecons-update-devices"] + [
        f"csv:pgecons-update-{t}" for t in ("latency", "ratio", "summary", "tps", "waits")] + ["csv:trials"]
    assert written["json"] == tmp_path / "tables.json"
    dom = _parse(written["html"].read_text(encoding="utf-8"))
    checked = 0
    for workload in ("pgecons-read", "pgecons-update"):
        for row in _csv(tmp_path / "tables" / f"{workload}-tps.csv"):
            cell = dom.ids[cell_id("tps", workload, row["server"], int(row["clients"]))]["text"]
            if row["tps_median"]:
                med, low, high, level = (float(row[k]) for k in ("tps_median", "tps_ci_low", "tps_ci_high",
                                                                  "tps_ci_level_pct"))
                assert cell.startswith(f"{med:.1f} [{low:.1f}{CI}{high:.1f}, {level:g}%]")
            else:
                assert cell.startswith("—")
            checked += 1
        for row in _csv(tmp_path / "tables" / f"{workload}-ratio.csv"):
            cell = dom.ids[cell_id("ratio", workload, row["server"], int(row["clients"]))]["text"]
            if row["ratio_pct"]:
                r, low, high, level = (float(row[k]) for k in ("ratio_pct", "ratio_ci_low_pct",
                                                                "ratio_ci_high_pct", "ratio_ci_level_pct"))
                estimate = float(row["estimate_pct"])
                assert low <= estimate <= high and abs(estimate - r) < 1  # the ratio of medians stays
                mark = {"faster": "▲", "slower": "▼", "no-difference": "≈", "cannot-tell": "?"}[row["verdict"]]
                assert cell == f"{estimate:.1f}% [{low:.1f}{CI}{high:.1f}, {level:g}%] {mark}"
            else:
                assert cell == "— ?" and row["verdict"] == "cannot-tell" and row["verdict_reason"] == "no-ratio"
            checked += 1
        for row in _csv(tmp_path / "tables" / f"{workload}-latency.csv"):
            cell = dom.ids[cell_id("latency", workload, row["server"], int(row["clients"]))]["text"]
            median = row["latency_ms_median"]
            assert cell.startswith(f"{float(median):.3f}" if median else "—")
            checked += 1
    assert checked == 2 * 3 + 1 * 3 + 2 * 3 + 3 * 3 + 2 * 3 + 3 * 3  # tps, ratio, latency
    summary = _csv(tmp_path / "tables" / "pgecons-update-summary.csv")
    assert [(r["server"], r["peak_tps"], r["peak_clients"], r["knee_clients"], r["mean_tps_diff_pct"])
            for r in summary] == [("pg17", "1500.0", "4", "2", ""), ("pg18", "1470.0", "4", "2", "3.0"),
                                  (EVIL, "1400.0", "4", "4", "-16.3")]
    deg = _csv(tmp_path / "tables" / "pgecons-update-degradation-pg17-pg18.csv")
    assert [(r["clients"], r["tps_a"], r["tps_b"], r["degradation_pct"], r["tps_difference"])
            for r in deg] == [("1", "500.0", "505.0", "-1.0", "-5.0"),
                              ("2", "900.0", "990.0", "-10.0", "-90.0"),
                              ("4", "1500.0", "1470.0", "2.0", "30.0")]
    # tables.json holds the same rows, typed.
    doc = json.loads((tmp_path / "tables.json").read_text(encoding="utf-8"))
    csv_names = [k.removeprefix("csv:") for k in written if k.startswith("csv:")]
    assert [t["name"] for t in doc["tables"]] == csv_names
    for t in doc["tables"]:
        rows = _csv(tmp_path / t["file"])
        assert [list(r) for r in rows][:1] in ([t["columns"]], [])
        assert [{k: "" if v is None else str(v) for k, v in r.items()} for r in t["rows"]] == rows


def test_markdown_links_resolve(data: ReportData, tmp_path: Path) -> None:
    written = write_report(data, tmp_path)
    text = written["markdown"].read_text(encoding="utf-8")
    charts = re.findall(r"!\[[^\]]*\]\(([^)]+)\)", text)
    assert charts == [f"charts/pgecons-read-{k}.svg" for k in ("tps", "latency", "ratio")] + [
        f"charts/pgecons-update-{k}.svg" for k in ("tps", "latency", "ratio", "cpu", "waits")]
    tables = re.findall(r"\]\(((?:tables/|tables\.json)[^)]*)\)", text)
    # Under each table, its CSV files; at each section's end, all of its tables and tables.json.
    assert sorted({unquote(t) for t in tables}) == sorted(
        [str(p.relative_to(tmp_path)) for k, p in written.items() if k.startswith("csv:")] + ["tables.json"])
    assert tables.count("tables.json") == 2  # once a section
    for link in charts + tables:
        assert (tmp_path / unquote(link)).is_file(), link
    for link in charts:
        svg = (tmp_path / link).read_text(encoding="utf-8")
        assert svg.startswith('<svg xmlns="http://www.w3.org/2000/svg"') and "<script" not in svg
    # The first row of each workload's TPS table carries both medians and the ratio.
    section = text.split("## Workload: pgecons-read")[1].split("\n## ")[0]
    row = next(ln for ln in section.splitlines() if ln.startswith("| 1 |"))
    assert "1000.0" in row and "1050.0" in row and "105.0%" in row


def test_write_report_is_deterministic(tmp_path: Path) -> None:
    dir_a, dir_b = tmp_path / "a" / "nested", tmp_path / "b"
    first = write_report(report_data("ja"), dir_a)
    second = write_report(report_data("ja"), dir_b)
    assert first["markdown"] == dir_a / "report.md" and first["html"] == dir_a / "report.html"
    assert second["html"] == dir_b / "report.html"
    files_a = sorted(p.relative_to(dir_a) for p in dir_a.rglob("*") if p.is_file())
    files_b = sorted(p.relative_to(dir_b) for p in dir_b.rglob("*") if p.is_file())
    assert len(files_a) == 2 + 8 + 14 + 1 and files_a == files_b  # reports, charts, CSV, JSON
    for rel in files_a:
        assert (dir_a / rel).read_bytes() == (dir_b / rel).read_bytes(), rel


# --- Charts ----------------------------------------------------------------------------

def _figure(doc: str, workload_index: int, kind: str) -> str:
    section = doc.split('<section class="workload"')[workload_index]
    match = re.search(rf'<figure class="{kind}">(.*?)</figure>', section, re.DOTALL)
    assert match, kind
    return match[1]


def test_tps_and_latency_charts_have_bands_and_exact_hover(data: ReportData, doc: str) -> None:
    tps = _figure(doc, 2, "tps")
    bands = re.findall(r'<polygon points="[^"]*" fill="(#[0-9A-F]{6})" fill-opacity="0.15"', tps)
    assert bands == list(PALETTE[:3])  # one band per server, in its colour
    p = _point(_section(data, "pgecons-update"), "pg18", 4)
    assert f"<title>pg18 · 4 clients · {p.tps_median:.1f} TPS [1456.0–1484.0, 96.8%]</title>" in tps
    latency = _figure(doc, 2, "latency")
    assert len(re.findall(r'<polygon [^>]*fill-opacity="0.15"', latency)) == 3
    assert "<title>pg18 · 4 clients · 2.721 ms (range 2.667–2.803)</title>" in latency
    # pg18's read series breaks at 2 clients: lone points get a short bar, not a polygon.
    read = _figure(doc, 1, "tps")
    assert len(re.findall(r"<polygon [^>]*fill-opacity", read)) == 1
    assert len(re.findall(r'<rect [^>]*fill-opacity="0.18"', read)) == 2


def test_ratio_chart(data: ReportData, doc: str) -> None:
    svg = _figure(doc, 2, "ratio")
    assert "pgecons-update: ratio to pg17" in svg
    assert 'stroke-dasharray="6 4"' in svg and ">100% = pg17</text>" in svg
    whiskers = re.findall(r'<path d="M[^"]*" fill="none" stroke="(#[0-9A-F]{6})" stroke-width="1.5"', svg)
    assert whiskers == [PALETTE[1]] * 3 + [PALETTE[2]] * 3  # the servers keep their colours
    p = _point(_section(data, "pgecons-update"), "pg18", 2)
    assert (f"<title>pg18 · 2 clients · {_ratio_text(p)} faster: the 99.5% interval {_ci(p)}% (Hodges–Lehmann "
            "interval of the two sets of repetitions) lies wholly above 100%</title>") in svg
    assert "pg17 / pg17" not in svg  # no line for the baseline itself
    ticks = [float(t) for t in re.findall(r'text-anchor="end" font-size="11" fill="#555555">([\d.]+)<', svg)]
    assert ticks[0] < 80 and ticks[-1] > 110 and ticks[0] > 0  # spans the data, not from 0


def test_charts_are_deterministic_and_in_both_outputs(data: ReportData, doc: str, tmp_path: Path) -> None:
    render_markdown(data, tmp_path)
    for i, workload in ((1, "pgecons-read"), (2, "pgecons-update")):
        for kind in ("tps", "latency", "ratio"):
            svg = (tmp_path / "charts" / f"{workload}-{kind}.svg").read_text(encoding="utf-8")
            assert svg == _figure(doc, i, kind) + "\n"
    assert render_html(report_data("en")) == doc


def test_svg_is_deterministic_and_none_breaks_the_line() -> None:
    whole: list[tuple[float, float | None]] = [(1, 10.0), (2, 20.0), (4, 30.0), (8, 35.0), (16, 40.0)]
    broken: list[tuple[float, float | None]] = [(1, 11.0), (2, 21.0), (4, None), (8, 36.0), (16, 41.0)]
    series = [("whole", whole), ("broken", broken)]
    svg = line_chart("TPS", "clients", "TPS", series, log_x=True, x_unit="clients", y_unit="TPS")
    again = line_chart("TPS", "clients", "TPS", series, log_x=True, x_unit="clients", y_unit="TPS")
    assert svg == again
    d_whole = re.findall(rf'<path d="([^"]*)" fill="none" stroke="{PALETTE[0]}"', svg)[0]
    d_broken = re.findall(rf'<path d="([^"]*)" fill="none" stroke="{PALETTE[1]}"', svg)[0]
    assert d_whole.count("M") == 1 and d_whole.count("L") == 4
    assert d_broken.count("M") == 2 and d_broken.count("L") == 2
    assert svg.count("<title>broken · ") == 4  # no marker for the missing point
    assert "<title>broken · 8 clients · 36.0 TPS</title>" in svg
    assert "clients (log scale)" in svg


def test_svg_axes() -> None:
    assert nice_ticks(1234.5) == [0, 500, 1000, 1500]
    assert nice_ticks(0.37) == [0, 0.1, 0.2, 0.3, 0.4]
    assert nice_ticks(0) == [0, 0.2, 0.4, 0.6, 0.8, 1.0]
    assert nice_range(96.2, 105.3) == [96, 98, 100, 102, 104, 106]
    assert nice_range(100, 100) == [99, 99.5, 100, 100.5, 101]
    log = line_chart("t", "x", "y", [("s", [(1, 1.0), (2, 2.0), (4, 3.0)])], log_x=True)
    xs = [float(x) for x in re.findall(r'<circle cx="([\d.]+)"', log)[1:]]  # [0] is the legend
    assert xs[1] - xs[0] == pytest.approx(xs[2] - xs[1], abs=0.1)  # evenly spaced on log2
    wide = WorkloadSection("wide", "", "a", (1, 16, 192), (ServerSeries("a", "17", tuple(
        Point(c, float(c), 1.0, (float(c),), 1, 0, 1.0) for c in (1, 16, 192)), None, None),))
    doc = render_html(replace(report_data("ja"), sections=(wide,)))
    assert doc.count("クライアント数（対数目盛）") == 2  # TPS and latency; no ratio with one server
    assert "log scale" not in render_html(report_data("en"))


# --- The per-second series viewer -------------------------------------------------------

def test_series_viewer(data: ReportData, doc: str, dom: _Dom) -> None:
    # The points (workload · clients); the script fills the server and trial lists.
    assert dom.options == ["pgecons-read · 1 client", "pgecons-update · 2 clients",
                           "pgecons-update · 4 clients"]
    modes = re.findall(r'<input type="radio" name="series-mode" value="(\w+)"', doc)
    assert modes == ["trial", "server", "all"]
    assert dom.ids["series-mode"]["text"] == ("Draw one trial every repetition of one server "
                                              "every server and repetition")
    assert '<div id="series-viewer" class="viewer" hidden>' in doc  # until the script runs
    raw = re.search(r'<script type="application/json" id="series-data">(.*?)</script>', doc, re.DOTALL)
    assert raw and "<" not in raw[1] and ">" not in raw[1]  # nothing in it can close the element
    model = json.loads(raw[1])
    trials = model["trials"]
    assert [t["tps"] for t in trials] == [list(s.tps) for s in SERIES]
    assert [t["steadyFrom"] for t in trials] == [2, 0, 0]
    assert trials[0]["latency"][6] is None
    assert "stalls: 1" in trials[1]["info"] and "-3.2% per minute" in trials[1]["info"]
    assert [t["legend"] for t in trials] == ["pg17 · repetition 1", "pg18 · repetition 2",
                                             f"{EVIL} · repetition 1 (failed)"]
    assert [t["choice"] for t in trials] == ["repetition 1 · ok", "repetition 2 · ok", "repetition 1 · failed"]
    assert [(t["point"], t["server"], t["ok"]) for t in trials] == [(0, 0, True), (2, 0, True), (1, 0, False)]
    # A server keeps the colour it has in its workload's charts (pg18 is second there).
    assert model["points"][2]["servers"] == [{"name": "pg18", "colour": PALETTE[1], "trials": [1]}]
    assert model["points"][1]["servers"][0]["colour"] == PALETTE[2]
    assert "window.addEventListener('error'" in doc
    # Without JavaScript, the table still lists every trial.
    (table,) = [rows for c, rows in dom.tables if c == "trials"]
    assert [r[0] for r in table[1:]] == ["t-read-1", "t-update-4", "t-evil"]
    assert table[2] == ["t-update-4", "pg18", "pgecons-update", "4", "2", "ok", "—", "6", "0", "1",
                        "-3.2"]  # no TPS figure in the fixture's series
    # Each trial's id leads to it in the viewer (the script selects it).
    assert '<a href="#series" data-series="1">t-update-4</a>' in doc
    assert 'querySelectorAll("a[data-series]")' in doc
    ja = json.loads(payload(viewer_model(report_data("ja"))))
    assert ja["labels"]["rampup"] == "ランプアップ"
    assert [t["legend"] for t in ja["trials"]][:2] == ["pg17 · 1 回目", "pg18 · 2 回目"]
    without = render_html(replace(data, series=()))
    assert 'id="series' not in without and "<script>" in without  # the error hook stays
    assert "var uPlot" not in without and ".u-cursor-pt" not in without  # nor uPlot and its CSS


def test_series_viewer_inlines_uplot_once(doc: str) -> None:
    """uPlot (vendored) and its stylesheet are in the page, once, with its licence; the
    script cannot end its element early."""
    assert doc.count("var uPlot=function()") == 1
    assert doc.count(".u-cursor-pt {") == 1 and doc.index(".u-cursor-pt {") < doc.index("</head>")
    script = doc.split('<script type="application/json" id="series-data">')[1].split("<script>\n")[1]
    assert script.startswith("/*! uPlot v1.6.32, github.com/leeoniya/uPlot\n\nThe MIT License (MIT)")
    assert "Copyright (c) 2022 Leon Sorokin" in script
    assert "</" not in script.split("</script>")[0] and "<!--" not in script
    assert script.index("var uPlot=") < script.index("teitenSeries")


def test_legend_labels_never_repeat() -> None:
    """A repetition measured twice (two trials of one point with one server and repetition)
    is told apart by its trial id, in the legend and in the list of trials."""
    one, two = SERIES[1], replace(SERIES[1], trial_id="t-update-4b")
    other = replace(SERIES[1], trial_id="t-other", clients=1)
    assert legend_labels([one, two, other], "en") == [
        "pg18 · repetition 2 · t-update-4", "pg18 · repetition 2 · t-update-4b", "pg18 · repetition 2"]
    assert choice_labels([one, two, other], "ja") == [
        "2 回目 · 成功 · t-update-4", "2 回目 · 成功 · t-update-4b", "2 回目 · 成功"]


# --- The answer, first -----------------------------------------------------------------

def test_the_report_opens_with_the_answer(data: ReportData, doc: str, tmp_path: Path) -> None:
    """One line per workload and server against the baseline, before the differences, the
    warnings and the tables; its numbers are the ratio cells'; no colour where it cannot tell."""
    p = _point(_section(data, "pgecons-update"), "pg18", 2)
    assert p.ratio_ci is not None
    low, high = (f"{v * 100:.1f}" for v in p.ratio_ci)
    read = next(line for line in answer_lines(data) if line.startswith("pgecons-read: pg18"))
    update = next(line for line in answer_lines(data) if line.startswith("pgecons-update: pg18"))
    assert read.startswith("pgecons-read: pg18 against pg17: cannot tell at 1, 4 clients: the "
                           "intervals span ")
    assert update.startswith(f"pgecons-update: pg18 against pg17: 10.0% faster at 2 clients (ratio to "
                             f"baseline 110.0%, 99.5% CI {low}{CI}{high}%); ")
    assert "; no difference within ±5% at 1, 4 clients (every interval within " in update
    text = render_markdown(data, tmp_path).read_text(encoding="utf-8")
    assert text.index("## The answer") < text.index("## Warnings") < text.index("## Study") \
        < text.index("## Workload")
    assert f"- {update}" in text
    assert doc.index('<h2 id="answer">') < doc.index("<h2>Warnings</h2>")
    # Colours follow the verdict: the untestable read ratios carry none.
    assert '<td id="ratio--pgecons_2d_read--pg18--1" class="marked" title=' in doc
    assert '<td id="ratio--pgecons_2d_update--pg18--2" class="better sig marked" title=' in doc


def test_a_compare_reports_study_table_gives_each_studys_own_values() -> None:
    """Repetitions (one of them auto), order and seed that differ are given per study, by its
    label; what they share is given once."""
    from teiten.analysis.model import StudyParameters
    from teiten.analysis.stopping import AutoSummary
    from teiten.report.tables import study_rows

    auto = AutoSummary("width", target_pct=5, margin_pct=5, floor=8, ceiling=12, per_point=False)
    data = replace(report_data(), compared=(
        StudyParameters("old", 3.0, 3, 1, "random", 1),
        StudyParameters("new", 3.0, 9, 1, "random", 2, auto)))
    rows = dict(study_rows(data))
    assert rows["Repetitions"] == ("3 (old), 9 blocks (repetitions: auto, floor 8, ceiling 12): "
                                   "every ratio known within ±5% (new)")
    assert rows["Seed"] == "1 (old), 2 (new)"
    assert rows["Order"] == data.order and rows["Scale factor"] == str(data.scale)
    assert rows["Duration per trial"] == "3 s"
