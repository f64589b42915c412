"""METHODS S7 on another host through ``teiten run``: a primary with a streaming standby,
asynchronous and synchronous (remote_apply), and two copies under Pgpool-II's native
replication with a Pgpool-II next to each, on a real sshd the test starts on loopback
(tests/sshd.py), with the system's PostgreSQL 15 "there": one pgbench per node started
together, the lag sampled each second, the host's system activity, and the S7 table."""

from __future__ import annotations

import json
import shutil
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest
from tests.conftest import TEST_HOME, pgpools_under, run_cli
from tests.sshd import Sshd, available, running_sshd

WHY_NOT = available()
pytestmark = pytest.mark.requires(WHY_NOT and f"sshd: {WHY_NOT}")

STUDY = """\
study: ssh-sr-e2e
servers:
  - {{name: sr-async, ssh: teiten-db1, ssh_config: {config}, install: "15", replicas: 1}}
  - {{name: sr-sync, ssh: teiten-db1, ssh_config: {config}, install: "15", replicas: 1,
      replication: sync, synchronous_commit: remote_apply}}
  - {{name: sr-native, ssh: teiten-db1, ssh_config: {config}, install: "15", replicas: 1,
      replication: native, pgpool: true}}
workloads: [pgecons-read, pgecons-update]
scale: 1
clients: [2]
duration: 2s
repetitions: 1
seed: 5
"""
REMOTE = Path("/var/lib/postgresql/.cache/teiten/clusters")


@pytest.fixture(scope="module")
def sshd() -> Iterator[Sshd]:
    with running_sshd() as found:
        yield found


@pytest.fixture(scope="module")
def finished(sshd: Sshd) -> dict[str, Any]:
    work = TEST_HOME / "work" / "e2e-ssh-sr"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    (work / "s.yaml").write_text(STUDY.format(config=sshd.config))
    done = run_cli("run", str(work / "s.yaml"), "--store", str(work / "r.db"),
                   "--report", str(work / "report"), timeout=600)
    conn = sqlite3.connect(work / "r.db")
    conn.row_factory = sqlite3.Row
    trials = {(r["server"], r["workload"]): dict(r) for r in conn.execute("SELECT * FROM trials")}
    details = {(r["trial_id"], r["kind"]): json.loads(r["body"])
               for r in conn.execute("SELECT * FROM details")}
    metrics = {(r["trial_id"], r["name"]): r["value"] for r in conn.execute("SELECT * FROM metrics")}
    sources = {(r["trial_id"], r["source"]) for r in conn.execute(
        "SELECT DISTINCT trial_id, source FROM series")}
    md = (work / "report" / "report.md").read_text() if done.returncode == 0 else ""
    return {"run": done, "trials": trials, "details": details, "metrics": metrics,
            "sources": sources, "md": md, "work": work}


def test_every_trial_runs_one_pgbench_per_node_on_the_host(finished: dict[str, Any]) -> None:
    done = finished["run"]
    assert done.returncode == 0, done.stderr
    assert "6 trials: 6 ok" in done.stderr, done.stderr
    for (server, workload), t in finished["trials"].items():
        load = finished["details"][(t["trial_id"], "load")]
        writes = workload == "pgecons-update"
        if server == "sr-native":  # one Pgpool-II next to each node, on the host
            assert load["nodes"] == ["pgpool0", "pgpool1"], load
        else:
            assert load["nodes"] == (["node0", "node1 (to the primary)"] if writes
                                     else ["node0", "node1"]), (server, load)
        assert all(p["transactions"] > 0 for p in load["parts"]), load
        assert sum(p["transactions"] for p in load["parts"]) == t["transactions"]
        assert load["skew_s"] < 1.0
        assert (t["trial_id"], "server-system") in finished["sources"]
        streaming = server != "sr-native"
        assert ((t["trial_id"], "replication") in finished["sources"]) == streaming


def test_sync_remote_apply_and_the_lag_over_ssh(finished: dict[str, Any]) -> None:
    def detail(server: str, kind: str) -> Any:
        return finished["details"][(finished["trials"][(server, "pgecons-update")]["trial_id"],
                                    kind)]

    assert {s["sync_state"] for s in detail("sr-sync", "replication").values()} <= {"sync",
                                                                                  "quorum"}
    assert {s["sync_state"] for s in detail("sr-async", "replication").values()} == {"async"}
    update = finished["trials"][("sr-async", "pgecons-update")]["trial_id"]
    assert (update, "replication_lag_bytes_max") in finished["metrics"]


