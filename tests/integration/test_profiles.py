"""perf profiles of the server during the window, folded stacks, flame graphs; and the
clear message when perf cannot run."""

from __future__ import annotations

import csv
import json
import math
import re
import shutil
import sqlite3
import statistics
from pathlib import Path

import pytest
from tests.conftest import run_cli

STUDY = """
study: prof
servers:
  - {name: pg17, install: "17"}
  - {name: pg18, install: "18"}
workloads: [pgecons-read]
scale: 1
clients: [1, 2]
duration: 2s
repetitions: 1
order: sequential
profile: {points: [{clients: 1}]}
"""


def _profiles(store: Path) -> dict[str, dict[str, object]]:
    with sqlite3.connect(store) as conn:
        return {f"{server}/{clients}": json.loads(body) for server, clients, body in conn.execute(
            "SELECT t.server, t.clients, d.body FROM details d JOIN trials t "
            "USING (study_id, trial_id) WHERE d.kind = 'profile'")}


OLD_AND_NEW = STUDY.replace('{name: pg17, install: "17"}', '{name: pg96, install: "maven:9.6"}')


@pytest.mark.requires(None if shutil.which("perf") else "perf is not installed here")
def test_profiles_of_the_chosen_points_with_flame_graphs(pg96, pg18, workdir: Path) -> None:
    """9.6 (Maven's build, whose postgres is stripped) beside 18: both are profiled, and the
    report says which profile has frames perf could not name, and what that does to the
    differential graph."""
    (workdir / "prof.yaml").write_text(OLD_AND_NEW)
    store = workdir / "prof.db"
    done = run_cli("run", str(workdir / "prof.yaml"), "--store", str(store), "--report",
                   str(workdir / "report"), "--lang", "en")
    assert done.returncode == 0, done.stderr
    profiles = _profiles(store)
    assert set(profiles) == {"pg96/1", "pg18/1"}, "only the chosen points are profiled"
    for key, prof in profiles.items():
        assert prof["event"] in ("cycles", "cpu-clock")
        assert int(prof["samples"]) > 20, key  # type: ignore[call-overload]
        folded = str(prof["folded"])
        # Server-side frames of the S1 read query, resolved from the postgres binary (on
        # 9.6 from the exported functions alone).
        assert "postgres" in folded and ("ExecScan" in folded or "_bt_" in folded
                                          or "ExecAgg" in folded), key
        assert str(prof["svg"]).lstrip().startswith("<?xml"), key
    assert "[postgres]" in str(profiles["pg96/1"]["folded"])
    assert "[postgres]" not in str(profiles["pg18/1"]["folded"])
    report = workdir / "report"
    graphs = sorted(p.name for p in (report / "flamegraphs").iterdir())
    assert any(g.startswith("diff-") for g in graphs), graphs
    assert len(graphs) == 3, graphs  # pg96, pg18, and the differential one
    html = (report / "report.html").read_text()
    assert "flamegraphs/" in html
    md = (report / "report.md").read_text()
    said = re.search(r"perf could not name some of the server's functions in (.*?)\. They are "
                     r"drawn as \\\[postgres\\\]", md)
    assert said, md
    assert re.fullmatch(r"pg96 · 1 client \((\d+)% of the samples pass through such a frame, "
                        r"(\d+)% end in one\)", said.group(1)), said.group(1)
    assert "perf could not name some of the server&#x27;s functions in pg96 · 1 client" in html


def test_without_perf_the_trial_says_so(pg17, workdir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (workdir / "prof.yaml").write_text(STUDY.replace('  - {name: pg18, install: "18"}\n', ""))
    store = workdir / "noperf.db"
    monkeypatch.setenv("TEITEN_PERF", "/nonexistent/perf")  # run_cli passes os.environ on
    done = run_cli("run", str(workdir / "prof.yaml"), "--store", str(store), "--report",
                   str(workdir / "noperf-report"))
    assert done.returncode == 0, done.stderr
    with sqlite3.connect(store) as conn:
        rows = conn.execute("SELECT clients, status, notes FROM trials ORDER BY clients").fetchall()
    assert [(c, s) for c, s, _ in rows] == [(1, "ok"), (2, "ok")]
    assert "perf is not installed" in rows[0][2]
    assert "profile" not in rows[1][2]
    assert not _profiles(store)
    # The report says so too, with the reason, instead of leaving the profile out silently.
    md = " ".join((workdir / "noperf-report" / "report.md").read_text().split())
    assert ("Profiles: 1 of 1 profiled trials gave no flame graph or hottest functions: profile "
            "requested, but it cannot be taken: perf is not installed (Debian: apt-get install "
            "linux-perf)") in md, md


LARGEST = STUDY.replace("study: prof", "study: prof-largest").replace(
    "profile: {points: [{clients: 1}]}", "profile: {at: largest-difference}").replace(
    "repetitions: 1", "repetitions: 2")


@pytest.mark.requires(None if shutil.which("perf") else "perf is not installed here")
def test_after_the_blocks_the_point_of_largest_difference_is_profiled(
        pg17, pg18, workdir: Path) -> None:  # noqa: ANN001
    """profile: {at: largest-difference} (issue 23): no block trial is profiled; after the
    blocks, every server is profiled at the client count where the medians differ most, in
    trials that the report's figures leave out; the report says where and why."""
    (workdir / "largest.yaml").write_text(LARGEST)
    planned = run_cli("plan", str(workdir / "largest.yaml"), check=True).stderr
    assert "after the blocks, 2 profile trials: every server at each workload's point" in planned
    assert " of wall time for 10 trials (" in planned  # 8 of the blocks and those 2
    store = workdir / "largest.db"
    done = run_cli("run", str(workdir / "largest.yaml"), "--store", str(store), "--report",
                   str(workdir / "report"), "--lang", "en")
    assert done.returncode == 0, done.stderr
    rows = json.loads(run_cli("results", "--store", str(store), "--format", "json",
                              check=True).stdout)
    blocks = [r for r in rows if r["purpose"] == ""]
    extra = [r for r in rows if r["purpose"] == "profile"]
    assert len(blocks) == 8 and len(extra) == 2
    assert min(r["order_index"] for r in extra) > max(r["order_index"] for r in blocks)
    # the point: the largest |log ratio| of pg18's median TPS to pg17's, from the block trials
    def median_tps(server: str, clients: int) -> float:
        return statistics.median(r["tps"] for r in blocks
                                 if r["server"] == server and r["clients"] == clients)
    far = max((1, 2), key=lambda c: abs(math.log(median_tps("pg18", c) / median_tps("pg17", c))))
    assert {(r["server"], r["clients"]) for r in extra} == {("pg17", far), ("pg18", far)}
    assert f"pgecons-read: the servers differ most at clients={far} (pg18 at " in done.stderr
    profiles = _profiles(store)
    assert set(profiles) == {f"pg17/{far}", f"pg18/{far}"}
    assert all(int(p["samples"]) > 20 for p in profiles.values())  # type: ignore[call-overload]
    report = workdir / "report"
    assert (report / "flamegraphs" / f"diff-pg17-vs-pg18-pgecons-read-c{far}.svg").is_file()
    with (report / "tables" / "pgecons-read-tps.csv").open() as f:
        assert {row["n_ok"] for row in csv.DictReader(f)} == {"2"}  # the profile trials: none
    md = (report / "report.md").read_text()
    assert (f"Profiled after the blocks, at the client count where the servers differ most "
            f"({far} client{'s' if far > 1 else ''})") in md
    again = run_cli("resume", "--store", str(store), "--no-report")
    assert again.returncode == 0 and "nothing to resume" in again.stderr
