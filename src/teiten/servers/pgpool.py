"""Pgpool-II in front of a topology's nodes (METHODS S7: a Pgpool-II next to each server).

teiten writes the whole configuration of each instance into a marked directory of its own:
free ports (clients and pcp), a private unix-socket directory, pid file, status file and
log. As root it runs as the server account, like PostgreSQL. The backends trust local
connections, so neither pool_passwd nor pool_hba is used; health checks and streaming
checks are off (a benchmark must not fail over), and every backend is
DISALLOW_TO_FAILOVER.

Pgpool-II 4.3 facts this relies on: ``backend_clustering_mode`` (4.2 and later) chooses
streaming_replication or native_replication; the socket directories are ``socket_dir``,
``pcp_socket_dir`` and ``wd_ipc_socket_dir``; ``logdir`` holds pgpool_status, which ``-D``
discards at start so that a node once seen down is not remembered so. pgpool daemonizes
before it binds its ports, so a taken port shows only in its log; and after such a FATAL
the main process stays alive and ignores ``pgpool stop``: teiten kills it by its pid.
At startup pgpool finds the primary with ``sr_check_user`` even when sr_check_period is 0.
A ``backend_weight`` of 0 keeps SELECTs off that node (they go to the weighted ones); a
function's volatility decides where a SELECT calling it goes (pg_is_in_recovery() is
volatile, so it always reaches the primary). The pid file ends with a NUL byte. The query
cache's shared memory is allocated even with memory_cache_enabled off.
"""

from __future__ import annotations

import contextlib
import logging
import re
import shutil
import tempfile
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Literal, Protocol, TypeVar

import psutil
import psycopg

from teiten.host import paths, privileges, procs, safefs
from teiten.host.waiting import WaitTimeout, wait_until
from teiten.model.errors import ProcessError, ServerError, UserError
from teiten.servers.cluster import SUPERUSER, free_port

log = logging.getLogger(__name__)

PGPOOL = "pgpool"
RUN_DIR = "run"  # in an instance's directory: the only part the server account writes
CLIENT_MARGIN = 4  # children beyond the clients: pgbench's setup connection, monitors
_MODES = {"streaming": "streaming_replication", "native": "native_replication"}
_VERSION = re.compile(r"pgpool-II version (\d+)\.(\d+)")
_PREFIX = re.compile(r"^[\d-]+ [\d:.]+: .*? pid \d+: ", re.MULTILINE)  # "2026-... main pid 7: "


def binary() -> Path | None:
    found = shutil.which(PGPOOL) or shutil.which(PGPOOL, path="/usr/sbin:/usr/local/sbin")
    return Path(found) if found else None


def available() -> str | None:
    """Why Pgpool-II cannot be used here, or None when it can."""
    path = binary()
    if path is None:
        return ("Pgpool-II is not installed (no 'pgpool' in PATH, /usr/sbin or "
                "/usr/local/sbin): apt-get install pgpool2")
    try:
        done = procs.run([str(path), "--version"], timeout=30, check=False)
    except ProcessError as exc:
        return f"{path} does not run: {exc}"
    return version_problem(str(path), done.stdout + done.stderr)


def version_problem(path: str, said: str) -> str | None:
    """Why the Pgpool-II at ``path`` that said ``said`` to --version cannot be used, or None."""
    found = _VERSION.search(said)
    if found is None:
        return f"{path} --version said {procs.tail(said, 1)!r}, not a version"
    if (int(found[1]), int(found[2])) < (4, 2):
        return (f"Pgpool-II {found[1]}.{found[2]} is too old: teiten needs 4.2 or later "
                "(backend_clustering_mode)")
    return None


