"""``ssh`` servers with streaming standbys against a real sshd on 127.0.0.1: a primary and
two standbys made with pg_basebackup on the "remote" host (this machine, as the account
postgres), with PostgreSQL 15 from Debian there. Nothing is mocked."""

from __future__ import annotations

import os
import stat
import time
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from tests.conftest import pgpools_under, still_running
from tests.integration.test_ssh_server import PG15, REMOTE_HOME, SIZING, _on, _workload, pg15, sshd, why_not
from tests.sshd import Sshd

from teiten.drivers import load
from teiten.host import paths
from teiten.installs import Install
from teiten.monitors.replication import LagMonitor
from teiten.servers.ssh.host import SshHost
from teiten.servers.ssh.server import remove_leftovers
from teiten.servers.ssh.topology import SshTopologyServer
from teiten.spec import ServerSpec

__all__ = ["pg15", "sshd"]  # module fixtures, shared with test_ssh_server

pytestmark = pytest.mark.requires(why_not())


@pytest.fixture
def run_dir(teiten_home: Path) -> Iterator[Path]:
    path = paths.make_owned(paths.clusters_dir() / f"sshsr-{os.getpid()}-{time.monotonic_ns()}",
                            "integration test")
    yield path
    paths.remove_owned(path)


def _states(conninfo: str) -> dict[str, tuple[str, str, str]]:
    with psycopg.connect(conninfo) as conn:
        rows = conn.execute("SELECT application_name, state, sync_state, "
                            "current_setting('synchronous_commit') FROM pg_stat_replication")
        return {name: (state, sync, commit) for name, state, sync, commit in rows}


def test_sync_standbys_over_ssh_stream_take_reads_restore_and_leave_nothing(
        sshd: Sshd, pg15: Install, run_dir: Path) -> None:
    w = _workload("tpcb-like")
    spec = ServerSpec(name="sr", install="15", ssh=sshd.alias, ssh_config=str(sshd.config),
                      replicas=2, replication="sync", synchronous_commit="remote_apply")
    server = SshTopologyServer(*_on(spec), pg15, run_dir, SIZING)
    remote_base = REMOTE_HOME / ".cache" / "teiten" / "clusters" / run_dir.name
    try:
        server.prepare(w)
        slot = server.slots[w.key]
        assert [Path(n.data).parent.name for n in slot.nodes] == ["sr--tpcb-like", "node1", "node2"]
        assert slot.socket_dir is not None
        sockets = Path(slot.socket_dir)
        assert stat.S_IMODE(sockets.stat().st_mode) == 0o700 and (sockets / paths.MARKER).is_file()

        endpoint = server.begin_trial(w, "t1", prewarm=True)
        primary = server.lag_conninfo()
        assert primary is not None
        states = _states(primary)
        assert {n: s[:2] for n, s in states.items()} == {"node1": ("streaming", "quorum"),
                                                        "node2": ("streaming", "quorum")}
        assert {s[2] for s in states.values()} == {"remote_apply"}

        targets = server.targets()
        assert [t.node for t in targets] == ["node0", "node1 (to the primary)",
                                             "node2 (to the primary)"]
        assert {t.endpoint.port for t in targets} == {endpoint.port}

        lag = LagMonitor(primary)
        lag.start()
        together = load.run(pg15, [load.Client("here", ssh=None, pgbench=None)], targets, w,
                            sessions=2, threads=1, duration_s=2)
        lagged = lag.stop()
        assert [p.run.returncode for p in together.parts] == [0, 0, 0]
        assert all(p.run.output.transactions > 0 for p in together.parts)
        assert together.skew_s < 1.0
        assert lagged.series, "the lag monitor sampled the primary over TCP with the password"
        # remote_apply: what the primary committed is already visible on every standby.
        with psycopg.connect(endpoint.conninfo()) as conn:
            committed = conn.execute("SELECT count(*) FROM pgbench_history").fetchone()
        for node in slot.standbys:
            assert node.port is not None
            with psycopg.connect(host=endpoint.host, port=node.port, user="postgres",
                                 password=node.password, dbname=w.database) as conn:
                row = conn.execute("SELECT count(*) FROM pgbench_history").fetchone()
                assert row == committed and row is not None and row[0] > 0
        end = server.end_trial()
        assert end.crashed is None, end.crashed
        assert "## node2" in end.log and "started streaming WAL" in end.log

        # The next trial restores every node: the history is empty everywhere, and the
        # standbys stream again from their slots.
        server.begin_trial(w, "t2", prewarm=False)
        assert len(slot.restore_s) == 1
        for node in slot.nodes:
            assert node.port is not None
            with psycopg.connect(host=endpoint.host, port=node.port, user="postgres",
                                 password=node.password, dbname=w.database) as conn:
                assert conn.execute("SELECT count(*) FROM pgbench_history").fetchone() == (0,)
        # A standby killed during the trial fails it, by name.
        standby = slot.standbys[1]
        server.ssh.run([f"{PG15}/pg_ctl", "stop", "-D", standby.data, "-m", "immediate"],
                       timeout=60)
        end = server.end_trial()
        assert end.crashed == "node2 died during the trial"
        assert slot.broken
    finally:
        server.close()
    assert not remote_base.exists(), "close() removes the host's directories"
    assert slot.socket_dir is not None and not Path(slot.socket_dir).exists()


