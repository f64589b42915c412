"""One benchmark at a time on a machine: the machine's run lock (issue 18, 3a).

``teiten run``, ``scaleup`` and ``resume`` hold it from before they create anything (no store,
no cluster, no download) until their run ends, so that no benchmark measures another's load.
A second one is refused with the name of the first, or waits for it; only an explicit
``beside_others`` runs beside it, and the study records that it did.

The lock is ``flock(LOCK_EX)`` on one file per machine. The kernel drops it when its process
dies, however it dies (``kill -9`` too), so a lock is never stale and nothing has to clean it
up. The holder writes a small JSON into the same file (pid, study, store, since) once it holds
the lock: it only names the holder to the one refused, and is believed only while that pid
lives.

A run beside the holder (``beside_others``) also signs a second file, the lock's name with
``.beside`` appended: one JSON line per such run (pid, study, store, since). The holder reads it
after each trial (:func:`joined`), so that a study another run joined says so in its report,
not only the one that joined. Lines of runs that ended a day ago or more are dropped whenever a
run signs.

The file is the same for every account, because a benchmark of one account disturbs another's
as much as its own: ``/run/lock/teiten.lock`` (a tmpfs every account may write, emptied at
boot; ``/var/lock`` on Debian), or ``/tmp/teiten-machine.lock`` where ``/run/lock`` is not open
to every account. Not under ``$TEITEN_HOME``, which differs per account. It is created with
mode 0666, so that whoever comes next can open it. ``$TEITEN_MACHINE_LOCK`` names another file:
the test suite gives each of its sessions its own, so that two checkouts' suites do not refuse
each other's runs.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import os
import stat
import threading
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path

from teiten.host.waiting import WaitTimeout, wait_until
from teiten.model.errors import TeitenError

log = logging.getLogger(__name__)

ENV = "TEITEN_MACHINE_LOCK"
WAIT_LIMIT_S = 24 * 3600.0  # the bound of --wait: a day covers the longest study
_POLL_S = 0.5
_SETTLE_S = 1.0  # how long a refused run waits for a new holder to write its name
_BESIDE = ("run beside it with --beside-others (each then measures the other's load too)")


class MachineBusy(TeitenError):
    """Another benchmark holds the machine (exit status 1: nothing was created)."""


class MachineLockError(TeitenError):
    """The machine lock's file cannot be opened or is not a plain file."""


@dataclass(frozen=True)
class Holder:
    """Who holds the machine: the process, its study and its store, since when (UTC)."""

    pid: int
    study: str
    store: str
    since: str
    command: str = "run"

    def describe(self) -> str:
        return f"study {self.study} (store {self.store}, pid {self.pid}, since {self.since})"

    @classmethod
    def read(cls, text: str | bytes) -> Holder:
        """A holder as it wrote itself (one JSON object, :func:`_write`); ValueError, KeyError
        or TypeError for one half-written."""
        raw = json.loads(text)
        return cls(int(raw["pid"]), str(raw["study"]), str(raw["store"]), str(raw["since"]),
                   str(raw.get("command", "run")))


def lock_path() -> Path:
    """The machine lock's file: ``$TEITEN_MACHINE_LOCK``, else ``/run/lock/teiten.lock`` when
    every account may write ``/run/lock`` (a property of the machine, not of the account, so
    every account picks the same file), else ``/tmp/teiten-machine.lock``."""
    given = os.environ.get(ENV)
    if given:
        return Path(given).expanduser().absolute()
    try:
        mode = os.stat("/run/lock").st_mode
    except OSError:
        mode = 0
    if stat.S_ISDIR(mode) and mode & stat.S_IWOTH and mode & stat.S_ISVTX:
        return Path("/run/lock/teiten.lock")
    return Path("/tmp/teiten-machine.lock")


