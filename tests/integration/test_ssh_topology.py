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
from tests.integration.test_ssh_server import PG15, REMOTE_HOME, SIZING, _workload, pg15, sshd
from tests.sshd import Sshd, available

from teiten import paths
from teiten.drivers import load
from teiten.installs import Install
from teiten.monitors.replication import LagMonitor
from teiten.servers.ssh_topology import SshTopologyServer
from teiten.spec import ServerSpec

__all__ = ["pg15", "sshd"]  # module fixtures, shared with test_ssh_server

pytestmark = pytest.mark.skipif(available() is not None or not (PG15 / "postgres").exists(),
                                reason=available() or "PostgreSQL 15 is not at /usr/lib/postgresql/15")


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
    server = SshTopologyServer(spec, pg15, run_dir, SIZING)
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
