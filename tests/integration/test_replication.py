"""Streaming replication topologies on real PostgreSQL 15 clusters (METHODS S7): standbys
that stream, lag under updates, synchronous commits with remote_apply, and a snapshot of
the whole topology restored after writes."""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import psutil
import pytest
from psycopg.conninfo import make_conninfo
from tests.requirements import missing

from teiten.host import paths, procs
from teiten.host.waiting import wait_until
from teiten.installs import Install
from teiten.model.errors import ServerError
from teiten.monitors.replication import LagMonitor
from teiten.servers.cluster import SUPERUSER, Cluster
from teiten.servers.replication import Mode, Topology
from teiten.spec import InitdbOptions


@pytest.fixture(scope="module")
def pg15(teiten_home: Path) -> Install:
    from teiten.installs import find_all

    found = [i for i in find_all() if i.major == 15 and i.origin == "system"]
    if not found:
        missing("PostgreSQL 15 from the system is not installed")
    return found[0]


def pgbench(install: Install, host: str, port: int, *args: str) -> procs.Completed:
    return procs.run([str(install.binary("pgbench")), "-h", host, "-p", str(port),
                      "-U", SUPERUSER, *args, "postgres"], timeout=120, what="pgbench")


def count(cluster: Cluster, table: str = "pgbench_history") -> int:
    with cluster.connect() as conn:
        row = conn.execute(f"SELECT count(*) FROM {table}").fetchone()  # noqa: S608 - fixed names
        assert row is not None
        return int(row[0])


def leftovers(root: Path) -> list[psutil.Process]:
    """Processes (postgres or pgpool) working in ``root`` or started with a path in it."""
    prefix = os.path.realpath(root)
    found = []
    for proc in psutil.process_iter(["pid"]):
        try:
            if proc.cwd().startswith(prefix) or any(prefix in a for a in proc.cmdline()):
                found.append(proc)
        except psutil.Error:
            continue
    return found


@contextmanager
def scratch_root(name: str) -> Iterator[Path]:
    """A marked directory for one test; afterwards nothing may run in it, and it goes."""
    root = paths.make_owned(paths.clusters_dir() / f"{name}-{uuid.uuid4().hex[:8]}",
                            "replication test")
    try:
        yield root
    finally:
        left = leftovers(root)
        paths.remove_owned(root)
        assert not left, f"processes left under {root}: {[p.pid for p in left]}"
        assert not root.exists()


@contextmanager
def topology(install: Install, root: Path, mode: Mode, replicas: int,
             synchronous_commit: str | None = None) -> Iterator[Topology]:
    """A built topology (stopped) whose primary holds pgbench's tables at scale 1."""
    topo = Topology(install, root, replicas=replicas, mode=mode,
                    synchronous_commit=synchronous_commit)
    sockets: list[Path] = []
    try:
        primary = topo.primary
        primary.initdb(InitdbOptions())
        primary.configure({"fsync": "off", "autovacuum": "off"})
        primary.start(root / "logs" / "prepare")
        pgbench(install, primary.host, primary.port or 0, "-i", "-s", "1", "-q")
        topo.build()
        assert not any(node.is_running() for node in topo.nodes), "build leaves all stopped"
        yield topo
    finally:
        sockets = [n.socket_dir for n in topo.nodes if n.socket_dir is not None]
        topo.close()
        assert not any(s.exists() for s in sockets), "close removes the socket directories"
        assert not any(n.root.exists() for n in topo.nodes), "close removes the node directories"


def log_dirs(root: Path) -> Callable[[int], Path]:
    return lambda i: root / "logs" / f"node{i}"


def test_async_standbys_stream_and_lag_under_updates(pg15: Install) -> None:
    with scratch_root("repl-async") as root, topology(pg15, root, "async", 2) as topo:
        topo.start(log_dirs(root))
        assert topo.is_running()
        states = topo.replication_state()
        assert states == {"node1": ("streaming", "async"), "node2": ("streaming", "async")}
        for standby in topo.standbys:
            with standby.connect() as conn:
                assert conn.execute("SELECT pg_is_in_recovery()").fetchone() == (True,)
        ports = [port for _, port in topo.endpoints]
        assert len(set(ports)) == 3

        primary = topo.primary
        monitor = LagMonitor(make_conninfo(host=primary.host, port=primary.port, user=SUPERUSER,
                                           dbname="postgres"), interval=0.25)
        monitor.start()
        pgbench(pg15, primary.host, primary.port or 0, "-N", "-c", "2", "-T", "3", "-n")
        result = monitor.stop()
        assert result.warnings == []
        lag = [v for _, name, v in result.series if name.endswith(".lag_bytes")]
        assert max(lag) > 0, "an update load leaves the standbys behind at some sample"
        assert {name.split(".")[0] for _, name, _ in result.series} == {"node1", "node2"}
        assert result.summary["lag_bytes_max"] >= result.summary["lag_bytes_mean"] >= 0
        assert {n: (s["state"], s["sync_state"]) for n, s in result.states.items()} == states
        # A NULL lag time is no measurement: it never turns up as a 0 in the series.
        assert all(v is not None for _, _, v in result.series)

        notes = topo.stop()
        assert notes == []
        # A restart puts every node on a new port: the standbys follow the primary.
        topo.start(log_dirs(root))
        assert [port for _, port in topo.endpoints] != ports
        assert count(topo.standbys[1]) == count(primary) > 0


