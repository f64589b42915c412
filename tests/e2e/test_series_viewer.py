"""The per-second series viewer (uPlot, inlined) in a real headless Chromium, on a report
of several servers and repetitions written from a hand-built ReportData, opened offline
from file://: it overlays the repetitions of one server and every server at a point, its
two charts zoom together on a mouse drag and zoom out on a double-click, the ramp-up is
shaded, failed trials are listed with their status, and the Japanese viewer reads in
Japanese.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from tests.cdp import Browser, Page
from tests.unit.report_fixture import EVIL, report_data

from teiten.analysis.model import ReportData, TrialSeries
from teiten.report.html import write_html

SECONDS = 20
RAMP = (100.0, 400.0, 800.0)  # the first seconds of every trial, before its steady level


def _trial(server: str, workload: str, clients: int, repetition: int, *, status: str = "ok",
           seconds: int = SECONDS) -> TrialSeries:
    level = 1000.0 + 50 * ("pg17", "pg18", EVIL).index(server) + 10 * repetition
    tps = (*RAMP, *(level + s % 3 for s in range(SECONDS)))[:seconds]
    latency = tuple(round(clients * 1000 / v, 3) for v in tps)
    return TrialSeries(f"t-{workload}-{clients}-{server}-{repetition}", server, workload, clients,
                       repetition, status, tps, latency, 2, 0, 0.0)


def _system(server: str, repetition: int) -> tuple[tuple[str, tuple[float | None, ...]], ...]:
    """What the system monitor saw each second: CPU busy %, and the data and WAL devices'
    %util (pg17's WAL on its data device, pg18's on another; a second without a sample)."""
    cpu = tuple(None if s == 6 else 40.0 + 10 * repetition + s % 5 for s in range(SECONDS))
    data = tuple(float(20 + s) for s in range(SECONDS))
    wal = data if server == "pg17" else tuple(float(90 - s) for s in range(SECONDS))
    return (("cpu", cpu), ("data", data), ("wal", wal))


def _update(server: str, clients: int, repetition: int) -> TrialSeries:
    if (server, clients, repetition) == (EVIL, 4, 3):
        return _trial(server, "pgecons-update", clients, repetition, status="failed", seconds=5)
    if clients == 2 and server != EVIL:  # the system monitor ran at 2 clients
        return replace(_trial(server, "pgecons-update", clients, repetition),
                       system=_system(server, repetition))
    return _trial(server, "pgecons-update", clients, repetition)


# pgecons-read at 1 client: pg17 and pg18, 2 repetitions each. pgecons-update at 2 and 4
# clients: pg17, pg18 and the markup-named server, 3 repetitions each; at 4 clients pg18 also
# has a 4th repetition that failed with no data, and the third server's 3rd failed after 5 s.
SERIES = (
    *(_trial(s, "pgecons-read", 1, r) for s in ("pg17", "pg18") for r in (1, 2)),
    *(_update(s, c, r) for s in ("pg17", "pg18", EVIL) for c in (2, 4) for r in (1, 2, 3)),
    _trial("pg18", "pgecons-update", 4, 4, status="failed", seconds=0),
)
UPDATE_4 = "pgecons-update · 4 clients"
UPDATE_2 = "pgecons-update · 2 clients"

# What the viewer shows: the lines of both charts, their legends, the x scales, the info
# line and the list of the trials at the point.
STATE = """(() => {
  const charts = window.teitenSeries.charts;
  return {
    lines: charts.map(u => u.series.length - 1),
    labels: charts.map(u => u.series.slice(1).map(s => s.label)),
    legendRows: charts.map(u => Array.from(u.root.querySelectorAll('.u-legend tr.u-series'))
                                     .map(r => r.querySelector('.u-label').textContent)),
    colours: charts.map(u => u.series.slice(1).map(s => s._stroke || s.stroke)),
    x: charts.map(u => [u.scales.x.min, u.scales.x.max]),
    axes: charts.map(u => u.axes.map(a => a.label)),  // drawn on the canvas
    info: document.getElementById('series-info').textContent,
    listed: Array.from(document.querySelectorAll('#series-trials li'))
                 .map(li => [li.className, li.textContent]),
    listHidden: document.getElementById('series-drawn').hidden,
    trials: Array.from(document.getElementById('series-select').options).map(o => o.textContent),
    empty: document.querySelector('#series-chart p.note')?.textContent || null,
    errors: document.body.dataset.jsErrors || null,
  };
})()"""


@pytest.fixture(scope="module")
def reports(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    out = {}
    for lang in ("en", "ja"):
        folder = tmp_path_factory.mktemp(f"report-{lang}")
        data: ReportData = replace(report_data(lang), series=SERIES)
        out[lang] = write_html(data, folder)
    return out


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Browser]:
    with Browser(tmp_path_factory.mktemp("chromium")) as b:
        yield b


def _open(browser: Browser, page: Path) -> Page:
    tab = browser.open(page.as_uri())
    # Offline: the page asked for nothing but itself, and threw nothing.
    assert tab.requests() == [page.as_uri()]
    assert tab.exceptions() == []
    return tab


def _state(tab: Page) -> dict[str, Any]:
    state: dict[str, Any] = tab.evaluate(STATE)
    assert state["errors"] is None, state["errors"]
    return state


def _first_plot(tab: Page) -> tuple[float, float, float, float]:
    """Left, top, width and height of the first chart's plot area, scrolled into view."""
    left, top, width, height = tab.evaluate("""(() => {
      const over = document.querySelector('#series-chart .u-over');
      over.scrollIntoView({block: 'center'});
      const r = over.getBoundingClientRect();
      return [r.left, r.top, r.width, r.height];
    })()""")
    return left, top, width, height


