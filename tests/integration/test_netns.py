"""A real cluster of the system's PostgreSQL 15 in a network namespace teiten created,
reached over a veth pair (METHODS S5: host network vs a virtual network)."""

from __future__ import annotations

import ipaddress
import os
import socket
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest
from tests.conftest import TEST_HOME
from tests.requirements import missing

from teiten.host import netns, paths, procs
from teiten.installs import Install, find_all
from teiten.servers.cluster import Cluster
from teiten.spec import InitdbOptions

Placed = tuple[Cluster, netns.Namespace]
WHY_NOT = netns.available()
pytestmark = pytest.mark.requires(WHY_NOT and f"no network namespaces: {WHY_NOT}")


def _ip(*args: str) -> str:
    return subprocess.run(["ip", *args], capture_output=True, text=True, check=True,
                          timeout=15).stdout


def _net_of(pid: int) -> int:
    return os.stat(f"/proc/{pid}/ns/net").st_ino


def _in_namespace(pid: int, ns: netns.Namespace) -> bool:
    return _net_of(pid) == os.stat(netns.NETNS_DIR / ns.name).st_ino


def _refused(host: str, port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(3)
        return s.connect_ex((host, port)) != 0


@pytest.fixture(scope="module")
def pg15() -> Install:
    found = next((i for i in find_all() if i.major == 15 and i.origin == "system"), None)
    if found is None:
        missing("no system PostgreSQL 15 (Debian's /usr/lib/postgresql/15/bin) here")
    return found


@pytest.fixture(scope="module")
def placed(pg15: Install) -> Iterator[Placed]:
    """A started cluster inside a fresh namespace; all of it removed afterwards."""
    root = paths.make_owned(TEST_HOME / "clusters" / f"netns-{uuid.uuid4().hex[:8]}",
                            "cluster of test_netns")
    ns = netns.Namespace.create(f"test-{os.getpid()}")
    cluster = Cluster(pg15, root)
    cluster.netns = ns
    try:
        cluster.initdb(InitdbOptions())
        cluster.configure({})
        cluster.start(root / "logs" / "first")
        yield cluster, ns
    finally:
        cluster.stop()
        if cluster.socket_dir is not None:
            paths.remove_owned(cluster.socket_dir)
        paths.remove_owned(root)
        ns.close()


def test_the_postmaster_and_its_children_run_inside_as_the_account(placed: Placed) -> None:
    cluster, ns = placed
    pid = cluster.postmaster_pid()
    assert pid is not None
    assert _in_namespace(pid, ns)
    assert _net_of(pid) != _net_of(os.getpid())
    assert _ip("netns", "identify", str(pid)).strip() == ns.name
    with cluster.connect():  # a backend, forked for this connection
        children = psutil.Process(pid).children()
        assert children
        assert all(_in_namespace(c.pid, ns) for c in children)
    assert psutil.Process(pid).username() == "postgres"
    assert psutil.Process(pid).gids().real != 0


def test_it_listens_on_the_namespace_address_only(placed: Placed) -> None:
    cluster, ns = placed
    assert cluster.tcp_host == ns.address != "127.0.0.1"
    with cluster.connect(tcp=True) as conn:
        row = conn.execute("SELECT host(inet_server_addr()), host(inet_client_addr()), "
                           "current_setting('listen_addresses')").fetchone()
    # The client comes from the root namespace's end of the veth pair.
    assert row == (ns.address, ns.host_address, ns.address)
    assert cluster.port is not None
    assert _refused("127.0.0.1", cluster.port)


def test_the_unix_socket_reaches_it_across_namespaces(placed: Placed) -> None:
    cluster, _ = placed
    with cluster.connect() as conn:
        row = conn.execute("SELECT inet_server_addr() IS NULL").fetchone()
    assert row == (True,)  # a unix-socket connection


def test_pgbench_over_the_veth_pair(placed: Placed, pg15: Install) -> None:
    cluster, ns = placed
    pgbench = str(pg15.binary("pgbench"))
    procs.run([pgbench, "-i", "-s", "1", "-q", "-h", cluster.host, "-p", str(cluster.port),
               "-U", "postgres", "postgres"], timeout=60)
    done = procs.run([pgbench, "-S", "-T", "2", "-h", ns.address, "-p", str(cluster.port),
                      "-U", "postgres", "postgres"], timeout=30)
    assert "number of failed transactions: 0" in done.stdout
    tps = [line for line in done.stdout.splitlines() if line.startswith("tps = ")]
    assert tps and float(tps[0].split()[2]) > 0


def test_a_second_start_is_in_the_namespace_too(placed: Placed) -> None:
    cluster, ns = placed
    first = cluster.postmaster_pid()
    cluster.stop()
    assert not cluster.is_running()
    assert cluster.log_dir is not None
    cluster.start(cluster.log_dir.parent / "second")
    pid = cluster.postmaster_pid()
    assert pid is not None and pid != first
    assert _in_namespace(pid, ns)
    with cluster.connect(tcp=True) as conn:
        assert conn.execute("SELECT host(inet_server_addr())").fetchone() == (ns.address,)
    assert cluster.port is not None
    assert _refused("127.0.0.1", cluster.port)


def test_close_removes_the_namespace_and_the_veth_pair() -> None:
    ns = netns.Namespace.create(f"close-{os.getpid()}")
    try:
        assert ns.name in _ip("netns", "list")
        assert ns.host_if in _ip("-o", "link")
        assert f"{ns.address}/30" in _ip("-n", ns.name, "-o", "addr")
        assert ns.name.startswith(f"teiten-close-{os.getpid()}-")
        assert len(ns.host_if) <= 15 and len(ns.inner_if) <= 15
    finally:
        ns.close()
    assert ns.name not in _ip("netns", "list")
    assert ns.host_if not in _ip("-o", "link")
    assert ns.host_address not in _ip("-o", "addr")
    ns.close()  # safe twice


def test_two_namespaces_get_different_addresses() -> None:
    first = netns.Namespace.create(f"two-{os.getpid()}")
    try:
        second = netns.Namespace.create(f"two-{os.getpid()}")
        try:
            assert {first.address, first.host_address}.isdisjoint(
                {second.address, second.host_address})
        finally:
            second.close()
    finally:
        first.close()


def test_remove_stale_deletes_what_a_killed_run_left(tmp_path: Path) -> None:
    run = f"study-{os.getpid()}-{uuid.uuid4().hex[:6]}"
    other = netns.Namespace.create(f"other-{run}")
    try:
        for server in ("a", "b"):
            netns.Namespace.create(f"{run}-{server}")  # never closed: the run was killed
        found = netns.leftovers(run + "-")
        assert len(found) == 2 and all(n.startswith(f"teiten-{run}-") for n in found)
        assert netns.remove_stale(run + "-") == found
        assert netns.leftovers(run + "-") == []
        listed = _ip("netns", "list")
        assert not any(n in listed for n in found)
        assert other.name in listed  # another run's namespace is left alone
        assert "tei" + found[0].rsplit("-", 1)[1] not in _ip("-o", "link")
    finally:
        other.close()


def test_a_bridged_namespace_holds_a_tap_and_the_veth_peer_on_one_bridge() -> None:
    """A VM guest's tap network (issue 57, item 9): the veth peer and a tap device are the
    ports of one bridge inside, the namespace has no address of its own, the block is a /29
    (the guest's address is the second), and closing it takes the bridge and the tap along."""
    ns = netns.Namespace.create_bridged(f"tap-{os.getpid()}")
    try:
        links = _ip("-n", ns.name, "-o", "link")
        assert ns.tap == "tap0" and "tap0" in links and "br0" in links
        assert all("master br0" in line for line in links.splitlines()
                   if line.split(":")[1].strip().split("@")[0] in ("tap0", ns.inner_if)), links
        assert "inet " not in _ip("-n", ns.name, "-o", "-4", "addr", "show", "scope", "global")
        assert f"{ns.host_address}/29" in _ip("-o", "addr", "show", ns.host_if)
        assert ns.prefix == 29
        assert ipaddress.ip_address(ns.address) == ipaddress.ip_address(ns.host_address) + 1
    finally:
        ns.close()
    assert ns.name not in _ip("netns", "list") and ns.host_if not in _ip("-o", "link")
    assert "tap0" not in _ip("-o", "link")  # the tap went with the namespace
    assert not netns.remove(ns.name)  # gone: nothing to remove
    assert not netns.remove("not-teitens")  # nor one teiten did not make
