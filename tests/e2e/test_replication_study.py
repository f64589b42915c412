"""METHODS S7 through ``teiten run``: topologies of real clusters (streaming standbys made
with pg_basebackup, async and sync with remote_apply; independent copies under Pgpool-II's
native replication) with a real Pgpool-II next to each node, one pgbench per node started
together; the replication lag recorded every second; the S7 table in the report."""

from __future__ import annotations

import sqlite3
from contextlib import closing
from typing import Any

import pytest
from tests.conftest import TEST_HOME, postgres_processes_under
from tests.studyrun import run_study

from teiten.servers import pgpool

WHY_NOT = pgpool.available()
pytestmark = pytest.mark.requires(WHY_NOT and f"Pgpool-II: {WHY_NOT}")

STUDY = """\
study: s7-e2e
servers:
  - {name: single, install: "15", pgpool: true}
  - {name: native-2, install: "15", replicas: 1, replication: native, pgpool: true}
  - {name: async-2, install: "15", replicas: 1, replication: async, pgpool: true}
  - {name: sync-2, install: "15", replicas: 1, replication: sync,
     synchronous_commit: remote_apply, pgpool: true}
  - {name: async-direct, install: "15", replicas: 1}
workloads:
  - pgecons-read
  - {name: pgecons-update, fillfactor: 80}
scale: 1
clients: [2]
duration: 2s
repetitions: 1
seed: 7
"""


@pytest.fixture(scope="module")
def finished() -> dict[str, Any]:
    found = run_study("s7-e2e", STUDY, work="e2e-s7",
                      key=lambda r: (r["server"], r["workload"]))
    with closing(sqlite3.connect(found["store"])) as conn:
        conn.row_factory = sqlite3.Row
        found["series"] = [dict(r) for r in conn.execute(
            "SELECT * FROM series WHERE source = 'replication'")]
    return found


def _detail(f: dict[str, Any], server: str, workload: str, key: str) -> Any:
    return f["details"].get((f["trials"][(server, workload)]["trial_id"], key))


def test_every_topology_runs_and_nothing_is_left(finished: dict[str, Any]) -> None:
    done = finished["run"]
    assert done.returncode == 0, done.stderr
    assert "10 trials: 10 ok" in done.stderr, done.stderr
    assert finished["after"] == finished["before"]
    assert not postgres_processes_under(TEST_HOME / "clusters" / "s7-e2e-")  # its own clusters


def test_one_pgbench_per_node_started_together(finished: dict[str, Any]) -> None:
    for server, nodes in (("single", 1), ("native-2", 2), ("async-2", 2), ("sync-2", 2),
                          ("async-direct", 2)):
        for workload in ("pgecons-read", "pgecons-update"):
            t = finished["trials"][(server, workload)]
            load = _detail(finished, server, workload, "load")
            assert load is not None and len(load["parts"]) == nodes, (server, load)
            assert load["skew_s"] < 1.0
            parts = load["parts"]
            assert sum(p["transactions"] for p in parts) == t["transactions"]
            assert all(p["transactions"] > 0 for p in parts), parts
            assert t["tps"] == pytest.approx(sum(p["tps"] for p in parts))
    pooled = _detail(finished, "async-2", "pgecons-read", "load")["nodes"]
    assert pooled == ["pgpool0", "pgpool1"]
    direct = _detail(finished, "async-direct", "pgecons-update", "load")["nodes"]
    assert direct == ["node0", "node1 (to the primary)"]


def test_sync_remote_apply_and_the_lag_are_recorded(finished: dict[str, Any]) -> None:
    states = _detail(finished, "sync-2", "pgecons-update", "replication")
    assert states and all(s["sync_state"] in ("sync", "quorum") for s in states.values()), states
    async_states = _detail(finished, "async-2", "pgecons-update", "replication")
    assert async_states and all(s["sync_state"] == "async" for s in async_states.values())
    trial = finished["trials"][("async-2", "pgecons-update")]["trial_id"]
    lag = [s for s in finished["series"] if s["trial_id"] == trial and s["name"].endswith("lag_bytes")]
    assert len(lag) >= 2  # one sample a second over the 2 s window
    assert (trial, "replication_lag_bytes_max") in finished["metrics"]
    # native copies have no standbys: no lag monitor
    native = finished["trials"][("native-2", "pgecons-update")]["trial_id"]
    assert (native, "replication_lag_bytes_max") not in finished["metrics"]


def test_the_report_has_the_s7_table(finished: dict[str, Any]) -> None:
    md = finished["md"]
    assert md.count("Replication scale-out (S7)") == 2
    for method in ("native + Pgpool-II", "async + Pgpool-II", "sync (remote\\_apply) + Pgpool-II",
                   "single + Pgpool-II"):
        assert method in md
    assert "the total cannot grow with the number of nodes here" in md
