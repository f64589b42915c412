"""The figures the reports drew that teiten gave only as tables (issue 57, items 1 and 4), read
back from the SVG and compared with the CSV they are drawn from, in English and Japanese.

1. The 2014 LWLock figures (001 figs 3.6.6-3.6.8): no golden store has an LWLOCK_STATS build,
   so a copy of one (cores.db: a family by core count; quick.db: two builds whose cores did not
   vary) gets, for each of its ok trials, the details ``lwlock`` that teiten.monitors.lwlock
   makes of a real -DLWLOCK_STATS log (tests/golden/lwlock/pg15-tpcb.log.gz) with that trial's
   transactions, as the runner stores them. Each segment's height, mapped back through the y
   axis, is the ``<stem>-lock-bars.csv`` figure of its build, bar and lock, and those figures
   are the lock tables' (shared and exclusive requests, contentions, the split lock's ÷ 8).
2. S9's search time against rows before the recheck (fulltext.db as it is): each marker,
   mapped back through both axes, is a search of ``<stem>-steps.csv`` whose plan used an index,
   at rows + removed by recheck + removed by filter, and its median time.
"""

from __future__ import annotations

import csv
import gzip
import json
import shutil
import sqlite3
import xml.etree.ElementTree as ET
from collections import defaultdict
from contextlib import closing
from pathlib import Path

import pytest

from teiten.analysis.lock_bars import SPLIT_PARTS, lock_figures
from teiten.analysis.locks import LockCores, LockFigures, LockTable
from teiten.monitors.lwlock import window_stats
from teiten.report.build import write_study_report
from teiten.store import Store

GOLDEN = Path(__file__).resolve().parent.parent / "golden"
NS = {"s": "http://www.w3.org/2000/svg"}
LOG = GOLDEN / "lwlock" / "pg15-tpcb.log.gz"


def _counting_store(name: str, tmp: Path) -> Path:
    """A copy of a golden store whose every ok trial has the stored LWLOCK_STATS of the real
    log, per that trial's transactions."""
    target = tmp / f"{name}.db"
    shutil.copyfile(GOLDEN / "report-stores" / f"{name}.db", target)
    text = gzip.decompress(LOG.read_bytes()).decode()
    offset = int((GOLDEN / "lwlock" / "pg15-tpcb.offset").read_text())
    with closing(sqlite3.connect(target)) as conn:
        trials = conn.execute("SELECT study_id, trial_id, transactions FROM trials "
                              "WHERE status = 'ok' AND transactions > 0").fetchall()
        assert trials
        for study, trial, transactions in trials:
            body = window_stats(text, offset, transactions)
            assert body is not None
            conn.execute("INSERT INTO details VALUES (?, ?, 'lwlock', ?)", (study, trial, json.dumps(body)))
        conn.commit()
    return target


def _report(store_path: Path, out: Path, lang: str) -> Path:
    store = Store.open(store_path)
    try:
        write_study_report(store, int(store.studies()[0].id), out, lang=lang)
    finally:
        store.close()
    return out


