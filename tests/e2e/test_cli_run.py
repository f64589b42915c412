"""The whole study from the command line: plan, run, results, report, on two majors."""

from __future__ import annotations

import csv
import json
import re
import shutil
import sqlite3
import statistics
import subprocess
from pathlib import Path

import pytest
from tests.conftest import run_cli
from tests.requirements import missing

import teiten

STUDY = """
study: e2e
servers:
  - {name: pg17, install: "17"}
  - {name: pg18, install: "18", settings: {work_mem: 8MB}}
workloads: [pgecons-read, {name: pgecons-update, fillfactor: 80}]
scale: 2
clients: [1, 2]
duration: 1s
repetitions: 2
seed: 11
"""

FIELDS = {"trial_id", "study", "server", "workload", "clients", "threads", "repetition",
          "order_index", "status", "tps", "transactions", "duration_s", "latency_ms_avg",
          "latency_ms_stddev", "started_at", "finished_at", "error"}


@pytest.fixture(scope="module")
def finished(pg17, pg18, tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    from tests.conftest import TEST_HOME

    work = TEST_HOME / "work" / "e2e-run"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    study = work / "e2e.yaml"
    study.write_text(STUDY)
    store = work / "e2e.db"
    plan = run_cli("plan", str(study), "--format", "json", check=True)
    done = run_cli("run", str(study), "--store", str(store), "--report", str(work / "report"))
    replanned = run_cli("plan", str(study), check=True)
    return {"work": work, "store": store, "plan": json.loads(plan.stdout), "run": done,
            "estimates": (plan.stderr, replanned.stderr)}


def test_plan_estimates_the_cost_from_this_machines_rates(finished: dict[str, object]) -> None:
    """Before the run, from whatever rates this TEITEN_HOME has; after it, from the rates the
    run measured (the estimate's accuracy is bench.orchestration's figure, not a test)."""
    before, after = finished["estimates"]  # type: ignore[misc]
    took = r"(?:(\d+) min )?(\d+) s"
    shape = (rf"teiten: note: estimate: about {took} of wall time for 16 trials \(16 s of "
             rf"measured windows, {took} loading the data\), and about (\d+) MB of disk at most; "
             r"from (.*)")
    for text in (before, after):
        found = re.search(shape, text)
        assert found, text
        wall_min, wall_s, load_min, load_s, disk = (int(g or 0) for g in found.groups()[:5])
        wall, loading = wall_min * 60 + wall_s, load_min * 60 + load_s
        assert wall > 16 + loading and 2 * 4 * 30 < disk < 2000, text  # 4 clusters of ~32 MB
    assert "rates measured on this machine by" in after
    from tests.conftest import TEST_HOME
    rates = json.loads((TEST_HOME / "rates.json").read_text())
    assert rates["studies"] >= 1 and 0 < rates["trial_fixed_s"] < 30


def test_run_exits_0_with_a_summary(finished: dict[str, object]) -> None:
    done = finished["run"]
    assert isinstance(done, subprocess.CompletedProcess)
    assert done.returncode == 0, done.stderr
    assert "teiten: 16 trials: 16 ok" in done.stderr
    assert re.search(r"\[#+\] 16/16 ", done.stderr), "a progress bar"
    assert "ETA" in done.stderr


def test_results_json_has_every_field_and_follows_the_plan(finished: dict[str, object]) -> None:
    rows = json.loads(run_cli("results", "--store", str(finished["store"]), "--format", "json",
                              check=True).stdout)
    assert len(rows) == 16
    assert set(rows[0]) >= FIELDS
    plan = finished["plan"]
    assert isinstance(plan, list)
    assert [(r["server"], r["workload"], r["clients"], r["repetition"]) for r in rows] == \
        [(p["server"], p["workload"], p["clients"], p["repetition"]) for p in plan]
    assert all(r["status"] == "ok" and r["tps"] > 0 and r["transactions"] > 0 for r in rows)
    assert all(r["threads"] == max(1, r["clients"] // 2) for r in rows)
    csv_text = run_cli("results", "--store", str(finished["store"]), "--format", "csv",
                       check=True).stdout
    assert csv_text.splitlines()[0].startswith("trial_id,study,server,workload,clients")
    assert len(csv_text.splitlines()) == 17


def test_store_keeps_series_statements_raw_output_logs_and_fingerprints(
        finished: dict[str, object]) -> None:
    with sqlite3.connect(str(finished["store"])) as conn:
        conn.row_factory = sqlite3.Row
        trial = conn.execute("SELECT * FROM trials WHERE workload='pgecons-read' LIMIT 1").fetchone()
        assert "-s" in json.loads(trial["argv"]) and "-P" in json.loads(trial["argv"])
        assert "number of transactions actually processed" in trial["stdout"]
        assert "progress:" in trial["stderr"]
        assert "database system is ready to accept connections" in trial["server_log"]
        series = conn.execute("SELECT count(*) FROM progress WHERE trial_id=?",
                              (trial["trial_id"],)).fetchone()[0]
        assert series >= 1
        statements = conn.execute("SELECT command FROM statements WHERE trial_id=? ORDER BY "
                                  "line_no", (trial["trial_id"],)).fetchall()
        assert statements[-1][0].startswith("SELECT count(abalance)")
        study = conn.execute("SELECT * FROM studies").fetchone()
        fp = json.loads(study["fingerprint"])
        assert {"cpu_model", "cpu_logical", "memory_bytes", "kernel", "os",
                "data_filesystem"} <= set(fp)
        # the teiten that ran: the release with its commit (teiten.__version__), study and machine
        assert study["teiten_version"] == fp["teiten"] == teiten.__version__
        servers = {r["name"]: json.loads(r["description"]) for r in conn.execute(
            "SELECT * FROM servers")}
    assert servers["pg17"]["version"].startswith("17.")
    assert servers["pg18"]["version"].startswith("18.")
    assert servers["pg18"]["settings"]["work_mem"]["setting"] == "8192"
    assert servers["pg17"]["settings"]["autovacuum"]["setting"] == "off"
    assert "CONFIGURE" in servers["pg18"]["pg_config"]


def test_report_numbers_match_the_store(finished: dict[str, object]) -> None:
    work = finished["work"]
    assert isinstance(work, Path)
    md = (work / "report" / "report.md").read_text()
    rows = json.loads(run_cli("results", "--store", str(finished["store"]), "--format", "json",
                              check=True).stdout)
    for workload in ("pgecons-read", "pgecons-update"):
        section = md.split(f"## Workload: {workload}")[1].split("\n## ")[0]
        for clients in (1, 2):
            med = {s: statistics.median(r["tps"] for r in rows if r["server"] == s and
                                        r["workload"] == workload and r["clients"] == clients)
                   for s in ("pg17", "pg18")}
            line = next(ln for ln in section.splitlines() if ln.startswith(f"| {clients} |"))
            assert f"{med['pg17']:.1f}" in line and f"{med['pg18']:.1f}" in line
            # The ratio of the medians is the CSV's ratio_pct; the table prints its interval's own
            # (Hodges-Lehmann) estimate, estimate_pct, inside the interval printed beside it.
            with (work / "report" / "tables" / f"{workload}-ratio.csv").open() as fh:
                ratio = next(r for r in csv.DictReader(fh) if r["clients"] == str(clients))
            assert float(ratio["ratio_pct"]) == round(med["pg18"] / med["pg17"] * 100, 1)
            assert (f"{ratio['estimate_pct']}% \\[{ratio['ratio_ci_low_pct']}–{ratio['ratio_ci_high_pct']}, "
                    in line), line
    for chart in re.findall(r"\]\((charts/[^)]+)\)", md):
        assert (work / "report" / chart).is_file()


def test_html_report_is_self_contained_and_renders_in_a_browser(
        finished: dict[str, object]) -> None:
    work = finished["work"]
    assert isinstance(work, Path)
    html = (work / "report" / "report.html").read_text()
    assert f'<meta name="generator" content="teiten {teiten.__version__}">' in html
    assert f"Generated by teiten {teiten.__version__} at " in html
    assert not re.search(r"""(src|href)=["']https?://""", html)
    # the English report says "Ratio to baseline"; the Japanese term is the Japanese report's
    assert "Ratio to baseline" in html and "基準比" not in html
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        missing("no chromium; make system installs it")
    profile = work / "chromium-profile"
    shot = work / "report.png"
    args = [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
            "--no-first-run", "--disable-background-networking", "--disable-component-update",
            "--disable-sync", f"--user-data-dir={profile}", "--window-size=1200,2400"]
    dom = subprocess.run([*args, "--dump-dom", (work / "report" / "report.html").as_uri()],
                         capture_output=True, text=True, timeout=120)
    assert dom.returncode == 0, dom.stderr
    assert dom.stdout.count("<svg") >= 4
    assert "pgecons-update" in dom.stdout
    subprocess.run([*args, f"--screenshot={shot}", (work / "report" / "report.html").as_uri()],
                   capture_output=True, timeout=120, check=True)
    assert shot.stat().st_size > 20_000, "a real page, not a blank one"
