"""The sysbench workload end to end through ``teiten run``: real clusters of PostgreSQL 17 and
18, Debian's real sysbench loading and driving them, the store and the report. Each trial's TPS
is sysbench's own printed figure, and the report's tables are made of those trials."""

from __future__ import annotations

import csv
import json
import re
import shutil
import statistics
import subprocess
from pathlib import Path
from typing import Any

import pytest
from tests.conftest import run_cli
from tests.studyrun import run_study

pytestmark = pytest.mark.requires(None if shutil.which("sysbench") else
                                  "sysbench is missing: apt-get install sysbench")

STUDY = """\
study: sysbench-e2e
servers:
  - {name: pg17, install: "17"}
  - {name: pg18, install: "18"}
workloads:
  - {name: sysbench, test: oltp_read_only, tables: 2, table_size: 10000}
clients: [1, 2]
duration: 2s
repetitions: 2
"""


def _by_trial(row: Any) -> Any:
    return row["trial_id"]


def _printed(stdout: str, pattern: str) -> str:
    found = re.search(pattern, stdout, re.MULTILINE)
    assert found is not None, (pattern, stdout)
    return found.group(1)


def _version() -> str:
    done = subprocess.run(["sysbench", "--version"], capture_output=True, text=True, timeout=30)
    return done.stdout.split()[1]  # "sysbench 1.0.20"


@pytest.fixture(scope="module")
def study(pg17, pg18) -> dict[str, Any]:  # noqa: ANN001
    return run_study("sysbench-e2e", STUDY, work="sysbench-e2e", key=_by_trial)


def test_every_trial_s_tps_is_what_sysbench_printed(study: dict[str, Any]) -> None:
    assert study["run"].returncode == 0, study["run"].stderr
    trials = study["trials"]
    assert len(trials) == 8 and {t["status"] for t in trials.values()} == {"ok"}
    assert {(t["server"], t["clients"]) for t in trials.values()} == {
        (s, c) for s in ("pg17", "pg18") for c in (1, 2)}
    for tid, t in trials.items():
        argv = json.loads(t["argv"])
        assert Path(argv[0]).name == "sysbench" and argv[-1] == "run"
        assert f"--threads={t['clients']}" in argv and "--time=2" in argv and "--histogram" in argv
        assert "oltp_read_only" in argv and "--tables=2" in argv and "--table-size=10000" in argv
        assert not any("password" in a for a in argv)
        out = t["stdout"]
        assert t["tps"] == float(_printed(out, r"^\s+transactions:\s+\d+\s+\((\S+) per sec\.\)"))
        assert t["transactions"] == int(_printed(out, r"^\s+transactions:\s+(\d+) ")) > 0
        assert t["duration_s"] == float(_printed(out, r"^\s+total time:\s+(\S+)s$"))
        assert abs(t["latency_ms_avg"] - float(_printed(out, r"^\s+avg:\s+(\S+)$"))) <= 0.005 + 1e-9
        assert t["pgbench_version"] is None and t["failed_transactions"] is None
        driver = study["details"][(tid, "driver")]
        assert driver == {"name": "sysbench", "version": _version(), "test": "oltp_read_only",
                          "options": ["--tables=2", "--table-size=10000"]}
        latency = study["details"][(tid, "latency")]
        assert latency["driver"] == "sysbench" and latency["percentiles"]["count"] == t["transactions"]
        assert study["details"][(tid, "sysbench")]["ignored_errors"] == 0
        # the data is read only: no trial restored it, the server started from it as loaded or as
        # the trial before it left it
        assert study["details"][(tid, "cycle")]["start"]["data"] != "restored"
    assert study["after"] == study["before"]  # no cluster or socket directory left


def test_the_report_compares_the_two_servers_on_sysbench_s_figures(study: dict[str, Any]) -> None:
    tables = study["work"] / "report" / "tables"
    trials = study["trials"].values()
    medians = {(s, c): statistics.median(t["tps"] for t in trials
                                         if (t["server"], t["clients"]) == (s, c))
               for s in ("pg17", "pg18") for c in (1, 2)}
    with (tables / "sysbench-tps.csv").open() as f:
        tps = {(r["server"], int(r["clients"])): r for r in csv.DictReader(f)}
    assert set(tps) == set(medians)
    for point, row in tps.items():
        assert float(row["tps_median"]) == round(medians[point], 1) and int(row["n_ok"]) == 2
    with (tables / "sysbench-ratio.csv").open() as f:
        ratios = {int(r["clients"]): r for r in csv.DictReader(f)}
    assert set(ratios) == {1, 2}
    for clients, row in ratios.items():
        assert (row["server"], row["baseline"]) == ("pg18", "pg17")
        expected = medians[("pg18", clients)] / medians[("pg17", clients)] * 100
        assert float(row["ratio_pct"]) == round(expected, 1) and row["verdict"]
    md = study["md"]
    assert "### TPS: median" in md and "Ratio to baseline" in md
    assert "### Latency percentiles (ms), from sysbench's latency histogram" in md
    assert "pgbench's transaction log" not in md
    assert (tables / "sysbench-percentiles.csv").exists()
    shown = run_cli("show", next(iter(study["trials"])), "--store", str(study["store"]),
                    check=True).stdout
    assert "in sysbench's latency histogram" in shown and "sysbench" in shown


def test_a_test_that_changes_the_data_has_it_restored_before_each_trial(pg18) -> None:  # noqa: ANN001
    found = run_study("sysbench-write", """\
study: sysbench-write
servers: [{name: pg18, install: "18"}]
workloads: [{name: sysbench, test: oltp_write_only, tables: 1, table_size: 2000}]
clients: [2]
duration: 1s
repetitions: 2
""", work="sysbench-write", key=_by_trial)
    assert found["run"].returncode == 0, found["run"].stderr
    trials = sorted(found["trials"].values(), key=lambda t: t["order_index"])
    assert [t["status"] for t in trials] == ["ok", "ok"]
    assert all(t["tps"] > 0 and "oltp_write_only" in json.loads(t["argv"]) for t in trials)
    starts = [found["details"][(t["trial_id"], "cycle")]["start"] for t in trials]
    assert starts[0]["data"] == "as loaded" and starts[1]["data"] == "restored", starts
    assert found["after"] == found["before"]
