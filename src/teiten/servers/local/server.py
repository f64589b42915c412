"""``local`` servers: clusters teiten creates, configures, snapshots and controls here.

One cluster per (server, workload): the workload's data is initialised once, the stopped
cluster is saved as a snapshot, and the snapshot is restored before every trial that
follows a trial which changed the data (METHODS S2: data is never reused after updates).
Every trial starts the server afresh, prewarms the workload's relations and checkpoints,
so that every trial begins in the same state.
"""

from __future__ import annotations

import logging
import os
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from psycopg import sql
from psycopg.conninfo import make_conninfo

from teiten.host import client_account, netdelay, oscache, paths, privileges, procs, safefs, ticker
from teiten.host.cgroups import Group, IoLimit, disk_of
from teiten.host.cpus import Placement, confine, format_list
from teiten.host.netns import Namespace
from teiten.installs import Install
from teiten.model.errors import ServerError, TeitenError, TrialFailed
from teiten.monitors.system import device_of
from teiten.servers import profiles
from teiten.servers.base import Cycle, DataSet, Endpoint, Server, TrialEnd, crash_verdict
from teiten.servers.cluster import SUPERUSER, Cluster
from teiten.servers.sql import (
    create_database,
    describe,
    housekeeping,
    loading_said,
    make_extensions,
    settle,
)
from teiten.spec import ServerSpec

if TYPE_CHECKING:
    from teiten.servers.replication import Topology

log = logging.getLogger(__name__)

TABLESPACE = "teiten_data"  # where the workload's relations go when the server has 'tablespace'

# A backend that dies makes the postmaster restart all others: the trial is not valid.
@dataclass
class _Slot:
    cluster: Cluster
    snapshot: Path
    dirty: bool = False
    broken: bool = False
    restore_s: list[float] = field(default_factory=list)
    database: str = ""
    trials: int = 0  # begun since the data was loaded
    kept: bool = False  # left running after a read-only trial, for the next one (keep_running)
    log_from: int = 0  # where the current trial's part of the running server's log starts


def restored_data(slot: _Slot, restorer: Cluster | Topology, cycle: Cycle, keep: int = 0) -> None:
    """Restore the slot's data when the last trial changed it (or crashed), timed as the
    cycle's 'restore', unless the trial goes on with the changes of ``keep`` runs of its series
    (Server.keep_data); the cycle's start says how the trial's data was made."""
    if slot.dirty and keep and not slot.broken:
        cycle.start.kept(keep)
        return
    if not (slot.dirty or slot.broken):
        cycle.start.unrestored(slot.trials > 0)
        return
    crashed = slot.broken
    with cycle.phase("restore"):
        slot.restore_s.append(restorer.restore(slot.snapshot))
    slot.dirty = slot.broken = False
    method, clone_s = restorer.restore_method()
    cycle.start.restored(method, crashed=crashed)
    cycle.start.clone_at_prepare_s = round(clone_s, 4) if clone_s is not None else None


def fresh_programs(install: Install, cycle: Cycle) -> None:
    """Drop the install's programs from the page cache as its server starts (in the cycle's
    'start', which reads them again; recorded in the trial's start): where they land in memory
    is drawn again for every trial (teiten.host.oscache.evict_programs)."""
    cycle.start.programs_evicted = oscache.evict_programs(install.bindir)