@contextlib.contextmanager
def hold(*, study: str, store: str | Path, command: str, wait: float | None = None,
         beside_others: bool = False, say: Callable[[str], None] | None = None) -> Iterator[None]:
    """Hold the machine for the run of ``study`` into ``store`` while the block runs.

    When another benchmark holds it: raise :class:`MachineBusy` naming it; or, with ``wait``,
    wait at most that many seconds for it (``say`` is told, in one line, what is awaited) and
    then hold it; or, with ``beside_others``, run beside it without holding it, and take it
    over once it is free, so that no later run starts beside this one unawares.
    """
    path = lock_path()
    me = Holder(os.getpid(), study, str(store.absolute()) if isinstance(store, Path) else store,
                _now(), command)
    fd = _open(path)
    held = threading.Event()
    stop = threading.Event()
    taker: threading.Thread | None = None
    try:
        if _try_lock(fd):
            _write(fd, me, held)
        elif beside_others:
            _sign_beside(path, me)
            taker = threading.Thread(target=_take_over, args=(fd, me, held, stop), daemon=True,
                                     name="teiten-machine-lock")
            taker.start()
        elif wait is None:
            other = _holder(fd)
            named = other.describe() if other else f"a process holds {path} without saying which"
            raise MachineBusy(f"another benchmark runs on this machine: {named}; wait for it "
                              f"with --wait, or {_BESIDE}")
        else:
            _wait(fd, me, held, path, wait, say or (lambda line: None))
        yield
    finally:
        stop.set()
        if taker is not None:
            taker.join(timeout=2 * _POLL_S + 1)
        if held.is_set():
            with contextlib.suppress(OSError):
                os.ftruncate(fd, 0)  # the next holder's name, not ours, is what a refused run reads
        os.close(fd)  # releases the lock


def joined(since: str) -> list[Holder]:
    """The runs that ran beside others (``--beside-others``) and may have joined a run that
    started at ``since`` (ISO, UTC): every one still running, and every one that started since
    then, ended or not. Not this process."""
    start = datetime.fromisoformat(since)
    out = []
    for other in _beside_lines(_beside_path(lock_path())):
        if other.pid == os.getpid():
            continue
        if datetime.fromisoformat(other.since) >= start or _alive(other):
            out.append(other)
    return out


def _beside_path(path: Path) -> Path:
    return path.with_name(path.name + ".beside")


def _beside_lines(path: Path) -> list[Holder]:
    # Every account may write it: never through a link, never a FIFO, never unbounded.
    try:
        # safe: without following a link, never a FIFO, bounded
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return []
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return []
        text = os.read(fd, 1 << 20).decode(errors="replace")
    except OSError:
        return []
    finally:
        os.close(fd)
    out = []
    for line in text.splitlines():
        try:
            out.append(Holder.read(line))
        except (ValueError, KeyError, TypeError):
            continue  # a line half-written by a run killed while it signed
    return out


def _sign_beside(path: Path, me: Holder) -> None:
    """Add ``me`` to the runs beside others, under the lock file's own sidecar lock, dropping
    the lines of runs that ended a day ago or more. A sidecar that cannot be written only
    loses the holder's notice (the noise guard still sees the load), never the run."""
    beside = _beside_path(path)
    try:
        fd = _open(beside)
    except MachineLockError as exc:
        log.warning("%s", exc)
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        cutoff = datetime.now(UTC).timestamp() - 24 * 3600
        kept = [h for h in _beside_lines(beside)
                if _alive(h) or datetime.fromisoformat(h.since).timestamp() > cutoff]
        text = "".join(json.dumps(asdict(h)) + "\n" for h in (*kept, me))
        os.ftruncate(fd, 0)
        os.pwrite(fd, text.encode(), 0)
    except OSError as exc:
        log.warning("cannot sign %s: %s", beside, exc.strerror)
    finally:
        os.close(fd)


def _alive(holder: Holder) -> bool:
    """The process still runs, and it is the one that signed (not a later one with its pid)."""
    import psutil  # late: 'make demo' waits on the lock with Debian's python3, before the venv

    try:
        started = psutil.Process(holder.pid).create_time()
    except psutil.Error:
        return False
    return started <= datetime.fromisoformat(holder.since).timestamp() + 1


