"""The measured-statement workloads end to end through ``teiten run``, at a tiny size on a
real PostgreSQL 18: accesslog (S6: parallel workers, partitions, pruning) and freeze (S10:
VACUUM FREEZE against the share already frozen, warm and cold), what the store keeps of
every step, and the report's tables, charts and CSV."""

from __future__ import annotations

import csv
import shutil
import sqlite3
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest
from tests.conftest import clusters_snapshot, run_cli

STUDY = """\
study: suites-e2e
servers:
  - name: pg18
    install: "18"
    # small tables: let the planner choose parallel plans at this size
    settings: {parallel_setup_cost: 0, parallel_tuple_cost: 0, min_parallel_table_scan_size: 0}
workloads:
  - name: accesslog
    rows_per_day: 15000  # over 53,000 rows in all: row numbers times constants overflow int4
    days: 4
    workers: [0, 2]
    layouts: [single, partitioned, partitioned-unpruned, join]
  - {name: freeze, rows: 40000, frozen: [0, 50, 100], cache: [warm, cold]}
  - {name: iot, devices: 2, interval: 1h, period: 40d, models: [rdb, jsonb], indexes: [btree, brin]}
repetitions: 2
seed: 5
"""


def _steps(store: Path) -> list[dict[str, Any]]:
    import json

    conn = sqlite3.connect(store)
    rows = conn.execute("SELECT t.workload, t.variant, t.repetition, s.name, s.param, s.seconds, s.rows, "
                        "s.body FROM steps s JOIN trials t USING (study_id, trial_id) "
                        "ORDER BY t.workload, t.variant, t.repetition, s.step_index").fetchall()
    return [{"workload": w, "variant": v, "rep": r, "name": n, "param": p, "seconds": sec,
             "rows": rows_, **json.loads(body)} for w, v, r, n, p, sec, rows_, body in rows]