def _choose(tab: Page, *, point: str | None = None, mode: str | None = None, server: str | None = None) -> None:
    """Pick in the viewer's controls as a reader would (each fires its change event)."""
    tab.evaluate(f"""(() => {{
      const pick = (id, text) => {{
        const select = document.getElementById(id);
        const option = Array.from(select.options).find(o => o.textContent === text);
        if (!option) throw new Error(id + ' has no ' + text);
        select.value = option.value;
        select.dispatchEvent(new Event('change'));
      }};
      const point = {json.dumps(point)}, mode = {json.dumps(mode)}, server = {json.dumps(server)};
      if (point !== null) pick('series-point', point);
      if (mode !== null) document.querySelector('input[name="series-mode"][value="' + mode + '"]').click();
      if (server !== null) pick('series-server', server);
    }})()""")


def test_the_viewer_overlays_repetitions_and_servers(browser: Browser, reports: dict[str, Path]) -> None:
    tab = _open(browser, reports["en"])
    first = _state(tab)
    # One trial at first: the first point's first trial, with its ramp-up, stalls and drift.
    assert first["lines"] == [1, 1] and first["labels"] == [["pg17 · repetition 1"]] * 2
    assert first["info"] == ("pg17 · pgecons-read · 1 client · repetition 1 · ok — ramp-up: 2 s · "
                             "stalls: 0 · drift: +0.0% per minute")
    assert first["listHidden"] and first["trials"] == ["repetition 1 · ok", "repetition 2 · ok"]
    assert first["x"] == [[1, SECONDS]] * 2
    assert first["axes"] == [["seconds", "TPS"], ["seconds", "latency (ms)"]]

    # Every repetition of one server: one line each, the failed one without data listed only.
    _choose(tab, point=UPDATE_4, mode="server", server="pg18")
    state = _state(tab)
    labels = ["pg18 · repetition 1", "pg18 · repetition 2", "pg18 · repetition 3"]
    assert state["lines"] == [3, 3] and state["labels"] == [labels] * 2
    assert state["legendRows"] == [["seconds", *labels]] * 2
    assert len(set(state["colours"][0])) == 3
    assert not state["listHidden"] and len(state["listed"]) == 4
    assert state["listed"][3] == ["failed", "pg18 · pgecons-update · 4 clients · repetition 4 · failed — "
                                            "no per-second data for this trial"]

    # Every server: 3 + 3 + 3 lines (the failed trial with 5 seconds of data is drawn too),
    # each server in its own colour, every label different.
    _choose(tab, mode="all")
    state = _state(tab)
    assert state["lines"] == [9, 9]
    labels = state["labels"][0]
    assert len(set(labels)) == 9 and state["labels"][1] == labels
    assert f"{EVIL} · repetition 3 (failed)" in labels
    assert sorted({c for c in state["colours"][0]}) == sorted({"#0072B2", "#D55E00", "#009E73"})
    assert [c for c, _ in state["listed"]] == [""] * 6 + ["failed"] + [""] * 2 + ["failed"]
    assert state["info"] == UPDATE_4

    # A trial's id in the table of every trial shows that trial alone (the third: pg18's first).
    tab.evaluate("""document.querySelector('a[data-series="2"]').click()""")
    state = _state(tab)
    assert state["lines"] == [1, 1] and state["labels"][0] == ["pg18 · repetition 1"]
    assert state["info"].startswith("pg18 · pgecons-read · 1 client · repetition 1 · ok — ramp-up: 2 s")
    # A failed trial without data: no chart, its status said.
    _choose(tab, point=UPDATE_4, mode="trial", server="pg18")
    tab.evaluate("""(() => { const s = document.getElementById('series-select');
      s.value = s.options[3].value; s.dispatchEvent(new Event('change')); })()""")
    state = _state(tab)
    assert state["lines"] == [] and state["empty"] == "no per-second data for this trial"
    assert state["info"].startswith("pg18 · pgecons-update · 4 clients · repetition 4 · failed — ")


