"""Several clusters that act as one server (METHODS S7): a primary with streaming standbys,
asynchronous or synchronous, or independent copies that Pgpool-II's native replication
writes to.

Every node is a :class:`Cluster` in its own marked directory under one root the caller
owns. The caller creates the primary (``nodes[0]``) exactly as a single cluster: initdb,
configure, start, load. :meth:`Topology.build` then makes the other nodes from it, and from
there on the topology starts, stops, snapshots and restores all its nodes together.

Standbys must survive restarts: every start puts each cluster on a new free port, so a
standby's ``primary_conninfo`` is written into its runtime conf at each start, never by
``pg_basebackup -R`` (which writes postgresql.auto.conf, which overrides every other file).
Each standby has a physical replication slot on the primary, so the WAL it still needs is
kept however long it was stopped.

Before PostgreSQL 12 (9.6, 10, 11) a standby is configured by ``recovery.conf``
(``standby_mode``, ``primary_conninfo``, ``primary_slot_name`` are no settings there), which
teiten writes at each start instead of ``standby.signal`` and the runtime settings. The slot
is made by SQL, as ``pg_basebackup -C`` needs a 10 server. The builds of Maven and npm have no
``pg_basebackup``: the study's client install (the one whose pgbench drives every server, the
newest) takes the backup, as pg_basebackup backs up servers of its own major or older, down
to 9.1.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Literal, TypeVar

from psycopg.conninfo import make_conninfo

from teiten.host import paths, privileges, procs, safefs
from teiten.host.waiting import WaitTimeout, wait_until
from teiten.installs import Install
from teiten.model.errors import ServerError, UserError
from teiten.servers import snapshot
from teiten.servers.cluster import SETTINGS_CONF, SUPERUSER, Cluster

log = logging.getLogger(__name__)

Mode = Literal["async", "sync", "native"]
SYNCHRONOUS_COMMIT = ("on", "remote_write", "remote_apply")

REPLICATION_STATES = "SELECT application_name, state, sync_state FROM pg_stat_replication"


def node_name(index: int) -> str:
    """node0 is the primary; standbys are node1, node2, ... (their application_name)."""
    return f"node{index}"


class Topology:
    """``replicas + 1`` clusters of ``install`` under ``root`` (a directory teiten owns).

    ``mode``: ``async`` or ``sync`` streaming replication from ``nodes[0]``, or ``native``:
    independent copies, kept equal by Pgpool-II sending every write to each of them.

    Synchronous replication waits for *every* standby, as the PGECons report's "fully
    synchronous" does: ``synchronous_standby_names = 'ANY n (node1, ..., noden)'`` with n
    the number of standbys. With n equal to all of them, ANY and FIRST wait for the same
    standbys; ANY gives them no order of priority (they are alike), and pg_stat_replication
    reports them as ``quorum``. ``synchronous_commit`` (on, remote_write or remote_apply;
    default on) says what a commit on the primary waits for.
    """

    def __init__(self, install: Install, root: Path, *, replicas: int, mode: Mode,
                 synchronous_commit: str | None = None, client: Install | None = None):
        if mode not in ("async", "sync", "native"):
            raise UserError(f"replication mode '{mode}' is unknown: use async, sync or native")
        if replicas < 0 or (mode != "native" and replicas == 0):
            raise UserError(f"{mode} replication needs at least one standby, not {replicas}")
        if synchronous_commit is not None and (mode != "sync"
                                               or synchronous_commit not in SYNCHRONOUS_COMMIT):
            raise UserError(f"synchronous_commit '{synchronous_commit}' applies to sync "
                            f"replication only, as one of {', '.join(SYNCHRONOUS_COMMIT)}")
        self.install = install
        self.basebackup = basebackup_install(install, client)
        self.root = root
        self.mode = mode
        self.synchronous_commit = synchronous_commit or "on"
        privileges.ensure_reachable(root)
        self.nodes = [Cluster(install, paths.make_owned(root / node_name(i), f"{mode} replication "
                                                         f"node {i} of {root}"))
                      for i in range(replicas + 1)]
        self.built = False

    @property
    def primary(self) -> Cluster:
        return self.nodes[0]

    @property
    def standbys(self) -> list[Cluster]:
        return self.nodes[1:]

    @property
    def streaming(self) -> bool:
        return self.mode in ("async", "sync")

    # -- building ----------------------------------------------------------------------

    def build(self) -> None:
        """Make the other nodes from the primary, which the caller has initdb'd, configured,
        loaded and (for streaming) started. Leaves every node stopped.

        Streaming: a ``pg_basebackup`` of the running primary per standby, each creating
        its replication slot. Native: copies of the stopped primary's data directory.
        """
        primary = self.primary
        if primary.tablespaces:
            raise ServerError("replication of a cluster with tablespaces is not supported: "
                              "drop 'tablespace' from the server, or its replicas")
        if self.streaming:
            if not primary.is_running():
                raise ServerError(f"cannot build {self.mode} standbys: the primary in "
                                  f"{primary.data} is not running; start it first")
            self._allow_replication()
            self._ensure_wal_senders()
            for i, node in enumerate(self.standbys, start=1):
                self._base_backup(node, node_name(i))
            primary.stop()
        else:
            primary.stop()
            for node in self.standbys:
                snapshot.take(primary.data, node.data)
                if primary.wal is not None:  # the copy would share the primary's WAL
                    safefs.remove(node.data / "pg_wal")
                    # Into the server's directory: copied as the server account.
                    procs.run(["cp", "-a", str(primary.wal), str(node.data / "pg_wal")],
                              timeout=3600, what="cp", run_as=node.account)
        self.built = True

    def _allow_replication(self) -> None:
        """Before 10, initdb leaves the replication lines of pg_hba.conf commented out: let
        pg_basebackup and the standbys in the way 10 does (local and loopback, trust)."""
        primary = self.primary
        if primary.install.major >= 10:
            return
        hba = primary.data / "pg_hba.conf"
        mark = "# teiten: replication, as 10 allows it"
        kept = [line for line in safefs.read_text(hba).splitlines() if not line.endswith(mark)]
        safefs.write_text(hba, "\n".join([*kept, *(f"{line} {mark}" for line in (
            "local replication all trust", "host replication all 127.0.0.1/32 trust",
            "host replication all ::1/128 trust"))]) + "\n")
        with primary.connect() as conn:
            conn.execute("SELECT pg_reload_conf()")

    def _ensure_wal_senders(self) -> None:
        """pg_basebackup needs wal_level replica and free WAL senders (two for -X stream):
        restart the primary with the topology's settings when its own do not allow it."""
        primary = self.primary
        with primary.connect() as conn:
            level = conn.execute("SHOW wal_level").fetchone()
            senders = conn.execute("SHOW max_wal_senders").fetchone()
        if level and level[0] != "minimal" and senders and int(senders[0]) >= len(self.nodes) + 2:
            return
        log.info("restarting the primary for replication (wal_level %s, max_wal_senders %s)",
                 level and level[0], senders and senders[0])
        assert primary.log_dir is not None
        primary.stop()
        primary.start(primary.log_dir, extra=self._primary_settings())

    def _base_backup(self, node: Cluster, name: str) -> None:
        primary = self.primary
        assert primary.port is not None
        if self.basebackup is None:
            raise UserError(f"streaming standbys are made with pg_basebackup, which neither "
                            f"PostgreSQL {self.install.version} ({self.install.bindir}) nor the "
                            "study's pgbench install has; name one that has it in 'pgbench:'")
        safefs.make_dir(node.data, mode=0o700)  # pg_basebackup fills an empty one
        # The slot, made first (by SQL: pg_basebackup -C needs a 10 server), keeps the WAL
        # from the backup's start on; reserved at once (the second argument, 9.6 onwards).
        with primary.connect() as conn:
            conn.execute("SELECT pg_create_physical_replication_slot(%s, true)", (name,))
        try:
            # -c fast: a spread checkpoint could take most of checkpoint_timeout (an hour
            # with the PGECons profile).
            procs.run([str(self.basebackup.binary("pg_basebackup")), "-D", str(node.data),
                       "-h", primary.host, "-p", str(primary.port), "-U", SUPERUSER,
                       "-X", "stream", "-c", "fast", "-S", name, "--no-sync"],
                      timeout=3600, run_as=node.account, cwd=str(node.root),
                      env=procs.build_env({"LC_ALL": "C"}, run_as=node.account),
                      what=f"pg_basebackup for {name}")
        except BaseException:  # the slot would hold the primary's WAL, and block a rebuild
            with contextlib.suppress(Exception), primary.connect() as conn:
                conn.execute("SELECT pg_drop_replication_slot(%s)", (name,))
            raise

    # -- settings ----------------------------------------------------------------------

    def _primary_settings(self) -> list[str]:
        if not self.streaming:
            return []
        return primary_settings(self.mode, len(self.nodes), self.synchronous_commit,
                                wal_level=_configured(self.primary, "wal_level"),
                                major=self.install.major)

    def _standby_settings(self, index: int) -> list[str]:
        primary = self.primary
        assert primary.port is not None
        return standby_settings(index, primary.host, primary.port)

    # -- start and stop ----------------------------------------------------------------

    def start(self, log_dir_for: Callable[[int], Path], *, timeout: float = 120) -> None:
        """Start the primary, then the other nodes; for streaming, wait until every standby
        streams (and, for sync, is a synchronous one). ``log_dir_for(i)``: node i's logs."""
        if not self.built:
            raise ServerError("the topology has no standbys yet: call build() first")
        try:
            self.primary.start(log_dir_for(0), timeout=timeout, extra=self._primary_settings())
            for i, node in enumerate(self.standbys, start=1):
                if not self.streaming:
                    node.start(log_dir_for(i), timeout=timeout)
                    continue
                name, text, settings = standby_files(self.install.major,
                                                     self._standby_settings(i))
                marker = node.data / name
                if not safefs.exists(marker) or safefs.read_text(marker) != text:
                    safefs.write_text(marker, text)
                node.start(log_dir_for(i), timeout=timeout, extra=settings)
            if self.streaming:
                self.wait_streaming(timeout=timeout)
        except BaseException:
            self.stop()
            raise

    def replication_state(self) -> dict[str, tuple[str, str]]:
        """application_name -> (state, sync_state), from the primary's pg_stat_replication."""
        with self.primary.connect() as conn:
            return {name: (state, sync) for name, state, sync in conn.execute(REPLICATION_STATES)}

    def wait_streaming(self, *, timeout: float = 60) -> None:
        """Wait until every standby streams from the primary (sync: and counts for commits)."""
        wait_for_standbys(self.replication_state, len(self.standbys), self.mode, timeout=timeout,
                          tails=lambda missing: "; ".join(
                              f"{node_name(i)}: {node.log_tail(3)}"
                              for i, node in enumerate(self.standbys, start=1)
                              if node_name(i) in missing))

    def stop(self, *, timeout: float = 60, fast: bool = True) -> list[str]:
        """Stop the primary first (its clean shutdown sends the shutdown checkpoint to the
        standbys), then the others. Returns the notes of every layer that had to act."""
        notes = []
        for i, node in enumerate(self.nodes):
            notes += [f"{node_name(i)}: {note}"
                      for note in node.stop(timeout=timeout, fast=fast)]
        return notes

    def is_running(self) -> bool:
        """Whether every node runs."""
        return all(node.is_running() for node in self.nodes)

    @property
    def endpoints(self) -> list[tuple[str, int]]:
        """(unix socket directory, port) of every node, the primary first (started only)."""
        out = []
        for node in self.nodes:
            assert node.port is not None, "endpoints of a topology that never started"
            out.append((node.host, node.port))
        return out

    def read_logs(self) -> dict[str, str]:
        return {node_name(i): node.read_logs() for i, node in enumerate(self.nodes)}

    # -- snapshots ---------------------------------------------------------------------

    def snapshot(self, dest: Path) -> float:
        """Save every stopped node under ``dest/nodeI``: taken together after a clean stop,
        the standbys have replayed the primary's shutdown checkpoint, so they agree."""
        if any(node.is_running() for node in self.nodes):
            raise ServerError(f"cannot snapshot the topology in {self.root} while a node runs")
        return sum(node.snapshot(dest / node_name(i)) for i, node in enumerate(self.nodes))

    def restore(self, src: Path) -> float:
        """Bring every node back to the snapshot in ``src`` (all stopped)."""
        if any(node.is_running() for node in self.nodes):
            raise ServerError(f"cannot restore the topology in {self.root} while a node runs")
        return sum(node.restore(src / node_name(i)) for i, node in enumerate(self.nodes))

    def restore_method(self) -> tuple[str, float | None]:
        """How :meth:`restore` brings the nodes back (Cluster.restore_method of each)."""
        found = [node.restore_method() for node in self.nodes]
        methods = {m for m, _ in found}
        clones = [c for _, c in found if c is not None]
        return " + ".join(sorted(methods)), sum(clones) if len(clones) == len(found) else None

    # -- teardown ----------------------------------------------------------------------

    def close(self) -> list[str]:
        """Stop every node, then remove the socket and node directories teiten created."""
        notes = self.stop()
        for node in self.nodes:
            if node.socket_dir is not None:
                paths.remove_owned(node.socket_dir)
                node.socket_dir = None
            paths.remove_owned(node.root)
        return notes

    def __enter__(self) -> Topology:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def primary_settings(mode: Mode, nodes: int, synchronous_commit: str, *,
                     wal_level: str | None, major: int = 18) -> list[str]:
    """The primary's settings for ``nodes - 1`` streaming standbys: WAL senders and slots
    for each (and room for pg_basebackup's two), and for sync, every standby in ANY n (in
    9.6, which has no ANY, ``n (names)``: the first n by priority, which for all of them waits
    for the same standbys). ``wal_level``: what the study set (minimal, or None for the
    default, becomes replica)."""
    room = nodes + 4
    lines = [f"max_wal_senders = {max(10, room)}", f"max_replication_slots = {max(10, room)}"]
    if wal_level in (None, "minimal"):
        lines.append("wal_level = 'replica'")
    if mode == "sync":
        names = ", ".join(node_name(i) for i in range(1, nodes))
        quorum = "ANY " if major >= 10 else ""
        lines += [f"synchronous_standby_names = '{quorum}{nodes - 1} ({names})'",
                  f"synchronous_commit = '{synchronous_commit}'"]
    return lines


