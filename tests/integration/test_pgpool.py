"""Pgpool-II 4.x in front of real PostgreSQL 15 topologies (METHODS S7): a pgpool next to
each node of a streaming pair reads from its own node and writes to the primary; native
replication writes to every copy; a pgpool that cannot start says why."""

from __future__ import annotations

import socket
from pathlib import Path

import psutil
import psycopg
import pytest
from tests.integration.test_replication import (
    count,
    leftovers,
    log_dirs,
    pgbench,
    scratch_root,
    topology,
)
from tests.requirements import missing

from teiten.installs import Install
from teiten.model.errors import ServerError
from teiten.servers import pgpool
from teiten.servers.cluster import SUPERUSER
from teiten.servers.pgpool import Pgpool


@pytest.fixture(scope="module")
def pg15(teiten_home: Path) -> Install:
    from teiten.installs import find_all

    why = pgpool.available()
    if why is not None:
        missing(why)
    found = [i for i in find_all() if i.major == 15 and i.origin == "system"]
    if not found:
        missing("PostgreSQL 15 from the system is not installed")
    return found[0]


def through(pool: Pgpool) -> psycopg.Connection:
    return psycopg.connect(host=pool.host, port=pool.port, user=SUPERUSER, dbname="postgres",
                           autocommit=True, connect_timeout=10)


def answering_port(pool: Pgpool) -> int:
    """The port of the backend that answers a SELECT through ``pool`` (current_setting is
    stable, so pgpool may balance it; pg_is_in_recovery() is volatile and would go to the
    primary)."""
    with through(pool) as conn:
        row = conn.execute("SELECT current_setting('port')").fetchone()
    assert row is not None
    return int(row[0])


def test_streaming_pgpool_next_to_each_node(pg15: Install) -> None:
    with scratch_root("pgpool-sr") as root, topology(pg15, root, "async", 1) as topo:
        topo.start(log_dirs(root))
        primary, standby = topo.nodes
        # One pgpool per node, each weighting its own node for reads (S7).
        pools = [Pgpool(root / f"pgpool{i}", topo.endpoints, mode="streaming", max_clients=2,
                        weights=[1 if j == i else 0 for j in range(2)]) for i in range(2)]
        try:
            for pool in pools:
                pool.start()
                nodes = pool.pool_nodes()
                assert [n["role"] for n in nodes] == ["primary", "standby"]
                assert all(n["status"] in ("up", "waiting") for n in nodes)
            assert pools[0].port != pools[1].port
            assert answering_port(pools[0]) == primary.port
            assert answering_port(pools[1]) == standby.port
            selects = int(pools[1].pool_nodes()[1]["select_cnt"])
            assert selects >= 1 and pools[1].pool_nodes()[0]["select_cnt"] == "0"

            # Writes through the standby's pgpool land on the primary.
            with through(pools[1]) as conn:
                conn.execute("CREATE TABLE via_pool (id int)")
                conn.execute("INSERT INTO via_pool VALUES (1)")
            assert count(primary, "via_pool") == 1

            done = pgbench(pg15, pools[1].host, pools[1].port or 0, "-S", "-c", "2", "-T", "2")
            assert "number of transactions actually processed" in done.stdout
            assert int(pools[1].pool_nodes()[1]["select_cnt"]) > selects + 100
        finally:
            sockets = [pool.socket_dir for pool in pools]
            for pool in pools:
                pool.close()
        assert not any(p.root.exists() for p in pools)
        assert not any(s.exists() for s in sockets if s is not None)


def test_native_replication_writes_to_every_copy(pg15: Install) -> None:
    with scratch_root("pgpool-native") as root, topology(pg15, root, "native", 1) as topo:
        topo.start(log_dirs(root))
        assert topo.replication_state() == {}, "native copies are independent clusters"
        with Pgpool(root / "pgpool", topo.endpoints, mode="native", max_clients=2) as pool:
            pool.start()
            with through(pool) as conn:
                conn.execute("CREATE TABLE via_pool (id int)")
                conn.execute("INSERT INTO via_pool VALUES (1)")
            assert [count(node, "via_pool") for node in topo.nodes] == [1, 1]

            pgbench(pg15, pool.host, pool.port or 0, "-N", "-c", "2", "-T", "2")
            counts = [count(node) for node in topo.nodes]
            assert counts[0] > 0 and counts[0] == counts[1]
            with topo.nodes[0].connect() as a, topo.nodes[1].connect() as b:
                sums = [c.execute("SELECT sum(abalance) FROM pgbench_accounts").fetchone()
                        for c in (a, b)]
            assert sums[0] == sums[1]
        assert not pool.root.exists()


def test_pgpool_on_a_taken_port_says_so(pg15: Install) -> None:
    with scratch_root("pgpool-fail") as root, socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        pool = Pgpool(root / "pgpool", [("127.0.0.1", 5999)], mode="streaming", max_clients=1,
                      port=port)
        try:
            with pytest.raises(ServerError) as failed:
                pool.start(timeout=30)
            message = str(failed.value)
            assert message.startswith(f"Pgpool-II in {pool.root} did not start: ")
            assert "Address already in use" in message and "\n" not in message
            assert f"port {port}" in message
            assert not pool.is_running()
            assert not [p for p in leftovers(root) if p.status() != psutil.STATUS_ZOMBIE]
        finally:
            pool.close()
        assert not pool.root.exists()


def test_available_names_the_package(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pgpool, "binary", lambda: None)
    why = pgpool.available()
    assert why is not None and "apt-get install pgpool2" in why


def test_pgpool_with_a_backend_down_says_which(pg15: Install) -> None:
    with scratch_root("pgpool-down") as root, socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        nothing = probe.getsockname()[1]  # bound, never listening: connections are refused
        pool = Pgpool(root / "pgpool", [("127.0.0.1", nothing)], mode="native", max_clients=1)
        try:
            with pytest.raises(ServerError, match=r"did not start: pgpool on port \d+ failed: "
                                                  r"FATAL:  failed to create a backend 0"):
                pool.start(timeout=30)
        finally:
            pool.close()
        assert not [p for p in leftovers(root) if p.status() != psutil.STATUS_ZOMBIE]
