"""The HTML report of a real study, opened in a real headless browser (English and
Japanese): the charts are there, the per-second series viewer lists every point and draws
one trial, no script error, and the page reads without JavaScript too. (The viewer itself,
overlays and zoom, is tested in test_series_viewer.py.)"""

from __future__ import annotations

import csv
import html
import json
import re
import shutil
import sqlite3
import subprocess
from collections.abc import Callable
from pathlib import Path
from xml.etree import ElementTree

from tests.conftest import run_cli
from tests.requirements import missing

STUDY = """
study: browser
servers:
  - {name: pg17, install: "17"}
  - {name: pg18, install: "18"}
workloads: [select-only]
scale: 1
clients: [1, 2]
duration: 1s
repetitions: 4
seed: 7
"""
TRIALS = 2 * 2 * 4  # servers × client counts × repetitions

CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def _chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        missing("no chromium; make system installs it")
    return found


def _browser(page: Path, profile: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    args = [_chromium(), *CHROMIUM_FLAGS, f"--user-data-dir={profile}", *extra, page.as_uri()]
    done = subprocess.run(args, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done


def _report(store: Path, out: Path, lang: str) -> None:
    """``teiten report``; through the library when this checkout's CLI has no --lang yet."""
    done = run_cli("report", "--store", str(store), "--out", str(out), "--lang", lang)
    if done.returncode == 2 and "--lang" in done.stderr:
        from teiten.report.build import write_study_report
        from teiten.store import Store

        s = Store.open(str(store))
        try:
            write_study_report(s, int(s.studies()[-1].id), out, lang=lang)
        finally:
            s.close()
        return
    assert done.returncode == 0, done.stderr


def test_report_in_a_browser(pg17, pg18, workdir: Path) -> None:
    study = workdir / "browser.yaml"
    study.write_text(STUDY)
    store = workdir / "browser.db"
    done = run_cli("run", str(study), "--store", str(store), "--no-report")
    assert done.returncode == 0, done.stderr

    for lang, vocabulary in (("en", ("Findings", "Ratio to baseline")),
                             ("ja", ("結果の要点", "基準比", "クライアント数", "中央値"))):
        out = workdir / f"report-{lang}"
        _report(store, out, lang)
        page = out / "report.html"
        html = page.read_text(encoding="utf-8")
        assert f'<html lang="{lang}">' in html
        for word in vocabulary:
            assert word in html, word
        # Every table is there as CSV, and all of them in tables.json, those of before first.
        csvs = sorted(p.name for p in (out / "tables").iterdir())
        names = [t["name"] for t in json.loads((out / "tables.json").read_text())["tables"]]
        assert csvs == sorted(f"{n}.csv" for n in names)
        assert names[:4] == [f"select-only-{t}" for t in ("tps", "ratio", "latency", "summary")]
        assert "differences" in names
        with (out / "tables" / "differences.csv").open(newline="") as fh:
            rows = list(csv.DictReader(fh))
        assert rows[0] == {"what": "version", "pg17": rows[0]["pg17"], "pg18": rows[0]["pg18"],
                           "cause": "declared"}
        assert rows[0]["pg17"].startswith("17.") and rows[0]["pg18"].startswith("18.")
        assert any(r["cause"] == "version-only" and r["pg17"] == "—" for r in rows), rows
        with (out / "tables" / "select-only-tps.csv").open(newline="") as fh:
            assert len(list(csv.DictReader(fh))) == 4  # 2 servers × 2 client counts

        dom = _browser(page, workdir / f"profile-{lang}", "--dump-dom").stdout
        assert dom.count("<svg") >= 3, "TPS, latency and ratio"
        body = re.search(r"<body[^>]*>", dom)
        assert body and "data-js-errors" not in body[0], body
        # The viewer offers every point (workload · clients), and at the first one the
        # servers and pg17's repetitions (the script fills those two lists).
        options = {}
        for name in ("point", "server", "select"):
            found = re.search(rf'<select id="series-{name}">(.*?)</select>', dom, re.DOTALL)
            assert found, name
            options[name] = re.findall(r"<option[^>]*>([^<]*)</option>", found[1])
        clients = {"en": ("1 client", "2 clients"), "ja": ("クライアント数 1", "クライアント数 2")}[lang]
        assert options["point"] == [f"select-only · {c}" for c in clients]
        assert options["server"] == ["pg17", "pg18"]
        assert len(options["select"]) == 4  # pg17's repetitions at 1 client
        assert len(re.findall(r'<a href="#series" data-series="\d+">', dom)) == TRIALS  # the table
        # The script ran: the viewer is shown and has drawn the first trial with uPlot, its
        # TPS and its latency, and (the system monitor ran) this machine's CPU and the devices'
        # %util in the same seconds.
        assert '<div id="series-viewer" class="viewer">' in dom
        assert len(re.findall(r'<div class="uplot[^"]*"', dom)) == 4
        # Every finding links to a cell that exists.
        for target in re.findall(r'<ul class="findings">.*?</ul>', dom, re.DOTALL):
            for ident in re.findall(r'href="#([^"]+)"', target):
                assert f'id="{ident}"' in dom, ident

        shot = workdir / f"report-{lang}.png"
        _browser(page, workdir / f"profile-{lang}", f"--screenshot={shot}", "--window-size=1200,3000",
                 "--hide-scrollbars")
        assert shot.stat().st_size > 30_000, "a real page, not a blank one"

    # Without JavaScript the page still reads: tables and charts, the viewer stays hidden.
    # (Headless Chromium cannot dump a page with scripting off, so the scripts are cut out.)
    page = workdir / "report-en" / "report.html"
    nojs = page.with_name("nojs.html")
    nojs.write_text(re.sub(r"<script\b.*?</script>", "", page.read_text(encoding="utf-8"),
                           flags=re.DOTALL), encoding="utf-8")
    still = _browser(nojs, workdir / "profile-nojs", "--dump-dom").stdout
    assert "<script" not in still
    assert '<div id="series-viewer" class="viewer" hidden="">' in still
    assert still.count('<table class="data') >= 3 and still.count("<svg") >= 3
    assert 'class="trials"' in still

    # The error hook works: a page whose script throws is marked.
    broken = page.with_name("broken.html")
    broken.write_text(page.read_text(encoding="utf-8").replace(
        "</main>", "<script>undefinedFunction()</script></main>"), encoding="utf-8")
    marked = _browser(broken, workdir / "profile-broken", "--dump-dom").stdout
    assert re.search(r'<body data-js-errors="[^"]*undefinedFunction', marked)


# Golden stores (tests/golden/report-stores) with the widest tables: the differences of four
# versions with their build flags, four servers side by side, full-text judgements and plans,
# scale-up's hottest functions, three environments, TPC-C, the trials of many servers, and
# the replication methods' strengths and weaknesses (S7).
WIDE = ("versions", "freeze", "fulltext", "parallel", "iot", "scaleup", "environments", "tpcc", "cores",
        "replication")
GOLDEN = Path(__file__).resolve().parent.parent / "golden" / "report-stores"
WINDOW = "--window-size=1280,900"
SVG = "{http://www.w3.org/2000/svg}"
# Run after the page's own script: opens every <details> and writes, for every table, its
# scrollWidth and its container's clientWidth into the DOM that --dump-dom prints.
MEASURE = """<script>
document.querySelectorAll("details").forEach(function (d) { d.open = true; });
var found = [];
document.querySelectorAll("table").forEach(function (t) {
  found.push({table: t.getAttribute("data-table") || t.className, width: t.scrollWidth,
              container: t.parentElement.clientWidth});
});
var root = document.documentElement;
found.push({table: "(page)", width: root.scrollWidth, container: root.clientWidth});
var out = document.createElement("pre");
out.id = "measured";
out.textContent = JSON.stringify(found);
document.body.appendChild(out);
</script>"""


def _golden(name: str, workdir: Path, lang: str) -> Path:
    """The report of a copy of golden store ``name`` (opening a store may write to it)."""
    store = workdir / f"{name}.db"
    if not store.exists():
        shutil.copyfile(GOLDEN / f"{name}.db", store)
    out = workdir / f"{name}-{lang}"
    done = run_cli("report", "--store", str(store), "--out", str(out), "--lang", lang)
    assert done.returncode == 0, done.stderr
    return out


def _measured(page: Path, profile: Path) -> list[dict[str, object]]:
    probe = page.with_name("measure.html")
    probe.write_text(page.read_text(encoding="utf-8").replace("</body>", MEASURE + "</body>"), encoding="utf-8")
    dom = _browser(probe, profile, WINDOW, "--dump-dom").stdout
    found = re.search(r'<pre id="measured">(.*?)</pre>', dom, re.DOTALL)
    assert found, "the measuring script did not run"
    return list(json.loads(html.unescape(found[1])))


def test_no_table_overflows_at_1280_px(tmp_path: Path) -> None:
    """In a 1280 px wide window every table of these reports fits its container: long texts
    (settings, build flags, plans, judgements) wrap instead of running off the page."""
    for lang in ("en", "ja"):
        for name in WIDE:
            measured = _measured(_golden(name, tmp_path, lang) / "report.html", tmp_path / "profile")
            assert len(measured) > 3, (name, measured)
            over = [m for m in measured if int(str(m["width"])) > int(str(m["container"]))]
            assert not over, f"{name} ({lang}): {over}"


CJK = re.compile("[\u3000-\u9fff\uff00-\uffef]+")  # CJK symbols, kana, kanji; full-width forms
# What the user gave a store, or the workload drew from the user's corpus: names, the study
# file, paths and step parameters (a full-text study's keywords).
GIVEN = ("SELECT name, source, spec_yaml, spec_json, run_dir FROM studies",
         "SELECT name, spec_json FROM servers", "SELECT path FROM workdirs",
         "SELECT DISTINCT workload, variant FROM trials", "SELECT DISTINCT name, param FROM steps")


def _given_cjk(store: Path) -> set[str]:
    """The runs of CJK characters in what the user gave ``store``."""
    conn = sqlite3.connect(f"file:{store}?mode=ro", uri=True)
    try:
        return {run for query in GIVEN for row in conn.execute(query) for cell in row
                if isinstance(cell, str) for run in CJK.findall(cell)}
    finally:
        conn.close()


def test_the_english_report_holds_no_cjk_outside_given_names(tmp_path: Path) -> None:
    """No character of the CJK ranges in an English report (HTML, Markdown, charts, tables),
    except in what the user gave the store: a Japanese gloss shows as empty boxes where no CJK
    font is installed, and the Japanese terms belong to the Japanese report."""
    names = sorted(p.stem for p in GOLDEN.glob("*.db"))
    assert len(names) >= 16
    for name in names:
        out = _golden(name, tmp_path, "en")
        given = _given_cjk(GOLDEN / f"{name}.db")
        files = [p for p in out.rglob("*") if p.suffix in (".html", ".md", ".svg", ".csv", ".json")]
        assert {"report.html", "report.md"} <= {p.name for p in files}
        for path in files:
            stray = sorted(set(CJK.findall(path.read_text(encoding="utf-8"))) - given)
            assert not stray, f"{name}: {path.relative_to(out)} holds {stray}"
        if name == "fulltext":  # its Japanese keywords are the user's and stay
            assert given and any(run in (out / "report.html").read_text(encoding="utf-8") for run in given)


def _axis(svg: ElementTree.Element) -> tuple[float, float, Callable[[float], float]]:
    """The y axis a chart drew, read back from its tick labels: lowest and highest tick, and
    the pixel y of a value."""
    ticks = sorted((float(t.text.replace(",", "")), float(t.get("y", "")))
                   for t in svg.iter(f"{SVG}text")
                   if t.get("dy") == "4" and t.get("text-anchor") == "end" and t.text)
    (v0, y0), (v1, y1) = ticks[0], ticks[-1]

    def ypos(v: float) -> float:
        return y0 + (v - v0) * (y1 - y0) / (v1 - v0)

    assert all(abs(ypos(v) - y) < 0.11 for v, y in ticks), ticks  # a linear axis
    return v0, v1, ypos


def test_the_ratio_chart_draws_the_margin_band_and_marks_clipped_intervals(tmp_path: Path) -> None:
    """The ratio chart of golden stores, read back: the shaded band of "no difference" spans
    100 ± the margin on the chart's own axis, and every interval end past the axis (from the
    ratio table's CSV) ends in an arrow at that edge, on its whisker, with its value beside it."""
    clipped = 0
    for name in ("quick", "environments", "cores"):
        out = _golden(name, tmp_path, "en")
        page = (out / "report.html").read_text(encoding="utf-8")
        for chart in sorted((out / "charts").glob("*-ratio.svg")):
            drawn = chart.read_text(encoding="utf-8")
            marks = re.findall(r'<rect class="margin".*?</rect>|<g class="clip".*?</g>', drawn)
            assert marks and all(m in page for m in marks), "the page shows the marks the chart file holds"
            with (out / "tables" / chart.with_suffix(".csv").name).open(newline="") as fh:
                rows = [r for r in csv.DictReader(fh) if r["ratio_ci_low_pct"]]
            svg = ElementTree.fromstring(drawn)
            low, high, ypos = _axis(svg)
            margin = float(rows[0]["margin_pct"])
            band = [r for r in svg.iter(f"{SVG}rect") if r.get("class") == "margin"]
            assert len(band) == 1, chart.name
            top = float(band[0].get("y", ""))
            bottom = top + float(band[0].get("height", ""))
            assert abs(top - ypos(100 + margin)) < 0.2 and abs(bottom - ypos(100 - margin)) < 0.2, (
                chart.name, top, bottom, margin)
            assert f"within ±{margin:g}%" in "".join(band[0].itertext())
            whiskers = {float(p.get("d", "").split()[0][1:]) for p in svg.iter(f"{SVG}path")
                        if p.get("stroke-width") == "1.5"}
            expected = sorted([("top", float(r["ratio_ci_high_pct"])) for r in rows
                               if float(r["ratio_ci_high_pct"]) > high]
                              + [("bottom", float(r["ratio_ci_low_pct"])) for r in rows
                                 if float(r["ratio_ci_low_pct"]) < low])
            found = []
            for mark in (g for g in svg.iter(f"{SVG}g") if g.get("class") == "clip"):
                polygon, text = mark.find(f"{SVG}polygon"), mark.find(f"{SVG}text")
                assert polygon is not None and text is not None and text.text
                tip_x, tip_y = (float(v) for v in polygon.get("points", "").split()[0].split(","))
                assert tip_x in whiskers, (chart.name, tip_x, whiskers)
                edge = "top" if abs(tip_y - ypos(high)) < 0.11 else "bottom"
                assert abs(tip_y - ypos(high if edge == "top" else low)) < 0.11, (chart.name, tip_y)
                found.append((edge, float(text.text.rstrip("%").replace(",", ""))))
            assert sorted(found) == expected, chart.name
            clipped += len(found)
    assert clipped >= 4, "the stores have intervals past the axis, above and below"


# Run after the page's own script: for every ratio chart and each of its labels (the band's,
# the 100% line's), the box Chromium drew it in, and the markers (shapes with a hover title)
# that it covers.
COVERED = """<script>
var found = [];
document.querySelectorAll("svg text.margin-label, svg text.reference-label").forEach(function (label) {
  var svg = label.closest("svg");
  var a = label.getBoundingClientRect(), hits = [], markers = 0;
  svg.querySelectorAll("g[fill] > rect, g[fill] > polygon, g[fill] > circle").forEach(function (m) {
    if (!m.querySelector("title")) { return; }
    markers += 1;
    var b = m.getBoundingClientRect();
    if (a.left < b.right && b.left < a.right && a.top < b.bottom && b.top < a.bottom) {
      hits.push(m.querySelector("title").textContent);
    }
  });
  found.push({chart: svg.getAttribute("aria-label"), label: label.getAttribute("class"),
              markers: markers, covered: hits, width: a.width});
});
var out = document.createElement("pre");
out.id = "covered";
out.textContent = JSON.stringify(found);
document.body.appendChild(out);
</script>"""


def test_the_band_label_covers_no_point_near_100(tmp_path: Path) -> None:
    """Golden stores with a ratio at 100.0% (checksums) and one just above the band's top at
    105.2% (versions, where the label used to sit over it), their reports in Chromium: the
    band's label, as the browser lays it out, covers no marker of its chart, nor does the 100%
    line's (which sat over the point at 100.0%)."""
    for name, near in (("checksums", "100.0%"), ("versions", "105.2%")):
        out = _golden(name, tmp_path, "en")
        page = out / "report.html"
        assert near in page.read_text(encoding="utf-8")
        probe = page.with_name("covered.html")
        probe.write_text(page.read_text(encoding="utf-8").replace("</body>", COVERED + "</body>"),
                         encoding="utf-8")
        dom = _browser(probe, tmp_path / "profile", WINDOW, "--dump-dom").stdout
        found = re.search(r'<pre id="covered">(.*?)</pre>', dom, re.DOTALL)
        assert found, "the probe did not run"
        charts = json.loads(html.unescape(found[1]))
        assert {c["label"] for c in charts} == {"margin-label", "reference-label"}, charts
        assert all(c["markers"] >= 2 and c["width"] > 50 for c in charts), charts
        assert not [c for c in charts if c["covered"]], charts


def test_one_how_much_faster_in_the_answer_the_tables_the_csv_bmf_and_openmetrics(tmp_path: Path) -> None:
    """One point of a golden store (tests/golden/readme: pg18 over a path 1 ms slower, at 1
    client), where the ratio of the medians (10.2%) and the ratio estimate the verdict is read
    from (10.0%) differ: the answer Chromium shows, the TPS table's cell, the ratio CSV's
    estimate_pct, BMF's ratio_estimate and OpenMetrics' teiten_ratio_estimate_pct all give the
    estimate; the ratio of the medians keeps its own name (ratio_pct,
    teiten_ratio_of_medians_pct)."""
    from prometheus_client.openmetrics.parser import text_string_to_metric_families

    store = tmp_path / "answer.db"
    shutil.copyfile(GOLDEN.parent / "readme" / "answer.db", store)
    out = tmp_path / "report"
    run_cli("report", "--store", str(store), "--out", str(out), "--lang", "en", check=True)
    dom = _browser(out / "report.html", tmp_path / "profile", WINDOW, "--dump-dom").stdout
    answer = re.search(r'<ul class="answer">(.*?)</ul>', dom, re.DOTALL)
    assert answer, "the answer is on the page"
    said = re.search(r"pg18-1ms against pg18: (\d+\.\d)% slower at 1 client \(ratio to baseline "
                     r"(\d+\.\d)%", html.unescape(answer[1]))
    assert said, answer[1]
    shown = float(said[2])
    assert float(said[1]) == round(100 - shown, 1)
    cell = re.search(r'<td id="ratio--select_2d_only--pg18_2d_1ms--1"[^>]*>([\d.]+)%', dom)
    assert cell and float(cell[1]) == shown, "the TPS table's ratio to baseline"
    with (out / "tables" / "select-only-ratio.csv").open(newline="") as fh:
        row = next(r for r in csv.DictReader(fh) if (r["server"], r["clients"]) == ("pg18-1ms", "1"))
    assert float(row["estimate_pct"]) == shown
    medians = float(row["ratio_pct"])
    assert medians != shown, "the point tells the two figures apart"

    # The run kept its point summaries (the view BMF and OpenMetrics read).
    bmf = json.loads(run_cli("results", "--store", str(store), "--format", "bmf", check=True).stdout)
    measures = bmf["readme-answer/select-only/clients=1/pg18-1ms"]
    assert set(measures) == {"throughput", "ratio_estimate"}
    assert round(measures["ratio_estimate"]["value"], 1) == shown
    text = run_cli("results", "--store", str(store), "--format", "openmetrics", check=True).stdout
    families = {f.name: f for f in text_string_to_metric_families(text)}

    def at_point(family: str) -> float:
        (value,) = [s.value for s in families[family].samples
                    if (s.labels["server"], s.labels["clients"]) == ("pg18-1ms", "1")]
        return round(value, 1)

    assert at_point("teiten_ratio_estimate_pct") == shown
    assert at_point("teiten_ratio_of_medians_pct") == medians
