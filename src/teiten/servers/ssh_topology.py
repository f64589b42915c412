"""An ``ssh`` server of several nodes (METHODS S7 on another host): a primary and
``replicas`` streaming standbys, asynchronous or synchronous, or copies kept equal by
Pgpool-II's native replication, all on the ssh host, with a Pgpool-II next to each node
when the study asks for it (servers/ssh_pgpool.py).

It is prepared as an ssh server's single cluster (initdb, settings, load), then each standby
is a ``pg_basebackup`` of the running primary, with its own replication slot; every node is
saved and restored together. Each trial starts the primary, then the standbys, waits until
every standby streams (and for sync, counts for commits), starts the Pgpool-IIs, and gives
one pgbench per node: to the node's Pgpool-II, or without one reads to each node and writes
to the primary, as on this machine (servers/topology.py).

The standbys (and the Pgpool-IIs) reach the nodes through unix sockets in a directory of
mode 0700 that teiten creates on the host (``mktemp -d``), where pg_hba.conf trusts local
connections: only the host account that runs the clusters can open it, and no password is
written to a file for them. Every client connection still comes over TCP with the cluster's
in-memory password.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
from pathlib import Path

from psycopg.conninfo import make_conninfo

from teiten import paths
from teiten.errors import ProcessError, ServerError
from teiten.installs import Install
from teiten.servers import profiles, ssh_pgpool
from teiten.servers.base import DataSet, Endpoint, Target, TrialEnd
from teiten.servers.cluster import SUPERUSER
from teiten.servers.replication import (
    REPLICATION_STATES,
    Mode,
    node_name,
    primary_settings,
    standby_files,
    standby_settings,
    wait_for_standbys,
)
from teiten.servers.scripts import script
from teiten.servers.ssh import SshServer
from teiten.servers.ssh_host import Host, cidr, find_basebackup, marker
from teiten.servers.ssh_pgpool import RemotePgpool
from teiten.servers.ssh_slot import Slot
from teiten.servers.topology import node_targets
from teiten.spec import ServerSpec

log = logging.getLogger(__name__)


class SshTopologyServer(SshServer):
    """A primary and ``spec.replicas`` streaming standbys on ``host``."""

    def __init__(self, spec: ServerSpec, host: Host, client: Install, run_dir: Path,
                 sizing: profiles.Sizing, *, max_clients: int = 1):
        super().__init__(spec, host, client, run_dir, sizing)
        self.workload: DataSet | None = None
        self.max_clients = max_clients  # per Pgpool-II: the trial's clients times load clients
        self.pgpool_binary: str | None = None
        self.pgpools: list[RemotePgpool] = []
        self.basebackup: str | None = None  # on the host: makes the standbys

    @property
    def mode(self) -> Mode:
        return self.spec.replication if self.spec.replicas else "native"

    @property
    def streaming(self) -> bool:
        return self.mode != "native"

    def prepare(self, workload: DataSet) -> None:
        if self.spec.pgpool and self.pgpool_binary is None:
            self.connect()
            self.pgpool_binary = ssh_pgpool.find(self.ssh)
        if self.streaming and self.basebackup is None:
            self.connect()
            self.basebackup = self._find_basebackup()
        super().prepare(workload)

    def _find_basebackup(self) -> str:
        """The host's pg_basebackup that makes the standbys (found before any data is
        loaded); refused in one line for a server before 9.6, or a host without one."""
        install = self.install
        assert install is not None
        if install.major < 10 and not install.version.startswith("9.6"):
            raise ServerError(f"{self._where()}: streaming standbys need PostgreSQL 9.6 or "
                              f"later, not {install.version}; use replication: native")
        found = find_basebackup(self.ssh, install)
        if found is None:
            major = "9.6" if install.major < 10 else str(install.major)
            raise ServerError(
                f"{self._where()}: standbys of PostgreSQL {install.version} are made with a "
                f"pg_basebackup of 10 or later and of {major} or later, and the host has none "
                "(in its install, /usr/lib/postgresql/*/bin or pg_config's bindir); install "
                f"one there, e.g. apt-get install postgresql-client-{max(17, install.major)}")
        return found

    def _save(self, slot: Slot) -> None:
        """Make the other nodes from the loaded primary (standbys: base backups of it
        running; native: copies of it stopped), then save every node."""
        self._socket_dir(slot)
        self.ssh.write_text(f"{slot.data}/pg_hba.conf", append=True, text=(
            "# the standbys and Pgpool-II, through the socket directory of mode 0700 (this\n"
            "# account only)\n"
            "local replication all trust\n"
            "local all all trust\n"))
        if not self.streaming:
            for i in range(1, self.spec.replicas + 1):
                slot.standbys.append(self._copy(slot, i))
            super()._save(slot)
            return
        assert self.basebackup is not None
        self._start(slot, f"{slot.root}/logs/build", extra=self._primary_settings())
        try:
            for i in range(1, self.spec.replicas + 1):
                slot.standbys.append(self._base_backup(slot, i, self.basebackup))
        finally:
            self._stop_nodes(slot)
        super()._save(slot)

    def _node(self, primary: Slot, index: int) -> Slot:
        node = Slot(root=f"{primary.root}/{node_name(index)}", database=primary.database,
                     password=primary.password, socket_dir=primary.socket_dir)
        self.ssh.run(["mkdir", node.root], timeout=30)
        return node

    def _copy(self, primary: Slot, index: int) -> Slot:
        """A copy of the stopped primary, for Pgpool-II's native replication."""
        node = self._node(primary, index)
        self.ssh.run(["cp", "-a", "--", primary.data, node.data], timeout=3600,
                     what=f"copying the primary for {node_name(index)}")
        return node

    def _socket_dir(self, slot: Slot) -> None:
        made = self.ssh.shell(script("socket_dir.sh"), paths.MARKER,
                              marker(f"sockets of {self.name}"), timeout=30,
                              what="creating the socket directory").stdout.strip()
        self._created.append(made)
        slot.socket_dir = made

    def _base_backup(self, primary: Slot, index: int, basebackup: str) -> Slot:
        name = node_name(index)
        node = self._node(primary, index)
        assert primary.socket_dir is not None and primary.port is not None
        # The slot, made first (by SQL, as on this machine: pg_basebackup -C needs a 10
        # server), keeps the WAL from the backup's start on, however long the standby is down.
        with self._connect(primary) as conn:
            conn.execute("SELECT pg_create_physical_replication_slot(%s, true)", (name,))
        try:
            # -c fast: a spread checkpoint could take most of checkpoint_timeout.
            self.ssh.run(["env", "LC_ALL=C", basebackup, "-D", node.data, "-h",
                          primary.socket_dir, "-p", str(primary.port), "-U", SUPERUSER,
                          "-X", "stream", "-c", "fast", "-S", name, "--no-sync"],
                         timeout=3600, what=f"pg_basebackup for {name}")
        except BaseException:  # the slot would hold the primary's WAL
            with contextlib.suppress(Exception), self._connect(primary) as conn:
                conn.execute("SELECT pg_drop_replication_slot(%s)", (name,))
            raise
        return node

    def _primary_settings(self) -> list[str]:
        assert self.install is not None
        return primary_settings(self.mode, self.spec.replicas + 1,
                                self.spec.synchronous_commit or "on",
                                wal_level=self.settings.get("wal_level"),
                                major=self.install.major)

    # -- trials ----------------------------------------------------------------------------

    def begin_trial(self, workload: DataSet, trial_id: str, *, prewarm: bool) -> Endpoint:
        self.workload = workload
        endpoint = super().begin_trial(workload, trial_id, prewarm=prewarm)
        if self.spec.pgpool:
            self._start_pgpools(self.slots[workload.key], trial_id)
        return endpoint

    def _start_pgpools(self, slot: Slot, trial_id: str) -> None:
        """A Pgpool-II next to each node: reads balanced to that node alone (weight 1 for it,
        0 for the others); writes to the primary, or with native replication to all."""
        assert self.host is not None and self.pgpool_binary is not None
        assert slot.socket_dir is not None
        backends = [(slot.socket_dir, node.port or 0) for node in slot.nodes]
        n = len(backends)
        try:
            for i in range(n):
                pool = RemotePgpool(
                    self.ssh, self.pgpool_binary, f"{slot.root}/logs/{trial_id}/pgpool{i}",
                    backends, mode="streaming" if self.streaming else "native",
                    max_clients=self.max_clients,
                    weights=[1.0 if j == i else 0.0 for j in range(n)],
                    socket_dir=slot.socket_dir, listen=self.host.server_ip,
                    client_cidr=cidr(self.host.client_ip), password=slot.password)
                self.pgpools.append(pool)
                pool.start()
        except BaseException:
            self._stop_pgpools()
            raise

    def _stop_pgpools(self) -> tuple[str, list[str]]:
        text, notes = [], []
        for i, pool in enumerate(self.pgpools):
            notes += [f"pgpool{i}: {n}" for n in pool.stop()]
            text.append(f"\n## pgpool{i}\n{pool.read_log()}")
        self.pgpools = []
        return "".join(text), notes

    def _start_nodes(self, slot: Slot, log_dir: str) -> None:
        try:
            if not self.streaming:  # independent copies
                for name, node in zip(slot.names, slot.nodes, strict=True):
                    self._start(node, f"{log_dir}/{name}")
                return
            self._start(slot, f"{log_dir}/{node_name(0)}", extra=self._primary_settings())
            assert slot.socket_dir is not None and slot.port is not None
            assert self.install is not None
            for i, node in enumerate(slot.standbys, start=1):
                name, text, settings = standby_files(
                    self.install.major, standby_settings(i, slot.socket_dir, slot.port))
                self.ssh.write_text(f"{node.data}/{name}", text)
                self._start(node, f"{log_dir}/{node_name(i)}", extra=settings)
            self._wait_streaming(slot)
        except BaseException:
            self._stop_nodes(slot, fast=False)
            raise

    def _wait_streaming(self, slot: Slot, *, timeout: float = 60) -> None:
        def states() -> dict[str, tuple[str, str]]:
            with self._connect(slot) as conn:
                return {name: (state, sync)
                        for name, state, sync in conn.execute(REPLICATION_STATES)}

        try:
            wait_for_standbys(states, len(slot.standbys), self.mode, timeout=timeout)
        except ServerError as exc:
            raise ServerError(f"{self._where()}: {exc}") from None

    def targets(self) -> list[Target]:
        """One pgbench per node: to its Pgpool-II; without one, reads to the node and
        writes to the primary."""
        assert self.current is not None and self.workload is not None
        if self.pgpools:
            return [Target(f"pgpool{i}", Endpoint(
                        *self.on.address(pool.port or 0), user=SUPERUSER,
                        dbname=self.workload.database,
                        password_env={"PGPASSWORD": self.current.password}))
                    for i, pool in enumerate(self.pgpools)]
        return node_targets([self._endpoint(node, self.workload.database)
                             for node in self.current.nodes],
                            writes=self.workload.modifies_data and self.streaming)

    def lag_conninfo(self) -> str | None:
        """The primary, whose pg_stat_replication the lag monitor samples (the password is
        in this string, in memory only); None for native copies."""
        slot = self.current
        assert slot is not None and slot.port is not None
        if not self.streaming:
            return None
        address, port = self.on.address(slot.port)
        return make_conninfo(host=address, port=port, user=SUPERUSER,
                             password=slot.password, dbname="postgres")

    def end_trial(self) -> TrialEnd:
        self.workload = None
        pool_log, notes = self._stop_pgpools()
        end = super().end_trial()
        return dataclasses.replace(end, log=end.log + pool_log, notes=notes + end.notes)

    def close(self) -> None:
        try:
            self._stop_pgpools()
        except (ProcessError, ServerError) as exc:
            log.warning("%s: stopping Pgpool-II: %s", self._where(), exc)
        super().close()
