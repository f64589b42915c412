"""Real clusters of two majors, side by side, with snapshots and layered teardown."""

from __future__ import annotations

import os
import time
from pathlib import Path

import psutil
import pytest

from teiten.host import paths
from teiten.servers.cluster import Cluster
from teiten.servers.local.server import LocalServer
from teiten.servers.profiles import Sizing
from teiten.spec import InitdbOptions, ServerSpec
from teiten.workloads import BUILTINS, Workload

SIZING = Sizing(ram_bytes=24 << 30, disk_free_bytes=50 << 30, max_clients=4, data_bytes=30 << 20)


def _workload(name: str) -> Workload:
    b = BUILTINS[name]
    return Workload(name, b.scripts, 1, b.fillfactor, b.modifies_data, b.description)


@pytest.fixture
def run_dir(teiten_home: Path):  # noqa: ANN201
    path = paths.make_owned(paths.clusters_dir() / f"test-{os.getpid()}-{time.monotonic_ns()}",
                            "integration test")
    yield path
    paths.remove_owned(path)


def test_two_majors_run_side_by_side(pg17, pg18, run_dir: Path) -> None:
    servers = [LocalServer(ServerSpec(name=f"pg{i.major}", install=str(i.major)), i, run_dir,
                           SIZING) for i in (pg17, pg18)]
    w = _workload("select-only")
    try:
        endpoints = []
        for s in servers:
            s.prepare(w)
            endpoints.append(s.begin_trial(w, "t1", prewarm=True))
        # Both run at once, on different ports and private socket directories.
        assert endpoints[0].port != endpoints[1].port
        assert endpoints[0].host != endpoints[1].host
        versions = []
        for s in servers:
            cluster = s.slots[w.key].cluster
            with cluster.connect(w.database) as conn:
                versions.append(conn.execute("SHOW server_version_num").fetchone()[0][:2])
                n = conn.execute("SELECT count(*) FROM pgbench_accounts").fetchone()[0]
                assert n == 100_000
            pid = cluster.postmaster_pid()
            assert pid is not None
            if os.geteuid() == 0:  # PostgreSQL refuses root: it runs as the server account
                assert psutil.Process(pid).username() != "root"
        assert versions == ["17", "18"]
        ends = [s.end_trial() for s in servers]
        for end in ends:
            assert end.crashed is None
            assert "database system is ready to accept connections" in end.log
        described = servers[0].describe()
        assert described["version"] == pg17.version
        assert described["settings"]["autovacuum"]["setting"] == "off"
        assert described["settings"]["checkpoint_timeout"]["setting"] == "3600"
        assert "CONFIGURE" in described["pg_config"]
    finally:
        for s in servers:
            s.close()
    assert [p.name for p in run_dir.iterdir()] == [paths.MARKER], "close() leaves nothing"


def test_snapshot_restores_the_same_data_after_updates(pg17, run_dir: Path) -> None:
    w = _workload("pgecons-update")
    server = LocalServer(ServerSpec(name="pg17", install="17"), pg17, run_dir, SIZING)
    try:
        server.prepare(w)
        cluster = server.slots[w.key].cluster

        def read() -> tuple[str, int]:
            with cluster.connect(w.database) as conn:
                row = conn.execute("SELECT md5(string_agg(filler, '' ORDER BY aid)), "
                                   "(SELECT count(*) FROM pgbench_accounts WHERE filler "
                                   "LIKE '%0%') FROM pgbench_accounts").fetchone()
                return row[0], row[1]

        server.begin_trial(w, "t1", prewarm=False)
        before = read()
        with cluster.connect(w.database) as conn:
            conn.execute("UPDATE pgbench_accounts SET filler = 'changed0' WHERE aid <= 1000")
        assert read() != before
        server.end_trial()
        server.begin_trial(w, "t2", prewarm=False)  # the update workload restores first
        assert read() == before
        server.end_trial()
        assert server.slots[w.key].restore_s, "a restore was timed"
        # The fillfactor of S2 is in the snapshot.
        server.begin_trial(w, "t3", prewarm=False)
        with cluster.connect(w.database) as conn:
            opts = conn.execute("SELECT reloptions FROM pg_class WHERE relname = "
                                "'pgbench_accounts'").fetchone()[0]
        assert opts == ["fillfactor=80"]
        server.end_trial()
    finally:
        server.close()