def settings(mode: Literal["streaming", "native"], backends: Sequence[tuple[str, int]],
             weights: Sequence[float], *, max_clients: int, listen: str, port: int,
             pcp_port: int, socket_dir: str, root: str) -> dict[str, str | int]:
    """pgpool.conf of an instance in ``root`` (pid file, status, log): its clients' and pcp
    ports on ``listen``, its unix sockets in ``socket_dir``, the backends (host or socket
    directory, port) with their load-balancing weights, primary first."""
    values: dict[str, str | int] = {
        "backend_clustering_mode": _MODES[mode],
        "listen_addresses": listen,
        "port": port,
        "socket_dir": socket_dir,
        "pcp_listen_addresses": listen,
        "pcp_port": pcp_port,
        "pcp_socket_dir": socket_dir,
        "wd_ipc_socket_dir": socket_dir,
        "use_watchdog": "off",
        "pid_file_name": f"{root}/pgpool.pid",
        "logdir": root,
        "log_destination": "stderr",
        "logging_collector": "on",
        "log_directory": f"{root}/log",
        "log_filename": "pgpool.log",
        "log_rotation_age": 0,
        "log_rotation_size": 0,
        # One database and one user per benchmark: one cached connection per child.
        "num_init_children": max_clients + CLIENT_MARGIN,
        "max_pool": 1,
        "reserved_connections": 0,
        "connection_cache": "on",
        "enable_pool_hba": "off",
        "pool_passwd": "",
        "health_check_period": 0,
        "health_check_user": SUPERUSER,
        "sr_check_period": 0,
        "sr_check_user": SUPERUSER,
        "failover_on_backend_error": "off",
        "search_primary_node_timeout": 30,
        "load_balance_mode": "on",
        "statement_level_load_balance": "off",
        "replicate_select": "off",
        "insert_lock": "off",
        "memory_cache_enabled": "off",
        # 4.3 allocates the query cache's shared memory even when it is off: 134 MB
        # with the defaults (resident, per pgpool), 1.3 MB with these.
        "memqcache_total_size": "1MB",
        "memqcache_max_num_cache": 1000,
    }
    for i, ((host, backend_port), weight) in enumerate(zip(backends, weights, strict=True)):
        values[f"backend_hostname{i}"] = host
        values[f"backend_port{i}"] = backend_port
        values[f"backend_weight{i}"] = f"{weight:g}"
        values[f"backend_flag{i}"] = "DISALLOW_TO_FAILOVER"
        values[f"backend_application_name{i}"] = f"node{i}"
    return values


def render(values: dict[str, str | int]) -> str:
    """The text of pgpool.conf with these settings."""
    lines = ["# written by teiten; changed on every start"]
    for name, value in values.items():
        text = str(value).replace("'", "''")
        lines.append(f"{name} = {value}" if isinstance(value, int) else f"{name} = '{text}'")
    return "\n".join(lines) + "\n"


def check_weights(weights: Sequence[float] | None, backends: int) -> list[float]:
    """One weight >= 0 per backend, not all 0 (default all 1)."""
    found = list(weights) if weights is not None else [1.0] * backends
    if len(found) != backends or any(w < 0 for w in found) or not any(found):
        raise UserError(f"Pgpool-II weights {found} do not fit {backends} backends: "
                        "give one weight >= 0 per backend, not all 0")
    return found


def first_fatal(text: str, *, main: bool = False) -> str:
    """The first FATAL error of a pgpool log (of the main process only, with ``main``)
    and the DETAIL line after it, as one line; '' when there is none."""
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if "FATAL:" in line and (not main or " main pid " in line):
            kept = [line] + [d for d in lines[i + 1:i + 2] if "DETAIL:" in d]
            return " | ".join(_PREFIX.sub("", k) for k in kept)
    return ""


def main_pid(conf: Path, pid_file: Path) -> int | None:
    """The main process of the Pgpool-II instance run with ``conf``, or None.

    Its pid file is in a directory the server account writes, so it is only a hint: the pid it
    names counts when that process runs as the server account with ``conf`` on its command
    line. When the file is missing, unreadable or replaced (by a link, say), the processes are
    searched for that command line: the main one is the one whose parent is not among them.
    """
    account = privileges.server_account()

    def ours(proc: psutil.Process) -> bool:
        with contextlib.suppress(psutil.Error):
            return (proc.status() != psutil.STATUS_ZOMBIE and str(conf) in proc.cmdline()
                    and (account is None or proc.uids().real == account.uid))
        return False

    with contextlib.suppress(OSError, ValueError, safefs.UnsafePath, psutil.Error):
        # pgpool 4.3 writes the pid followed by a NUL byte.
        pid = int(safefs.read_text(pid_file, limit=4096).strip("\x00 \n"))
        if ours(psutil.Process(pid)):
            return pid
    found = {p.pid: p for p in psutil.process_iter(["name", "ppid"])
             if (p.info["name"] or "").startswith(PGPOOL) and ours(p)}
    mains = [pid for pid, p in found.items() if p.info["ppid"] not in found]
    return mains[0] if len(mains) == 1 else None