def test_the_report_has_the_s7_table_and_nothing_is_left_there(
        finished: dict[str, Any]) -> None:
    md = finished["md"]
    assert md.count("Replication scale-out (S7)") == 2
    assert "| sr-async | async |" in md and "| sr-sync | sync (remote\\_apply) |" in md
    assert "Every node of a server runs on one machine (this one, or its ssh host, or ssh hosts of one" in md
    import csv
    with (finished["work"] / "report" / "tables" / "pgecons-update-scaleout.csv").open() as fh:
        rows = list(csv.DictReader(fh))
    assert sorted((r["server"], r["method"], r["pgpool"], r["nodes"]) for r in rows) == [
        ("sr-async", "async", "0", "2"), ("sr-native", "native", "1", "2"),
        ("sr-sync", "sync (remote_apply)", "0", "2")]
    assert "| sr-native | native + Pgpool-II | 2 |" in md
    assert all(float(r["total_tps"]) > 0 for r in rows)
    runs = list(REMOTE.glob("ssh-sr-e2e-*")) if REMOTE.exists() else []
    assert runs == []
    sockets = [p for p in Path("/tmp").glob("teiten-*") if (p / ".teiten-owned").exists()
               and "sockets of sr-" in (p / ".teiten-owned").read_text()]
    assert sockets == [], "the standbys' socket directories are removed"
    assert pgpools_under(REMOTE / "ssh-sr-e2e-") == set(), "no Pgpool-II is left on the host"


KILLED = """\
study: ssh-sr-killed
servers:
  - {{name: sr, ssh: teiten-db1, ssh_config: {config}, install: "15", replicas: 1}}
workloads: [pgecons-update]
scale: 1
clients: [1]
duration: 3s
repetitions: 2
order: sequential
"""


def test_a_killed_run_leaves_clusters_on_the_host_and_resume_stops_them(sshd: Sshd) -> None:
    from tests.conftest import postgres_processes_under, wait_for_pgbench
    from tests.integration.test_failures import _start, _trials

    work = TEST_HOME / "work" / "e2e-ssh-killed"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    (work / "s.yaml").write_text(KILLED.format(config=sshd.config))
    store = work / "r.db"
    proc = _start("run", str(work / "s.yaml"), "--store", str(store), "--no-report")
    wait_for_pgbench(proc, timeout=180)
    proc.kill()
    proc.communicate(timeout=30)
    assert [t["status"] for t in _trials(store)][0] == "running"
    (run,) = REMOTE.glob("ssh-sr-killed-*")
    left = postgres_processes_under(run)
    assert left, "a killed teiten leaves the primary and the standby running on the host"
    # The killed run's own (by the pid its marker names): another module's topology of a
    # server named sr may have one at the same time.
    sockets = [p for p in Path("/tmp").glob("teiten-*") if (p / ".teiten-owned").exists()
               and "sockets of sr" in (text := (p / ".teiten-owned").read_text())
               and f'"pid": {proc.pid},' in text]
    assert len(sockets) == 1
    controls = [d for d in Path("/tmp").glob("teiten-ssh-*")
                if f'"pid": {proc.pid},' in (d / ".teiten-owned").read_text()]
    masters = [p for p in psutil.process_iter(["name", "cmdline"]) if p.info["name"] == "ssh"
               and any(f"ControlPath={d}/master" in (p.info["cmdline"] or []) for d in controls)]
    assert masters, "the killed teiten's ssh master connection is left"

    done = run_cli("resume", "--store", str(store), "--no-report", timeout=600)
    assert done.returncode == 0, done.stderr
    assert "sr: killed leftover server processes" in done.stderr, done.stderr
    assert [t["status"] for t in _trials(store)] == ["ok", "ok"]
    assert not any(p.is_running() for p in left)
    assert not sockets[0].exists()
    assert list(REMOTE.glob("ssh-sr-killed-*")) == []
    # resume ends the killed run's ssh master connection (and says so, unless it had ended by
    # itself first, as on a slow machine): none is left.
    assert not any(p.is_running() for p in masters)
    assert not any(d.exists() for d in controls)
