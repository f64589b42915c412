"""A ``local`` server of several nodes (METHODS S7): a primary with streaming standbys, or
independent copies kept equal by Pgpool-II's native replication, with a Pgpool-II next to
each node when the study asks for it.

It is prepared like a single cluster (initdb, settings, load, on the primary), then the
other nodes are made from the loaded primary and the whole topology is snapshotted; before
a trial that follows a data-changing one, every node is restored. Each trial starts every
node, waits until every standby streams (and, for sync, counts for commits), prewarms every
node and starts the Pgpool-IIs. The trial's load is one pgbench per node, all at once: to
the node's Pgpool-II, or without Pgpool-II reads to each node and writes to the primary.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Literal

from psycopg.conninfo import make_conninfo

from teiten.host import paths, procs
from teiten.installs import Install
from teiten.model.errors import TeitenError
from teiten.servers import profiles
from teiten.servers.base import DataSet, Endpoint, Target, TrialEnd, crash_verdict
from teiten.servers.cluster import SUPERUSER, Cluster
from teiten.servers.local.server import LocalServer, fresh_programs, restored_data
from teiten.servers.pgpool import RUN_DIR, Pgpool, main_pid, start_all, stop_all
from teiten.servers.replication import Mode, Topology, node_name
from teiten.servers.sql import settle
from teiten.spec import ServerSpec

log = logging.getLogger(__name__)


class TopologyServer(LocalServer):
    kind = "local"

    def __init__(self, spec: ServerSpec, install: Install, run_dir: Path, sizing: profiles.Sizing,
                 *, connect: str = "socket", cpus: list[int] | None = None,
                 max_clients: int = 1, client: Install | None = None):
        super().__init__(spec, install, run_dir, sizing, connect=connect, cpus=cpus, client=client)
        self.topologies: dict[str, Topology] = {}
        self.pgpools: list[Pgpool] = []
        self.max_clients = max_clients  # per Pgpool-II: the trial's clients times load clients
        self.workload: DataSet | None = None

    # -- preparing: the primary as a single cluster, then the other nodes ------------------

    def _new_cluster(self, root: Path, workload: DataSet) -> Cluster:
        mode: Mode = self.spec.replication if self.spec.replicas else "native"
        topology = Topology(self.install, root, replicas=self.spec.replicas, mode=mode,
                            synchronous_commit=self.spec.synchronous_commit, client=self.client)
        self.topologies[workload.key] = topology
        return topology.primary

    def _save(self, cluster: Cluster, root: Path, workload: DataSet) -> Path:
        topology = self.topologies[workload.key]
        try:
            # Streaming: base backups of the running primary; native: copies of the stopped
            # one. Either way every node is stopped afterwards.
            topology.build()
        except BaseException:
            topology.stop()
            raise
        topology.snapshot(root / "snapshot")
        return root / "snapshot"

    def _discard(self, cluster: Cluster | None, root: Path, made: list[Path]) -> None:
        """Every node of the failed preparation's topology, then what the primary leaves."""
        topology = next((t for t in self.topologies.values() if t.primary is cluster), None)
        try:
            if topology is not None:
                topology.close()
        finally:
            self.topologies = {k: t for k, t in self.topologies.items() if t is not topology}
            super()._discard(cluster, root, made)

    # -- trials ----------------------------------------------------------------------------

    def begin_trial(self, workload: DataSet, trial_id: str, *, prewarm: bool) -> Endpoint:
        slot = self.slots[workload.key]
        topology = self.topologies[workload.key]
        self.current, self.workload = slot, workload
        cycle = self.cycle
        if any(node.is_running() for node in topology.nodes):
            with cycle.phase("stop_leftover"):
                topology.stop()  # left over from an interrupted trial
        restored_data(slot, topology, cycle, self.keep_data)
        logs = slot.cluster.root.parent / "logs" / trial_id
        with cycle.phase("start"):
            fresh_programs(self.install, cycle)
            topology.start(lambda i: logs / node_name(i))
        cycle.start.server = "restarted"
        for node in topology.nodes:
            with node.connect(workload.database) as conn:
                settle(conn, cycle, prewarm=prewarm)
        slot.dirty = workload.modifies_data
        slot.trials += 1
        if self.spec.pgpool:
            self._start_pgpools(topology, logs)
        return self._endpoint(topology.primary, workload)

    def _endpoint(self, node: Cluster, workload: DataSet) -> Endpoint:
        assert node.port is not None
        host = node.tcp_host if self.tcp else node.host
        return Endpoint(host=host, port=node.port, user=SUPERUSER, dbname=workload.database)

    def _start_pgpools(self, topology: Topology, logs: Path) -> None:
        """A Pgpool-II next to each node: reads balanced to that node alone (weight 1 for it,
        0 for the others); writes to the primary, or with native replication to all."""
        n = len(topology.nodes)
        mode: Literal["streaming", "native"] = "streaming" if topology.streaming else "native"
        start_all((Pgpool(logs.parent.parent / f"pgpool{i}-{logs.name}", topology.endpoints, mode=mode,
                          max_clients=self.max_clients, weights=[1.0 if j == i else 0.0 for j in range(n)])
                   for i in range(n)), self.pgpools.append, self._stop_pgpools)

    def _stop_pgpools(self) -> tuple[str, list[str]]:
        stopped = stop_all(self.pgpools)
        self.pgpools = []
        return stopped

    def targets(self) -> list[Target]:
        """One pgbench per node: to its Pgpool-II; without one, reads to the node and
        writes to the primary."""
        topology = self._topology()
        assert self.workload is not None
        if self.pgpools:
            return [Target(f"pgpool{i}", Endpoint(host="127.0.0.1" if self.tcp else pool.host,
                                                  port=pool.port or 0,
                                                  user=SUPERUSER, dbname=self.workload.database))
                    for i, pool in enumerate(self.pgpools)]
        return node_targets([self._endpoint(node, self.workload) for node in topology.nodes],
                            writes=self.workload.modifies_data and topology.streaming)

    def lag_conninfo(self) -> str | None:
        """The primary, whose pg_stat_replication the lag monitor samples."""
        topology = self._topology()
        if not topology.streaming:
            return None
        primary = topology.primary
        return make_conninfo(host=primary.host, port=primary.port, user=SUPERUSER,
                             dbname="postgres")

    def _topology(self) -> Topology:
        assert self.workload is not None, "outside a trial"
        return self.topologies[self.workload.key]

    def end_trial(self) -> TrialEnd:
        slot, workload = self.current, self.workload
        if slot is None or workload is None:
            return TrialEnd()
        self.current = self.workload = None
        pool_log, notes = self._stop_pgpools()
        topology = self.topologies[workload.key]
        crashed = crash_verdict({node_name(i): node.is_running()
                                 for i, node in enumerate(topology.nodes)}, topology.read_logs())
        with self.cycle.phase("stop"):
            notes += topology.stop(fast=crashed is None)
        logs = topology.read_logs()
        text = "".join(f"\n## {name}\n{body}" for name, body in logs.items()) + pool_log
        if crashed:
            slot.broken = True
        return TrialEnd(log=text, crashed=crashed, notes=notes)

    def server_pid(self) -> int | None:
        return None  # several postmasters: no single process to profile or confine

    def server_pids(self) -> list[int]:
        """Every node's postmaster: the noise guard counts their processes as the trial's."""
        if self.workload is None:
            return []
        return [pid for node in self._topology().nodes if (pid := node.postmaster_pid())]

    def log_mark(self) -> int | None:
        return None

    def close(self) -> None:
        self._stop_pgpools()
        for key, topology in list(self.topologies.items()):
            try:
                topology.close()
            except (TeitenError, OSError) as exc:
                log.warning("closing the topology of %s/%s: %s", self.name, key, exc)
            del self.topologies[key]
        for slot in self.slots.values():
            paths.remove_owned(slot.cluster.root.parent)
        self.slots.clear()
        super().close()


def node_targets(endpoints: list[Endpoint], *, writes: bool) -> list[Target]:
    """One pgbench per node (the primary's endpoint first): each node's own when the
    workload only reads, the primary's when it writes (standbys take no writes)."""
    return [Target(node_name(i) + (" (to the primary)" if writes and i else ""),
                   endpoints[0] if writes else endpoint)
            for i, endpoint in enumerate(endpoints)]


def kill_leftover_pgpool(instance: Path) -> list[str]:
    """Kill the Pgpool-II a killed run left in the directory ``instance`` (found by the pid
    file there when it names a process run with the instance's config file, else by that
    command line: :func:`teiten.servers.pgpool.main_pid`)."""
    pid = main_pid(instance / "pgpool.conf", instance / RUN_DIR / "pgpool.pid")
    if pid is None:
        return []
    killed = procs.kill_tree(pid)
    return [f"killed leftover Pgpool-II {pid} in {instance}"] if killed else []
