"""Tests of the reports' "System and database activity" subsection: the CPU and wait-event
bar charts, the device table with what fell inside the measured window, and the flame
graph links, on the data of :mod:`tests.unit.report_fixture` (monitor data for
pgecons-update only: pg17 at 1, 2 and 4 clients, pg18 at 1 and 4).
"""

from __future__ import annotations

import re
from dataclasses import replace
from html.parser import HTMLParser
from pathlib import Path

import pytest
from tests.unit.report_fixture import ACTIVITY, CPU_KEYS, EVIL, report_data

from teiten.analysis.model import Activity, ReportData, ServerSeries, WorkloadSection
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

SEGMENT = re.compile(
    r'<rect x="([\d.]+)" y="[\d.]+" width="([\d.]+)" height="[\d.]+" fill="(#[0-9A-F]{6})"'
    r"[^>]*><title>([^<]*)</title></rect>"
)


class _Tables(HTMLParser):
    """The text of every table's rows, by the table's class."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tables: list[tuple[str, list[list[str]]]] = []
        self._cell: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "table":
            self.tables.append((dict(attrs).get("class") or "", []))
        elif tag == "tr":
            self.tables[-1][1].append([])
        elif tag in ("td", "th"):
            self._cell = []

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th") and self._cell is not None:
            self.tables[-1][1][-1].append("".join(self._cell).strip())
            self._cell = None

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)


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
def data() -> ReportData:
    return report_data("en")


@pytest.fixture(scope="module")
def doc(data: ReportData) -> str:
    return render_html(data)


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


def test_activity_in_japanese(update: WorkloadSection) -> None:
    doc = render_html(report_data("ja"))
    assert "<h3>システムとデータベースの稼働状況</h3>" in doc
    assert f"<figure>{cpu_bars(update, 'ja')}</figure>" in doc
    assert "<title>pg18 · クライアント数 2 · 記録なし</title>" in wait_bars(update, "ja")
    assert "⚠ pg17: 1 試行で自動バキューム" in doc and "⚠ pg18: チェックポイント 1 回" in doc
    assert "pg18 · クライアント数 4: フレームグラフ" in doc


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
    read_html, update_html = doc.split('<section class="workload"')[1:3]
    assert ACTIVITY_HEADING not in read_html and ACTIVITY_HEADING in update_html
    text = render_markdown(data, tmp_path).read_text(encoding="utf-8")
    read_md = text.split("## Workload: pgecons-read")[1].split("## Workload: pgecons-update")[0]
    assert ACTIVITY_HEADING not in read_md
    assert not (tmp_path / "charts" / "pgecons-read-cpu.svg").exists()
    assert not (tmp_path / "charts" / "pgecons-read-waits.svg").exists()
    assert doc.count(ACTIVITY_HEADING) == 1 and text.count(ACTIVITY_HEADING) == 1


def test_device_table_and_window_violations(data: ReportData, doc: str, tmp_path: Path) -> None:
    parser = _Tables()
    parser.feed(doc)
    (device,) = [rows for c, rows in parser.tables if c == "device"]
    assert device[0][0] == "Clients" and device[0][1:3] == ["pg17", "pg18"]
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


def test_clean_window_has_no_highlight(data: ReportData) -> None:
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


def test_a_server_without_devices_gets_no_device_heading(data: ReportData, tmp_path: Path) -> None:
    """An external server has no device figures: its table holds only what fell inside the
    measured window, and its heading says so."""
    update = data.sections[1]
    servers = tuple(replace(s, activity=tuple(replace(a, device_util={}) for a in s.activity))
                    for s in update.servers)
    external = replace(data, sections=(replace(update, servers=servers),))
    doc = render_html(external)
    assert "Device utilisation" not in doc and "<h4>Inside the measured window</h4>" in doc
    text = render_markdown(external, tmp_path).read_text(encoding="utf-8")
    assert "#### Inside the measured window" in text


def test_flame_graph_links(data: ReportData, doc: str, tmp_path: Path) -> None:
    assert '<li><a href="profiles/pgecons-update-pg18-4.svg">pg18 · 4 clients: flame graph</a></li>' in doc
    # A hostile path stays a relative link, and the server name stays text.
    assert ('<li><a href="javascript%3Aalert%28%22x%22%29">dev&lt;script&gt;&amp;&quot;x · 1 client: '
            "flame graph</a></li>") in doc
    assert 'href="javascript:' not in doc
    text = render_markdown(data, tmp_path).read_text(encoding="utf-8")
    assert "#### Flame graphs" in text
    assert "- [pg18 · 4 clients: flame graph](profiles/pgecons-update-pg18-4.svg)" in text
    assert "(javascript%3Aalert%28%22x%22%29)" in text and "](javascript:" not in text


def test_activity_charts_are_deterministic(update: WorkloadSection) -> None:
    again = report_data("en").sections[1]
    assert cpu_bars(update) == cpu_bars(again)
    assert wait_bars(update) == wait_bars(again)


def test_a_server_on_another_host_gets_a_client_bar_and_a_server_host_bar(
        update: WorkloadSection) -> None:
    """An ssh server's activity carries its host's CPU (host_cpu) beside this machine's
    (cpu): the chart draws both, named, and says which is which."""
    pg18 = update.servers[1]
    host = {"user": 61.0, "sys": 9.5, "iowait": 0.0, "steal": 2.5, "irq": 0.0, "idle": 27.0}
    remote = replace(pg18, activity=tuple(replace(a, host_cpu=host) for a in pg18.activity))
    section = replace(update, servers=(update.servers[0], remote, *update.servers[2:]))
    svg = cpu_bars(section)
    titles = {title for _, _, _, title in _segments(svg)}
    assert "pg18 · server host · 1 client · user 61.0%" in titles
    assert "pg18 · server host · 4 clients · steal 2.5%" in titles
    client_user = next(a.cpu["user"] for a in pg18.activity if a.clients == 1)
    assert f"pg18 · client · 1 client · user {client_user:.1f}%" in titles
    assert not any(t.startswith("pg18 · 1 client") for t in titles)  # no unnamed pg18 bar
    assert "one is the server&#x27;s host" in svg or "one is the server's host" in svg
    assert "server host" not in cpu_bars(update)
    ja = cpu_bars(section, "ja")
    assert "pg18・サーバホスト" in ja


def test_the_degradation_cpu_table_shows_a_remote_servers_own_host(
        update: WorkloadSection) -> None:
    from teiten.analysis.compare import degradation

    pg18 = update.servers[1]
    host = {"user": 61.0, "sys": 9.5, "iowait": 0.0, "steal": 2.5, "irq": 0.0, "idle": 27.0}
    remote = replace(pg18, activity=tuple(replace(a, host_cpu=host) for a in pg18.activity))
    section = replace(update, servers=(update.servers[0], remote, *update.servers[2:]))
    deg = degradation(section, "pg17", "pg18")
    assert [c for c, _, _ in deg.cpu] == [1, 4]
    assert all(b == host for _, _, b in deg.cpu)
    assert all(a == next(x.cpu for x in update.servers[0].activity if x.clients == c)
               for c, a, _ in deg.cpu)


def test_the_tps_table_carries_each_servers_cpu_idle_as_the_2014_tables_did(
        data: ReportData, update: WorkloadSection, tmp_path: Path) -> None:
    """METHODS S1 and S3 (2014) put CPU idle beside TPS: one column per monitored server, its
    median idle at each client count, "—" where no monitor ran (pg18 at 2 clients), in the
    Markdown (en and ja) and the <stem>-tps export; a section without monitors has none."""
    from teiten.report.exports import all_tables
    from teiten.report.tables import tps_table
    from teiten.words.context import Context

    idle = {(s, c): cpu[CPU_KEYS.index("idle")] for s, rows in ACTIVITY.items()
            for c, cpu, *_ in rows}
    table = tps_table(update, Context("en"))
    groups = [c.group for c in table.columns]
    assert groups.count("CPU idle %") == 2
    at = [i for i, c in enumerate(table.columns) if c.group == "CPU idle %"]
    assert [table.columns[i].label for i in at] == ["pg17", "pg18"]
    cells = {int(label): [row[i] for i in at] for label, row in table.rows}
    assert [c.value for c in cells[1]] == ["44.0%", "44.0%"]
    assert [c.value for c in cells[4]] == ["6.8%", "8.0%"]
    assert cells[2][1].value == "—" and cells[2][0].value == "20.0%"
    assert cells[1][0].title == ("Median % idle of this machine's CPUs (server and pgbench) over "
                                 "the measured windows")
    text = render_markdown(data, tmp_path / "en").read_text(encoding="utf-8")
    assert "CPU idle %: pg17" in text and "CPU idle %: pg18" in text
    ja = render_markdown(replace(data, lang="ja"), tmp_path / "ja").read_text(encoding="utf-8")
    assert "CPU アイドル %: pg17" in ja
    tps = next(t for section in all_tables(data) for t in section
               if t.name.endswith("pgecons-update-tps"))
    idle_at = tps.columns.index("cpu_idle_pct")  # the emulated mark is appended after it
    rows = {(r[1], r[3]): r[idle_at] for r in tps.rows}
    assert rows == {(s, c): idle.get((s, c)) for s, c in rows}
    assert rows[("pg17", 4)] == 6.8 and rows[("pg18", 2)] is None
    read = data.sections[0]
    assert "CPU idle %" not in [c.group for c in tps_table(read, Context("en")).columns]
    # A confined server's own CPUs, then a server's own host, come before this machine's.
    pg17 = update.servers[0]
    own = replace(pg17, activity=tuple(replace(a, server_cpu_idle=12.5) for a in pg17.activity))
    host = replace(pg17, activity=tuple(replace(a, host_cpu={"idle": 30.0}) for a in pg17.activity))
    for series, value, scope in ((own, "12.5%", "the server's own CPUs (its cores)"),
                                 (host, "30.0%", "the server's host")):
        section = replace(update, servers=(series, *update.servers[1:]))
        row = dict(tps_table(section, Context("en")).rows)["1"]
        assert row[len(section.servers)].value == value
        assert scope in row[len(section.servers)].title