def basebackup_install(install: Install, client: Install | None) -> Install | None:
    """Whose pg_basebackup makes the standbys of ``install``: see :func:`basebackup_choice`,
    over the server's install and the study's client install."""
    return basebackup_choice(install.major, [(i, i.major) for i in (install, client)
                                             if i is not None and i.has("pg_basebackup")])


T = TypeVar("T")


def basebackup_choice(major: int, candidates: list[tuple[T, int]]) -> T | None:
    """The pg_basebackup (of ``candidates``, (which, its major), the server's own first) that
    makes standbys of a server of ``major``: the server's own where it is of 10 or later (older
    ones lack --no-sync), else the first of 10 or later and of the server's major or newer (it
    backs up servers of its major or older); None: none can."""
    return next((which for which, its in candidates if its >= 10 and its >= major), None)


def standby_files(major: int, settings: list[str]) -> tuple[str, str, list[str]]:
    """What makes a node a standby on a server of ``major``, given its
    :func:`standby_settings`: the file in its data directory, that file's text, and the
    settings left for the server. From 12, an empty standby.signal and every setting; before,
    recovery.conf with standby_mode and the settings of streaming (this start's port of the
    primary: written at each start), and hot_standby stays a setting."""
    if major >= 12:
        return "standby.signal", "", settings
    lines = ["standby_mode = 'on'", *settings[:-1]]
    return "recovery.conf", "".join(f"{line}\n" for line in lines), settings[-1:]