def test_pgpool_next_to_each_node_over_ssh_streaming_and_native(
        sshd: Sshd, pg15: Install, run_dir: Path) -> None:
    w = _workload("tpcb-like")
    remote_base = REMOTE_HOME / ".cache" / "teiten" / "clusters" / run_dir.name
    for mode in ("async", "native"):
        spec = ServerSpec(name=f"pool-{mode}", install="15", ssh=sshd.alias,
                          ssh_config=str(sshd.config), replicas=1, replication=mode, pgpool=True)
        server = SshTopologyServer(*_on(spec), pg15, run_dir, SIZING, max_clients=2)
        try:
            server.prepare(w)
            slot = server.slots[w.key]
            server.begin_trial(w, "t1", prewarm=False)
            targets = server.targets()
            assert [t.node for t in targets] == ["pgpool0", "pgpool1"]
            assert len({t.endpoint.port for t in targets}) == 2
            pools = server.pgpools
            assert [p.root for p in pools] == [f"{slot.root}/logs/t1/pgpool{i}" for i in (0, 1)]
            # Each pgpool balances its reads to its own node; the roles are pgpool's own view.
            nodes = pools[1].pool_nodes()
            assert [(n["lb_weight"], n["role"]) for n in nodes] == (
                [("0.000000", "primary"), ("1.000000", "standby")] if mode == "async"
                else [("0.000000", "main"), ("1.000000", "replica")])
            # pgpool checks this client's password itself (scram against pool_passwd).
            with pytest.raises(psycopg.OperationalError):
                psycopg.connect(host=targets[0].endpoint.host, port=targets[0].endpoint.port,
                                user="postgres", password="wrong", dbname=w.database,
                                connect_timeout=5).close()

            together = load.run(pg15, [load.Client("here")], targets, w, sessions=2, threads=1,
                                duration_s=1)
            assert [p.run.returncode for p in together.parts] == [0, 0], together.parts[0].run.stderr
            assert all(p.run.output.transactions > 0 for p in together.parts)
            # Every write reached the primary; with native replication, every node too.
            time.sleep(0.5)  # an asynchronous standby catches up
            counts = []
            for node in slot.nodes:
                assert node.port is not None
                with psycopg.connect(host="127.0.0.1", port=node.port, user="postgres",
                                     password=node.password, dbname=w.database) as conn:
                    row = conn.execute("SELECT count(*) FROM pgbench_history").fetchone()
                    assert row is not None
                    counts.append(row[0])
            assert counts[0] == sum(p.run.output.transactions for p in together.parts)
            assert counts == [counts[0]] * 2
            assert (server.lag_conninfo() is None) == (mode == "native")

            passwd = Path(pools[0].root) / "pool_passwd"
            assert stat.S_IMODE(passwd.stat().st_mode) == 0o600
            end = server.end_trial()
            assert end.crashed is None, end.crashed
            assert "## pgpool1" in end.log and not passwd.exists()
            assert pgpools_under(remote_base) == set()

            # A killed run: its pgpool and clusters on the host are stopped by the cleanup.
            server.begin_trial(w, "t2", prewarm=False)
            mine = pgpools_under(remote_base)
            assert len(mine) >= 2 * 4  # main, logger, children, pcp
            said = remove_leftovers(SshHost(spec.name, sshd.alias, str(sshd.config)), run_dir.name)
            assert sum("killed leftover Pgpool-II" in s for s in said) == 2, said
            time.sleep(0.5)
            assert still_running(mine) == set(), "no child of a killed pgpool outlives it"
            assert not remote_base.exists()
            server.pgpools = []
            server.slots.clear()
        finally:
            server.close()
        assert pgpools_under(remote_base) == set()


