"""S7's figure and summary (issue 57, items 2 and 3): the 2016 report's total TPS against the
number of servers per replication method (slide 31), drawn from the scale-out table's CSV, and
each method's strengths and weaknesses (slide 32) beside the measured table, in en and ja.

The figure is read back from the SVG as a reader sees it: each marker's position, through the
axis' own tick labels, gives its number of nodes and its total TPS, which must be the CSV's.
The store is the real replication store of tests/golden/report-stores (single, native-2 and
sync-2 with Pgpool-II, read and update), copied before it is opened."""

from __future__ import annotations

import csv
import re
import shutil
from pathlib import Path

import pytest

from teiten.report.build import write_study_report
from teiten.store import Store
from teiten.tables.scale_out import ScaleOutLine, ScaleOutRow, lines
from teiten.tables.scale_out.strengths import judge
from teiten.tables.scale_out.table import say

STORE = Path(__file__).resolve().parent.parent / "golden" / "report-stores" / "replication.db"
WORKLOADS = ("pgecons-read", "pgecons-update")


def _report(tmp: Path, lang: str) -> Path:
    copy = tmp / "replication.db"
    shutil.copyfile(STORE, copy)  # opening a store may migrate it: never the golden file
    store = Store.open(copy)
    try:
        write_study_report(store, int(store.studies()[0].id), tmp / lang, lang=lang)
    finally:
        store.close()
    return tmp / lang


def _ticks(svg: str) -> tuple[list[tuple[float, float]], list[tuple[float, float]]]:
    """The axes' tick labels: (pixel, value) of the y axis, then of the x axis."""
    y = [(float(px), float(v.replace(",", ""))) for px, v in
         re.findall(r'<text x="[\d.]+" y="([\d.]+)" dy="4" text-anchor="end" font-size="11" [^>]*>([\d,.]+)<',
                    svg)]
    x = [(float(px), float(v.replace(",", ""))) for px, v in
         re.findall(r'<text x="([\d.]+)" y="[\d.]+" text-anchor="middle" font-size="11" [^>]*>([\d,.]+)<', svg)]
    return y, x


def _value(pixel: float, ticks: list[tuple[float, float]]) -> tuple[float, float]:
    """The value at ``pixel`` on a linear axis through its first and last ticks, and the value
    one pixel spans."""
    (p0, v0), (p1, v1) = ticks[0], ticks[-1]
    per = (v1 - v0) / (p1 - p0)
    return v0 + (pixel - p0) * per, abs(per)


def drawn(svg: str) -> dict[tuple[str, str], tuple[float, float, float]]:
    """Every marker of the chart read back: (line, server) -> (nodes, total TPS, TPS per pixel),
    from where it is drawn, the line and the server named by its hover text."""
    y_ticks, x_ticks = _ticks(svg)
    assert len(y_ticks) >= 2 and x_ticks
    out = {}
    for tag, attrs, title in re.findall(r"<(circle|rect|polygon) ([^>]*)><title>([^<]*)</title>", svg):
        a = dict(re.findall(r'(\w+)="([^"]*)"', attrs))
        if tag == "circle":
            cx, cy = float(a["cx"]), float(a["cy"])
        elif tag == "rect":
            cx, cy = float(a["x"]) + float(a["width"]) / 2, float(a["y"]) + float(a["height"]) / 2
        else:
            pts = [tuple(map(float, p.split(","))) for p in a["points"].split()]
            cx, cy = sum(p[0] for p in pts) / len(pts), sum(p[1] for p in pts) / len(pts)
        nodes = next(v for px, v in x_ticks if abs(px - cx) < 0.5) if len(x_ticks) < 2 else \
            _value(cx, x_ticks)[0]
        tps, per_px = _value(cy, y_ticks)
        line, where = title.split(" · ")[0:2], title.split(" · ")[2]
        server = re.search(r"[(（]([^)）]+)[)）]", where)
        assert server, title
        out[(" · ".join(line), server.group(1))] = (nodes, tps, per_px)
    return out


@pytest.mark.parametrize("lang", ["en", "ja"])
def test_the_figure_draws_the_csv(lang: str, tmp_path: Path) -> None:
    out = _report(tmp_path, lang)
    html = (out / "report.html").read_text(encoding="utf-8")
    inline = re.findall(r'<figure class="scaleout">(<svg.*?</svg>)</figure>', html, re.S)
    assert len(inline) == len(WORKLOADS)
    for workload, in_html in zip(WORKLOADS, inline, strict=True):
        svg = (out / "charts" / f"{workload}-scaleout.svg").read_text(encoding="utf-8").strip()
        assert svg == in_html  # the Markdown report's file is the HTML report's figure
        rows = list(csv.DictReader((out / "tables" / f"{workload}-scaleout.csv").open(encoding="utf-8")))
        by = {(r["server"], int(r["clients"])): r for r in rows}
        marks = drawn(svg)
        # one line per method and client count: native and sync (remote_apply), 1 and 2 clients
        # per pgbench, each from the single server at one node to its own at two
        assert len(marks) == 8
        for (line, server), (nodes, tps, per_px) in marks.items():
            clients = int(re.search(r"(\d+)", line.split(" · ")[1]).group(1))
            row = by[(server, clients)]
            assert line.startswith(row["method"] if server != "single" else ("native", "sync"))
            assert nodes == pytest.approx(int(row["nodes"]), abs=0.01)
            # the marker sits where the CSV's figure is, within the 0.1 px its coordinates keep
            assert tps == pytest.approx(float(row["total_tps"]), abs=0.2 * per_px + 0.05)
        drawn_servers = {(s, int(re.search(r"(\d+)", line.split(" · ")[1]).group(1))) for line, s in marks}
        assert drawn_servers == set(by)


