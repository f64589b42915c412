"""Tests of the Markdown and HTML reports and their SVG charts, on a hand-built ReportData.

The data: two workloads (pgecons-read, pgecons-update) on pg17 (the baseline) and pg18 at
1, 2 and 4 clients; pg18 has no successful repetition at 2 clients of pgecons-read (3
failed). pgecons-update also runs a third server whose user-chosen name carries markup,
to prove every renderer escapes it.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote

import pytest

from teiten.report import write_report
from teiten.report.html import render_html
from teiten.report.markdown import render_markdown
from teiten.report.model import (
    Point,
    ReportData,
    ServerInfo,
    ServerSeries,
    WorkloadSection,
)
from teiten.report.svg import PALETTE, line_chart, nice_ticks, workload_charts

EVIL = 'dev<script>&"x'
CLIENTS = (1, 2, 4)

# server -> workload -> [(tps, latency, n_failed)] per client count
MEASURED: dict[str, dict[str, list[tuple[float | None, float | None, int]]]] = {
    "pg17": {
        "pgecons-read": [(1000.0, 1.0, 0), (1800.0, 1.111, 0), (3200.0, 1.25, 0)],
        "pgecons-update": [(500.0, 2.0, 0), (900.0, 2.222, 0), (1500.0, 2.667, 1)],
    },
    "pg18": {
        "pgecons-read": [(1050.0, 0.952, 0), (None, None, 3), (3100.0, 1.29, 0)],
        "pgecons-update": [(505.0, 1.98, 0), (990.0, 2.02, 0), (1470.0, 2.721, 0)],
    },
    EVIL: {
        "pgecons-update": [(400.0, 2.5, 0), (700.0, 2.857, 0), (1400.0, 2.857, 0)],
    },
}


def _series(name: str, workload: str) -> ServerSeries:
    base = MEASURED["pg17"][workload]
    points = []
    for clients, (tps, lat, failed), (base_tps, _, _) in zip(
        CLIENTS, MEASURED[name][workload], base, strict=True
    ):
        ratio = None if tps is None or base_tps is None else tps / base_tps
        values = () if tps is None else (tps - 1.0, tps, tps + 2.0)
        points.append(Point(clients, tps, lat, values, 3 - failed, failed, ratio))
    ratios = [p.ratio for p in points if p.ratio is not None]
    lat_ratios = [
        p[1] / b[1]
        for p, b in zip(MEASURED[name][workload], base, strict=True)
        if p[1] is not None and b[1] is not None
    ]
    is_base = name == "pg17"
    return ServerSeries(
        server=name,
        version="17.5" if is_base else "18.1",
        points=tuple(points),
        mean_tps_diff_pct=None if is_base else sum(r - 1 for r in ratios) / len(ratios) * 100,
        mean_latency_diff_pct=None
        if is_base
        else sum(r - 1 for r in lat_ratios) / len(lat_ratios) * 100,
    )


def _data() -> ReportData:
    sections = tuple(
        WorkloadSection(
            workload=w,
            description=f"{w} from the PGECons WG1 report",
            baseline="pg17",
            clients=CLIENTS,
            servers=tuple(_series(s, w) for s in MEASURED if w in MEASURED[s]),
        )
        for w in ("pgecons-read", "pgecons-update")
    )
    servers = tuple(
        ServerInfo(
            name=s,
            kind="local",
            version="17.5" if s == "pg17" else "18.1",
            origin="pgdg apt",
            bindir=f"/usr/lib/postgresql/{s}/bin",
            data_checksums=s != "pg17",
            settings={"shared_buffers": "128MB", "work_mem": "1GB"},
        )
        for s in MEASURED
    )
    return ReportData(
        title="Fixed-point observation <test>",
        study="s1-read",
        description="PG 17 vs 18",
        generated_at="2026-05-09T12:00:00+00:00",
        store_path="/tmp/store.sqlite",
        duration_s=3.0,
        repetitions=3,
        scale=1,
        order="random",
        seed=42,
        fingerprint={"cpu": "Test CPU", "cores": 8, "disks": [{"dev": "nvme0n1", "rot": False}]},
        servers=servers,
        sections=sections,
        status_counts={"planned": 0, "running": 0, "ok": 52, "failed": 4, "skipped": 0},
        warnings=("pg18 at 2 clients (pgecons-read): 3 of 3 repetitions failed", "<b>x</b>"),
    )


class _Tables(HTMLParser):
    """Checks that elements nest and close, and collects the text of every table's rows."""

    VOID = {"meta", "br", "hr", "img", "input", "link", "col", "wbr", "source"}

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.stack: list[str] = []
        self.errors: list[str] = []
        self.tables: list[tuple[str, list[list[str]]]] = []  # (class, rows of cell texts)
        self._cell: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in self.VOID:
            return
        self.stack.append(tag)
        if tag == "table":
            self.tables.append((dict(attrs).get("class") or "", []))
        elif tag == "tr":
            self.tables[-1][1].append([])
        elif tag in ("td", "th"):
            self._cell = []

    def handle_endtag(self, tag: str) -> None:
        if tag in self.VOID:
            return
        if not self.stack or self.stack[-1] != tag:
            self.errors.append(f"</{tag}> closes {self.stack[-1:]}")
            return
        self.stack.pop()
        if tag in ("td", "th") and self._cell is not None:
            self.tables[-1][1][-1].append("".join(self._cell).strip())
            self._cell = None

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)