def test_a_9_6_primary_and_standby_over_ssh_made_by_the_hosts_newer_pg_basebackup(
        sshd: Sshd, pg15: Install, pg96: Install, run_dir: Path) -> None:
    """Before 10 an ssh server authenticates with md5 and its standby gets recovery.conf; the
    Maven build has no pg_basebackup, so the host's newest (Debian's 15) makes the standby."""
    assert not pg96.has("pg_basebackup")
    w = _workload("tpcb-like")
    spec = ServerSpec(name="old", install=str(pg96.bindir), ssh=sshd.alias,
                      ssh_config=str(sshd.config), replicas=1, replication="sync",
                      synchronous_commit="remote_apply")
    server = SshTopologyServer(*_on(spec), pg15, run_dir, SIZING)
    try:
        server.prepare(w)
        slot = server.slots[w.key]
        assert server.install is not None and server.install.version.startswith("9.6.")
        assert server.host is not None
        hba = (Path(slot.data) / "pg_hba.conf").read_text()
        assert f"host all all {server.host.client_ip}/32 md5" in hba, hba
        standby = Path(slot.standbys[0].data)
        assert not (standby / "standby.signal").exists()

        endpoint = server.begin_trial(w, "t1", prewarm=True)
        recovery = (standby / "recovery.conf").read_text()
        assert "standby_mode = 'on'" in recovery and "primary_slot_name = 'node1'" in recovery
        primary = server.lag_conninfo()
        assert primary is not None
        states = _states(primary)
        assert states == {"node1": ("streaming", "sync", "remote_apply")}, states
        together = load.run(pg15, [load.Client("here")], server.targets(), w, sessions=2,
                            threads=1, duration_s=1)
        assert [p.run.returncode for p in together.parts] == [0, 0], together.parts[0].run.stderr
        with psycopg.connect(endpoint.conninfo()) as conn:
            committed = conn.execute("SELECT count(*) FROM pgbench_history").fetchone()
        node = slot.standbys[0]
        with psycopg.connect(host=endpoint.host, port=node.port, user="postgres",
                             password=node.password, dbname=w.database) as conn:
            assert conn.execute("SELECT count(*) FROM pgbench_history").fetchone() == committed
        end = server.end_trial()
        assert end.crashed is None, end.crashed
        # The next start writes recovery.conf again, with the primary's new port.
        server.begin_trial(w, "t2", prewarm=False)
        assert f"port={slot.port}" in (standby / "recovery.conf").read_text()
        assert _states(server.lag_conninfo() or "")["node1"][:2] == ("streaming", "sync")
        assert server.end_trial().crashed is None
    finally:
        server.close()
