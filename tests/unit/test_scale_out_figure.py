"""S7's figure (issue 57, item 2): the 2016 report's total TPS against the number of servers per
replication method (slide 31), drawn from the scale-out table's CSV, in en and ja.

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
