"""``external`` servers: teiten connects, never reconfigures, and loads data only when
allowed, into a database of its own that it drops afterwards."""

from __future__ import annotations

import json
import os
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.conftest import run_cli

from teiten.host import paths
from teiten.servers.cluster import Cluster
from teiten.spec import InitdbOptions


@pytest.fixture
def outside(pg18, teiten_home: Path) -> Iterator[Cluster]:
    """A running server that the study under test does not control."""
    root = paths.make_owned(paths.clusters_dir() / f"outside-{os.getpid()}-{time.monotonic_ns()}",
                            "external server for a test")
    cluster = Cluster(pg18, root)
    cluster.initdb(InitdbOptions())
    cluster.start(root / "logs")
    try:
        yield cluster
    finally:
        cluster.stop()
        if cluster.socket_dir:
            paths.remove_owned(cluster.socket_dir)
        paths.remove_owned(root)


def _study(workdir: Path, cluster: Cluster, extra: str = "") -> Path:
    path = workdir / "ext.yaml"
    path.write_text(f"""
study: ext
servers:
  - {{name: cloud, external: "host=127.0.0.1 port={cluster.port} user=postgres dbname=postgres"{extra}}}
workloads: [select-only]
scale: 1
clients: [1]
duration: 1s
repetitions: 1
""")
    return path


def _databases(cluster: Cluster) -> set[str]:
    with cluster.connect() as conn:
        return {r[0] for r in conn.execute("SELECT datname FROM pg_database")}


def test_without_allow_init_teiten_refuses_to_load_data(outside: Cluster, workdir: Path) -> None:
    store = workdir / "ext.db"
    done = run_cli("run", str(_study(workdir, outside)), "--store", str(store), "--no-report")
    # The failed trial is recorded; no trial succeeded, so the run exits 1 (issue 18, item 6).
    assert done.returncode == 1, done.stderr
    assert "teiten: no trial succeeded" in done.stderr
    with sqlite3.connect(store) as conn:
        status, error = conn.execute("SELECT status, error FROM trials").fetchone()
    assert status == "failed"
    assert "has no table pgbench_accounts; load the select-only data yourself (pgbench -i)" in error
    assert "allow_init: true" in error
    assert _databases(outside) == {"postgres", "template0", "template1"}


def test_with_allow_init_teiten_loads_runs_and_drops_its_own_database(
        outside: Cluster, workdir: Path) -> None:
    with outside.connect() as conn:
        settings_before = conn.execute("SELECT name, setting FROM pg_settings ORDER BY 1").fetchall()
    store = workdir / "ext.db"
    done = run_cli("run", str(_study(workdir, outside, ", allow_init: true")), "--store",
                   str(store), "--no-report")
    assert done.returncode == 0, done.stderr
    rows = json.loads(run_cli("results", "--store", str(store), "--format", "json").stdout)
    assert [r["status"] for r in rows] == ["ok"]
    assert rows[0]["tps"] > 0
    assert _databases(outside) == {"postgres", "template0", "template1"}, "dropped afterwards"
    with outside.connect() as conn:
        settings_after = conn.execute("SELECT name, setting FROM pg_settings ORDER BY 1").fetchall()
    assert settings_after == settings_before, "an external server's settings are not touched"
    assert outside.is_running(), "an external server is never stopped"


def test_a_database_teiten_did_not_create_is_left_alone(outside: Cluster, workdir: Path) -> None:
    with outside.connect() as conn:
        conn.execute("CREATE DATABASE teiten_select_only")
    store = workdir / "ext.db"
    done = run_cli("run", str(_study(workdir, outside, ", allow_init: true")), "--store",
                   str(store), "--no-report")
    assert done.returncode == 1, done.stderr  # recorded, but no trial succeeded (issue 18)
    assert "teiten: no trial succeeded" in done.stderr
    with sqlite3.connect(store) as conn:
        status, error = conn.execute("SELECT status, error FROM trials").fetchone()
    assert status == "failed"
    assert "that teiten did not create; refusing to touch it" in error
    assert "teiten_select_only" in _databases(outside)


def test_tpcc_on_an_external_server_is_loaded_measured_and_dropped(
        outside: Cluster, workdir: Path) -> None:
    """S11 ran HammerDB against cloud services: tpcc on an external server with allow_init,
    loaded again before the second trial (load, vacuum, run, drop)."""
    path = _study(workdir, outside, ", allow_init: true").read_text().replace(
        "workloads: [select-only]", "workloads: [{name: tpcc, warehouses: 1, check_consistency: true}]"
    ).replace("repetitions: 1", "repetitions: 2")
    (workdir / "ext.yaml").write_text(path)
    store = workdir / "ext.db"
    done = run_cli("run", str(workdir / "ext.yaml"), "--store", str(store), "--no-report")
    assert done.returncode == 0, done.stderr
    with sqlite3.connect(store) as conn:
        found = [json.loads(r[0]) for r in conn.execute("SELECT body FROM details WHERE kind='app'")]
        statuses = [r[0] for r in conn.execute("SELECT status FROM trials")]
    assert statuses == ["ok", "ok"]
    assert all(d["nopm"] > 0 and [c["violations"] for c in d["consistency"]] == [0, 0, 0, 0]
               for d in found)
    assert _databases(outside) == {"postgres", "template0", "template1"}, "dropped afterwards"