def standby_settings(index: int, host: str, port: int, *, passfile: str | None = None) -> list[str]:
    """Standby ``index``'s settings: stream from the primary at ``host`` (a socket directory
    or an address) and ``port`` through its own slot, named as the primary will list it
    (hot_standby last: before 12 the others go to recovery.conf, it stays a setting);
    ``passfile``: where it reads the password (PostgreSQL 10 and later)."""
    conninfo = make_conninfo(host=host, port=port, user=SUPERUSER,
                             application_name=node_name(index),
                             **({"passfile": passfile} if passfile else {}))
    return [f"primary_conninfo = '{_quote(conninfo)}'",
            f"primary_slot_name = '{node_name(index)}'",
            "hot_standby = on"]


def streaming(states: dict[str, tuple[str, str]], mode: Mode) -> set[str]:
    """The standbys of pg_stat_replication's ``states`` (name -> (state, sync_state)) that
    stream and, for sync, count for commits."""
    return {name for name, (state, sync) in states.items() if state == "streaming"
            and (mode != "sync" or sync in ("sync", "quorum"))}


def wait_for_standbys(states: Callable[[], dict[str, tuple[str, str]]], standbys: int,
                      mode: Mode, *, timeout: float,
                      tails: Callable[[set[str]], str] | None = None) -> None:
    """Wait until node1..node``standbys`` all stream (see :func:`streaming`), reading
    pg_stat_replication with ``states``; else one line with what it showed and, from
    ``tails``, the logs of the standbys it did not list."""
    wanted = {node_name(i) for i in range(1, standbys + 1)}
    last: dict[str, tuple[str, str]] = {}

    def all_streaming() -> bool:
        last.clear()
        last.update(states())
        return wanted <= streaming(last, mode)

    try:
        wait_until(all_streaming, timeout=timeout, interval=0.2,
                   what=f"{len(wanted)} standbys to stream from the primary")
    except WaitTimeout as exc:
        seen = ", ".join(f"{n}: {s}/{y}" for n, (s, y) in sorted(last.items())) or "none"
        logs = tails(wanted - set(last)) if tails is not None else ""
        raise ServerError(f"{exc} (pg_stat_replication shows {seen})"
                          + (f"; standby logs: {logs}" if logs else "")) from None


def _configured(cluster: Cluster, name: str) -> str | None:
    """The value teiten.conf gives ``name`` (as Cluster.configure wrote it), or None."""
    with contextlib.suppress(OSError, safefs.UnsafePath):
        for line in safefs.read_text(cluster.data / SETTINGS_CONF).splitlines():
            key, sep, value = line.partition("=")
            if sep and key.strip() == name:
                return value.strip().strip("'")
    return None


def _quote(value: str) -> str:
    return value.replace("\\", "\\\\").replace("'", "''")