class LocalServer(Server):
    kind = "local"

    def __init__(self, spec: ServerSpec, install: Install, run_dir: Path, sizing: profiles.Sizing,
                 *, connect: str = "socket", cpus: list[int] | None = None,
                 client: Install | None = None):
        self.name = spec.name
        self.client = client or install  # whose pgbench loads the data (a zonky build has none)
        self.cpus = cpus
        self.placement: Placement | None = None
        self.spec = spec
        self.install = install
        self.run_dir = run_dir
        self.settings = profiles.merged(spec.profile, spec.settings, sizing, install.release)
        shared_buffers, fits = profiles.shared_buffers_for(sizing)
        if spec.profile == "pgecons" and not fits:
            log.warning("%s: the data (about %d MB) does not fit in shared_buffers, which is "
                        "capped at 40%% of this machine's memory (%d MB); reads will not be "
                        "served from shared_buffers alone", spec.name, sizing.data_bytes >> 20,
                        shared_buffers >> 20)
        # In a network namespace the client always goes through the veth pair (TCP).
        self.tcp = connect == "tcp" or spec.network == "netns"
        self.netns: Namespace | None = None
        self.delayed: netdelay.Measured | None = None  # the calibrated delay proxy, if any
        self.proxy: procs.Background | None = None  # the one running for the current trial
        self.slots: dict[str, _Slot] = {}
        self.current: _Slot | None = None
        self.description: dict[str, object] | None = None
        self.loads: dict[str, dict[str, float]] = {}  # app workload -> seconds per load step

    def _root(self, workload: DataSet) -> Path:
        return self.run_dir / f"{self.name}--{workload.key}"

    def _make_root(self, workload: DataSet) -> Path:
        """The cluster's directory: in the run's directory, or in a marked subdirectory of
        the server's 'directory' (e.g. tmpfs), linked from the run's directory so that the
        cleanup of a killed run finds it."""
        link = self._root(workload)
        purpose = f"cluster of {self.name}/{workload.key}"
        if not self.spec.directory:
            return paths.make_owned(link, purpose)
        base = Path(self.spec.directory).expanduser().absolute()
        if not base.is_dir():
            raise ServerError(f"server {self.name}: directory {base} does not exist; create it "
                              "or change 'directory'")
        root = paths.make_owned(base / f"teiten-{self.run_dir.name}-{link.name}", purpose)
        paths.remember(self.run_dir, root)
        privileges.ensure_reachable(root)
        # safe: the run's directory is teiten's
        link.symlink_to(root, target_is_directory=True)
        return root

    def prepare(self, workload: DataSet) -> None:
        """Make the workload's cluster, load it and snapshot it. Whatever fails on the way
        (a server that does not start, a full disk) takes down and removes everything made for
        it (its server, socket directory, cluster, WAL and tablespace directories) before the
        error goes on, so that only the reason is left."""
        if workload.key in self.slots:
            return
        root = self._make_root(workload)
        made: list[Path] = []  # directories of ours outside the cluster's root
        cluster: Cluster | None = None
        try:
            waldir = None
            if self.spec.initdb.waldir:
                base = Path(self.spec.initdb.waldir).expanduser().absolute()
                # Never initdb into the user's directory itself: a marked subdirectory of ours.
                made.append(paths.make_owned(base / f"teiten-{root.parent.name}-{root.name}",
                                             "WAL directory"))
                paths.remember(self.run_dir, made[-1])
                waldir = made[-1] / "pg_wal"
            cluster = self._new_cluster(root, workload)
            cluster.placement = self._placement()
            cluster.netns = self._namespace()
            if self.spec.snapshot_hook:
                cluster.hook = Path(self.spec.snapshot_hook).expanduser().absolute()
            cluster.initdb(self.spec.initdb_options(), waldir=waldir)
            cluster.configure(self._settings_for(workload))
            space = None
            if self.spec.tablespace:
                base = Path(self.spec.tablespace).expanduser().absolute()
                made.append(paths.make_owned(base / f"teiten-{root.parent.name}-{root.name}",
                                             "tablespace directory"))
                paths.remember(self.run_dir, made[-1])
                space = made[-1] / "ts"
                cluster.add_tablespace(space)
            cluster.start(root / "logs" / "prepare")
            self._fill(cluster, workload, space)
            snapshot = self._save(cluster, root, workload)
        except BaseException:
            try:
                self._discard(cluster, root, made)
            except (TeitenError, OSError) as exc:  # the first failure is the one to report
                log.warning("%s: cleaning up after a failed preparation: %s", self.name, exc)
            raise
        self.slots[workload.key] = _Slot(cluster=cluster, snapshot=snapshot, database=workload.database)

    def _fill(self, cluster: Cluster, workload: DataSet, space: Path | None) -> None:
        """Create the workload's database in the started ``cluster`` and load its data."""
        with cluster.connect() as conn:
            if space is not None:
                conn.execute(sql.SQL("CREATE TABLESPACE {} LOCATION {}").format(
                    sql.Identifier(TABLESPACE), sql.Literal(str(space))))
            create_database(conn, workload.database)
        with cluster.connect(workload.database) as conn:
            make_extensions(conn, self.settings.get("shared_preload_libraries", ""))
        if workload.sql_loaded:
            with ticker.phase("loading the data"):
                self._load_by_sql(cluster, workload, in_space=space is not None)
        else:
            in_space = [f"--tablespace={TABLESPACE}", f"--index-tablespace={TABLESPACE}"] if space else []
            with ticker.phase("loading the data (pgbench -i)"):  # its own progress lines said
                client_account.run([str(self.client.binary("pgbench")), *workload.init_args(), *in_space,
                                    "-h", cluster.host, "-p", str(cluster.port), "-U", SUPERUSER,
                                    workload.database], timeout=7200, what="pgbench -i",
                                   extra_env={"PGOPTIONS": housekeeping(self.install.release)},
                                   lines=ticker.progress)
        with cluster.connect(workload.database) as conn:
            conn.execute("CHECKPOINT")
            if self.description is None:
                self.description = describe(conn, self.install)
        if self.spec.delay is not None and self.delayed is None:
            self._calibrate(cluster, workload)

    def _calibrate(self, cluster: Cluster, workload: DataSet) -> None:
        """Calibrate the delay proxy once, on the loaded cluster, and record the round trip
        measured through it: the description's ``delay``, and its ``probe`` (what the
        round-trip bound is drawn against, as for an external server)."""
        assert self.spec.delay is not None and cluster.port is not None
        with netdelay.proxy(cluster.tcp_host, cluster.port, self.spec.delay.rtt_ms,
                            {"user": SUPERUSER, "dbname": workload.database},
                            self.spec.delay.bandwidth_mbps) as made:
            self.delayed = made
            by_pgbench = netdelay.pgbench_rtt(self.client.binary("pgbench"), made, SUPERUSER,
                                              workload.database)
        log.info("%s: %s; measured %.3f ms (%.3f ms directly; pgbench: %s ms)", self.name,
                 self.spec.delay.text(), made.through_ms, made.direct_ms, by_pgbench)
        if self.description is not None:
            self.description["delay"] = {**made.to_json(), "pgbench_rtt_ms": by_pgbench}
            # what bounds pgbench's transactions: the round trip pgbench itself saw
            self.description["probe"] = {"target": f"{made.host} (delay proxy)",
                                         "rtt_ms_median": by_pgbench or made.through_ms,
                                         "by": "pgbench SELECT 1" if by_pgbench else "probe"}

    def _discard(self, cluster: Cluster | None, root: Path, made: list[Path]) -> None:
        """Stop ``cluster`` and remove everything of it: its socket directory, ``made`` (its
        WAL and tablespace directories), its root, and the run directory's link to a root
        elsewhere. Each step runs even when one before it failed."""
        try:
            if cluster is not None:
                cluster.stop()
                cluster.discard_snapshot(root / "snapshot")
        finally:
            if cluster is not None and cluster.socket_dir is not None:
                paths.remove_owned(cluster.socket_dir)
            for path in made:
                paths.remove_owned(path)
            paths.remove_owned(root)
            link = self.run_dir / root.name.removeprefix(f"teiten-{self.run_dir.name}-")
            if link.is_symlink():  # in the run's directory, which only teiten writes
                safefs.remove(link)

    def _new_cluster(self, root: Path, workload: DataSet) -> Cluster:
        return Cluster(self.install, root)

    def _save(self, cluster: Cluster, root: Path, workload: DataSet) -> Path:
        """Stop the loaded cluster and snapshot it; returns where the snapshot is."""
        cluster.stop()
        cluster.snapshot(root / "snapshot")
        return root / "snapshot"

    def _load_by_sql(self, cluster: Cluster, workload: DataSet, *, in_space: bool) -> None:
        """Load an application or measured-statement workload by SQL, with as many
        connections as the server has CPUs."""
        if in_space:
            with cluster.connect() as conn:
                conn.execute(sql.SQL("ALTER DATABASE {} SET default_tablespace = {}").format(
                    sql.Identifier(workload.database), sql.Identifier(TABLESPACE)))
        assert cluster.port is not None
        conninfo = make_conninfo(host=cluster.host, port=cluster.port, user=SUPERUSER,
                                 dbname=workload.database,
                                 options=housekeeping(self.install.release))
        jobs = len(self.cpus) if self.cpus else os.cpu_count() or 1
        with loading_said(conninfo):  # how far it is: its tables and their size so far
            took = workload.load_sql(conninfo, jobs=jobs)
        self.loads[workload.key] = took
        log.info("%s: loaded %s in %.1f s (%s)", self.name, workload.key, sum(took.values()),
                 ", ".join(f"{k} {v:.1f}" for k, v in took.items()))

    def _settings_for(self, workload: DataSet) -> dict[str, str]:
        """The server's settings, with what a measured-statement workload needs unless the
        study set it (e.g. max_parallel_workers for a sweep of parallel workers)."""
        return profiles.with_needs(self.settings, workload.server_settings(), self.spec.settings,
                                   self.install.release)

    def cold_restart(self) -> tuple[str, dict[str, object]]:
        """Restart the current trial's server with nothing of its data cached: shut down
        (which writes every dirty buffer), drop the OS cache of its files, start again.
        Returns the new conninfo and what was done."""
        slot = self.current
        assert slot is not None, "cold_restart outside a trial"
        cluster = slot.cluster
        notes = cluster.stop()
        done: dict[str, object] = {"server_restarted": True,
                                   "os_cache": oscache.evict(cluster.snapshot_parts())}
        if notes:
            done["stop_notes"] = notes
        assert cluster.log_dir is not None
        cluster.start(cluster.log_dir)
        assert cluster.port is not None
        host = cluster.tcp_host if self.tcp else cluster.host
        return make_conninfo(host=host, port=cluster.port, user=SUPERUSER,
                             dbname=slot.database), done

    def _namespace(self) -> Namespace | None:
        """The network namespace of a 'network: netns' server, made once for all its
        clusters; its name starts with the run's, so that the cleanup of a killed run
        finds it."""
        if self.spec.network == "netns" and self.netns is None:
            self.netns = Namespace.create(f"{self.run_dir.name}-{self.name}")
            log.info("%s runs in network namespace %s at %s (client side %s)", self.name,
                     self.netns.name, self.netns.address, self.netns.host_address)
        return self.netns

    def _placement(self) -> Placement | None:
        """The CPUs of this server and its limits, held once for all its clusters (one runs
        at a time): the I/O limits on every disk of its data, WAL and tablespace."""
        limits = self.spec.limits
        if (self.cpus is not None or limits is not None) and self.placement is None:
            memory = limits.memory[0] if limits is not None and limits.memory else None
            self.placement = confine(self.cpus, f"{self.run_dir.name}-{self.name}",
                                     memory_bytes=memory, io=self._io_limits())
            log.info("%s runs on CPUs %s%s (%s)", self.name,
                     format_list(self.cpus) if self.cpus is not None else "(all)",
                     f", limited to {limits.text()}" if limits is not None else "",
                     self.placement.mechanism)
        return self.placement

    def _io_limits(self) -> list[IoLimit]:
        """The study's I/O limits, on each disk that holds the server's files."""
        limits = self.spec.limits
        if limits is None or not any((limits.read_iops, limits.write_iops, limits.read_bps,
                                      limits.write_bps)):
            return []
        places = [Path(p).expanduser().absolute() for p in (
            self.spec.directory or self.run_dir, self.spec.initdb.waldir, self.spec.tablespace) if p]
        disks = {}
        for place in places:
            disk = disk_of(place)
            if disk is None:
                raise ServerError(f"server {self.name}: {place} is on no disk (tmpfs?), so its "
                                  "I/O cannot be limited; remove the I/O limits or use a disk")
            disks[disk] = place
        def first(values: list[int] | None) -> int | None:
            return values[0] if values else None
        return [IoLimit(disk, read_bps=first(limits.read_bps), write_bps=first(limits.write_bps),
                        read_iops=first(limits.read_iops), write_iops=first(limits.write_iops))
                for disk in disks]

    def limits_group(self) -> Group | None:
        return self.placement.group if self.spec.limits is not None and self.placement else None

    def begin_trial(self, workload: DataSet, trial_id: str, *, prewarm: bool) -> Endpoint:
        slot = self.slots[workload.key]
        self.current = slot
        cluster, cycle = slot.cluster, self.cycle
        kept = slot.kept and cluster.is_running() and not (slot.dirty or slot.broken)
        slot.kept = False
        if kept:  # restart: after-changes, after a read-only trial of this workload
            cycle.start.unrestored(True)
            cycle.start.server = "kept running from the trial before"
            slot.log_from = len(cluster.read_logs())
        else:
            if cluster.is_running():  # left over from an interrupted trial
                with cycle.phase("stop_leftover"):
                    cluster.stop()
            restored_data(slot, cluster, cycle, self.keep_data)
            with cycle.phase("start"):
                fresh_programs(self.install, cycle)
                cluster.start(cluster.root / "logs" / trial_id)
            cycle.start.server = "restarted"
            slot.log_from = 0
        with cluster.connect(workload.database) as conn:
            settle(conn, cycle, prewarm=prewarm)
        slot.dirty = workload.modifies_data
        slot.trials += 1
        host = cluster.tcp_host if self.tcp else cluster.host
        assert cluster.port is not None
        if self.delayed is not None:  # pgbench goes through the proxy; teiten's own stay direct
            self._stop_proxy()
            self.proxy, port = netdelay.start((cluster.tcp_host, cluster.port),
                                              self.delayed.delay_ms, self.delayed.bandwidth_mbps)
            return Endpoint(host=self.delayed.host, port=port, user=SUPERUSER,
                            dbname=workload.database)
        return Endpoint(host=host, port=cluster.port, user=SUPERUSER, dbname=workload.database)

    def _stop_proxy(self) -> None:
        if self.proxy is not None:
            self.proxy.stop(signal.SIGTERM, timeout=10)
            self.proxy = None

    def end_trial(self) -> TrialEnd:
        self._stop_proxy()
        slot = self.current
        if slot is None:
            return TrialEnd()
        self.current = None
        cluster = slot.cluster
        crashed = crash_verdict({"": cluster.is_running()},
                                {"": cluster.read_logs()[slot.log_from:]})
        if crashed is None and self.keep_running and not slot.dirty:
            slot.kept = True  # the next trial of this workload may go on with it (park stops it)
            return TrialEnd(log=cluster.read_logs()[slot.log_from:])
        with self.cycle.phase("stop"):
            notes = cluster.stop(fast=crashed is None)
        text = cluster.read_logs()[slot.log_from:]
        if crashed:
            slot.broken = True
        return TrialEnd(log=text, crashed=crashed, notes=notes)

    def park(self, keep: str | None = None) -> float:
        began = time.monotonic()
        for key, slot in self.slots.items():
            if slot.kept and key != keep:
                slot.kept = False
                if slot.cluster.is_running():
                    slot.cluster.stop()
        return time.monotonic() - began

    def devices(self) -> dict[str, str]:
        if self.current is None:
            return {}
        cluster = self.current.cluster
        found = {"data": device_of(cluster.tablespaces[0] if cluster.tablespaces else cluster.data),
                 "wal": device_of(cluster.wal or cluster.data)}  # never resolved through its link
        return {role: dev for role, dev in found.items() if dev}

    def confined_cpus(self) -> list[int] | None:
        return self.cpus

    def cold_restarter(self) -> Callable[[], tuple[str, dict[str, object]]] | None:
        return self.cold_restart

    def log_mark(self) -> int | None:
        """How much the running server has logged so far in this trial: the start of a window
        of the log end_trial returns."""
        if self.current is None:
            return None
        return len(self.current.cluster.read_logs()) - self.current.log_from

    def server_pid(self) -> int | None:
        return self.current.cluster.postmaster_pid() if self.current else None

    def describe(self) -> dict[str, object]:
        found = self.description or {"version": self.install.version}
        return {**found, "loads": dict(self.loads)} if self.loads else found

    def close(self) -> None:
        self._stop_proxy()
        for key, slot in list(self.slots.items()):
            try:
                with ticker.phase(f"removing the cluster of {self.name}/{key}"):
                    self._discard(slot.cluster, slot.cluster.root,
                                  [*([slot.cluster.wal.parent] if slot.cluster.wal is not None else []),
                                   *(space.parent for space in slot.cluster.tablespaces)])
            finally:
                del self.slots[key]
        if self.placement is not None:
            self.placement.close()
            self.placement = None
        if self.netns is not None:
            self.netns.close()
            self.netns = None


__all__ = ["LocalServer", "TrialFailed"]
