"""A primary and its standby in one qemu guest (issue 36 item 2, and the host layer of issue 37
item 1): the vm kind builds the same replicated topology an ssh host runs
(servers/ssh/topology.py) on a :class:`~teiten.servers.vm.server.VmHost`, with no code of its own for
it. Under qemu's emulation (``tcg``): the standby streams from the primary inside the guest,
pgbench on this machine reaches both through the guest's loopback port forwards, a write on
the primary reaches the standby, and closing the server stops the guest. Real mmdebstrap, qemu,
sshd, PostgreSQL 17 and pgbench; nothing mocked."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import psutil
import psycopg
import pytest
from tests.integration.test_vm_guest import WHY_NOT

from teiten.drivers import load
from teiten.host import paths
from teiten.servers import kinds
from teiten.servers.kind import Request
from teiten.servers.profiles import Sizing
from teiten.servers.ssh.topology import SshTopologyServer
from teiten.spec import ServerSpec
from teiten.workloads import BUILTINS, Workload

pytestmark = [pytest.mark.slow, pytest.mark.requires(WHY_NOT)]

SIZING = Sizing(ram_bytes=1 << 30, disk_free_bytes=20 << 30, max_clients=2, data_bytes=30 << 20)


def _workload(name: str) -> Workload:
    b = BUILTINS[name]
    return Workload(name, b.scripts, 1, b.fillfactor, b.modifies_data, b.description)


def test_a_primary_and_a_standby_in_one_guest(pg17: Any, teiten_home: Path) -> None:  # noqa: ANN401
    run_dir = paths.make_owned(teiten_home / "clusters" / f"vmtopo-{psutil.Process().pid}",
                               "a test's run directory")
    spec = ServerSpec(name="vmsr", install="17", replicas=1,
                      vm={"memory": "1GB", "accelerator": "tcg"})
    server = kinds.build(Request(spec, pg17, run_dir, SIZING, client=pg17))
    assert isinstance(server, SshTopologyServer)
    w = _workload("tpcb-like")
    try:
        server.prepare(w)
        endpoint = server.begin_trial(w, "t1", prewarm=False)
        primary = server.lag_conninfo()
        assert primary is not None
        with psycopg.connect(primary, connect_timeout=30) as conn:
            states = conn.execute("SELECT state FROM pg_stat_replication").fetchall()
        assert states == [("streaming",)]
        targets = server.targets()
        assert [t.node for t in targets] == ["node0", "node1 (to the primary)"]
        together = load.run(pg17, [load.Client("here", ssh=None, pgbench=None)], targets, w,
                            sessions=1, threads=1, duration_s=2)
        assert [p.run.returncode for p in together.parts] == [0, 0], together.parts[0].run.stderr
        written = sum(p.run.output.transactions for p in together.parts)
        assert written > 0
        # every write went to the primary (tpcb-like: one history row a transaction)
        with psycopg.connect(endpoint.conninfo(), connect_timeout=30) as conn:
            row = conn.execute("SELECT count(*) FROM pgbench_history").fetchone()
        assert row is not None and row[0] == written
        end = server.end_trial()
        assert end.crashed is None, end.crashed
        description = server.describe()
        assert description["host"]["vm"]["emulated"] is True
    finally:
        server.close()
        paths.remove_owned(run_dir)
    assert server.on.pids() == []