def test_drag_zooms_both_charts_and_double_click_resets(browser: Browser, reports: dict[str, Path]) -> None:
    tab = _open(browser, reports["en"])
    _choose(tab, point=UPDATE_4, mode="all")
    left, top, width, height = _first_plot(tab)
    y = top + height / 2
    tab.drag(left + width * 0.25, left + width * 0.6, y)
    zoomed = _state(tab)["x"]
    assert zoomed[0] == zoomed[1], "the latency chart follows the TPS chart"
    low, high = zoomed[0]
    assert 1 < low < high < SECONDS
    assert low == pytest.approx(1 + 0.25 * (SECONDS - 1), abs=1) and high == pytest.approx(
        1 + 0.6 * (SECONDS - 1), abs=1)
    # The cursors are synced: hovering the TPS chart points at the same second in both.
    tab.mouse("mouseMoved", left + width * 0.5, y)
    idx = tab.evaluate("""new Promise(r => requestAnimationFrame(() => requestAnimationFrame(() =>
      r(window.teitenSeries.charts.map(u => u.cursor.idx)))))""")
    assert idx[0] is not None and idx[0] == idx[1]
    tab.double_click(left + width * 0.5, y)
    assert _state(tab)["x"] == [[1, SECONDS]] * 2


def test_the_ramp_up_is_shaded(browser: Browser, reports: dict[str, Path]) -> None:
    """On the first trial (ramp-up: 2 s), a row of the TPS plot above the ramp's line and
    below its steady level is tinted up to second 2.5, and not after."""
    tab = _open(browser, reports["en"])
    tinted = tab.evaluate("""(() => {
      const u = window.teitenSeries.charts[0];
      const y = Math.round(u.valToPos(930, 'y', true));
      const edge = u.valToPos(2.5, 'x', true), left = u.bbox.left, right = u.bbox.left + u.bbox.width;
      const row = u.ctx.getImageData(0, y, u.ctx.canvas.width, 1).data;
      const orange = x => {
        const i = 4 * Math.round(x);
        return row[i + 3] > 0 && row[i] - row[i + 2] > 60;
      };
      const share = (a, b) => {
        let n = 0, k = 0;
        for (let x = a; x < b; x++, n++) k += orange(x);
        return k / n;
      };
      return [share(left + 2, edge - 2), share(edge + 3, right)];
    })()""")
    assert tinted[0] > 0.9 and tinted[1] == 0, tinted


