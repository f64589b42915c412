"""The account a client teiten starts runs as, and the files it reads there.

As root, teiten runs every client (pgbench, ``pgbench -i``, sysbench) as an unprivileged
account, never as root: a workload script's ``\\shell`` command, or a program planted where a
client looks for one, then runs with that account's rights only. Which account:

- a client of a server on this machine runs as the server account
  (:func:`teiten.host.privileges.server_account`): it connects as the database superuser, who can
  already run programs as that account (``COPY ... TO PROGRAM``), so a second account would
  separate nothing; and the server account already reaches the installs and the sockets;
- a client that carries a password (``PGPASSWORD`` in its environment: an ``external`` or
  ``ssh`` server's) runs as the client account (:func:`teiten.host.privileges.client_account`,
  ``teiten-client``): the server account could read the environment of a process of its own,
  and with it the password of a server on another machine.

The client reads only what root allowed: its scripts are copied, by root, from the paths the
study gave (checked at plan: no other account can change them) into a directory of the
client account's, made for the one run and removed after it. Its transaction logs are
written there too, and read back through :mod:`teiten.host.safefs`. When teiten is not root the
client runs as teiten does, and reads the scripts where they are.
"""

from __future__ import annotations

import contextlib
import os
import secrets
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import psutil

from teiten.host import paths, privileges, procs, safefs
from teiten.host.procs import RunAs
from teiten.model.errors import ProcessError

PURPOSE = "a client's files"


def account(extra_env: Mapping[str, str] | None = None) -> RunAs | None:
    """The account a client whose environment adds ``extra_env`` runs as: the client account
    when that holds a password, else the server account, when teiten is root; else None (the
    client runs as teiten)."""
    if privileges.server_account() is None:
        return None
    if extra_env and extra_env.get("PGPASSWORD"):
        return privileges.client_account()
    return privileges.server_account()


def env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """A client's environment: the allow-listed one and ``extra``, with the HOME and USER of
    the account it runs as (:func:`account`)."""
    return procs.build_env(extra, run_as=account(extra))


def _program(argv: Sequence[str]) -> Path | None:
    """The program ``argv`` runs, where it is given by its path (after a ``taskset -c``)."""
    return next((Path(a) for a in argv if os.path.isabs(a)), None)


@dataclass(frozen=True)
class Place:
    """Where one run of a client works: its argument list with the scripts it reads pointed
    at their copies, and the directory it owns (None when it runs as teiten)."""

    argv: list[str]
    directory: Path | None
    copies: tuple[tuple[str, str], ...] = ()  # (a copy's path, the script's own path)

    def own_paths(self, text: str) -> str:
        """``text`` (what the client said) with each copy's path put back as the script's
        own, so that a message names the file the study gave."""
        for copy, own in self.copies:
            text = text.replace(copy, own)
        return text

    @property
    def cwd(self) -> str | None:
        """Where the client starts: its own directory (what it writes by a relative path
        lands there), or teiten's working directory."""
        return None if self.directory is None else str(self.directory)


def _script_value(value: str) -> tuple[str, str]:
    """``PATH@WEIGHT`` (pgbench's -f) as the path and the ``@WEIGHT`` suffix (maybe empty)."""
    path, sep, weight = value.rpartition("@")
    if sep and weight.isdigit():
        return path, sep + weight
    return value, ""


@contextlib.contextmanager
def place(argv: Sequence[str], who: RunAs | None = None) -> Iterator[Place]:
    """A directory the client's account ``who`` owns, for one run, holding a copy of every
    script that ``argv`` gives with ``-f``; removed afterwards; the program it runs made
    reachable to that account. As teiten (``who`` None, not root): ``argv`` as it is."""
    if who is None:
        yield Place(list(argv), None)
        return
    base = paths.home() / "clients"
    paths.refuse_replaceable(base, "the clients' directory")
    base.mkdir(mode=0o755, parents=True, exist_ok=True)  # safe: in teiten's home, checked above
    _remove_stale(base)
    where = paths.make_owned(base / f"{os.getpid()}-{secrets.token_hex(4)}", PURPOSE)
    try:
        privileges.ensure_reachable(where, who)
        program = _program(argv)
        if program is not None:
            privileges.ensure_reachable(program, who)
        out = list(argv)
        copies: list[tuple[str, str]] = []
        with safefs.Dir.open(where) as directory:
            copied = 0
            for i in range(len(out) - 1):
                if out[i] != "-f":
                    continue
                source, weight = _script_value(out[i + 1])
                # safe: a script the study gave, that no other account can change (checked at plan)
                text = Path(source).read_bytes().decode("utf-8", errors="surrogateescape")
                copied += 1
                name = f"{copied}-{Path(source).name}"
                directory.write_text(name, text, mode=0o644, give=False)
                out[i + 1] = str(where / name) + weight
                copies.append((str(where / name), source))
            safefs.give(where, who)
        yield Place(out, where, tuple(copies))
    finally:
        paths.remove_owned(where)


def hand_over(directory: Path, extra_env: Mapping[str, str] | None = None) -> None:
    """Give the directory ``directory`` (which teiten just made) to the account of a client
    whose environment adds ``extra_env`` (:func:`account`), for it to write into (a
    transaction log); read it back through :mod:`teiten.host.safefs`."""
    who = account(extra_env)
    if who is not None:
        privileges.ensure_reachable(directory, who)
        safefs.give(directory, who)


def run(argv: Sequence[str], *, timeout: float, what: str,
        extra_env: Mapping[str, str] | None = None, check: bool = True,
        lines: Callable[[str], None] | None = None) -> procs.Completed:
    """Run a client program (``pgbench -i``, a pgbench that reads a script) to its end, as the
    client account, in a directory of its own with its scripts copied there; ``lines`` hears
    its stderr's lines as they come (procs.run)."""
    with place(argv, account(extra_env)) as where:
        try:
            done = procs.run(where.argv, timeout=timeout, what=what, env=env(extra_env),
                             run_as=account(extra_env), cwd=where.cwd, check=check,
                               lines=lines)
        except ProcessError as exc:
            raise ProcessError(where.own_paths(str(exc)), argv=list(argv),
                               returncode=exc.returncode,
                               stderr_tail=where.own_paths(exc.stderr_tail)) from None
        return procs.Completed(list(argv), done.returncode, where.own_paths(done.stdout),
                               where.own_paths(done.stderr))


def _remove_stale(base: Path) -> None:
    """Remove the directories of clients whose teiten is gone (killed before it cleaned up):
    each is named after the pid of the teiten that made it."""
    for entry in os.listdir(base):
        pid = entry.split("-", 1)[0]
        if pid.isdigit() and int(pid) != os.getpid() and not psutil.pid_exists(int(pid)):
            paths.remove_owned(base / entry)
