"""The only place in teiten that starts subprocesses.

Every call takes an argument list (never a shell string), a mandatory timeout and an
environment built from an allow-list. On timeout, error or interruption the whole process
group is killed, and the error carries the command, its exit status and the tail of stderr.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import IO

import psutil

from teiten.model.errors import ProcessError

# Variables passed through from teiten's own environment. Everything else (notably PG*
# connection variables, which would silently redirect pgbench) is dropped.
ENV_ALLOW = ("PATH", "LANG", "LC_ALL", "LC_CTYPE", "LC_MESSAGES", "TZ", "TMPDIR", "HOME")


@dataclass(frozen=True)
class RunAs:
    """An unprivileged account to run PostgreSQL programs as (teiten itself runs as root)."""

    name: str
    uid: int
    gid: int
    home: str


@dataclass(frozen=True)
class Completed:
    argv: list[str]
    returncode: int
    stdout: str
    stderr: str


def build_env(extra: Mapping[str, str] | None = None, *, run_as: RunAs | None = None) -> dict[str, str]:
    """The allow-listed environment, plus ``extra``."""
    env = {k: v for k, v in os.environ.items() if k in ENV_ALLOW or k.startswith("LC_")}
    env.setdefault("PATH", "/usr/local/bin:/usr/bin:/bin")
    env = for_account(env, run_as)
    if extra:
        env.update(extra)
    return env


def for_account(env: Mapping[str, str], run_as: RunAs | None) -> dict[str, str]:
    """``env`` with the HOME, USER and LOGNAME of ``run_as`` (the account a program runs as),
    as it is when ``run_as`` is None."""
    if run_as is None:
        return dict(env)
    return {**env, "HOME": run_as.home, "USER": run_as.name, "LOGNAME": run_as.name}


def tail(text: str, lines: int = 8) -> str:
    """The last ``lines`` non-empty lines of ``text``, joined with ' | ' for one-line messages.
    Lines that end in the same reason (``cp: cannot create ...: No space left on device``, one
    per file) are said once, with how many more there were."""
    kept = [line.strip() for line in text.strip().splitlines() if line.strip()][-lines:]
    said: dict[str, int] = {}  # reason -> index in out
    out: list[str] = []  # the lines said
    more: list[int] = []  # how many more like each
    for line in kept:
        head, sep, reason = line.rpartition(": ")
        if sep and head and reason in said:
            more[said[reason]] += 1
            continue
        if sep and head:
            said[reason] = len(out)
        out.append(line)
        more.append(0)
    return " | ".join(line + (f" (and {n} more like it)" if n else "")
                      for line, n in zip(out, more, strict=True))


def _popen(
    argv: Sequence[str],
    *,
    env: Mapping[str, str] | None,
    run_as: RunAs | None,
    cwd: str | None,
    stdin: int | None,
    stdout: int | IO[str] | IO[bytes] | None,
    stderr: int | IO[str] | IO[bytes] | None,
) -> subprocess.Popen[str]:
    switch = run_as if run_as is not None and os.geteuid() == 0 else None  # to its account
    try:
        return subprocess.Popen(  # noqa: S603 - argv list, never a shell
            list(argv),
            env=dict(env) if env is not None else build_env(run_as=run_as),
            cwd=cwd,
            stdin=stdin,
            stdout=stdout,
            stderr=stderr,
            text=True,
            errors="replace",
            start_new_session=True,  # own process group: Ctrl-C reaches teiten only
            user=switch.uid if switch is not None else None,
            group=switch.gid if switch is not None else None,
            extra_groups=[] if switch is not None else None,
        )
    except FileNotFoundError as exc:
        raise ProcessError(f"cannot run {argv[0]}: program not found", argv=list(argv)) from exc
    except PermissionError as exc:
        raise ProcessError(f"cannot run {argv[0]}: permission denied", argv=list(argv)) from exc


def kill_group(proc: subprocess.Popen[str], *, grace: float = 3.0) -> None:
    """SIGTERM the process group of ``proc``, then SIGKILL whatever is left after ``grace``."""
    for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=wait)
            return
        except subprocess.TimeoutExpired:
            continue


def run(
    argv: Sequence[str],
    *,
    timeout: float,
    env: Mapping[str, str] | None = None,
    run_as: RunAs | None = None,
    cwd: str | None = None,
    input: str | None = None,  # noqa: A002 - mirrors subprocess
    check: bool = True,
    what: str | None = None,
    log: IO[str] | None = None,
    stdout: IO[bytes] | None = None,
    lines: Callable[[str], None] | None = None,
) -> Completed:
    """Run ``argv`` to completion and capture its output.

    With ``log`` (a file open for writing), stdout and stderr go there, interleaved, as the
    program writes them (a long build can be followed with ``tail -f``); nothing is captured
    then, so the error's tail is empty and the caller reads the log for one. With ``stdout`` (a
    file open for writing bytes: an archive), the standard output goes there and only stderr is
    captured. With ``lines``, each line of stderr is given to it as it comes (a program's own
    progress, pgbench -i's), and captured all the same.

    Raises :class:`ProcessError` on timeout, and on a non-zero exit when ``check`` is set.
    An interruption (Ctrl-C) kills the whole process group before it propagates.
    """
    argv = [str(a) for a in argv]
    if log is not None:
        log.flush()  # what the caller wrote comes before the program's output
    proc = _popen(
        argv,
        env=env,
        run_as=run_as,
        cwd=cwd,
        stdin=subprocess.PIPE if input is not None else subprocess.DEVNULL,
        stdout=log if log is not None else stdout if stdout is not None else subprocess.PIPE,
        stderr=subprocess.STDOUT if log is not None else subprocess.PIPE,
    )
    label = what or os.path.basename(argv[0])
    pump = _Pump(proc, lines) if lines is not None and log is None else None
    try:
        out, err = proc.communicate(input=input, timeout=timeout)
        err = pump.read() if pump else err
    except subprocess.TimeoutExpired:
        kill_group(proc)
        out, err = (s or "" for s in proc.communicate())
        err = pump.read() if pump else err
        raise ProcessError(
            f"{label} did not finish within {timeout:g} s and was killed"
            + (f": {tail(err)}" if err.strip() else ""),
            argv=argv,
            returncode=None,
            stderr_tail=tail(err),
        ) from None
    except BaseException:
        kill_group(proc)
        raise
    out, err = out or "", err or ""
    done = Completed(argv, proc.returncode, out, err)
    if check and proc.returncode != 0:
        detail = tail(err) or tail(out)
        raise ProcessError(
            f"{label} failed with exit status {proc.returncode}" + (f": {detail}" if detail else ""),
            argv=argv,
            returncode=proc.returncode,
            stderr_tail=detail,
        )
    return done


class _Pump:
    """A process's stderr read line by line in a thread of its own, each line told to ``lines``
    as it comes; ``communicate`` reads the rest (stdout) meanwhile."""

    def __init__(self, proc: subprocess.Popen[str], lines: Callable[[str], None]):
        self.pipe, proc.stderr = proc.stderr, None
        self.got: list[str] = []
        self.lines = lines
        self.thread = threading.Thread(target=self._pump, daemon=True)
        self.thread.start()

    def _pump(self) -> None:
        assert self.pipe is not None
        for line in self.pipe:
            self.got.append(line)
            self.lines(line.rstrip("\n"))

    def read(self) -> str:
        """All it read, once the process is gone."""
        self.thread.join()
        assert self.pipe is not None
        self.pipe.close()
        return "".join(self.got)


class Background:
    """A long-running helper process (a profiler) started with :func:`spawn`."""

    def __init__(self, proc: subprocess.Popen[str], argv: list[str], what: str):
        self.proc = proc
        self.argv = argv
        self.what = what

    def alive(self) -> bool:
        return self.proc.poll() is None

    def stop(self, sig: int = signal.SIGINT, *, timeout: float = 60) -> Completed:
        """Signal the process (SIGINT lets perf write its data), wait, and collect its
        output; kill its group if it does not end within ``timeout``."""
        if self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):  # it ended on its own
                os.killpg(self.proc.pid, sig)
        try:
            out, err = self.proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            kill_group(self.proc)
            out, err = self.proc.communicate()
        return Completed(self.argv, self.proc.returncode, out or "", err or "")

    def finish(self, *, timeout: float) -> Completed:
        """Wait for the process to end by itself and collect its output; raise
        :class:`ProcessError` (after killing its group) if it runs past ``timeout``."""
        try:
            out, err = self.proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            kill_group(self.proc)
            out, err = (s or "" for s in self.proc.communicate())
            raise ProcessError(f"{self.what} did not finish within {timeout:g} s and was killed"
                               + (f": {tail(err)}" if err.strip() else ""),
                               argv=self.argv, returncode=None, stderr_tail=tail(err)) from None
        except BaseException:
            kill_group(self.proc)
            raise
        return Completed(self.argv, self.proc.returncode, out or "", err or "")


def spawn(argv: Sequence[str], *, env: Mapping[str, str] | None = None, cwd: str | None = None,
          what: str | None = None, stdin: bool = False) -> Background:
    """Start ``argv`` in the background, in its own process group; with ``stdin``, its
    standard input is a pipe (``.proc.stdin``), else /dev/null."""
    argv = [str(a) for a in argv]
    proc = _popen(argv, env=env, run_as=None, cwd=cwd,
                  stdin=subprocess.PIPE if stdin else subprocess.DEVNULL,
                  stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    return Background(proc, argv, what or os.path.basename(argv[0]))


def kill_tree(pid: int, *, grace: float = 5.0) -> list[int]:
    """Kill ``pid`` and all its descendants (SIGTERM, then SIGKILL). Returns the pids killed.

    Used when a postmaster does not stop in time: backends are its children.
    """
    try:  # the process may end meanwhile: then its children are listed from nothing
        root = psutil.Process(pid)
        procs = [root, *root.children(recursive=True)]
    except psutil.NoSuchProcess:
        return []
    for p in procs:
        try:
            p.terminate()
        except psutil.NoSuchProcess:
            continue
    _, alive = psutil.wait_procs(procs, timeout=grace)
    for p in alive:
        try:
            p.kill()
        except psutil.NoSuchProcess:
            continue
    psutil.wait_procs(alive, timeout=grace)
    return [p.pid for p in procs]