def _wait(fd: int, me: Holder, held: threading.Event, path: Path, limit: float,
          say: Callable[[str], None]) -> None:
    awaited = [_holder(fd)]

    def named(holder: Holder | None) -> str:
        return holder.describe() if holder else f"the benchmark that holds {path}"

    say(f"teiten: waiting for {named(awaited[0])} to finish: one benchmark at a time on this "
        f"machine (at most {_hours(limit)}; Ctrl-C gives up)")

    def taken() -> bool:
        if _try_lock(fd):
            return True
        now = _read(fd)
        if now is not None and now != awaited[-1]:  # a third run took it first: wait for it too
            awaited.append(now)
            say(f"teiten: now waiting for {named(now)} to finish")
        return False

    try:
        wait_until(taken, timeout=limit, what=f"{named(awaited[-1])} to finish",
                   interval=_POLL_S)
    except WaitTimeout:
        raise MachineBusy(f"gave up after waiting {_hours(limit)} for {named(awaited[-1])} to "
                          f"finish; run later, or {_BESIDE}") from None
    _write(fd, me, held)


def _take_over(fd: int, me: Holder, held: threading.Event, stop: threading.Event) -> None:
    """Beside another benchmark: take the lock as soon as it is free, until ``stop``."""
    while not stop.wait(_POLL_S):
        try:
            if _try_lock(fd):
                _write(fd, me, held)
                return
        except OSError:  # the run ended and closed the file meanwhile
            return


def _open(path: Path) -> int:
    """The lock file, opened for reading and writing; created (mode 0666) if missing.

    It is opened without O_CREAT first: in a sticky directory such as /tmp, Linux's
    fs.protected_regular refuses O_CREAT on a file another account owns, even one that exists.
    """
    flags = os.O_RDWR | os.O_NOFOLLOW | os.O_CLOEXEC
    for _ in range(5):  # bounded: another process may create or remove it between two calls
        try:
            # safe: the machine lock: without following a link, checked to be a regular file
            fd = os.open(path, flags)
        except FileNotFoundError:
            try:
                # safe: the same
                fd = os.open(path, flags | os.O_CREAT | os.O_EXCL, 0o666)
            except FileExistsError:
                continue
            except OSError as exc:
                raise MachineLockError(_cannot(path, exc)) from None
            os.fchmod(fd, 0o666)  # open's mode went through the umask; every account must write
        except OSError as exc:
            raise MachineLockError(_cannot(path, exc)) from None
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            os.close(fd)
            raise MachineLockError(f"the machine lock {path} is not a plain file; remove it "
                                   f"(teiten creates it again) or set {ENV} to another path")
        return fd
    raise MachineLockError(f"cannot open the machine lock {path}: it keeps appearing and "
                           f"disappearing; set {ENV} to another path")


def _cannot(path: Path, exc: OSError) -> str:
    return (f"cannot open the machine lock {path} ({exc.strerror}): it must be a plain file that "
            f"every account can read and write (mode 0666); remove it (teiten creates it again) "
            f"or set {ENV} to another path")


def _try_lock(fd: int) -> bool:
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


def _write(fd: int, me: Holder, held: threading.Event) -> None:
    held.set()
    os.ftruncate(fd, 0)
    os.pwrite(fd, (json.dumps(asdict(me)) + "\n").encode(), 0)


def _holder(fd: int) -> Holder | None:
    """The holder's name; a holder that has just taken the lock gets a moment to write it."""
    try:
        return wait_until(lambda: _read(fd), timeout=_SETTLE_S, what="the holder's name",
                          interval=0.05)
    except WaitTimeout:
        return None


def _read(fd: int) -> Holder | None:
    """The holder written in the file, if its process still lives (a killed holder's name
    stays in the file, but not its lock)."""
    try:
        holder = Holder.read(os.pread(fd, 65536, 0) or b"null")
    except (OSError, ValueError, KeyError, TypeError):
        return None  # empty (free, or a holder that has not written yet) or half-written
    return holder if _pid_exists(holder.pid) else None


def _pid_exists(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another account's process
        return True
    return pid > 0


def _hours(seconds: float) -> str:
    return f"{seconds / 3600:g} h" if seconds >= 3600 else f"{seconds:g} s"


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")
