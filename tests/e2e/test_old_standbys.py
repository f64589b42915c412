"""Streaming standbys of PostgreSQL before 12 (issue 19; the 2016 report's S7 ran 9.6, whose
remote_apply was new) through ``teiten run``: Maven's 9.6 (synchronous, remote_apply) and 10
(asynchronous) builds, which have no pg_basebackup, made into a primary and a standby by the
pg_basebackup of the study's pgbench install (18), configured by recovery.conf, slots made by
SQL, 9.6's ``n (names)`` in synchronous_standby_names; the lag monitor's byte positions on
9.6 (no lag times there); nothing left behind."""

from __future__ import annotations

import json
import shutil
import sqlite3
from typing import Any

import pytest
from tests.conftest import TEST_HOME, clusters_snapshot, postgres_processes_under, run_cli

STUDY = """\
study: old-standbys-e2e
pgbench: "pypi:18"
servers:
  - {name: pg96-sync, install: "maven:9.6", replicas: 1, replication: sync,
     synchronous_commit: remote_apply}
  - {name: pg10-async, install: "maven:10", replicas: 1, replication: async}
workloads:
  - {name: pgecons-update, fillfactor: 80}
scale: 1
clients: [2]
duration: 2s
repetitions: 1
seed: 7
"""


@pytest.fixture(scope="module")
def finished() -> dict[str, Any]:
    work = TEST_HOME / "work" / "e2e-old-standbys"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    (work / "s.yaml").write_text(STUDY)
    before = clusters_snapshot("old-standbys-e2e")
    done = run_cli("run", str(work / "s.yaml"), "--store", str(work / "r.db"),
                   "--report", str(work / "report"), "--lang", "en", timeout=900)
    conn = sqlite3.connect(work / "r.db")
    conn.row_factory = sqlite3.Row
    trials = {r["server"]: dict(r) for r in conn.execute("SELECT * FROM trials")}
    details = {(r["trial_id"], r["kind"]): json.loads(r["body"])
               for r in conn.execute("SELECT * FROM details")}
    metrics = {(r["trial_id"], r["name"]): r["value"] for r in conn.execute("SELECT * FROM metrics")}
    spec = json.loads(conn.execute("SELECT spec_json FROM studies").fetchone()[0])
    versions = {r["name"]: json.loads(r["description"])["version"]
                for r in conn.execute("SELECT name, description FROM servers")}
    return {"run": done, "trials": trials, "details": details, "metrics": metrics, "spec": spec,
            "versions": versions, "md": (work / "report" / "report.md").read_text()
            if done.returncode == 0 else "",
            "before": before, "after": clusters_snapshot("old-standbys-e2e")}


def test_standbys_of_9_6_and_10_stream_and_nothing_is_left(finished: dict[str, Any]) -> None:
    done = finished["run"]
    assert done.returncode == 0, done.stderr
    assert "2 trials: 2 ok" in done.stderr, done.stderr
    assert finished["after"] == finished["before"]
    assert not postgres_processes_under(TEST_HOME / "clusters")
    assert finished["spec"]["pgbench"]["version"].startswith("18.")
    for server, version in (("pg96-sync", "9.6."), ("pg10-async", "10.")):
        t = finished["trials"][server]
        load = finished["details"][(t["trial_id"], "load")]
        assert [p["node"] for p in load["parts"]] == ["node0", "node1 (to the primary)"], load
        assert all(p["transactions"] > 0 for p in load["parts"]), load
        start = finished["details"][(t["trial_id"], "cycle")]["start"]
        assert start["data"] == "as loaded", start
        assert finished["versions"][server].startswith(version)
    # The report's answer names what the ratio is against, and claims nothing of one repetition.
    assert ("pgecons-update: pg10-async against pg96-sync: cannot tell at 2 clients: one "
            "repetition gives no interval.") in finished["md"]


def test_9_6_waits_for_its_standby_and_its_lag_is_in_bytes(finished: dict[str, Any]) -> None:
    sync = finished["trials"]["pg96-sync"]["trial_id"]
    states = finished["details"][(sync, "replication")]
    assert states == {"node1": {**states["node1"], "state": "streaming", "sync_state": "sync"}}
    assert (sync, "replication_lag_bytes_max") in finished["metrics"]
    assert (sync, "replication_replay_lag_ms_max") not in finished["metrics"]  # 9.6 has no times
    lagging = finished["trials"]["pg10-async"]["trial_id"]
    assert finished["details"][(lagging, "replication")]["node1"]["sync_state"] == "async"
    assert (lagging, "replication_lag_bytes_max") in finished["metrics"]