def test_the_japanese_viewer_reads_in_japanese(browser: Browser, reports: dict[str, Path]) -> None:
    tab = _open(browser, reports["ja"])
    _choose(tab, point="pgecons-update · クライアント数 4", mode="all")
    state = _state(tab)
    assert state["lines"] == [9, 9]
    assert "pg17 · 1 回目" in state["labels"][0] and f"{EVIL} · 3 回目（失敗）" in state["labels"][0]
    assert state["legendRows"][0][0] == "経過秒"
    assert state["axes"] == [["経過秒", "TPS"], ["経過秒", "レイテンシ (ms)"]]
    assert state["listed"][6][1].endswith("4 回目 · 失敗 — この試行には秒ごとのデータがありません")
    text = tab.evaluate("document.getElementById('series-viewer').innerText")
    for word in ("ワークロードとクライアント数", "1 つの試行", "全サーバの全繰り返し", "サーバ", "経過秒"):
        assert word in text, word
    # No English beyond the names (servers, workloads) and the units.
    names = {"pg", "pgecons", "read", "update", "dev", "script", "x", "TPS", "ms"}
    assert set(re.findall(r"[A-Za-z]+", text)) <= names, set(re.findall(r"[A-Za-z]+", text)) - names


def test_cpu_and_device_util_are_drawn_beside_tps_where_the_monitor_ran(
        browser: Browser, reports: dict[str, Path]) -> None:
    """At a point whose trials carry the system monitor's seconds, two more charts follow TPS
    and latency, on 0-100%: this machine's CPU busy % (a gap where a second had no sample), and
    the data device's %util, with the WAL device's as a dotted line only where it is another
    device. Only the trials the monitor ran in have lines there. All four zoom together; a
    point without them keeps two charts."""
    tab = _open(browser, reports["en"])
    _choose(tab, point=UPDATE_2, mode="trial", server="pg18")
    state = _state(tab)
    assert state["axes"] == [["seconds", "TPS"], ["seconds", "latency (ms)"],
                             ["seconds", "CPU busy % (this machine)"], ["seconds", "Device %util"]]
    assert state["labels"] == [["pg18 · repetition 1"]] * 3 + [
        ["pg18 · repetition 1 · data", "pg18 · repetition 1 · WAL"]]
    values = tab.evaluate("""(() => {
      const [tps, latency, cpu, util] = window.teitenSeries.charts;
      return {cpu: cpu.data[1].slice(0, 8), data: util.data[1].slice(0, 3), wal: util.data[2].slice(0, 3),
              walDash: util.series[2].dash, y: [cpu.scales.y.max, util.scales.y.max]};
    })()""")
    assert values["cpu"] == [50.0, 51.0, 52.0, 53.0, 54.0, 50.0, None, 52.0]
    assert values["data"] == [20.0, 21.0, 22.0] and values["wal"] == [90.0, 89.0, 88.0]
    assert values["walDash"] == [2, 3] and values["y"] == [100, 100]
    # pg17 wrote its WAL on its data device: one %util line, not two alike.
    _choose(tab, server="pg17")
    assert _state(tab)["labels"][3] == ["pg17 · repetition 1 · data"]
    # Every server: a CPU line for each trial the monitor ran in (not the third server's), in
    # its server's colour; pg18's WAL lines beside the six data lines.
    _choose(tab, mode="all")
    state = _state(tab)
    assert state["lines"] == [9, 9, 6, 9] and state["colours"][2] == state["colours"][0][:6]
    assert not any(EVIL in label for label in state["labels"][2] + state["labels"][3])
    # Zooming the TPS chart zooms the system charts too.
    left, top, width, height = _first_plot(tab)
    tab.drag(left + width * 0.3, left + width * 0.7, top + height / 2)
    zoomed = _state(tab)["x"]
    assert len(zoomed) == 4 and all(x == zoomed[0] for x in zoomed) and zoomed[0] != [1, SECONDS]
    _choose(tab, point=UPDATE_4)
    assert len(_state(tab)["axes"]) == 2
    ja = _open(browser, reports["ja"])
    _choose(ja, point="pgecons-update · クライアント数 2", mode="trial", server="pg18")
    assert _state(ja)["axes"][2:] == [["経過秒", "CPU 使用率 %（このマシン）"], ["経過秒", "デバイスの %util"]]