def _rows(path: Path) -> list[dict[str, str]]:
    with path.open(encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def _axis(ticks: list[tuple[float, float]]) -> tuple[float, float]:
    """(pixel of 0, pixels per unit) of an axis from its ticks' (value, pixel)."""
    (v0, p0), (v1, p1) = ticks[0], ticks[-1]
    assert v1 > v0
    scale = (p1 - p0) / (v1 - v0)
    for v, p in ticks:  # every tick on the same line
        assert p == pytest.approx(p0 + (v - v0) * scale, abs=0.06)
    return p0 - v0 * scale, scale


def _lock_bars(svg: Path) -> tuple[dict[tuple[int, int], list[tuple[str, float]]], list[str], float]:
    """Per (panel, bar), its segments bottom first: the legend's name of each, and its value
    read back from its height through the y axis; the panels' labels; what a thousandth of a
    pixel (the drawing's precision) is worth on the axis."""
    root = ET.parse(svg).getroot()
    ticks = [(float(t.get("data-value", "")), float(t.get("y", ""))) for t in
             root.iterfind(".//s:g[@class='y-axis']/s:text[@class='tick']", NS)]
    _, scale = _axis(ticks)
    children = list(root)
    names = {}
    for i, el in enumerate(children):
        if el.get("class") == "key":
            names[el.get("data-key")] = children[i + 1].text or ""
    out: dict[tuple[int, int], list[tuple[str, float]]] = defaultdict(list)
    last: dict[tuple[int, int], float] = {}
    for rect in root.iterfind(".//s:rect[@class='segment']", NS):
        at = (int(rect.get("data-panel", "")), int(rect.get("data-column", "")))
        y, h = float(rect.get("y", "")), float(rect.get("height", ""))
        if at in last:  # stacked: each segment starts where the one below ends
            assert y + h == pytest.approx(last[at], abs=0.002)
        last[at] = y
        out[at].append((names[rect.get("data-key")], -h / scale))
    panels = [t.text or "" for t in root.iterfind("s:text[@font-weight='600']", NS) if not t.get("font-size")]
    return out, panels, 0.001 / abs(scale)


@pytest.mark.parametrize("lang", ["en", "ja"])
@pytest.mark.parametrize(("name", "axis"), [("cores", "cores"), ("quick", "clients")])
def test_the_lwlock_figures_draw_their_csv_and_the_tables(name: str, axis: str, lang: str,
                                                          tmp_path: Path) -> None:
    out = _report(_counting_store(name, tmp_path), tmp_path / "out", lang)
    html = (out / "report.html").read_text(encoding="utf-8")
    md = (out / "report.md").read_text(encoding="utf-8")
    bars_files = sorted((out / "tables").glob("*-lock-bars.csv"))
    assert bars_files  # a section per workload that counted its locks
    for bars_csv in bars_files:
        stem = bars_csv.name.removesuffix("-lock-bars.csv")
        rows = _rows(bars_csv)
        assert {r["axis"] for r in rows} == {axis}
        # The split WAL insertion lock of a 15 build contended: the third figure is there.
        assert {r["figure"] for r in rows} == {"requests", "contentions", "contentions-split"}
        builds = list(dict.fromkeys(r["build"] for r in rows))
        assert len(builds) == (1 if axis == "cores" else 2)  # one family; two builds side by side
        for figure in ("requests", "contentions", "contentions-split"):
            chart = out / "charts" / f"{stem}-lock-{figure}.svg"
            assert f'<figure class="lock-{figure}">' in html and f"](charts/{chart.name})" in md
            read, panels, pixel = _lock_bars(chart)
            mine = [r for r in rows if r["figure"] == figure]
            expected: dict[tuple[int, int], list[tuple[str, float]]] = defaultdict(list)
            for r in mine:
                p = builds.index(r["build"])
                xs = list(dict.fromkeys(q["x"] for q in mine if q["build"] == r["build"]))
                expected[(p, xs.index(r["x"]))].append((r["lock"], float(r["per_transaction"])))
            assert read.keys() == expected.keys()
            for at, segments in expected.items():
                assert len(read[at]) == len(segments)
                assert all(shown.startswith(lock)
                           for (shown, _), (lock, _) in zip(read[at], segments, strict=True))
                assert [v for _, v in read[at]] == pytest.approx([v for _, v in segments], abs=2 * pixel + 1e-6)
            assert len(panels) == len(builds) and all(b in p for b, p in zip(builds, panels, strict=True))
        # The figures are the tables': shared and exclusive requests, contentions, and ÷ 8.
        table = _rows(out / "tables" / f"{stem}-lock-cores.csv") if axis == "cores" else _rows(
            out / "tables" / f"{stem}-locks.csv")
        key = "cores" if axis == "cores" else "clients"
        by = {(t["family"] if axis == "cores" else t["server"], t[key], t["lock"]): t for t in table}
        for r in rows:
            t = by[(r["build"], r["x"], r["lock"])]
            column = {"shared": "shared_per_transaction", "exclusive": "exclusive_per_transaction",
                      "all": "contentions_per_transaction"}[r["mode"]]
            divisor = SPLIT_PARTS if r["figure"] == "contentions-split" and r["lock"] == "WALInsert" else 1
            assert int(r["divided_by"]) == divisor
            assert float(r["per_transaction"]) * divisor == pytest.approx(float(t[column]), abs=6e-4)
    assert ("÷ 8" in (out / "charts" / f"{stem}-lock-contentions-split.svg").read_text(encoding="utf-8"))
    if lang == "en":
        assert not any("\u3040" <= c <= "\u9fff" for c in html + md)


def test_only_a_split_lock_is_divided_and_a_build_without_counts_draws_nothing() -> None:
    """The 2014 view beside a 9.3 build: its single WAL insertion lock ("main 7") is not
    divided; a 9.4 build's WALInsertLocks is, by 8; shared and exclusive apart, a store without
    the split stacks the requests whole."""
    old = LockTable("pg93", (16, 32), (("main 7", (LockFigures(2.0, 0.4, 0.0, 2.0),
                                                   LockFigures(2.0, 0.8, None, None))),))
    new = LockTable("pg94", (16, 32), (("WALInsertLocks", (LockFigures(2.0, 1.6, 0.5, 1.5), None)),
                                       ("ProcArrayLock (main 4)", (LockFigures(3.0, 0.2, 2.0, 1.0), None))))
    figs = {f.measure: f for f in lock_figures((old, new), ())}
    assert list(figs) == ["requests", "contentions", "contentions-split"]
    split = figs["contentions-split"]
    assert [(s.lock, s.value, s.divisor) for s in split.panels[0].bars[0].segments or ()] == [
        ("main 7", 0.4, 1)]
    assert [(s.lock, s.value, s.divisor) for s in split.panels[1].bars[0].segments or ()] == [
        ("WALInsertLocks", 0.2, 8), ("ProcArrayLock (main 4)", 0.2, 1)]
    assert split.panels[1].bars[1].segments is None  # 32 clients: pg94 counted nothing there
    requests = figs["requests"]
    assert [(s.lock, s.mode, s.value) for s in requests.panels[1].bars[0].segments or ()] == [
        ("WALInsertLocks", "shared", 0.5), ("WALInsertLocks", "exclusive", 1.5),
        ("ProcArrayLock (main 4)", "shared", 2.0), ("ProcArrayLock (main 4)", "exclusive", 1.0)]
    assert [(s.mode, s.value) for s in requests.panels[0].bars[1].segments or ()] == [("all", 2.0)]
    # Without a split lock that contended, no third figure; by core count, a family's panel.
    cores = LockCores("pg93", 32, (4, 8), ("pg93-4cores", "pg93-8cores"), old.rows)
    assert [f.measure for f in lock_figures((old,), (cores,))] == ["requests", "contentions"]
    assert lock_figures((), ()) == ()


def _points(svg: Path) -> tuple[dict[str, list[tuple[float, float]]], str]:
    """Each series' markers read back through both axes, by the legend's name; and the caption."""
    root = ET.parse(svg).getroot()

    def axis(cls: str, attr: str) -> tuple[float, float]:
        return _axis([(float(t.get("data-value", "")), float(t.get(attr, "")))
                      for t in root.iterfind(f"s:text[@class='{cls}']", NS)])

    (x0, xs), (y0, ys) = axis("x-tick", "x"), axis("y-tick", "y")
    legend = [t.text or "" for t in root.iterfind("s:text[@dy='4']", NS)
              if not t.get("class")]
    out: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for el in root.iter():
        if el.get("class") != "point":
            continue
        px, py = float(el.get("data-x", "")), float(el.get("data-y", ""))
        if el.tag.endswith("circle"):  # the drawn shape is where the marker says
            assert (float(el.get("cx", "")), float(el.get("cy", ""))) == pytest.approx((px, py), abs=0.06)
        elif el.tag.endswith("rect"):
            w, h = float(el.get("width", "")), float(el.get("height", ""))
            assert (float(el.get("x", "")) + w / 2, float(el.get("y", "")) + h / 2) == pytest.approx(
                (px, py), abs=0.11)
        else:
            pts = [tuple(map(float, p.split(","))) for p in el.get("points", "").split()]
            assert min(p[0] for p in pts) < px < max(p[0] for p in pts)
            assert min(p[1] for p in pts) < py < max(p[1] for p in pts)
        out[legend[int(el.get("data-series", ""))]].append(((px - x0) / xs, (py - y0) / ys))
    caption = [t.text or "" for t in root.iterfind("s:text[@font-size='11']", NS)
               if t.get("class") is None and t.get("text-anchor") == "middle"]
    return out, " ".join(caption)


@pytest.mark.parametrize("lang", ["en", "ja"])
def test_the_s9_figure_draws_each_indexed_search_of_the_steps_csv(lang: str, tmp_path: Path) -> None:
    store = tmp_path / "fulltext.db"
    shutil.copyfile(GOLDEN / "report-stores" / "fulltext.db", store)
    out = _report(store, tmp_path / "out", lang)
    html = (out / "report.html").read_text(encoding="utf-8")
    md = (out / "report.md").read_text(encoding="utf-8")
    assert '<div class="charts" data-table="fulltext-steps">' in html
    assert '<figure class="suite-recheck">' in html and "](charts/fulltext-suite-recheck.svg)" in md
    rows = [r for r in _rows(out / "tables" / "fulltext-steps.csv") if r["step"] == "search"]
    expected: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for r in rows:
        if "Index" in r["shape"]:
            x = (float(r["rows"]) + float(r["rows_removed_by_index_recheck"])
                 + float(r["rows_removed_by_filter"]))
            expected[r["variant"]].append((x, float(r["seconds_median"]) * 1000))
    left_out = sum("Index" not in r["shape"] for r in rows)
    assert expected and left_out  # the store has both: pg_trgm scans for some keywords
    read, caption = _points(out / "charts" / "fulltext-suite-recheck.svg")
    assert read.keys() == expected.keys()
    for variant, points in expected.items():
        flat = [v for point in sorted(read[variant]) for v in point]
        assert flat == pytest.approx([v for point in sorted(points) for v in point], abs=2e-3)
    assert str(left_out) in caption
    # Some bigram search threw rows away after its index: the figure's point of the method.
    assert any(float(r["rows_removed_by_filter"]) + float(r["rows_removed_by_index_recheck"]) > 0
               for r in rows if "Index" in r["shape"])
