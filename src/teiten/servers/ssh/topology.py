"""An ``ssh`` server of several nodes (METHODS S7 on another host): a primary and
``replicas`` streaming standbys, asynchronous or synchronous, or copies kept equal by
Pgpool-II's native replication, all on the ssh host, with a Pgpool-II next to each node
when the study asks for it (servers/ssh/pgpool.py).

It is prepared as an ssh server's single cluster (initdb, settings, load), then each standby
is a ``pg_basebackup`` of the running primary, with its own replication slot; every node is
saved and restored together. Each trial starts the primary, then the standbys, waits until
every standby streams (and for sync, counts for commits), starts the Pgpool-IIs, and gives
one pgbench per node: to the node's Pgpool-II, or without one reads to each node and writes
to the primary, as on this machine (servers/local/topology.py).

The standbys (and the Pgpool-IIs) reach the nodes through unix sockets in a directory of
mode 0700 that teiten creates on the host (``mktemp -d``), where pg_hba.conf trusts local
connections: only the host account that runs the clusters can open it, and no password is
written to a file for them. Every client connection still comes over TCP with the cluster's
in-memory password.

Spread over hosts (``ssh: [db1, db2, ...]``, one per node: METHODS S7 across machines), node N
lives on host N in a directory of its own there (``<run>/<server>--<workload>--nodeN``, marked
as teiten's), with the same install version on every host. Each node is made there by the
host's own pg_basebackup over TCP from the primary (a copy, without a slot, for native
replication), a standby streams over TCP from the primary's address as this machine reaches
it, and each host's Pgpool-II reaches every node over TCP. Every node's pg_hba.conf admits, with
the password, this client's address as each host sees it and each host's own address (for
replication and the Pgpool-IIs). The password is then in one more file on each host but the
primary's: ``passfile`` in the node's directory (mode 0600, ``*:*:*:teiten:PASSWORD``), read by
pg_basebackup (PGPASSFILE) and the standby (``passfile`` in primary_conninfo, PostgreSQL 10 and
later), removed with the node's directory.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
from collections.abc import Iterator, Sequence
from pathlib import Path, PurePosixPath

import psycopg
from psycopg.conninfo import make_conninfo

from teiten.host import paths
from teiten.installs import Install
from teiten.model.errors import ProcessError, ServerError
from teiten.servers import pgpool, profiles
from teiten.servers.base import DataSet, Endpoint, Target, TrialEnd
from teiten.servers.cluster import SUPERUSER
from teiten.servers.local.topology import node_targets
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
from teiten.servers.ssh import pgpool as ssh_pgpool
from teiten.servers.ssh.host import Host, HostFacts, RemoteInstall, cidr, find_basebackup, find_install, marker
from teiten.servers.ssh.pgpool import RemotePgpool
from teiten.servers.ssh.server import SshServer
from teiten.servers.ssh.slot import Slot
from teiten.spec import ServerSpec

log = logging.getLogger(__name__)


class SshTopologyServer(SshServer):
    """A primary and ``spec.replicas`` streaming standbys on ``host``."""

    def __init__(self, spec: ServerSpec, host: Host, client: Install, run_dir: Path,
                 sizing: profiles.Sizing, *, max_clients: int = 1, others: Sequence[Host] = ()):
        super().__init__(spec, host, client, run_dir, sizing)
        self.workload: DataSet | None = None
        self.max_clients = max_clients  # per Pgpool-II: the trial's clients times load clients
        self.others = list(others)  # spread: the hosts of node1, node2, ... (one each)
        self.installs: list[RemoteInstall] = []  # spread: the install on each of ``others``
        self.pgpool_binaries: list[str] = []  # one per node, on its host
        self.pgpools: list[RemotePgpool] = []
        self.basebackups: list[str] = []  # one per standby or copy, on its host: makes it

    @property
    def spread(self) -> bool:
        """Whether the nodes are on several hosts, one each."""
        return bool(self.others)

    def hosts(self) -> list[Host]:
        return [self.on, *self.others]

    def _node_host(self, index: int) -> Host:
        return self.others[index - 1] if self.spread and index else self.on

    def _bin(self, program: str, on: Host | None = None) -> str:
        if on is not None and on is not self.on:
            return next(install for host, install in zip(self.others, self.installs, strict=True)
                        if host is on).binary(program)
        return super()._bin(program)

    def connect(self) -> HostFacts:
        """Reach the primary's host, then every other node's, each with the same version."""
        if self.host is not None:
            return self.host
        facts = super().connect()
        try:
            self._connect_others()
        except BaseException:
            self.host = None
            raise
        return facts

    def _connect_others(self) -> None:
        assert self.install is not None
        if self.spread and self.install.major < 10:
            raise ServerError(f"{self._where()}: nodes on several hosts need PostgreSQL 10 or "
                              f"later (a standby reads its password from a passfile), not "
                              f"{self.install.version}; put every node on one host")
        self.installs = []
        for i, on in enumerate(self.others, start=1):
            on.reach()
            found = find_install(on.ssh, on.install_ref(str(self.spec.install)),
                                 server=self.name, where=on.where(), hint=on.install_hint())
            if found.version != self.install.version:
                raise ServerError(
                    f"server {self.name}: {node_name(i)} on {on.where()} has PostgreSQL "
                    f"{found.version} and node0 on {self._where()} has {self.install.version}; "
                    "the nodes of one server run one version: install the same on every host")
            self.installs.append(found)

    @property
    def mode(self) -> Mode:
        return self.spec.replication if self.spec.replicas else "native"

    @property
    def streaming(self) -> bool:
        return self.mode != "native"

    def prepare(self, workload: DataSet) -> None:
        # Found before any data is loaded, on the host of each node.
        nodes = range(self.spec.replicas + 1)
        if self.spec.pgpool and not self.pgpool_binaries:
            self.connect()
            self.pgpool_binaries = [ssh_pgpool.find(self._node_host(i).ssh) for i in nodes]
        if (self.streaming or self.spread) and not self.basebackups:
            self.connect()
            self.basebackups = [self._find_basebackup(self._node_host(i)) for i in nodes[1:]]
        super().prepare(workload)

    def _find_basebackup(self, on: Host) -> str:
        """The pg_basebackup on host ``on`` that makes a standby or copy there (from the
        primary's socket on its own host, over TCP on another); refused in one line for a
        server before 9.6, or a host without one."""
        install = self.install if on is self.on else self.installs[self.others.index(on)]
        assert install is not None
        if not install.release.streaming_standbys:
            raise ServerError(f"{self._where()}: streaming standbys need PostgreSQL 9.6 or "
                              f"later, not {install.version}; use replication: native")
        found = find_basebackup(on.ssh, install)
        if found is None:
            major = install.release.name
            raise ServerError(
                f"{on.where()}: standbys of PostgreSQL {install.version} are made with a "
                f"pg_basebackup of 10 or later and of {major} or later, and the host has none "
                "(in its install, /usr/lib/postgresql/*/bin or pg_config's bindir); install "
                f"one there, e.g. apt-get install postgresql-client-{max(17, install.major)}")
        return found

    def _save(self, slot: Slot) -> None:
        """Make the other nodes from the loaded primary (standbys: base backups of it
        running; native: copies of it stopped), then save every node."""
        slot.socket_dir = self._socket_dir(self.on)
        self.ssh.write_text(f"{slot.data}/pg_hba.conf", append=True, text=(
            "# the standbys and Pgpool-II, through the socket directory of mode 0700 (this\n"
            "# account only)\n"
            "local replication all trust\n"
            "local all all trust\n"))
        if not self.streaming and not self.spread:
            for i in range(1, self.spec.replicas + 1):
                slot.standbys.append(self._copy(slot, i))
            super()._save(slot)
            return
        self._start(slot, f"{slot.root}/logs/build", extra=self._primary_settings())
        try:
            for i in range(1, self.spec.replicas + 1):
                slot.standbys.append(self._base_backup(slot, i, self.basebackups[i - 1]))
        finally:
            self._stop_nodes(slot)
        super()._save(slot)

    def _admitted(self) -> list[str]:
        """This client as every host sees it, and (spread) every host's own address: for its
        standby's replication and its Pgpool-II."""
        lines = super()._admitted()
        for on in self.hosts() if self.spread else []:
            facts = on.reach()
            lines += [f"host all all {cidr(facts.client_ip)}",
                      f"host replication all {cidr(facts.server_ip)}",
                      f"host all all {cidr(facts.server_ip)}"]
        return list(dict.fromkeys(lines))

    def _node(self, primary: Slot, index: int) -> Slot:
        if not self.spread:
            node = Slot(root=f"{primary.root}/{node_name(index)}", database=primary.database,
                        password=primary.password, socket_dir=primary.socket_dir)
            self.ssh.run(["mkdir", node.root], timeout=30)
            return node
        on = self._node_host(index)
        base = self._base(on.reach())
        root = f"{base}/{PurePosixPath(primary.root).name}--{node_name(index)}"
        on.ssh.shell(script("make_owned.sh"), paths.MARKER, base, root,
                     marker(f"teiten run {self.run_dir.name}"),
                     marker(f"{node_name(index)} of {self.name}"), timeout=60,
                     what=f"creating {root}")
        self._created.append((root, on))
        node = Slot(root=root, database=primary.database, password=primary.password,
                    socket_dir=self._socket_dir(on), on=on)
        # What the node's pg_basebackup and walreceiver read the password from (PGPASSFILE,
        # passfile=): by stdin into a file of mode 0600, never on a command line.
        on.ssh.shell('umask 077; cat > "$1"', self._passfile(node), timeout=30,
                     input=f"*:*:*:{SUPERUSER}:{primary.password}\n", what="writing the passfile")
        return node

    @staticmethod
    def _passfile(node: Slot) -> str:
        return f"{node.root}/passfile"

    def _copy(self, primary: Slot, index: int) -> Slot:
        """A copy of the stopped primary, for Pgpool-II's native replication."""
        node = self._node(primary, index)
        self.ssh.run(["cp", "-a", "--", primary.data, node.data], timeout=3600,
                     what=f"copying the primary for {node_name(index)}")
        return node

    def _socket_dir(self, on: Host) -> str:
        """A new private socket directory on host ``on``."""
        made = on.ssh.shell(script("socket_dir.sh"), paths.MARKER,
                            marker(f"sockets of {self.name}"), timeout=30,
                            what="creating the socket directory").stdout.strip()
        self._created.append((made, on))
        return made

    def _primary_address(self, primary: Slot) -> str:
        """Where a node reaches the primary: its socket directory on the same host, else its
        address as this machine reaches it."""
        if not self.spread:
            assert primary.socket_dir is not None
            return primary.socket_dir
        assert self.host is not None
        return self.host.server_ip

    def _base_backup(self, primary: Slot, index: int, basebackup: str) -> Slot:
        """Standby (or, native, copy) ``index``: a base backup of the running primary."""
        name = node_name(index)
        node = self._node(primary, index)
        assert primary.port is not None
        # The slot, made first (by SQL, as on this machine: pg_basebackup -C needs a 10
        # server), keeps the WAL from the backup's start on, however long the standby is down.
        if self.streaming:
            with self._connect(primary) as conn:
                conn.execute("SELECT pg_create_physical_replication_slot(%s, true)", (name,))
        passfile = [f"PGPASSFILE={self._passfile(node)}"] if self.spread else []
        try:
            # -c fast: a spread checkpoint could take most of checkpoint_timeout.
            self._host(node).ssh.run(
                ["env", "LC_ALL=C", *passfile, basebackup, "-D", node.data,
                 "-h", self._primary_address(primary), "-p", str(primary.port), "-U", SUPERUSER,
                 "-X", "stream", "-c", "fast", *(["-S", name] if self.streaming else []),
                 "--no-sync"], timeout=3600, what=f"pg_basebackup for {name}")
        except BaseException:  # the slot would hold the primary's WAL
            if self.streaming:
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
        assert slot.socket_dir is not None
        # Spread: every node over TCP, at its host's address; else through the sockets.
        backends = [(self._host(node).reach().server_ip if self.spread else slot.socket_dir,
                     node.port or 0) for node in slot.nodes]
        n = len(backends)

        def made() -> Iterator[RemotePgpool]:
            for i, node in enumerate(slot.nodes):
                on = self._host(node)
                facts = on.reach()
                assert node.socket_dir is not None
                yield RemotePgpool(
                    on.ssh, self.pgpool_binaries[i],
                    f"{(node if self.spread else slot).root}/logs/{trial_id}/pgpool{i}",
                    backends, mode="streaming" if self.streaming else "native",
                    max_clients=self.max_clients,
                    weights=[1.0 if j == i else 0.0 for j in range(n)],
                    socket_dir=node.socket_dir, listen=facts.server_ip,
                    client_cidr=cidr(facts.client_ip), password=slot.password)

        pgpool.start_all(made(), self.pgpools.append, self._stop_pgpools)

    def _stop_pgpools(self) -> tuple[str, list[str]]:
        stopped = pgpool.stop_all(self.pgpools)
        self.pgpools = []
        return stopped

    def _start_nodes(self, slot: Slot, log_dir: str) -> None:
        try:
            if not self.streaming:  # independent copies
                for name, node in zip(slot.names, slot.nodes, strict=True):
                    self._start(node, self._log_dir(slot, node, f"{log_dir}/{name}"))
                return
            self._start(slot, f"{log_dir}/{node_name(0)}", extra=self._primary_settings())
            assert slot.port is not None and self.install is not None
            for i, node in enumerate(slot.standbys, start=1):
                name, text, settings = standby_files(self.install.major, standby_settings(
                    i, self._primary_address(slot), slot.port,
                    passfile=self._passfile(node) if self.spread else None))
                self._host(node).ssh.write_text(f"{node.data}/{name}", text)
                self._start(node, self._log_dir(slot, node, f"{log_dir}/{node_name(i)}"),
                            extra=settings)
            self._wait_streaming(slot)
        except BaseException:
            self._stop_nodes(slot, fast=False)
            raise

    def _log_dir(self, slot: Slot, node: Slot, log_dir: str) -> str:
        """Where ``node`` logs: ``log_dir`` (under the primary's directory), or on a host of its
        own the same path under the node's directory there."""
        if node.on is None:
            return log_dir
        return node.root + log_dir.removeprefix(slot.root)

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
                        *self._host(node).address(pool.port or 0), user=SUPERUSER,
                        dbname=self.workload.database,
                        password_env={"PGPASSWORD": self.current.password}))
                    for i, (pool, node) in enumerate(zip(self.pgpools, self.current.nodes,
                                                         strict=True))]
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
        address, port = self._host(slot).address(slot.port)
        return make_conninfo(host=address, port=port, user=SUPERUSER,
                             password=slot.password, dbname="postgres")

    def _describe(self, conn: psycopg.Connection) -> dict[str, object]:
        """A server's description, and (spread) each node's host, primary first."""
        info = super()._describe(conn)
        if self.spread:
            info["nodes"] = [{"node": node_name(i), **on.describe()}
                             for i, on in enumerate(self.hosts())]
        return info

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