def test_a_line_starts_from_the_single_server() -> None:
    def row(server: str, method: str, nodes: int, clients: int, tps: float) -> ScaleOutRow:
        return ScaleOutRow(server, method, nodes, True, clients, tps, tps / nodes, None, None, None)

    rows = [row("async-2", "async", 2, 1, 190.0), row("async-3", "async", 3, 1, 280.0),
            row("single", "single", 1, 1, 100.0), row("single", "single", 1, 4, 300.0),
            row("async-3", "async", 3, 4, 800.0)]
    assert lines(rows) == (
        ScaleOutLine("async", True, 1, ((1, 100.0, "single"), (2, 190.0, "async-2"), (3, 280.0, "async-3"))),
        ScaleOutLine("async", True, 4, ((1, 300.0, "single"), (3, 800.0, "async-3"))))
    assert lines([r for r in rows if r.method == "single"]) == ()  # no topology: no figure


def test_the_judge_of_the_methods() -> None:
    """The 2016 report's summary from made-up figures: async holds its update throughput and
    lags, native falls and is slowest, sync (remote_apply) is between them."""
    def row(server: str, method: str, nodes: int, tps: float, lag: float | None = None,
            replay: float | None = None) -> ScaleOutRow:
        return ScaleOutRow(server, method, nodes, True, 4, tps, tps / nodes, lag, replay, None)

    rows = [row("single", "single", 1, 1000.0), row("native-3", "native", 3, 500.0),
            row("async-3", "async", 3, 1050.0, 20480.0, 1.25),
            row("sync-3", "sync (remote_apply)", 3, 700.0, 0.0)]
    found = {str(j["method"]): j for j in judge(rows, lines(rows))}
    en = {m: ([say(s, "en") for s in j["strengths"]], [say(s, "en") for s in j["weaknesses"]])
          for m, j in found.items()}
    assert en["async + Pgpool-II"] == (
        ["total TPS holds as nodes are added: 3 nodes give 1,050 TPS, 1.05× the one node's 1,000 "
         "(4 clients per pgbench)",
         "fastest of the 3 methods at 3 nodes: 1,050 TPS in total (next 700, sync (remote_apply) + Pgpool-II)"],
        ["standbys fall behind the primary: up to 20.0 kB of WAL not yet replayed, "
         "a replay lag of up to 1.2 ms"])
    assert en["native + Pgpool-II"][1][:2] == [
        "total TPS falls as nodes are added: 3 nodes give 500 TPS, 0.50× the one node's 1,000 "
        "(4 clients per pgbench)",
        "slowest of the 3 methods at 3 nodes: 500 TPS in total (async + Pgpool-II gives 2.10× as much)"]
    assert en["native + Pgpool-II"][0][0].startswith(
        "by design: the nodes may run different PostgreSQL versions")
    sync = found["sync (remote_apply) + Pgpool-II"]
    assert [s["key"] for s in sync["strengths"]] == ["no_lag", "design.apply"]  # type: ignore[union-attr]
    assert [s["key"] for s in sync["weaknesses"]] == ["falls", "design.since96"]  # type: ignore[union-attr]
    assert say(sync["weaknesses"][1], "ja") == (  # type: ignore[index]
        "設計上: synchronous_commit = remote_apply は PostgreSQL 9.6 以降でしか使えない")


def test_the_strengths_table_beside_the_measured_one(tmp_path: Path) -> None:
    """The table in both languages, right after the scale-out table, with its CSV in English."""
    en, ja = _report(tmp_path, "en"), _report(tmp_path, "ja")
    with (en / "tables" / "pgecons-update-scaleout-strengths.csv").open(encoding="utf-8") as fh:
        rows = list(csv.reader(fh))
    assert rows[0] == ["workload", "method", "strengths", "weaknesses"]
    assert [r[1] for r in rows[1:]] == ["native + Pgpool-II", "sync (remote_apply) + Pgpool-II"]
    native, sync = rows[1], rows[2]
    assert native[3].startswith("total TPS falls as nodes are added: 2 nodes give 1,762 TPS, 0.60× the one "
                                "node's 2,931 (2 clients per pgbench); slowest of the 2 methods at 2 nodes: "
                                "1,762 TPS in total (sync (remote_apply) + Pgpool-II gives 1.53× as much)")
    assert sync[2].startswith("total TPS holds as nodes are added: 2 nodes give 2,690 TPS, 0.92× the one "
                              "node's 2,931 (2 clients per pgbench); fastest of the 2 methods at 2 nodes")
    md_en = (en / "report.md").read_text(encoding="utf-8")
    md_ja = (ja / "report.md").read_text(encoding="utf-8")
    for md, measured, judged in ((md_en, "### Replication scale-out (S7)",
                                  "### Strengths and weaknesses of each replication method (S7)"),
                                 (md_ja, "### レプリケーションによるスケールアウト（S7）",
                                  "### レプリケーション方式ごとの長所と短所（S7）")):
        after = md.split(measured, 1)[1]
        assert after.split("\n### ", 1)[1].startswith(judged.removeprefix("### "))  # the next table
    assert ("| sync (remote\\_apply) + Pgpool-II | ノードを増やしても合計 TPS が落ちない: "
            "2 ノードで 2,690 TPS、1 ノードの 2,931 の 0.92×（pgbench あたり 2 クライアント）。"
            "2 ノードで 2 方式中最速: 合計 2,690 TPS"
            "（次点は native + Pgpool-II の 1,762）") in md_ja
