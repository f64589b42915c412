"""teiten scaleup: METHODS S4 as one command, for a workload of the user's choice."""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

import pytest
from tests.conftest import run_cli

pytestmark = pytest.mark.requires(None if len(os.sched_getaffinity(0)) >= 2 else "needs 2 CPUs")


def test_scaleup_sweeps_cores_and_explains(pg17, workdir: Path) -> None:
    (workdir / "point.pgbench").write_text(
        "\\set aid random(1, 100000 * :scale)\nSELECT abalance FROM pgbench_accounts WHERE aid = :aid;\n")
    done = run_cli("scaleup", "point.pgbench", "--install", "17", "--clients", "1,2",
                   "--duration", "2s", "--repetitions", "1", "--scale", "1", "--store", "s.db",
                   "--report", "rep", cwd=workdir)
    assert done.returncode == 0, done.stderr
    every = json.loads(run_cli("results", "--store", str(workdir / "s.db"), "--format", "json").stdout)
    rows = [r for r in every if r["purpose"] == ""]
    profiled = {r["clients"] for r in every if r["purpose"] == "profile"}
    assert sorted((r["server"], r["clients"], r["status"]) for r in rows) == [
        ("pg17-1core", 1, "ok"), ("pg17-1core", 2, "ok"), ("pg17-2cores", 1, "ok"),
        ("pg17-2cores", 2, "ok")]
    report = (workdir / "rep" / "report.md").read_text()
    table = report.split("### Scale-up with cores (pg17): where TPS stops rising, and why", 1)[1]
    lines = [line for line in table.splitlines() if line.startswith("| ")]
    assert [line.split(" | ")[0] for line in lines[1:3]] == ["| 1", "| 2"]
    peaks = {int(r["server"].split("-")[1][0]): max(x["tps"] for x in rows if x["server"] == r["server"])
             for r in rows}
    for line in lines[1:3]:
        cores, peak = line.split(" | ")[:2]
        assert float(peak) == pytest.approx(peaks[int(cores[2:])], abs=0.05)
    # One repetition places no peak (the client-count findings' rule, issue 54 item 6).
    assert "*Cannot tell at which core count TPS peaks (as few as 1 successful trials at a core " \
        "count's peak; stating a peak needs 3 at each).*" in table
    # After the blocks, both core counts were profiled where they differ most (issue 23),
    # and each row names its hottest functions there.
    assert sorted((r["server"], r["clients"]) for r in every if r["purpose"]) == [
        ("pg17-1core", *profiled), ("pg17-2cores", *profiled)]
    if shutil.which("perf"):
        [at] = profiled
        words = f"({at} client{'s' if at > 1 else ''}) |"
        assert words in lines[1] and words in lines[2] and "Hottest function at" in table
    html = (workdir / "rep" / "report.html").read_text()
    found = re.search(r'<table class="data scaleup" data-table="([^"]+)">', html)
    assert found and found[1].endswith("-scaleup")  # its data: tables/<workload>-scaleup.csv
    assert (workdir / "rep" / "tables" / f"{found[1]}.csv").is_file()


def test_scaleup_bad_workload(workdir: Path) -> None:
    done = run_cli("scaleup", "nosuch", "--store", "s.db", cwd=workdir)
    assert done.returncode == 2
    assert done.stderr.startswith("teiten: error: teiten scaleup: unknown workload 'nosuch'; ")
    assert not (workdir / "s.db").exists()