def _parse(doc: str) -> _Tables:
    parser = _Tables()
    parser.feed(doc)
    parser.close()
    return parser


def _expected_rows(section: WorkloadSection, metric: str) -> list[list[str]]:
    """Table rows computed straight from the data, as the report should print them."""
    base = section.servers[0]
    rows = []
    for i, clients in enumerate(section.clients):
        row = [str(clients)]
        for s in section.servers:
            p = s.points[i]
            value = p.tps_median if metric == "tps" else p.latency_ms_median
            text = "—" if value is None else f"{value:.1f}" if metric == "tps" else f"{value:.3f}"
            row.append(f"{text} ({p.n_failed} failed)" if p.n_failed else text)
        for s in section.servers[1:]:
            p, b = s.points[i], base.points[i]
            value = p.tps_median if metric == "tps" else p.latency_ms_median
            base_value = b.tps_median if metric == "tps" else b.latency_ms_median
            ok = value is not None and base_value is not None
            row.append(f"{value / base_value * 100:.1f}%" if ok else "—")  # type: ignore[operator]
        rows.append(row)
    return rows


@pytest.fixture(scope="module")
def data() -> ReportData:
    return _data()


@pytest.fixture(scope="module")
def doc(data: ReportData) -> str:
    return render_html(data)


def test_html_is_well_formed(doc: str) -> None:
    parser = _parse(doc)
    assert parser.errors == []
    assert parser.stack == []
    assert doc.startswith("<!DOCTYPE html>")
    assert '<meta charset="utf-8">' in doc
    for table_class, rows in parser.tables:
        if "metric" in table_class:
            widths = {len(r) for r in rows[2:]}  # two header rows, then the body
            assert len(widths) == 1, table_class


def test_html_ratio_tables_match_the_data(data: ReportData, doc: str) -> None:
    metric_tables = [(c, rows) for c, rows in _parse(doc).tables if "metric" in c]
    expected = [(s, m) for s in data.sections for m in ("tps", "latency")]
    assert [c for c, _ in metric_tables] == [f"metric {m}" for _, m in expected]
    for (_, rows), (section, metric) in zip(metric_tables, expected, strict=True):
        assert rows[2:] == _expected_rows(section, metric)
    read_tps = metric_tables[0][1]
    assert read_tps[2] == ["1", "1000.0", "1050.0", "105.0%"]
    assert read_tps[3] == ["2", "1800.0", "— (3 failed)", "—"]
    assert read_tps[4] == ["4", "3200.0", "3100.0", "96.9%"]


def test_html_ratio_cells_are_coloured(doc: str) -> None:
    assert '<td class="better">105.0%</td>' in doc  # TPS up 5%
    assert '<td class="worse">96.9%</td>' in doc  # TPS down 3.1%
    assert '<td class="same">101.0%</td>' in doc  # pgecons-update 505/500: within ±1%
    assert '<td class="better">95.2%</td>' in doc  # latency down: better
    assert '<td class="worse">103.2%</td>' in doc  # latency up: worse
    assert '<td class="missing">—</td>' in doc


def test_html_content(doc: str) -> None:
    for heading in ("Ratio to baseline (前バージョン比)", "Clients (クライアント数)",
                    "Median TPS (中央値)"):
        assert heading in doc
    assert doc.count("<svg") == 4
    assert "pg18 · 4 clients · 3100.0 TPS" in doc
    assert "pg18 · 1 clients · 0.952 ms" in doc
    assert "Mean TPS difference vs pg17: pg18 +0.9%" in doc
    assert "Mean latency difference vs pg17: pg18 -0.8%" in doc
    assert "nvme0n1" in doc and "shared_buffers" in doc and "pgdg apt" in doc
    assert "3 of 3 repetitions failed" in doc


def test_html_has_no_external_resources(doc: str) -> None:
    urls = set(re.findall(r"https?://[^\s\"'<>)]*", doc))
    assert urls == {"http://www.w3.org/2000/svg"}
    assert not re.search(r"<(script|link|img|iframe)\b", doc, re.IGNORECASE)
    assert "@import" not in doc and "url(" not in doc


def test_html_escapes_user_text(doc: str) -> None:
    assert "<script" not in doc
    assert "dev&lt;script&gt;&amp;&quot;x" in doc
    assert "<b>x</b>" not in doc and "&lt;b&gt;x&lt;/b&gt;" in doc
    assert "Fixed-point observation &lt;test&gt;" in doc


