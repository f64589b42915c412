"""Tests of the Markdown and HTML reports and their SVG charts, on a hand-built ReportData.

The data: two workloads (pgecons-read, pgecons-update) on pg17 (the baseline) and pg18 at
1, 2 and 4 clients; pg18 has no successful repetition at 2 clients of pgecons-read (3
failed). pgecons-update also runs a third server whose user-chosen name carries markup,
to prove every renderer escapes it.

pgecons-update also carries monitor data (activity) for pg17 at 1, 2 and 4 clients and
for pg18 at 1 and 4 (none at 2), and flame graphs for pg18 and the third server;
pgecons-read has none, so its report shows no activity subsection.
"""

from __future__ import annotations

import re
from dataclasses import replace
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote

import pytest

from teiten.report import write_report
from teiten.report.activity import (
    ACTIVITY_HEADING,
    CPU_EVENT_COLOUR,
    CPU_HEADING,
    OTHER_COLOUR,
    WAITS_HEADING,
    WINDOW_NOTE,
    cpu_bars,
    wait_bars,
    wait_colours,
)
from teiten.report.html import render_html
from teiten.report.markdown import render_markdown
from teiten.report.model import (
    Activity,
    Notice,
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

CPU_KEYS = ("user", "sys", "iowait", "steal", "irq", "idle")

# server -> [(clients, cpu parts in CPU_KEYS order, waits, (data, wal) %util, checkpoints,
# autovacuum)], for pgecons-update only. pg17's waits at 2 and 4 clients sum to 0.95 and
# 0.9 (the rest is "other"); its CPU at 4 clients sums to 99.9, not 100.
ACTIVITY: dict[str, list[tuple[int, tuple[float, ...], dict[str, float], tuple[float, float],
                               int, int]]] = {
    "pg17": [
        (1, (40.0, 10.0, 5.0, 0.0, 1.0, 44.0),
         {"CPU:CPU": 0.5, "IO:WalSync": 0.3, "Lock:transactionid": 0.2}, (12.5, 30.4), 0, 1),
        (2, (55.5, 14.25, 7.75, 0.5, 2.0, 20.0),
         {"IO:WalSync": 0.45, "CPU:CPU": 0.35, "LWLock:WALWrite": 0.1, "Lock:transactionid": 0.05},
         (20.0, 41.0), 0, 0),
        (4, (61.3, 20.2, 9.9, 0.3, 1.4, 6.8),
         {"Lock:transactionid": 0.4, "CPU:CPU": 0.3, "IO:WalSync": 0.2}, (33.3, 60.1), 0, 0),
    ],
    "pg18": [
        (1, (41.5, 9.5, 4.0, 0.0, 1.0, 44.0), {"CPU:CPU": 0.6, "IO:WalSync": 0.4},
         (11.0, 29.9), 0, 0),
        (4, (64.0, 18.0, 8.0, 0.0, 2.0, 8.0),
         {"CPU:CPU": 0.45, "Lock:transactionid": 0.3, "IO:WalSync": 0.25}, (70.0, 85.5), 1, 0),
    ],
}
PROFILES = {
    "pg18": ((4, "profiles/pgecons-update-pg18-4.svg"),),
    EVIL: ((1, 'javascript:alert("x")'),),
}


def _activity(name: str, workload: str) -> tuple[Activity, ...]:
    if workload != "pgecons-update":
        return ()
    return tuple(
        Activity(clients, dict(zip(CPU_KEYS, cpu, strict=True)), waits,
                 {"data": util[0], "wal": util[1]}, checkpoints, autovacuum)
        for clients, cpu, waits, util, checkpoints, autovacuum in ACTIVITY.get(name, [])
    )


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
        activity=_activity(name, workload),
        profiles=PROFILES.get(name, ()) if workload == "pgecons-update" else (),
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
        warnings=(Notice("trial-failed", {"trial": "t1", "server": "pg18", "workload":
                                          "pgecons-read", "clients": 2, "repetition": 3,
                                          "error": "3 of 3 repetitions failed"}),
                  Notice("trial-skipped", {"trial": "t2", "server": "<b>x</b>", "workload": "w",
                                           "clients": 1, "repetition": 1, "error": "e"})),
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
    assert doc.count("<svg") == 6  # TPS and latency per workload, CPU and waits for one
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
    assert ("- Trial t1 (pg18, pgecons-read, 2 clients, repetition 3) failed: 3 of 3 "
            "repetitions failed") in text
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
        "charts/pgecons-update-cpu.svg",
        "charts/pgecons-update-waits.svg",
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
    assert len(files_a) == 8 and files_a == files_b
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


# --- System and database activity -------------------------------------------------------

SEGMENT = re.compile(
    r'<rect x="([\d.]+)" y="[\d.]+" width="([\d.]+)" height="[\d.]+" fill="(#[0-9A-F]{6})"'
    r"[^>]*><title>([^<]*)</title></rect>"
)


def _segments(svg: str) -> list[tuple[float, float, str, str]]:
    """(x, width, fill, hover text) of every bar segment (not the empty "nothing recorded")."""
    return [(float(x), float(w), fill, title) for x, w, fill, title in SEGMENT.findall(svg)
            if not title.endswith("nothing recorded")]


def _who(server: str, clients: int) -> str:
    return f"{server} · {clients} client{'' if clients == 1 else 's'}"


def _axis(svg: str) -> tuple[float, float]:
    """The x of the 0% and 100% ticks: where every bar starts and ends."""
    x0 = re.search(r'<text x="([\d.]+)"[^>]*>0%</text>', svg)
    x1 = re.search(r'<text x="([\d.]+)"[^>]*>100%</text>', svg)
    assert x0 and x1
    return float(x0[1]), float(x1[1])


@pytest.fixture(scope="module")
def update(data: ReportData) -> WorkloadSection:
    return data.sections[1]


def test_activity_charts_in_both_outputs(data: ReportData, update: WorkloadSection, doc: str,
                                         tmp_path: Path) -> None:
    text = render_markdown(data, tmp_path).read_text(encoding="utf-8")
    assert f"### {ACTIVITY_HEADING}" in text
    assert f"![pgecons-update: {CPU_HEADING}](charts/pgecons-update-cpu.svg)" in text
    assert f"![pgecons-update: {WAITS_HEADING}](charts/pgecons-update-waits.svg)" in text
    cpu_file = (tmp_path / "charts" / "pgecons-update-cpu.svg").read_text(encoding="utf-8")
    waits_file = (tmp_path / "charts" / "pgecons-update-waits.svg").read_text(encoding="utf-8")
    assert cpu_file == cpu_bars(update) + "\n"
    assert waits_file == wait_bars(update) + "\n"
    # Inlined in the HTML, byte for byte.
    assert f"<figure>{cpu_bars(update)}</figure>" in doc
    assert f"<figure>{wait_bars(update)}</figure>" in doc
    assert "Device utilisation (%util)" in doc and "#### Device utilisation (%util)" in text


def test_cpu_segment_titles_carry_the_exact_percentages(update: WorkloadSection) -> None:
    titles = {title for _, _, _, title in _segments(cpu_bars(update))}
    expected = {
        f"{_who(server, clients)} · {part} {value:.1f}%"
        for server, rows in ACTIVITY.items()
        for clients, cpu, *_ in rows
        for part, value in zip(CPU_KEYS, cpu, strict=True)
        if value > 0
    }
    assert titles == expected
    assert "pg17 · 2 clients · sys 14.2%" in titles  # 14.25 as printed everywhere
    assert "pg17 · 4 clients · idle 6.8%" in titles
    # No zero-width segments: steal 0.0 draws nothing.
    assert not any("steal 0.0%" in t for t in titles)


def test_cpu_segments_fill_each_bar(update: WorkloadSection) -> None:
    svg = cpu_bars(update)
    left, right = _axis(svg)
    bars: dict[str, list[tuple[float, float]]] = {}
    for x, width, _, title in _segments(svg):
        bars.setdefault(title.rsplit(" · ", 1)[0], []).append((x, width))
    assert sorted(bars) == sorted(
        _who(server, row[0]) for server, rows in ACTIVITY.items() for row in rows
    )
    for who, segments in bars.items():
        # Contiguous from the 0% tick to the 100% tick, even where the parts sum to 99.9.
        assert segments[0][0] == pytest.approx(left, abs=0.05), who
        for (x, w), (next_x, _) in zip(segments, segments[1:], strict=False):
            assert x + w == pytest.approx(next_x, abs=0.05), who
        assert sum(w for _, w in segments) == pytest.approx(right - left, abs=0.15), who
    # The CPU colours are fixed, idle a light grey.
    fills = {title.rsplit(" · ", 1)[1].split()[0]: fill for _, _, fill, title in _segments(svg)}
    assert fills["user"] == "#0072B2" and fills["idle"] == "#E3E3E3"
    for part in CPU_KEYS:
        assert f">{part}</text>" in svg  # the legend lists every part


def test_missing_activity_draws_an_empty_bar(update: WorkloadSection) -> None:
    for svg in (cpu_bars(update), wait_bars(update)):
        assert "<title>pg18 · 2 clients · nothing recorded</title>" in svg
        assert EVIL not in svg and "dev&lt;script" not in svg  # no activity at all: no bars
        assert svg.count(" · nothing recorded</title></rect>") == 1


def test_wait_segments_and_other(update: WorkloadSection) -> None:
    svg = wait_bars(update)
    titles = [title for _, _, _, title in _segments(svg)]
    for server, rows in ACTIVITY.items():
        for clients, _, waits, *_ in rows:
            for event, share in waits.items():
                assert f"{_who(server, clients)} · {event} {share * 100:.1f}%" in titles
    others = [t for t in titles if " · other " in t]
    assert others == [
        "pg17 · 2 clients · other 5.0% (events outside the top list)",
        "pg17 · 4 clients · other 10.0% (events outside the top list)",
    ]
    assert ">other</text>" in svg  # in the legend
    # Every bar keeps one order: CPU:CPU first, then by total share.
    pg17_4 = [t.split(" · ")[2].split()[0] for t in titles if t.startswith("pg17 · 4 clients")]
    assert pg17_4 == ["CPU:CPU", "IO:WalSync", "Lock:transactionid", "other"]


def test_wait_colours_are_consistent(update: WorkloadSection) -> None:
    svg = wait_bars(update)
    colour_of: dict[str, set[str]] = {}
    for _, _, fill, title in _segments(svg):
        colour_of.setdefault(title.split(" · ")[2].split()[0], set()).add(fill)
    assert all(len(fills) == 1 for fills in colour_of.values()), colour_of
    one = {event: fills.pop() for event, fills in colour_of.items()}
    assert len(set(one.values())) == len(one)  # and distinct between events
    assert one["CPU:CPU"] == CPU_EVENT_COLOUR and one["other"] == OTHER_COLOUR
    assert one == {**wait_colours(update), "other": OTHER_COLOUR}
    # IO:WalSync has the largest total share after CPU:CPU, so the first palette colour.
    assert one["IO:WalSync"] == "#D55E00" and one["LWLock:WALWrite"] != one["IO:WalSync"]
    # CPU:CPU keeps its colour whatever its rank.
    lock_heavy = WorkloadSection("w", "", "a", (1,), (ServerSeries(
        "a", "17", (), None, None,
        activity=(Activity(1, {"user": 100.0}, {"Lock:tuple": 0.9, "CPU:CPU": 0.1}, {}, 0, 0),),
    ),))
    assert wait_colours(lock_heavy)["CPU:CPU"] == CPU_EVENT_COLOUR


def test_section_without_activity_has_no_activity_subsection(
    data: ReportData, doc: str, tmp_path: Path
) -> None:
    read_html, update_html = doc.split('<section class="workload"')[1:]
    assert ACTIVITY_HEADING not in read_html and ACTIVITY_HEADING in update_html
    text = render_markdown(data, tmp_path).read_text(encoding="utf-8")
    read_md = text.split("## Workload: pgecons-read")[1].split("## Workload: pgecons-update")[0]
    assert ACTIVITY_HEADING not in read_md
    assert not (tmp_path / "charts" / "pgecons-read-cpu.svg").exists()
    assert not (tmp_path / "charts" / "pgecons-read-waits.svg").exists()
    assert doc.count(ACTIVITY_HEADING) == 1 and text.count(ACTIVITY_HEADING) == 1


def test_device_table_and_window_violations(data: ReportData, doc: str, tmp_path: Path) -> None:
    (device,) = [rows for c, rows in _parse(doc).tables if c == "device"]
    assert device[0][0] == "Clients (クライアント数)" and device[0][1:3] == ["pg17", "pg18"]
    assert device[1] == ["data", "WAL", "data", "WAL"]
    assert device[2:] == [
        ["1", "12.5%", "30.4%", "11.0%", "29.9%", "⚠ pg17: autovacuum in 1 trial"],
        ["2", "20.0%", "41.0%", "—", "—", "none"],
        ["4", "33.3%", "60.1%", "70.0%", "85.5%", "⚠ pg18: 1 checkpoint"],
    ]
    assert '<td class="violation">⚠ pg18: 1 checkpoint</td>' in doc
    assert f'<p class="violation">{WINDOW_NOTE}</p>' in doc
    text = render_markdown(data, tmp_path).read_text(encoding="utf-8")
    assert "| 4 | 33.3% | 60.1% | 70.0% | 85.5% | **⚠ pg18: 1 checkpoint** |" in text
    assert "| 2 | 20.0% | 41.0% | — | — | none |" in text
    assert f"**⚠ {WINDOW_NOTE}**" in text


def test_clean_window_has_no_highlight() -> None:
    data = _data()
    update = data.sections[1]
    servers = tuple(
        replace(s, profiles=(), activity=tuple(
            replace(a, checkpoints=0, autovacuum=0) for a in s.activity))
        for s in update.servers
    )
    doc = render_html(replace(data, sections=(replace(update, servers=servers),)))
    assert ACTIVITY_HEADING in doc
    assert 'class="violation"' not in doc and "Inside the measured window" not in doc
    assert "Flame graphs" not in doc  # no profiles either


def test_flame_graph_links(data: ReportData, doc: str, tmp_path: Path) -> None:
    assert '<li><a href="profiles/pgecons-update-pg18-4.svg">pg18 · 4 clients: flame graph</a></li>' in doc
    # A hostile path stays a relative link, and the server name stays text.
    assert ('<li><a href="javascript%3Aalert%28%22x%22%29">dev&lt;script&gt;&amp;&quot;x · 1 client: '
            "flame graph</a></li>") in doc
    assert 'href="javascript:' not in doc
    text = render_markdown(data, tmp_path).read_text(encoding="utf-8")
    assert "#### Flame graphs (フレームグラフ)" in text
    assert "- [pg18 · 4 clients: flame graph](profiles/pgecons-update-pg18-4.svg)" in text
    assert "(javascript%3Aalert%28%22x%22%29)" in text and "](javascript:" not in text


def test_activity_charts_are_deterministic(update: WorkloadSection) -> None:
    again = _data().sections[1]
    assert cpu_bars(update) == cpu_bars(again)
    assert wait_bars(update) == wait_bars(again)
