"""An ``ssh`` server with streaming standbys (METHODS S7 on another host): a primary and
``replicas`` standbys, all on the ssh host, asynchronous or synchronous.

It is prepared as an ssh server's single cluster (initdb, settings, load), then each standby
is a ``pg_basebackup`` of the running primary, with its own replication slot; every node is
saved and restored together. Each trial starts the primary, then the standbys, waits until
every standby streams (and for sync, counts for commits), and gives one pgbench per node:
reads to each node, writes to the primary, as on this machine (servers/topology.py).

The standbys reach the primary through a unix socket in a directory of mode 0700 that
teiten creates on the host (``mktemp -d``), where pg_hba.conf trusts replication
connections: only the host account that runs the clusters can open it, and no password is
written to a file. Every client connection still comes over TCP with the cluster's
in-memory password. Pgpool-II over ssh is not supported (the spec refuses it).
"""

from __future__ import annotations

import logging
from pathlib import Path

from psycopg.conninfo import make_conninfo

from teiten import paths
from teiten.drivers.load import Target
from teiten.errors import ServerError
from teiten.installs import Install
from teiten.servers import profiles
from teiten.servers.base import Endpoint, TrialEnd
from teiten.servers.cluster import SUPERUSER
from teiten.servers.replication import (
    REPLICATION_STATES,
    Mode,
    node_name,
    primary_settings,
    standby_settings,
    wait_for_standbys,
)
from teiten.servers.ssh import SshServer, _marker, _Slot
from teiten.servers.topology import node_targets
from teiten.spec import ServerSpec
from teiten.workloads import Workload

log = logging.getLogger(__name__)

# $1 the marker's text: a new private directory for the sockets, printed.
_SOCKET_DIR = f"""\
set -e
d=$(mktemp -d /tmp/teiten-XXXXXXXX)
printf '%s' "$1" > "$d/{paths.MARKER}"
echo "$d"
"""


class SshTopologyServer(SshServer):
    """A primary and ``spec.replicas`` streaming standbys on the host ``spec.ssh``."""

    def __init__(self, spec: ServerSpec, client: Install, run_dir: Path,
                 sizing: profiles.Sizing):
        super().__init__(spec, client, run_dir, sizing)
        self.workload: Workload | None = None

    @property
    def mode(self) -> Mode:
        return self.spec.replication

    def _save(self, slot: _Slot) -> None:
        """Make the standbys from the loaded primary, then save every node."""
        self._socket_dir(slot)
        self.ssh.write_text(f"{slot.data}/pg_hba.conf", append=True, text=(
            "# the standbys, through the socket directory of mode 0700 (this account only)\n"
            "local replication all trust\n"))
        self._start(slot, f"{slot.root}/logs/build", extra=self._primary_settings())
        try:
            for i in range(1, self.spec.replicas + 1):
                slot.standbys.append(self._base_backup(slot, i))
        finally:
            self._stop_nodes(slot)
        super()._save(slot)

    def _socket_dir(self, slot: _Slot) -> None:
        made = self.ssh.shell(_SOCKET_DIR, _marker(f"sockets of {self.name}"), timeout=30,
                              what="creating the socket directory").stdout.strip()
        self._created.append(made)
        slot.socket_dir = made

    def _base_backup(self, primary: _Slot, index: int) -> _Slot:
        name = node_name(index)
        node = _Slot(root=f"{primary.root}/{name}", database=primary.database,
                     password=primary.password, socket_dir=primary.socket_dir)
        assert primary.socket_dir is not None and primary.port is not None
        self.ssh.run(["mkdir", node.root], timeout=30)
        # -c fast: a spread checkpoint could take most of checkpoint_timeout. -C -S: the
        # slot keeps the WAL from the backup's start on, however long the standby is down.
        self._pg("pg_basebackup", "-D", node.data, "-h", primary.socket_dir,
                 "-p", str(primary.port), "-U", SUPERUSER, "-X", "stream", "-c", "fast",
                 "-C", "-S", name, "--no-sync", timeout=3600, what=f"pg_basebackup for {name}")
        self.ssh.run(["touch", f"{node.data}/standby.signal"], timeout=30)
        return node

    def _primary_settings(self) -> list[str]:
        return primary_settings(self.mode, self.spec.replicas + 1,
                                self.spec.synchronous_commit or "on",
                                wal_level=self.settings.get("wal_level"))

    # -- trials ----------------------------------------------------------------------------

    def begin_trial(self, workload: Workload, trial_id: str, *, prewarm: bool) -> Endpoint:
        self.workload = workload
        return super().begin_trial(workload, trial_id, prewarm=prewarm)

    def _start_nodes(self, slot: _Slot, log_dir: str) -> None:
        try:
            self._start(slot, f"{log_dir}/{node_name(0)}", extra=self._primary_settings())
            assert slot.socket_dir is not None and slot.port is not None
            for i, node in enumerate(slot.standbys, start=1):
                self._start(node, f"{log_dir}/{node_name(i)}",
                            extra=standby_settings(i, slot.socket_dir, slot.port))
            self._wait_streaming(slot)
        except BaseException:
            self._stop_nodes(slot, fast=False)
            raise

    def _wait_streaming(self, slot: _Slot, *, timeout: float = 60) -> None:
        def states() -> dict[str, tuple[str, str]]:
            with self._connect(slot) as conn:
                return {name: (state, sync)
                        for name, state, sync in conn.execute(REPLICATION_STATES)}

        try:
            wait_for_standbys(states, len(slot.standbys), self.mode, timeout=timeout)
        except ServerError as exc:
            raise ServerError(f"{self._where()}: {exc}") from None

    def targets(self) -> list[Target]:
        """One pgbench per node: reads to the node, writes to the primary."""
        assert self.current is not None and self.workload is not None
        return node_targets([self._endpoint(node, self.workload.database)
                             for node in self.current.nodes],
                            writes=self.workload.modifies_data)

    def lag_conninfo(self) -> str | None:
        """The primary, whose pg_stat_replication the lag monitor samples (the password is
        in this string, in memory only)."""
        slot = self.current
        assert slot is not None and self.host is not None
        return make_conninfo(host=self.host.server_ip, port=slot.port, user=SUPERUSER,
                             password=slot.password, dbname="postgres")

    def end_trial(self) -> TrialEnd:
        self.workload = None
        return super().end_trial()