def test_markdown(data: ReportData, tmp_path: Path) -> None:
    path = render_markdown(data, tmp_path)
    text = path.read_text(encoding="utf-8")
    assert path == tmp_path / "report.md"
    for heading in ("Ratio to baseline (前バージョン比)", "Clients (クライアント数)",
                    "Median TPS (中央値)"):
        assert heading in text
    for section in data.sections:
        for metric in ("tps", "latency"):
            for row in _expected_rows(section, metric):
                assert "| " + " | ".join(row) + " |" in text
    assert "| 2 | 1800.0 | — (3 failed) | — |" in text
    assert "Mean TPS difference vs pg17: pg18 +0.9%" in text
    assert "- pg18 at 2 clients (pgecons-read): 3 of 3 repetitions failed" in text
    assert '| disks | \\[{"dev":"nvme0n1","rot":false}\\] |' in text
    # Escaped for Markdown: no raw markup from user strings.
    assert "<script" not in text and "<b>" not in text
    assert "dev&lt;script&gt;&amp;\"x" in text


def test_markdown_chart_links_exist(data: ReportData, tmp_path: Path) -> None:
    text = render_markdown(data, tmp_path).read_text(encoding="utf-8")
    links = re.findall(r"!\[[^\]]*\]\(([^)]+)\)", text)
    assert links == [
        "charts/pgecons-read-tps.svg",
        "charts/pgecons-read-latency.svg",
        "charts/pgecons-update-tps.svg",
        "charts/pgecons-update-latency.svg",
    ]
    for link in links:
        chart = tmp_path / unquote(link)
        assert chart.is_file()
        svg = chart.read_text(encoding="utf-8")
        assert svg.startswith('<svg xmlns="http://www.w3.org/2000/svg"')
        assert "<script" not in svg


def test_write_report_is_deterministic(data: ReportData, tmp_path: Path) -> None:
    dir_a, dir_b = tmp_path / "a" / "nested", tmp_path / "b"
    first = write_report(data, dir_a)
    second = write_report(data, dir_b)
    assert first == {"markdown": dir_a / "report.md", "html": dir_a / "report.html"}
    assert second["html"] == dir_b / "report.html"
    files_a = sorted(p.relative_to(dir_a) for p in dir_a.rglob("*") if p.is_file())
    files_b = sorted(p.relative_to(dir_b) for p in dir_b.rglob("*") if p.is_file())
    assert len(files_a) == 6 and files_a == files_b
    for rel in files_a:
        assert (dir_a / rel).read_bytes() == (dir_b / rel).read_bytes()


def _series_paths(svg: str, colour: str) -> list[str]:
    return re.findall(rf'<path d="([^"]*)" fill="none" stroke="{colour}"', svg)


def test_svg_is_deterministic_and_none_breaks_the_line() -> None:
    whole: list[tuple[float, float | None]] = [(1, 10.0), (2, 20.0), (4, 30.0), (8, 35.0),
                                               (16, 40.0)]
    broken: list[tuple[float, float | None]] = [(1, 11.0), (2, 21.0), (4, None), (8, 36.0),
                                                (16, 41.0)]
    series = [("whole", whole), ("broken", broken)]
    svg = line_chart("TPS", "clients", "TPS", series, log_x=True, x_unit="clients", y_unit="TPS")
    again = line_chart("TPS", "clients", "TPS", series, log_x=True, x_unit="clients", y_unit="TPS")
    assert svg == again
    (d_whole,) = _series_paths(svg, PALETTE[0])
    (d_broken,) = _series_paths(svg, PALETTE[1])
    assert d_whole.count("M") == 1 and d_whole.count("L") == 4
    assert d_broken.count("M") == 2 and d_broken.count("L") == 2
    assert svg.count("<title>broken · ") == 4  # no marker for the missing point
    assert "<title>broken · 8 clients · 36.0 TPS</title>" in svg


def test_svg_axes() -> None:
    assert nice_ticks(1234.5) == [0, 500, 1000, 1500]
    assert nice_ticks(0.37) == [0, 0.1, 0.2, 0.3, 0.4]
    assert nice_ticks(0) == [0, 0.2, 0.4, 0.6, 0.8, 1.0]
    log = line_chart("t", "x", "y", [("s", [(1, 1.0), (2, 2.0), (4, 3.0)])], log_x=True)
    xs = [float(x) for x in re.findall(r'<circle cx="([\d.]+)"', log)[1:]]  # [0] is the legend
    assert xs[1] - xs[0] == pytest.approx(xs[2] - xs[1], abs=0.1)  # evenly spaced on log2
    section = WorkloadSection(
        workload="wide",
        description="",
        baseline="a",
        clients=(1, 16, 192),
        servers=(ServerSeries("a", "17", tuple(
            Point(c, float(c), 1.0, (float(c),), 1, 0, 1.0) for c in (1, 16, 192)
        ), None, None),),
    )
    tps_svg, latency_svg = workload_charts(section)
    assert "clients (log scale)" in tps_svg and "clients (log scale)" in latency_svg
    narrow = _data().sections[0]
    assert "log scale" not in workload_charts(narrow)[0]