def log_tail(text: str, lines: int = 3) -> str:
    """The last lines of a pgpool log, without the timestamp and pid prefix of each."""
    return procs.tail(_PREFIX.sub("", text), lines)


def pool_nodes(host: str, port: int, password: str | None = None) -> list[dict[str, str]]:
    """``SHOW pool_nodes`` through the pgpool at ``host`` and ``port`` as the superuser: one
    dict per backend (node_id, status, role, lb_weight, select_cnt, ...)."""
    with psycopg.connect(host=host, port=port, password=password, user=SUPERUSER,
                         dbname="postgres", autocommit=True, connect_timeout=5) as conn:
        cur = conn.execute("SHOW pool_nodes")
        names = [c.name for c in cur.description or ()]
        return [dict(zip(names, map(str, row), strict=True)) for row in cur.fetchall()]


def knows_primary(nodes: Sequence[dict[str, str]], mode: str) -> bool:
    """Whether a pgpool whose ``SHOW pool_nodes`` gave ``nodes`` can take writes: in
    streaming mode it answers before its search for the primary ends (on a loaded machine
    every node may still show "standby"), and until it has found one, a write fails."""
    return mode != "streaming" or any(n.get("role") == "primary" for n in nodes)


class Pool(Protocol):
    """A Pgpool-II of a trial, here or on another host: started, stopped, read and let go alike."""

    def start(self) -> None: ...

    def stop(self) -> list[str]: ...

    def read_log(self) -> str: ...

    def close(self) -> list[str]: ...


P = TypeVar("P", bound=Pool)


def wait_serving(nodes: Callable[[], list[dict[str, str]]], mode: str, failed: Callable[[], str],
                 tail: Callable[[], str], *, where: str, timeout: float, interval: float) -> None:
    """Wait until a Pgpool-II (``where`` it listens) answers ``SHOW pool_nodes`` (``nodes``; in
    streaming mode, naming the primary). ``failed`` says why it never will (a FATAL error in its
    log, after which it lingers without serving; its death), which ends the wait at once; each
    failure is a :class:`ServerError` that ends with its log's ``tail``."""
    def ready() -> bool:
        why = failed()
        if why:
            raise ServerError(f"pgpool {where} failed: {why}")
        try:
            return knows_primary(nodes(), mode)
        except psycopg.Error:
            return False

    try:
        wait_until(ready, timeout=timeout, interval=interval,
                   what=f"Pgpool-II {where} to answer SHOW pool_nodes with its primary")
    except WaitTimeout as exc:
        raise ServerError(f"{exc}; its log ends: {tail() or 'nothing'}") from None


def start_retrying(tries: int, launch: Callable[[], str | None], ready: Callable[[], None],
                   stop: Callable[[], object], where: str) -> None:
    """Start a Pgpool-II in at most ``tries`` attempts: ``launch`` starts it on fresh ports
    (returning why it did not start, or None), ``ready`` waits until it answers; a port another
    process took meanwhile makes it ``stop`` and try again. Anything else, or the last try, is a
    :class:`ServerError` that names ``where`` it ran and why."""
    last = ""
    for _attempt in range(tries):
        failed = launch()
        if failed is not None:
            last = failed
            break
        try:
            ready()
            return
        except ServerError as exc:
            last = str(exc)
            stop()
            if "Address already in use" not in last:
                break
            log.info("a port of Pgpool-II in %s was taken; trying others", where)
    raise ServerError(f"Pgpool-II in {where} did not start: {last}")


def start_all(made: Iterable[P], keep: Callable[[P], object], stop: Callable[[], object]) -> None:
    """Start each Pgpool-II of a trial, one beside each node (``made`` makes them in turn), each
    kept (``keep``) before it starts; when one fails, ``stop`` stops those kept, and the failure
    is raised."""
    try:
        for pool in made:
            keep(pool)
            pool.start()
    except BaseException:
        stop()
        raise


