"""Servers on a host teiten reaches with OpenSSH (servers/ssh/host.py's ``Host``: an ``ssh`` host,
or one a kind brings up first): clusters teiten creates, configures, snapshots and controls
there, by running OpenSSH commands and POSIX shell (no agent of teiten's own).

The method is LocalServer's: one cluster per (server, workload) under
``~/.cache/teiten/clusters/<run>/<server>--<workload>`` on the host (a directory marked as
teiten's own), the workload's data loaded once and saved as a stopped copy, that copy
restored before every trial that follows a data-changing one, and every trial started
afresh with prewarm and CHECKPOINT. pgbench runs here, on the client, against the host.

Network and authentication: the cluster listens on the host's address as this client reaches it
(the server side of ``$SSH_CONNECTION`` there) and on 127.0.0.1, with no unix socket; this
client connects where the host says it reaches that port (``Host.address``). pg_hba.conf admits
only this client's address (the client side of ``$SSH_CONNECTION``), with scram-sha-256 (md5
before 10) for a random password that teiten makes for each cluster and keeps in memory only:
it goes to initdb on stdin, to pgbench as PGPASSWORD, and to teiten's own connections as a
parameter, and is never written to a file or a command line (except, while it runs, the
pool_passwd of a Pgpool-II in front of the nodes: servers/ssh/pgpool.py).

What teiten learns of the host and the install it finds there: servers/ssh/host.py; the state
of each cluster on the host: servers/ssh/slot.py. A host with a volume for the WAL
(``Host.wal_base``: a VM guest's WAL disk) gets each cluster's WAL there (initdb --waldir), and
the WAL directory's contents are saved and restored with the data directory's.
"""

from __future__ import annotations

import dataclasses
import logging
import random
import secrets
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import psycopg

from teiten.host import client_account, paths, procs
from teiten.host.remote import Ssh
from teiten.installs import Install
from teiten.model.errors import ProcessError, ServerError
from teiten.monitors.remote_system import RemoteBackend
from teiten.servers import profiles
from teiten.servers.base import DataSet, Endpoint, Server, TrialEnd, crash_verdict
from teiten.servers.cluster import RUNTIME_CONF, SETTINGS_CONF, SUPERUSER
from teiten.servers.scripts import script
from teiten.servers.sql import Binaries, create_database, describe, housekeeping, make_extensions, settle
from teiten.servers.ssh.host import Host, HostFacts, RemoteInstall, cidr, find_install, marker, pg_config
from teiten.servers.ssh.slot import Slot
from teiten.spec import ServerSpec

log = logging.getLogger(__name__)

_PORTS = (20000, 60999)  # where a port is picked at random on the host (no way to ask it)
_PORT_TROUBLE = ("could not bind", "Address already in use", "could not create lock file")
_START_TRIES = 5
# $1: the data directory, $2: the snapshot, $3: the WAL directory elsewhere ("" for none). cp -a
# copies the data directory's pg_wal as the link it is: the WAL's contents are copied on their own.
_SAVE = ('set -e; rm -rf -- "$2"; mkdir "$2"; cp -a -- "$1" "$2/data"; '
         'if [ -n "$3" ]; then cp -a -- "$3" "$2/wal"; fi')
_RESTORE = ('set -e; rm -rf -- "$1"; cp -a -- "$2/data" "$1"; '
            'if [ -n "$3" ]; then rm -rf -- "$3"; cp -a -- "$2/wal" "$3"; fi')


def _quote(value: str) -> str:
    return str(value).replace("\\", "\\\\").replace("'", "''")