@pytest.fixture(scope="module")
def finished(pg18, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:  # noqa: ANN001
    from tests.conftest import TEST_HOME

    work = TEST_HOME / "work" / "e2e-suites"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    (work / "s.yaml").write_text(STUDY)
    before = clusters_snapshot("suites-e2e")
    planned = run_cli("plan", str(work / "s.yaml"), check=True)
    done = run_cli("run", str(work / "s.yaml"), "--store", str(work / "r.db"), timeout=900)
    return {"work": work, "plan": planned.stdout, "run": done, "before": before,
            "after": clusters_snapshot("suites-e2e"), "steps": _steps(work / "r.db")}


def test_every_variant_is_a_trial_and_all_finish(finished: dict[str, Any]) -> None:
    done = finished["run"]
    assert done.returncode == 0, done.stderr
    # 8 accesslog variants + 6 freeze variants + 4 iot variants, twice
    assert "36 trials: 36 ok" in done.stderr
    assert "layouts=partitioned-unpruned workers=2 cache=warm" in finished["plan"]
    assert finished["after"] == finished["before"]


def test_freeze_times_vacuum_after_the_asked_share_was_frozen(finished: dict[str, Any]) -> None:
    timed = [s for s in finished["steps"] if s["workload"] == "freeze" and s["name"] == "vacuum freeze"]
    assert len(timed) == 12
    for s in timed:
        share = int(s["param"].rstrip("%")) / 100
        assert s["extra"]["frozen_share_before"] == pytest.approx(share, abs=0.02), s
        assert s["sizes"]["freeze_t"] > 40000 * 50
        if "cache=cold" in s["variant"]:
            assert s["cache"]["state"] == "cold" and s["cache"]["server_restarted"] is True
            evicted = s["cache"]["os_cache"]
            assert evicted["files"] > 100 and evicted["not_evicted_files"] == 0
            if evicted["resident_before_bytes"] is not None:
                assert evicted["resident_after_bytes"] < evicted["resident_before_bytes"]
        else:
            assert s["cache"]["state"] == "warm" and s["cache"]["prewarmed_blocks"] >= s["extra"]["pages"]
    first = [s for s in finished["steps"] if s["workload"] == "freeze" and s["name"] == "first freeze"]
    assert {s["param"] for s in first} == {"50%", "100%"}  # nothing to freeze first at 0%
    inserted = {}
    for s in finished["steps"]:
        if s["workload"] == "freeze" and s["name"] == "insert":
            inserted[(s["variant"], s["rep"])] = inserted.get((s["variant"], s["rep"]), 0) + s["rows"]
    assert set(inserted.values()) == {40000}


def test_accesslog_reads_workers_and_partitions_back_from_explain(finished: dict[str, Any]) -> None:
    runs = [s for s in finished["steps"] if s["workload"] == "accesslog"]
    assert len(runs) == 16 and {s["name"] for s in runs} == {"aggregate", "join"}
    for s in runs:
        plan, layout = s["plan"], s["variant"].split()[0]
        if layout == "layouts=join":  # one row per page category; who scanned which table
            assert s["name"] == "join" and s["rows"] == plan["rows"] == 10
            assert set(plan["scans"]) == {"access_log", "pages"}
            if s["extra"]["workers"] == 0:
                assert plan["scans"] == {"access_log": 1, "pages": 1} and plan["divided"] == []
            else:  # the leader and the launched workers divide the log: each process that ran
                # the scan counts once, and Gather's leader runs its share only while no worker's
                # tuples are waiting, so it may run none (seen once in CI: 2 scans, 2 workers)
                assert 1 <= plan["scans"]["access_log"] <= 1 + plan["workers_launched"]
                assert "access_log" in plan["divided"]
            continue
        assert s["rows"] == plan["rows"] and 1 <= s["rows"] <= 4  # one row per HTTP status
        assert s["extra"]["workers"] in (0, 2)
        if s["extra"]["workers"] == 0:
            assert plan["workers_planned"] == 0 and "Gather" not in plan["shape"]
        else:
            assert plan["workers_planned"] == 2 and "Gather" in plan["shape"], plan
            assert 0 <= plan["workers_launched"] <= 2
        if layout == "layouts=partitioned":
            assert "access_log_p0002" in plan["shape"] and plan["rows_removed_by_filter"] == 0
        elif layout == "layouts=partitioned-unpruned":
            assert plan["partitions_scanned"] == 4
            assert plan["rows_removed_by_filter"] == 3 * 15000
        else:
            assert "on access_log " in plan["shape"] + " " and plan["rows_removed_by_filter"] == 3 * 15000


def test_iot_loads_indexes_and_queries_each_model(finished: dict[str, Any]) -> None:
    runs = [s for s in finished["steps"] if s["workload"] == "iot"]
    assert len(runs) == 4 * 2 * 3
    for s in runs:
        model, index = s["variant"].split()[0].split("=")[1], s["variant"].split()[1].split("=")[1]
        table = "iot_" + model.replace("-", "_")
        if s["name"] == "load":
            assert s["rows"] == 2 * 40 * 24 and s["sizes"][table] > 0
        elif s["name"] == "index":
            assert s["sizes"][f"{table}_ts_{index}"] > 0 and f"{table}_ts_{index}" in s["indexes"]
        else:
            assert s["name"] == "query" and s["rows"] == 2  # one row per device
    md = (finished["work"] / "r-report" / "report.md").read_text()
    assert "## Workload: iot" in md and "charts/iot-suite-time.svg" in md
    assert "### Load, index, sizes and query per model (S8)" in md
    assert "| pg18 · models=jsonb indexes=brin cache=warm | " in md
    assert "charts/iot-suite-sizes.svg" in md


def test_the_report_shows_steps_plans_sizes_and_charts(finished: dict[str, Any]) -> None:
    out = finished["work"] / "r-report"
    md = (out / "report.md").read_text()
    assert "## Workload: accesslog" in md and "## Workload: freeze" in md
    for heading in ("### Parallel query: time, speed-up, workers (S6)", "### Timed steps",
                    "### Parallel join of tables of different parallel degrees: which processes "
                    "scanned each (S6)",
                    "### Query plans (EXPLAIN ANALYZE, medians)", "### Sizes built"):
        assert heading in md
    assert "| freeze_t" not in md  # sizes are per variant, summed over tables and indexes
    assert "![freeze: time of 'vacuum freeze'](charts/freeze-suite-time.svg)" in md
    svg = (out / "charts" / "freeze-suite-time.svg").read_text()
    assert "pg18 · cache=cold" in svg and "pg18 · cache=warm" in svg
    with (out / "tables" / "freeze-steps.csv").open() as f:
        rows = list(csv.DictReader(f))
    with (out / "tables" / "accesslog-steps.csv").open() as f:
        joined = [r for r in csv.DictReader(f) if r["step"] == "join"]
    assert len(joined) == 2 and all(r["scans"].startswith("access_log=") for r in joined)
    vac = [r for r in rows if r["step"] == "vacuum freeze"]
    assert len(vac) == 6 and all(r["n"] == "2" for r in vac)
    html = (out / "report.html").read_text()
    assert html.count("<svg") >= 3 and "Speed-up vs no workers" in html
    ja = run_cli("report", "--store", str(finished["work"] / "r.db"), "--out", str(out / "ja"),
                 "--lang", "ja", check=True)
    assert ja.returncode == 0
    assert "パラレルクエリ" in (out / "ja" / "report.md").read_text()


def test_every_step_carries_the_machine_around_it(finished: dict[str, Any]) -> None:
    """The server runs here: each step read this machine's CPUs and the data directory's
    device just before and after it (issue 36, item 5), and the steps' data carries them."""
    from tests.conftest import TEST_HOME

    from teiten.monitors.system import device_of

    device = device_of(TEST_HOME)
    for st in finished["steps"]:
        extra = st["extra"]
        assert extra["window_s"] >= st["seconds"] * 0.99, st
        assert 0 <= extra["cpu_busy_pct"] <= 100 and 0 <= extra["cpu_iowait_pct"] <= 100, st
        if device is not None:
            assert extra["device"] == device and 0 <= extra["device_util_pct"] <= 100, st
    with (finished["work"] / "r-report" / "tables" / "freeze-steps.csv").open() as f:
        rows = list(csv.DictReader(f))
    assert rows and all(float(r["cpu_busy_pct"]) >= 0 and r["window_s"] for r in rows)
    with (finished["work"] / "r-report" / "tables" / "accesslog-speedup.csv").open() as f:
        assert all(r["cpu_busy_pct"] for r in csv.DictReader(f))


def test_show_prints_a_trials_steps(finished: dict[str, Any]) -> None:
    store = finished["work"] / "r.db"
    tid = sqlite3.connect(store).execute(
        "SELECT trial_id FROM trials WHERE variant = 'frozen=50 cache=cold' LIMIT 1").fetchone()[0]
    shown = run_cli("show", tid, "--store", str(store), check=True).stdout
    assert "freeze · frozen=50 cache=cold · repetition" in shown
    assert "  vacuum freeze [50%] · " in shown and "cache cold" in shown
    assert "  first freeze [50%] · " in shown


def test_the_report_in_a_browser(finished: dict[str, Any]) -> None:
    import re

    from tests.e2e.test_report_browser import _browser

    work = finished["work"]
    dom = _browser(work / "r-report" / "report.html", work / "profile", "--dump-dom").stdout
    body = re.search(r"<body[^>]*>", dom)
    assert body and "data-js-errors" not in body[0], body
    assert dom.count("<svg") == 5  # accesslog: time; freeze and iot: time and sizes
    assert "Speed-up vs no workers" in dom and "vacuum freeze" in dom


def test_compare_puts_the_servers_of_two_studies_side_by_side(finished: dict[str, Any]) -> None:
    work = finished["work"]
    shutil.copy(work / "r.db", work / "again.db")
    # Another study of the same suites (compare refuses one study with itself): renamed.
    with closing(sqlite3.connect(work / "again.db")) as conn, conn:
        conn.execute("UPDATE studies SET name = name || '-again'")
    done = run_cli("compare", "--store", str(work / "r.db"), "--store", str(work / "again.db"),
                   "--out", str(work / "cmp"), check=True)
    assert done.returncode == 0
    md = (work / "cmp" / "report.md").read_text()
    header = next(line for line in md.splitlines() if line.startswith("| Variant · step | Time · "))
    assert header.count("Time · ") == 2  # one column per server of the two studies