def stop_all(pools: Sequence[Pool]) -> tuple[str, list[str]]:
    """Stop each Pgpool-II of a trial: their logs (one section each) and what stopping them
    said, each let go whatever stopping said."""
    text, notes = [], []
    for i, pool in enumerate(pools):
        try:
            notes += [f"pgpool{i}: {n}" for n in pool.stop()]
            text.append(f"\n## pgpool{i}\n{pool.read_log()}")
        finally:
            pool.close()
    return "".join(text), notes


class Pgpool:
    """One Pgpool-II in ``directory`` (created and marked here; it must not exist yet).

    ``backends``: (host or socket directory, port) per node, the primary first.
    ``weights``: the load-balancing weight of each backend (default all 1): weight the local
    node only (1 for it, 0 for the others) to send the reads of a pgpool to its own node.
    ``max_clients``: the most clients that will connect at once.
    ``port``: the client port; default a free one, tried again when taken meanwhile.
    """

    def __init__(self, directory: Path, backends: Sequence[tuple[str, int]], *,
                 mode: Literal["streaming", "native"], max_clients: int,
                 weights: Sequence[float] | None = None, port: int | None = None):
        if mode not in _MODES:
            raise UserError(f"Pgpool-II mode '{mode}' is unknown: use streaming or native")
        if not backends:
            raise UserError("Pgpool-II needs at least one backend")
        weights = check_weights(weights, len(backends))
        if max_clients < 1:
            raise UserError(f"Pgpool-II max_clients must be 1 or more, not {max_clients}")
        why = available()
        if why is not None:
            raise UserError(why)
        self.mode = mode
        self.backends = list(backends)
        self.weights = weights
        self.max_clients = max_clients
        self.fixed_port = port
        self.account = privileges.server_account()
        privileges.ensure_reachable(directory)
        # teiten's directory holds the configuration; pgpool writes only in run/ (its pid
        # file, status and log), which alone is the server account's.
        self.root = paths.make_owned(directory, "Pgpool-II instance")
        self.run_dir = self.root / RUN_DIR
        safefs.make_dir(self.run_dir, mode=0o755)
        self.conf = self.root / "pgpool.conf"
        self.pcp_conf = self.root / "pcp.conf"
        self.pid_file = self.run_dir / "pgpool.pid"
        self.log_dir = self.run_dir / "log"
        self.socket_dir: Path | None = None
        self.port: int | None = None
        self.pcp_port: int | None = None

    # -- configuration -----------------------------------------------------------------

    def _settings(self) -> dict[str, str | int]:
        assert self.socket_dir is not None and self.port is not None
        assert self.pcp_port is not None
        return settings(self.mode, self.backends, self.weights, max_clients=self.max_clients,
                        listen="127.0.0.1", port=self.port, pcp_port=self.pcp_port,
                        socket_dir=str(self.socket_dir), root=str(self.run_dir))

    def _write_conf(self) -> None:
        safefs.write_text(self.conf, render(self._settings()), mode=0o644, give=False)
        safefs.write_text(self.pcp_conf, "# no pcp users: teiten stops pgpool by its pid file\n",
                          mode=0o644, give=False)

    # -- start and stop ----------------------------------------------------------------

    def _run(self, args: list[str], *, timeout: float, what: str) -> procs.Completed:
        path = binary()
        assert path is not None
        return procs.run([str(path), "-f", str(self.conf), "-F", str(self.pcp_conf), *args],
                         timeout=timeout, check=False, run_as=self.account, cwd=str(self.root),
                         env=procs.build_env({"LC_ALL": "C"}, run_as=self.account), what=what)

    def start(self, *, timeout: float = 60) -> None:
        """Start on free ports and wait until ``SHOW pool_nodes`` answers through it."""
        running = self.pid()
        if running is not None:
            raise ServerError(f"Pgpool-II in {self.root} runs already (pid {running})")
        if self.socket_dir is None:
            # safe: a new directory of root's in the temporary directory
            self.socket_dir = Path(tempfile.mkdtemp(prefix="teiten-pgpool-"))
            paths.mark_owned(self.socket_dir, f"unix sockets of Pgpool-II in {self.root}")
            paths.remember(self.root, self.socket_dir)
            safefs.give(self.socket_dir)
        start_retrying(1 if self.fixed_port is not None else 3, self._launch,
                       lambda: self.wait_ready(timeout=timeout), self.stop, str(self.root))

    def _launch(self) -> str | None:
        """Start pgpool on fresh ports; why it did not start, or None."""
        self.port = self.fixed_port or free_port()
        self.pcp_port = free_port()
        self._write_conf()
        with safefs.Dir.open(self.run_dir) as run:
            if run.lstat("log") is not None:  # one log per start: its tail is this start's
                with run.child("log") as old:
                    old.clear()
            run.remove("pgpool.pid")  # left by a pgpool that was killed
        done = self._run(["-D"], timeout=30, what="pgpool")
        return procs.tail(done.stderr + done.stdout, 3) if done.returncode != 0 else None

    def wait_ready(self, *, timeout: float = 60) -> None:
        """Wait until pgpool answers (:func:`wait_serving`); fail early if it died or logged a
        FATAL error."""
        wait_serving(self.pool_nodes, self.mode, self._failed, self.log_tail, where=f"on port {self.port}",
                     timeout=timeout, interval=0.2)

    def _failed(self) -> str:
        """Why it will not serve: its FATAL error, or its death; nothing while it may."""
        # Before pgpool writes its pid file there is no pid yet; afterwards, none is death.
        dead = self.pid_file.exists() and self.pid() is None
        return self.fatal() or ((self.log_tail() or "nothing in its log") if dead else "")

    def pool_nodes(self) -> list[dict[str, str]]:
        """``SHOW pool_nodes`` through this pgpool: one dict per backend (node_id, status,
        role, lb_weight, load_balance_node, select_cnt, ...)."""
        assert self.socket_dir is not None and self.port is not None
        return pool_nodes(host=str(self.socket_dir), port=self.port)

    def pid(self) -> int | None:
        """The pid of the running main pgpool process of this instance, or None."""
        return main_pid(self.conf, self.pid_file)

    def is_running(self) -> bool:
        return self.pid() is not None

    def stop(self, *, timeout: float = 30) -> list[str]:
        """``pgpool -m fast stop``; kill the process tree by its pid if that does not end it."""
        notes: list[str] = []
        pid = self.pid()
        if pid is None:
            return notes
        try:
            main = psutil.Process(pid)
            tree = [main, *main.children(recursive=True)]
        except psutil.Error:
            return notes
        if self.fatal(main=True):
            # After a FATAL error pgpool 4.3 lingers, ignoring SIGTERM and 'pgpool stop'.
            notes.append("pgpool logged a FATAL error and ignores stop requests")
            alive = tree
        else:
            try:
                done = self._run(["-m", "fast", "stop"], timeout=timeout, what="pgpool stop")
                if done.returncode != 0:
                    notes.append(f"pgpool stop exited {done.returncode}: "
                                 f"{procs.tail(done.stderr + done.stdout, 2)}")
            except ProcessError as exc:
                notes.append(str(exc))
            _, alive = psutil.wait_procs(tree, timeout=5)
        if alive:
            notes.append(f"killed {len(alive)} leftover pgpool processes")
            log.warning("%s of %s", notes[-1], self.root)
            for proc in alive:
                procs.kill_tree(proc.pid, grace=1.0)
        return notes

    def fatal(self, *, main: bool = False) -> str:
        """The first FATAL error in the log (see :func:`first_fatal`)."""
        return first_fatal(self.read_log(), main=main)

    def log_tail(self, lines: int = 3) -> str:
        return log_tail(self.read_log(), lines)

    def read_log(self) -> str:
        with contextlib.suppress(OSError, safefs.UnsafePath):
            return safefs.read_text(self.log_dir / "pgpool.log")
        return ""

    # -- connections and teardown ------------------------------------------------------

    @property
    def host(self) -> str:
        """The unix socket directory clients reach this pgpool at."""
        assert self.socket_dir is not None
        return str(self.socket_dir)

    def close(self) -> list[str]:
        """Stop, then remove the socket directory and the instance's directory."""
        notes = self.stop()
        if self.socket_dir is not None:
            paths.remove_owned(self.socket_dir)
            self.socket_dir = None
        paths.remove_owned(self.root)
        return notes

    def __enter__(self) -> Pgpool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