class SshServer(Server):
    """A cluster on ``host``, controlled over OpenSSH."""

    kind = "ssh"

    def __init__(self, spec: ServerSpec, host: Host, client: Install, run_dir: Path,
                 sizing: profiles.Sizing):
        assert spec.install is not None
        self.name = spec.name
        self.spec = spec
        self.client = client  # whose pgbench loads the data and drives the load
        self.run_dir = run_dir
        self.sizing = sizing
        self.on = host
        self.host: HostFacts | None = None
        self.install: RemoteInstall | None = None
        self.settings: dict[str, str] = {}
        self.slots: dict[str, Slot] = {}
        self.current: Slot | None = None
        self.description: dict[str, object] | None = None
        self._created: list[tuple[str, Host]] = []  # directories on hosts, removed by close()
        self._monitor: RemoteBackend | None = None

    # -- the host ------------------------------------------------------------------------------

    @property
    def ssh(self) -> Ssh:
        return self.on.ssh

    def _where(self) -> str:
        return self.on.where()

    def _host(self, slot: Slot) -> Host:
        """The host of a cluster: its own (a node of a server spread over hosts), else the
        server's."""
        return slot.on or self.on

    def hosts(self) -> list[Host]:
        """Every host the server's clusters run on, its own first."""
        return [self.on]

    def connect(self) -> HostFacts:
        """Reach the host, read what teiten needs of it, find the install there. Once."""
        if self.host is not None:
            return self.host
        self.host = self.on.reach()
        self.install = find_install(self.ssh, self.on.install_ref(str(self.spec.install)),
                                    server=self.name, where=self._where(), hint=self.on.install_hint())
        if not self.client.has("pgbench"):
            raise ServerError(f"PostgreSQL {self.client.version} in {self.client.bindir} (the "
                              "client of the ssh server) has no pgbench")
        return self.host

    def _bin(self, program: str, on: Host | None = None) -> str:
        """Where ``program`` of the install is on the host ``on`` (the server's own by default)."""
        assert self.install is not None
        return self.install.binary(program)

    def _pg(self, program: str, *args: str, timeout: float, check: bool = True,
            what: str | None = None, input: str | None = None,  # noqa: A002
            on: Host | None = None) -> procs.Completed:
        """``program`` of the install on the host ``on`` (the server's own by default)."""
        return (on or self.on).ssh.run(["env", "LC_ALL=C", self._bin(program, on), *args],
                                       timeout=timeout, check=check, what=what or program,
                                       input=input)

    def _remove(self, path: str, on: Host) -> None:
        try:
            on.ssh.shell(script("remove_owned.sh"), paths.MARKER, path, timeout=300,
                         what=f"removing {path}")
        except (ProcessError, ServerError) as exc:
            log.warning("%s: %s", on.where(), exc)

    # -- preparing a workload --------------------------------------------------------------------

    def _base(self, facts: HostFacts | None = None) -> str:
        """The run's directory on the host of ``facts`` (the server's own by default)."""
        facts = facts or self.host
        assert facts is not None
        return f"{facts.home}/.cache/teiten/clusters/{self.run_dir.name}"

    def prepare(self, workload: DataSet) -> None:
        if workload.key in self.slots:
            return
        if workload.sql_loaded:
            raise ServerError(f"{self._where()}: workload {workload.key} loads its data by SQL, "
                              "which is not supported over ssh in this version; use a pgbench "
                              "workload, or a local or external server")
        self.connect()
        base = self._base()
        root = f"{base}/{self.name}--{workload.key}"
        self.ssh.shell(script("make_owned.sh"), paths.MARKER, base, root,
                       marker(f"teiten run {self.run_dir.name}"),
                       marker(f"cluster of {self.name}/{workload.key}"), timeout=60,
                       what=f"creating {root}")
        self._created.append((root, self.on))
        slot = Slot(root=root, database=workload.database, password=secrets.token_urlsafe(24))
        self._size(base)
        self._initdb(slot)
        self._start(slot, f"{root}/logs/prepare")
        try:
            with self._connect(slot) as conn:
                create_database(conn, workload.database)
            with self._connect(slot, workload.database) as conn:
                make_extensions(conn, self.settings.get("shared_preload_libraries", ""))
            assert slot.port is not None
            address, port = self.on.address(slot.port)
            client_account.run([str(self.client.binary("pgbench")), *workload.init_args(),
                        "-h", address, "-p", str(port), "-U", SUPERUSER, workload.database],
                       timeout=7200, what="pgbench -i",
                       extra_env={"PGPASSWORD": slot.password, "PGOPTIONS": self._housekeeping()})
            with self._connect(slot, workload.database) as conn:
                conn.execute("CHECKPOINT")
                if self.description is None:
                    self.description = self._describe(conn)
        finally:
            self._stop(slot)
        self._save(slot)
        self.slots[workload.key] = slot

    def _save(self, slot: Slot) -> None:
        """Keep a stopped copy of every node of the loaded cluster (its WAL directory's contents
        with it), to restore before trials."""
        for node in slot.nodes:
            self._host(node).ssh.shell(_SAVE, node.data, node.snapshot, node.wal or "", timeout=3600,
                                       what="saving the snapshot")

    def _size(self, base: str) -> None:
        """The profile's settings for the host's memory and the free space of its disk (the
        less free of the data's and the WAL's, when the WAL has a volume of its own)."""
        if self.settings:
            return
        assert self.host is not None
        wal = self.on.wal_base()
        free = self.ssh.run(["df", "-Pk", base, *([wal] if wal else [])], timeout=30,
                            what="df").stdout.splitlines()
        try:
            disk_free = min(int(line.split()[3]) * 1024 for line in free[1:])
        except (IndexError, ValueError):
            disk_free = self.sizing.disk_free_bytes
        sizing = dataclasses.replace(self.sizing, ram_bytes=self.host.ram_bytes,
                                     disk_free_bytes=disk_free)
        assert self.install is not None
        self.settings = profiles.merged(self.spec.profile, self.spec.settings, sizing,
                                        self.install.release)
        shared_buffers, fits = profiles.shared_buffers_for(sizing)
        if self.spec.profile == "pgecons" and not fits:
            log.warning("%s: the data (about %d MB) does not fit in shared_buffers, which is "
                        "capped at 40%% of the host's memory (%d MB)", self.name,
                        sizing.data_bytes >> 20, shared_buffers >> 20)

    def _housekeeping(self) -> str:
        """The options of teiten's own connections, for the host's install's release."""
        assert self.install is not None
        return housekeeping(self.install.release)

    def _auth_method(self) -> str:
        assert self.install is not None
        return "scram-sha-256" if self.install.major >= 10 else "md5"

    def _initdb(self, slot: Slot) -> None:
        assert self.host is not None and self.install is not None
        # scram-sha-256 from 10 on, md5 before; -N (no fsync): --no-sync only from 10 on.
        method = self._auth_method()
        args = ["-D", slot.data, "-U", SUPERUSER, "-A", method, "--pwfile=/dev/stdin", "-N",
                *self.spec.initdb_options().args(self.install.major)]
        wal_base = self.on.wal_base()
        if wal_base is not None:  # on the host's WAL volume, a directory per cluster
            slot.wal = f"{wal_base}/{self.run_dir.name}/{slot.root.rsplit('/', 1)[-1]}/pg_wal"
            self.ssh.run(["mkdir", "-p", "-m", "0700", slot.wal.rsplit("/", 1)[0]], timeout=30,
                         what="creating the WAL directory")
            args += [self.install.release.initdb_waldir, slot.wal]
        # The password goes on stdin: never in a file, never on a command line (ps shows those).
        self._pg("initdb", *args, timeout=300, input=slot.password + "\n")
        self.ssh.write_text(f"{slot.data}/postgresql.conf", append=True, text=(
            f"\n# added by teiten\ninclude_if_exists '{SETTINGS_CONF}'\n"
            f"include_if_exists '{RUNTIME_CONF}'\n"))
        self.ssh.write_text(f"{slot.data}/pg_hba.conf", text=(
            "# written by teiten: only the client that runs the benchmark, with the password\n"
            "# teiten made for this cluster (kept in its memory only)\n"
            + "".join(f"{line} {method}\n" for line in self._admitted())))
        lines = [f"{k} = '{_quote(v)}'" for k, v in self.settings.items()]
        self.ssh.write_text(f"{slot.data}/{SETTINGS_CONF}",
                            "# written by teiten\n" + "\n".join(lines) + "\n")

    def _admitted(self) -> list[str]:
        """pg_hba.conf's lines (without the method) for whom the cluster admits: this client."""
        assert self.host is not None
        return [f"host all all {cidr(self.host.client_ip)}"]

    # -- start and stop ------------------------------------------------------------------------

    def _running(self, slot: Slot) -> bool:
        done = self._pg("pg_ctl", "status", "-D", slot.data, timeout=30, check=False,
                        what="pg_ctl status", on=self._host(slot))
        return done.returncode == 0

    def _start(self, slot: Slot, log_dir: str, *, timeout: float = 120,
               extra: Sequence[str] = ()) -> None:
        """Start on a free port, listening on the host's address; ``extra``: more settings
        for this start (replication's)."""
        on = self._host(slot)
        facts = on.reach()
        on.ssh.run(["mkdir", "-p", log_dir], timeout=30)
        slot.log_dir = log_dir
        listen = dict.fromkeys([facts.server_ip, "127.0.0.1"])
        last = ""
        for _attempt in range(_START_TRIES):
            slot.port = random.randint(*_PORTS)  # noqa: S311 - a port, not a secret
            on.ssh.write_text(f"{slot.data}/{RUNTIME_CONF}", "# written by teiten on every start\n"
                                f"port = {slot.port}\n"
                                f"listen_addresses = '{_quote(','.join(listen))}'\n"
                                f"unix_socket_directories = '{_quote(slot.socket_dir or '')}'\n"
                                "unix_socket_permissions = 0700\n"
                                f"log_directory = '{_quote(log_dir)}'\n"
                                "log_filename = 'postgresql-%Y%m%d-%H%M%S.log'\n"
                                + "".join(f"{line}\n" for line in extra))
            done = self._pg("pg_ctl", "start", "-D", slot.data, "-w", "-t", str(int(timeout)),
                            "-l", f"{log_dir}/startup.log", timeout=timeout + 30, check=False,
                            what="pg_ctl start", on=on)
            last = procs.tail(self._read_logs(log_dir, on), 6) or procs.tail(done.stderr + done.stdout)
            if done.returncode == 0 and "could not bind" not in last:
                return
            if done.returncode == 0:  # one of the addresses was taken: another port
                self._stop(slot)
            elif not any(t in last for t in _PORT_TROUBLE):
                break
            log.info("%s: port %s was taken; trying another", on.where(), slot.port)
        raise ServerError(f"PostgreSQL {self._version()} on {on.where()} in {slot.data} did "
                          f"not start: {last}")

    def _stop(self, slot: Slot, *, timeout: float = 60, fast: bool = True) -> list[str]:
        """Stop in layers: fast shutdown, immediate shutdown, then kill what is left.
        Without ``fast``, start at immediate (a crashed trial's data is restored anyway)."""
        notes: list[str] = []
        on = self._host(slot)
        layers = [("fast", timeout), ("immediate", 20.0)][0 if fast else 1:]
        if self._running(slot):
            for mode, limit in layers:
                try:
                    self._pg("pg_ctl", "stop", "-D", slot.data, "-m", mode, "-w", "-t",
                             str(int(limit)), timeout=limit + 15, what=f"pg_ctl stop -m {mode}",
                             on=on)
                    break
                except (ProcessError, ServerError) as exc:
                    notes.append(f"{mode} shutdown failed: {exc}")
                    log.warning("%s", notes[-1])
        try:
            killed = on.ssh.shell(script("kill_leftovers.sh"), slot.data, timeout=60,
                                  what="killing leftover server processes").stdout.strip()
        except (ProcessError, ServerError) as exc:
            notes.append(f"could not look for leftover server processes: {exc}")
            log.warning("%s", notes[-1])
        else:
            if killed:
                notes.append(f"killed {killed} leftover server processes")
                log.warning("%s in %s on %s", notes[-1], slot.data, on.where())
        return notes

    def _read_logs(self, log_dir: str | None, on: Host | None = None) -> str:
        """The server logs in ``log_dir`` on the host ``on`` (the server's own by default)."""
        if log_dir is None:
            return ""
        return (on or self.on).ssh.shell(script("read_logs.sh"), log_dir, timeout=120,
                                         what="reading the server log", check=False).stdout

    def _version(self) -> str:
        return self.install.version if self.install is not None else str(self.spec.install)

    @contextmanager
    def _connect(self, slot: Slot, dbname: str = "postgres") -> Iterator[psycopg.Connection]:
        assert slot.port is not None
        address, port = self._host(slot).address(slot.port)
        try:
            conn = psycopg.connect(host=address, port=port, user=SUPERUSER,
                                   password=slot.password, dbname=dbname, autocommit=True,
                                   connect_timeout=15, options=self._housekeeping())
        except psycopg.Error as exc:
            raise ServerError(f"cannot connect to {dbname} on {address} port "
                              f"{port} ({self._host(slot).where()}): {exc}") from exc
        with conn:
            yield conn

    # -- trials -----------------------------------------------------------------------------------

    def begin_trial(self, workload: DataSet, trial_id: str, *, prewarm: bool) -> Endpoint:
        slot = self.slots[workload.key]
        self.current = slot
        cycle = self.cycle
        if any(self._running(node) for node in slot.nodes):  # left over from an interrupted trial
            with cycle.phase("stop_leftover"):
                self._stop_nodes(slot)
        if slot.dirty and self.keep_data and not slot.broken:  # trials: {restore: first}
            cycle.start.kept(self.keep_data)
        elif slot.dirty or slot.broken:
            started = time.monotonic()
            with cycle.phase("restore"):
                for node in slot.nodes:
                    self._host(node).ssh.shell(_RESTORE, node.data, node.snapshot, node.wal or "",
                                               timeout=3600, what="restoring the snapshot")
            slot.restore_s.append(time.monotonic() - started)
            cycle.start.restored("full copy", crashed=slot.broken)
            slot.dirty = slot.broken = False
        else:
            cycle.start.unrestored(slot.trials > 0)
        with cycle.phase("start"):
            self._start_nodes(slot, f"{slot.root}/logs/{trial_id}")
        cycle.start.server = "restarted"
        for node in slot.nodes:
            with self._connect(node, workload.database) as conn:
                settle(conn, cycle, prewarm=prewarm)
        slot.dirty = workload.modifies_data
        slot.trials += 1
        return self._endpoint(slot, workload.database)

    def _start_nodes(self, slot: Slot, log_dir: str) -> None:
        """Start the trial's clusters; ``log_dir``: where their logs go."""
        self._start(slot, log_dir)

    def _stop_nodes(self, slot: Slot, *, fast: bool = True) -> list[str]:
        """Stop every node, the primary first (its clean shutdown reaches the standbys)."""
        return [f"{name}: {note}" if name else note
                for name, node in zip(slot.names, slot.nodes, strict=True)
                for note in self._stop(node, fast=fast)]

    def _endpoint(self, node: Slot, database: str) -> Endpoint:
        assert node.port is not None
        address, port = self._host(node).address(node.port)
        return Endpoint(host=address, port=port, user=SUPERUSER,
                        dbname=database, password_env={"PGPASSWORD": node.password})

    def end_trial(self) -> TrialEnd:
        if self._monitor is not None:
            self._monitor.close()  # the next trial's first read starts it again
        slot = self.current
        if slot is None:
            return TrialEnd()
        self.current = None
        crashed = crash_verdict(
            {name: self._running(node) for name, node in zip(slot.names, slot.nodes, strict=True)},
            {name: self._read_logs(node.log_dir, self._host(node))
             for name, node in zip(slot.names, slot.nodes, strict=True)})
        with self.cycle.phase("stop"):
            notes = self._stop_nodes(slot, fast=crashed is None)
        text = "".join(f"\n## {name}\n{self._read_logs(node.log_dir, self._host(node))}" if name
                       else self._read_logs(node.log_dir)
                       for name, node in zip(slot.names, slot.nodes, strict=True))
        if crashed:
            slot.broken = True
        return TrialEnd(log=text, crashed=crashed, notes=notes)

    def remote_monitor(self) -> RemoteBackend | None:
        """The system monitor's backend for the host (one stream, reused across trials)."""
        if self._monitor is None:
            self._monitor = RemoteBackend(self.ssh)
        return self._monitor

    def devices(self) -> dict[str, str]:
        """The host's block devices of the data and WAL directories, as /proc/diskstats names them."""
        slot = self.current
        if slot is None:
            return {}
        if slot.device is None:
            slot.device = self._device(slot.data)
            slot.wal_device = self._device(slot.wal) if slot.wal else slot.device
        found = {"data": slot.device, "wal": slot.wal_device}
        return {k: v for k, v in found.items() if v}

    def _device(self, path: str) -> str:
        done = self.ssh.shell('d=$(df -P "$1" | awk \'NR==2 {print $1}\'); '
                              'case "$d" in /dev/*) readlink -f "$d";; esac', path,
                              timeout=30, check=False, what="df")
        return done.stdout.strip().rsplit("/", 1)[-1]

    def server_pids(self) -> list[int]:
        return self.on.pids()

    def _describe(self, conn: psycopg.Connection) -> dict[str, object]:
        assert self.install is not None
        info = describe(conn, Binaries(self.install.bindir, self.on.origin, pg_config(self.ssh, self.install)))
        info["host"] = self.on.describe()
        return info

    def describe(self) -> dict[str, object]:
        return self.description or {"version": self._version(), "origin": self.on.origin}

    def close(self) -> None:
        """Stop every cluster and remove what teiten created on the host, then disconnect.
        Each layer logs and goes on to the next."""
        if self._monitor is not None:
            self._monitor.close()
            self._monitor = None
        try:
            for key, slot in list(self.slots.items()):
                try:
                    self._stop_nodes(slot)
                except (ProcessError, ServerError) as exc:
                    log.warning("%s: stopping %s: %s", self._where(), slot.data, exc)
                del self.slots[key]
            for path, on in reversed(self._created):
                self._remove(path, on)
            self._created.clear()
            for on in self.hosts() if self.host is not None else []:
                if on.facts is None:
                    continue  # never reached: nothing made there
                try:
                    on.ssh.shell(script("remove_empty_base.sh"), paths.MARKER,
                                 self._base(on.facts), timeout=60,
                                 what="removing the run's directory")
                except (ProcessError, ServerError) as exc:
                    log.warning("%s: %s", on.where(), exc)
        finally:
            self.current = None
            for on in self.hosts():
                on.close()


def remove_leftovers(host: Host, run: str) -> list[str]:
    """Stop and remove what the killed run ``run`` left on ``host`` (a host that cannot be
    reached is a note: what is there stays)."""
    try:
        out = host.ssh.shell(script("pgpool_kill.sh") + script("leftovers.sh"), paths.MARKER,
                             RUNTIME_CONF, run, timeout=300, what="removing a killed run's clusters")
    except (ProcessError, ServerError) as exc:
        return [f"could not clean up on {host.where()}: {exc}"]
    finally:
        host.close()
    return [f"{host.name}: {line}" for line in out.stdout.splitlines() if line.strip()]