def test_checksums_and_separate_wal(pg18, run_dir: Path, teiten_home: Path) -> None:
    waldir = teiten_home / "work" / f"wal-{os.getpid()}"
    waldir.mkdir(parents=True, exist_ok=True)
    keep = waldir / "users-file.txt"
    keep.write_text("not teiten's")
    results = {}
    try:
        for checksums in (False, True):
            root = run_dir / f"c{int(checksums)}"
            paths.make_owned(root, "test")
            wal = paths.make_owned(waldir / f"teiten-test-{int(checksums)}", "wal") / "pg_wal"
            cluster = Cluster(pg18, root)
            cluster.initdb(InitdbOptions(data_checksums=checksums), waldir=wal)
            cluster.start(root / "logs")
            with cluster.connect() as conn:
                results[checksums] = conn.execute("SHOW data_checksums").fetchone()[0]
            cluster.stop()
            assert (cluster.data / "pg_wal").is_symlink()
            assert paths.remove_owned(wal.parent)
            if cluster.socket_dir:
                paths.remove_owned(cluster.socket_dir)
        # 18 turns checksums on by default: false must really mean off.
        assert results == {False: "off", True: "on"}
        assert keep.read_text() == "not teiten's"
        assert paths.remove_owned(waldir) is False, "no marker: the user's directory stays"
        assert waldir.exists()
    finally:
        keep.unlink()
        waldir.rmdir()


def test_stop_kills_the_tree_when_the_postmaster_is_gone(pg17, run_dir: Path) -> None:
    root = paths.make_owned(run_dir / "k", "test")
    cluster = Cluster(pg17, root)
    cluster.initdb(InitdbOptions())
    cluster.start(root / "logs")
    try:
        pid = cluster.postmaster_pid()
        assert pid is not None
        children = psutil.Process(pid).children()
        assert children
        psutil.Process(pid).kill()  # the postmaster dies; its children are orphaned
        psutil.wait_procs([psutil.Process(pid)], timeout=10)
        cluster.stop(timeout=10)
        gone, alive = psutil.wait_procs(children, timeout=10)
        assert not alive
    finally:
        cluster.stop(timeout=10)
        if cluster.socket_dir:
            paths.remove_owned(cluster.socket_dir)


def test_initdb_locale_and_encoding(pg17, run_dir: Path) -> None:
    root = paths.make_owned(run_dir / "loc", "test")
    cluster = Cluster(pg17, root)
    cluster.initdb(InitdbOptions(locale="C.UTF-8"))
    cluster.start(root / "logs")
    try:
        with cluster.connect() as conn:
            row = conn.execute("SELECT datcollate, pg_encoding_to_char(encoding) FROM pg_database "
                               "WHERE datname = 'postgres'").fetchone()
        assert row == ("C.UTF-8", "UTF8")
    finally:
        cluster.stop()
        if cluster.socket_dir:
            paths.remove_owned(cluster.socket_dir)


def test_a_backend_crash_fails_the_trial_and_the_server_stops_at_once(pg17,
                                                                       run_dir: Path) -> None:
    """A backend killed by a signal makes the postmaster restart every other one: the trial
    is marked crashed from the log, the server is stopped without waiting on a fast
    shutdown through crash recovery, and the next trial starts from the snapshot."""
    w = _workload("select-only")
    server = LocalServer(ServerSpec(name="pg17", install="17"), pg17, run_dir, SIZING)
    try:
        server.prepare(w)
        server.begin_trial(w, "t1", prewarm=False)
        cluster = server.slots[w.key].cluster
        with cluster.connect(w.database) as conn:
            backend = conn.execute("SELECT pg_backend_pid()").fetchone()[0]
            psutil.Process(backend).kill()
            time.sleep(1)
        started = time.monotonic()
        end = server.end_trial()
        took = time.monotonic() - started
        assert end.crashed is not None and "restarted after a crash" in end.crashed
        assert "terminated by signal 9" in end.log
        assert not any("fast shutdown failed" in n for n in end.notes)
        assert took < 30, f"stopping after the crash took {took:.0f} s"
        assert server.slots[w.key].broken
        server.begin_trial(w, "t2", prewarm=False)  # restored from the snapshot
        assert server.end_trial().crashed is None
    finally:
        server.close()