def test_lag_monitor_survives_a_failed_sample(pg15: Install) -> None:
    with scratch_root("repl-monitor") as root, topology(pg15, root, "async", 1) as topo:
        topo.start(log_dirs(root))
        primary = topo.primary
        monitor = LagMonitor(make_conninfo(host=primary.host, port=primary.port, user=SUPERUSER,
                                           dbname="postgres"), interval=0.2)
        monitor.start()
        with primary.connect() as conn:  # kill the monitor's connection
            conn.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                         "WHERE application_name = 'teiten monitor'")
        before = monitor.result.samples
        wait_until(lambda: monitor.result.samples >= before + 3, timeout=10,
                   what="three samples after the failed one")
        result = monitor.stop()
        assert len(result.warnings) >= 1 and "failed" in result.warnings[0]
        assert result.samples >= before + 3, "sampling goes on after a failure"
        assert result.states["node1"]["state"] == "streaming"


def test_sync_remote_apply_makes_commits_visible_on_every_standby(pg15: Install) -> None:
    with scratch_root("repl-sync") as root, topology(pg15, root, "sync", 2, "remote_apply") as topo:
        topo.start(log_dirs(root))
        states = topo.replication_state()
        assert set(states) == {"node1", "node2"}
        assert all(s == "streaming" and y in ("sync", "quorum") for s, y in states.values())
        with topo.primary.connect() as conn:
            assert conn.execute("SHOW synchronous_commit").fetchone() == ("remote_apply",)
            assert conn.execute("SHOW synchronous_standby_names").fetchone() == (
                "ANY 2 (node1, node2)",)
            conn.execute("CREATE TABLE seen (id int)")
            with topo.standbys[0].connect() as s1, topo.standbys[1].connect() as s2:
                for i in range(20):
                    conn.execute("INSERT INTO seen VALUES (%s)", (i,))
                    # remote_apply: the commit returned after both standbys applied it.
                    for standby in (s1, s2):
                        got = standby.execute("SELECT count(*) FROM seen WHERE id = %s",
                                              (i,)).fetchone()
                        assert got == (1,), f"row {i} not visible on a standby after commit"


def test_snapshot_restores_every_node_after_writes(pg15: Install) -> None:
    with scratch_root("repl-snap") as root, topology(pg15, root, "async", 1) as topo:
        snap = root / "snapshot"
        topo.snapshot(snap)
        topo.start(log_dirs(root))
        primary, standby = topo.nodes
        pgbench(pg15, primary.host, primary.port or 0, "-N", "-c", "2", "-T", "2", "-n")
        written = count(primary)
        assert written > 0
        assert topo.stop() == []
        with pytest.raises(ServerError, match="while a node runs"):
            primary.start(root / "logs" / "node0")
            try:
                topo.restore(snap)
            finally:
                primary.stop()
        topo.restore(snap)
        topo.start(log_dirs(root))
        assert topo.replication_state() == {"node1": ("streaming", "async")}
        assert count(primary) == 0 and count(standby) == 0
        # And the standby follows new writes again.
        with primary.connect() as conn:
            conn.execute("INSERT INTO pgbench_history (tid, bid, aid, delta) VALUES (1, 1, 1, 1)")
            lsn = conn.execute("SELECT pg_current_wal_lsn()").fetchone()
        assert lsn is not None
        with standby.connect() as conn:
            wait_until(lambda: conn.execute("SELECT pg_last_wal_replay_lsn() >= %s::pg_lsn",
                                            (lsn[0],)).fetchone() == (True,),
                       timeout=30, what="the standby to replay the new row")
        assert count(standby) == 1
