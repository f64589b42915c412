"""A PostgreSQL cluster that teiten creates: initdb, configuration, start and stop,
snapshot and restore (the 2014 team's pgsql-init-db, -start-db, -stop-db, -save-db,
-reload-db and -kill, as one class).

Every cluster lives in a directory teiten created and marked. It gets a free TCP port on
loopback and a private unix-socket directory, so that several clusters and the system's
own PostgreSQL run side by side. As root, its programs run as the server account.
"""

from __future__ import annotations

import contextlib
import logging
import os
import socket
import tempfile
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

import psutil
import psycopg

from teiten.host import paths, privileges, procs, safefs, ticker
from teiten.host.cpus import Placement
from teiten.host.netns import Namespace
from teiten.host.waiting import wait_until
from teiten.installs import Install
from teiten.model.errors import ProcessError, ServerError, UserError
from teiten.servers import snapshot
from teiten.servers.sql import housekeeping
from teiten.spec import InitdbOptions
from teiten.spec.base import unsafe_char

log = logging.getLogger(__name__)

SUPERUSER = "postgres"
RUNTIME_CONF = "teiten-runtime.conf"
SETTINGS_CONF = "teiten.conf"
_PORT_TROUBLE = ("could not bind", "Address already in use", "could not create lock file")


def free_port() -> int:
    """A TCP port on loopback that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def processes_in(data_dir: Path) -> list[psutil.Process]:
    """Every process whose working directory is ``data_dir``: the postmaster and all its
    backends chdir there, so this finds them even after the postmaster died."""
    target = os.path.realpath(data_dir)
    found = []
    for proc in psutil.process_iter(["pid", "name"]):
        with contextlib.suppress(psutil.Error):
            if proc.cwd() == target:
                found.append(proc)
    return found


class Cluster:
    """One data directory under ``root`` (a directory teiten owns)."""

    def __init__(self, install: Install, root: Path):
        self.install = install
        self.root = root
        self.data = root / "data"
        self.wal: Path | None = None
        self.account = privileges.server_account()
        self.port: int | None = None
        self.socket_dir: Path | None = None
        self.log_dir: Path | None = None
        self._manifests: dict[str, snapshot.Manifest] = {}
        self._clones: dict[str, float | None] = {}  # part -> seconds of a whole clone, if it clones
        self.placement: Placement | None = None  # the CPUs the server runs on
        self.tablespaces: list[Path] = []  # tablespace locations outside the data directory
        self.netns: Namespace | None = None  # the network namespace the server runs in
        # An executable that saves and restores the data directory itself (snapshot_hook:
        # a ZFS or LVM snapshot); None: teiten's own copy (teiten.servers.snapshot).
        self.hook: Path | None = None
        self._hooked = False  # the hook saved a snapshot, which 'discard' drops

    # -- helpers -------------------------------------------------------------------

    def _run(self, program: str, args: list[str], *, timeout: float, check: bool = True,
             what: str | None = None, placed: bool = False) -> procs.Completed:
        argv = [str(self.install.binary(program)), *args]
        run_as = self.account
        if placed and self.placement is not None:
            argv, run_as = self.placement.wrap(argv, run_as=run_as)
        if placed and self.netns is not None:
            # Entering a namespace needs root: nsenter runs as root and drops to the account.
            argv, run_as = self.netns.wrap(argv, run_as=run_as), None
        return procs.run(
            argv, timeout=timeout, check=check,
            run_as=run_as, cwd=str(self.root), what=what or program,
            env=procs.build_env({"LC_ALL": "C"}, run_as=self.account),
        )

    def _log_dir(self, path: Path) -> Path:
        """Make ``path`` for the server's logs: its parents teiten's (the server account
        cannot replace them), the directory itself the account's."""
        anchor = self.root if path.is_relative_to(self.root) else path.parent
        # safe: under the cluster's root, which is teiten's
        anchor.mkdir(parents=True, exist_ok=True)
        with safefs.Dir.open(anchor) as top:
            below = path.relative_to(anchor)
            parent = top.make_dirs(str(below.parent), mode=0o755, give=False) \
                if below.parent != Path(".") else None
            where = parent or top
            try:
                where.make_dir(below.name, mode=0o755, exist_ok=True).close()
            finally:
                if parent is not None:
                    parent.close()
        return path

    # -- creation -----------------------------------------------------------------

    def initdb(self, options: InitdbOptions, *, waldir: Path | None = None) -> None:
        """Create the data directory (METHODS S1: --no-locale -E UTF8 by default)."""
        privileges.ensure_reachable(self.root)
        _through_shell(self.data, self.install.bindir, *([waldir] if waldir else []))
        # The root stays teiten's; only the data directory (made empty here) is the server's.
        safefs.make_dir(self.data, mode=0o700)
        # -N (no fsync): --no-sync only from 10 on, -N on every version since 9.3.
        args = ["-D", str(self.data), "-U", SUPERUSER, "-A", "trust", "-N",
                *options.args(self.install.major)]
        if waldir is not None:
            self.wal = waldir
            safefs.make_dir(waldir, mode=0o700)
            args += [self.install.release.initdb_waldir, str(waldir)]
        with ticker.phase("initdb"):
            self._run("initdb", args, timeout=300)
        safefs.append_text(self.data / "postgresql.conf",
                           f"\n# added by teiten\ninclude_if_exists '{SETTINGS_CONF}'\n"
                           f"include_if_exists '{RUNTIME_CONF}'\n")

    def add_tablespace(self, location: Path) -> None:
        """Make ``location`` (in a directory teiten owns) ready for CREATE TABLESPACE, and
        part of every snapshot."""
        privileges.ensure_reachable(location.parent)
        safefs.make_dir(location, mode=0o700)
        self.tablespaces.append(location)

    @property
    def wal_dir(self) -> Path:
        """The WAL's place in the data directory (a link when it lives elsewhere): pg_wal,
        pg_xlog before 10."""
        return self.data / self.install.release.wal_dir

    def snapshot_parts(self) -> list[Path]:
        """The directories that hold this cluster's files (data, outside WAL, tablespaces)."""
        return list(self._parts().values())

    def _parts(self) -> dict[str, Path]:
        """What a snapshot holds: the data directory, and the WAL and tablespaces that live
        outside it (the data directory only links to them)."""
        parts = {"data": self.data}
        if self.wal is not None:
            parts["wal"] = self.wal
        for i, space in enumerate(self.tablespaces):
            parts[f"tablespace{i}"] = space
        return parts

    def configure(self, settings: dict[str, str]) -> None:
        """Write the profile and overrides to teiten.conf (like pgsql-change-conf)."""
        lines = [f"{name} = '{_quote(value)}'" for name, value in settings.items()]
        self._write_conf(SETTINGS_CONF, lines)

    def _trust_client(self, address: str) -> None:
        """Let clients from ``address`` in (initdb -A trust covers loopback only): the root
        namespace's end of the veth pair. Replaces the line an earlier namespace added."""
        hba = self.data / "pg_hba.conf"
        mark = "# teiten: client in the root namespace"
        kept = [line for line in safefs.read_text(hba).splitlines() if not line.endswith(mark)]
        safefs.write_text(hba, "\n".join([*kept, f"host all all {address}/32 trust {mark}"]) + "\n")

    def _write_conf(self, name: str, lines: list[str]) -> None:
        safefs.write_text(self.data / name, "# written by teiten; changed on every start\n"
                          + "\n".join(lines) + "\n")

    # -- start and stop -----------------------------------------------------------------

    def start(self, log_dir: Path, *, timeout: float = 120, extra: Sequence[str] = ()) -> None:
        """Start on a fresh free port, logging into ``log_dir``. ``extra``: lines appended to
        the runtime conf for this start only (a standby's primary_conninfo)."""
        if self.socket_dir is None:
            # safe: a new directory of root's in the temporary directory
            self.socket_dir = Path(tempfile.mkdtemp(prefix="teiten-"))
            paths.mark_owned(self.socket_dir, f"unix socket of {self.data}")
            paths.remember(self.root, self.socket_dir)
            safefs.give(self.socket_dir)
        _through_shell(self.data, self.install.bindir, log_dir, self.socket_dir)
        self.log_dir = self._log_dir(log_dir)
        if self.netns is not None:
            self._trust_client(self.netns.host_address)
        last = ""
        for _attempt in range(3):
            self.port = free_port()
            self._write_conf(RUNTIME_CONF, [
                *(f"{name} = {value}" for name, value in
                  runtime_settings(self.port, self.socket_dir, self.tcp_host, log_dir).items()),
                *extra,
            ])
            done = self._run("pg_ctl", ["start", "-D", str(self.data), "-w", "-t", str(int(timeout)),
                                        "-l", str(log_dir / "startup.log")],
                             timeout=timeout + 30, check=False, what="pg_ctl start", placed=True)
            if done.returncode == 0:
                return
            last = self.log_tail() or procs.tail(done.stderr + done.stdout)
            if not any(t in last for t in _PORT_TROUBLE):
                break
            log.info("port %s was taken; trying another", self.port)
        raise ServerError(f"PostgreSQL {self.install.version} in {self.data} did not start: {last}")

    def postmaster_pid(self) -> int | None:
        """The pid of the running postmaster of this data directory, or None."""
        try:
            pid = int(safefs.read_text(self.data / "postmaster.pid", limit=4096).split("\n", 1)[0])
        except (OSError, ValueError, safefs.UnsafePath):
            return None
        with contextlib.suppress(psutil.Error):
            if psutil.Process(pid).cwd() == os.path.realpath(self.data):
                return pid
        return None

    def is_running(self) -> bool:
        return self.postmaster_pid() is not None

    def stop(self, *, timeout: float = 60, fast: bool = True) -> list[str]:
        """Stop in layers: fast shutdown, immediate shutdown, then kill the process tree.
        Without ``fast``, start at immediate: after a crash a fast shutdown can wait through
        crash recovery for a minute (seen with 15), and the data is restored anyway.

        Each layer logs what happened and goes on to the next; returns those notes.
        """
        notes: list[str] = []
        if self.postmaster_pid() is not None:
            layers = [("fast", timeout), ("immediate", 20.0)][0 if fast else 1:]
            for mode, limit in layers:
                try:
                    self._run("pg_ctl", ["stop", "-D", str(self.data), "-m", mode, "-w",
                                         "-t", str(int(limit))], timeout=limit + 15,
                              what=f"pg_ctl stop -m {mode}")
                    break
                except ProcessError as exc:
                    notes.append(f"{mode} shutdown failed: {exc}")
                    log.warning("%s", notes[-1])
        leftovers = processes_in(self.data) if self.data.exists() else []
        if leftovers:
            # Children (the logger) may still be exiting after pg_ctl saw the postmaster go.
            _, leftovers = psutil.wait_procs(leftovers, timeout=5)
        if leftovers:
            notes.append(f"killed {len(leftovers)} leftover server processes")
            log.warning("%s in %s", notes[-1], self.data)
            for proc in leftovers:
                procs.kill_tree(proc.pid)
        return notes

    def log_tail(self, lines: int = 6) -> str:
        return procs.tail(self.read_logs(), lines)

    def read_logs(self) -> str:
        """Everything the server wrote to the current log directory, oldest first."""
        if self.log_dir is None:
            return ""
        return safefs.read_files(self.log_dir, first="startup.log")

    # -- connections ----------------------------------------------------------------------

    @property
    def host(self) -> str:
        assert self.socket_dir is not None
        return str(self.socket_dir)

    @property
    def tcp_host(self) -> str:
        """The address clients reach the server at over TCP: loopback, or the server's side
        of the veth pair when it runs in a network namespace."""
        return self.netns.address if self.netns is not None else "127.0.0.1"

    @contextlib.contextmanager
    def connect(self, dbname: str = "postgres", *, tcp: bool = False) -> Iterator[psycopg.Connection]:
        assert self.port is not None
        host = self.tcp_host if tcp else self.host
        try:
            conn = psycopg.connect(host=host, port=self.port, user=SUPERUSER, dbname=dbname,
                                   autocommit=True, connect_timeout=15,
                                   options=housekeeping(self.install.release))
        except psycopg.Error as exc:
            raise ServerError(f"cannot connect to {dbname} on port {self.port}: {exc}") from exc
        with conn:
            yield conn

    def wait_ready(self, *, timeout: float = 30) -> None:
        def ready() -> bool:
            try:
                with self.connect():
                    return True
            except ServerError:
                return False
        wait_until(ready, timeout=timeout, what=f"PostgreSQL on port {self.port} to accept "
                   "connections", error=ServerError)

    # -- snapshots -------------------------------------------------------------------------

    def snapshot(self, dest: Path) -> float:
        """Save a stopped copy of the cluster (pgsql-save-db), and find out how each part of
        it can be restored (a whole clone where the filesystem shares extents). Returns
        seconds taken."""
        if self.is_running():
            raise ServerError(f"cannot snapshot {self.data} while the server runs")
        with ticker.phase("saving the data directory as a snapshot"):
            return self._snapshot(dest)

    def _snapshot(self, dest: Path) -> float:
        started = time.monotonic()
        # safe: the snapshot lives in the cluster's root, teiten's
        dest.mkdir(mode=0o700, parents=True, exist_ok=True)  # the server has no business there
        if self.hook is not None:
            self._call_hook("save", dest)
            self._hooked = True
            snapshot.settle(self.data.parent)  # what the hook wrote, before any trial
            return time.monotonic() - started
        self._manifests = {part: snapshot.take(path, dest / part) for part, path in self._parts().items()}
        self._clones = {part: snapshot.clone_seconds(dest / part, path)
                        for part, path in self._parts().items()}
        return time.monotonic() - started

    def restore_method(self) -> tuple[str, float | None]:
        """How :meth:`restore` brings the data back, and what one whole clone took at
        prepare (None when it copies incrementally)."""
        if self.hook is not None:
            return f"snapshot hook {self.hook.name}", None
        clones = list(self._clones.values())
        if clones and all(c is not None for c in clones):
            return snapshot.CLONE, sum(c for c in clones if c is not None)
        if any(c is not None for c in clones):  # e.g. the data on XFS, the WAL elsewhere
            return f"{snapshot.CLONE} + {snapshot.INCREMENTAL}", None
        return snapshot.INCREMENTAL, None

    def restore(self, src: Path) -> float:
        """Bring back the saved copy (pgsql-reload-db): only the files that changed since,
        cloned where the filesystem can, else copied. Returns seconds taken."""
        if self.is_running():
            raise ServerError(f"cannot restore {self.data} while the server runs")
        with ticker.phase("restoring the data directory from its snapshot"):
            return self._restore(src)

    def _restore(self, src: Path) -> float:
        started = time.monotonic()
        if self.hook is not None:
            self._call_hook("restore", src)
            snapshot.settle(self.data.parent)  # what the hook wrote, before the trial
            return time.monotonic() - started
        for part, target in self._parts().items():
            self._manifests[part], copied = snapshot.restore(
                src / part, target, self._manifests.get(part, {}),
                clone=self._clones.get(part) is not None)
            log.info("restored %s: %d MB copied", target, copied >> 20)
        return time.monotonic() - started


    def discard_snapshot(self, dest: Path) -> None:
        """Let the hook drop the snapshot it saved (teiten's own copy goes with the root)."""
        if self.hook is not None and self._hooked:
            self._hooked = False
            self._call_hook("discard", dest)

    def _call_hook(self, action: str, dest: Path) -> None:
        """``HOOK ACTION DATA_DIR SNAPSHOT_DIR`` with the server stopped; its failure is the
        cluster's (one line with the hook's last words)."""
        assert self.hook is not None
        procs.run([str(self.hook), action, str(self.data), str(dest)], timeout=3600,
                  what=f"snapshot hook {self.hook} {action}")


def runtime_settings(port: int, socket_dir: Path, tcp_host: str, log_dir: Path) -> dict[str, str]:
    """The settings of one start (teiten-runtime.conf), as postgresql.conf text: where it
    listens and logs. unix_socket_directories is 9.3's name (unix_socket_directory before)."""
    return {"port": str(port), "unix_socket_directories": f"'{_quote(str(socket_dir))}'",
            "listen_addresses": f"'{tcp_host}'", "log_directory": f"'{_quote(str(log_dir))}'",
            "log_filename": "'postgresql-%Y%m%d-%H%M%S.log'"}


def _through_shell(*paths: Path) -> None:
    """Refuse a path that pg_ctl or initdb would pass through /bin/sh with a character that
    means something there (study files are checked at plan; this covers teiten's home and
    installs)."""
    for path in paths:
        bad = unsafe_char(str(path))
        if bad is not None:
            raise UserError(f"{ascii(str(path))} holds {ascii(bad)}, which teiten never passes to "
                            "PostgreSQL's programs (pg_ctl starts the server through a shell); "
                            "set TEITEN_HOME to, or install into, a path without it")


def _quote(value: str) -> str:
    return str(value).replace("\\", "\\\\").replace("'", "''")
