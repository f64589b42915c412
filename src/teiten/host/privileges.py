"""Running PostgreSQL as an unprivileged account when teiten itself runs as root.

PostgreSQL refuses to start as root. As root, teiten runs initdb, pg_ctl and postgres as
the ``postgres`` account (or ``$TEITEN_SERVER_USER``), and makes sure that account can
traverse to the binaries and data directories: where a parent directory (typically
``/root``, mode 700) blocks it, teiten grants traversal only (``setfacl -m u:USER:x``), and
takes the grant back when it exits (:func:`withdraw`): an entry it added is removed, one it
widened gets its old permissions back. A grant stays while a process of the account still
works below that directory (another teiten's server), and after a ``kill -9`` of teiten.

A client that carries a password (pgbench against an ``external`` or ``ssh`` server) runs as an
account of its own, ``teiten-client`` (or ``$TEITEN_CLIENT_USER``): :func:`client_account`.
The server account can read the environment of its own processes, and the password of a server
on another machine is not its to read.
"""

from __future__ import annotations

import atexit
import logging
import os
import pwd
import shutil
import stat
from functools import cache
from pathlib import Path

import psutil

from teiten.host import procs
from teiten.host.procs import RunAs
from teiten.model.errors import UserError

log = logging.getLogger(__name__)


@cache
def server_account() -> RunAs | None:
    """The account servers run as, or None when teiten is not root (servers run as us)."""
    if os.geteuid() != 0:
        return None
    name = os.environ.get("TEITEN_SERVER_USER", "postgres")
    try:
        pw = pwd.getpwnam(name)
    except KeyError:
        raise UserError(
            f"teiten runs as root, and PostgreSQL refuses to run as root, but there is no "
            f"account '{name}' to run it as; create one ('teiten system setup' does) or set "
            f"TEITEN_SERVER_USER to an existing unprivileged account"
        ) from None
    if pw.pw_uid == 0:
        raise UserError(f"TEITEN_SERVER_USER={name} is root; name an unprivileged account")
    return RunAs(name=name, uid=pw.pw_uid, gid=pw.pw_gid, home=pw.pw_dir)


CLIENT_USER = "teiten-client"


@cache
def client_account() -> RunAs | None:
    """The account a client that carries a password runs as (an ``external`` or ``ssh``
    server's), or None when teiten is not root (the client runs as us). Not the server
    account: a process can read the environment of another of its account's, and the server
    account runs the local servers, whose superusers run programs as it."""
    if os.geteuid() != 0:
        return None
    name = os.environ.get("TEITEN_CLIENT_USER", CLIENT_USER)
    try:
        pw = pwd.getpwnam(name)
    except KeyError:
        raise UserError(
            f"as root, teiten gives a server's password only to a client account of its own, but "
            f"there is no account '{name}'; create it ('teiten system setup' does) or set "
            "TEITEN_CLIENT_USER to an existing unprivileged account") from None
    server = server_account()
    if pw.pw_uid == 0 or (server is not None and pw.pw_uid == server.uid):
        raise UserError(f"TEITEN_CLIENT_USER={name} is {'root' if pw.pw_uid == 0 else 'the server account'}"
                        "; name an unprivileged account of its own (e.g. teiten-client)")
    return RunAs(name=name, uid=pw.pw_uid, gid=pw.pw_gid, home=pw.pw_dir)


def _can_traverse(path: Path, account: RunAs, groups: set[int]) -> bool:
    st = path.stat()
    if st.st_uid == account.uid:
        return bool(st.st_mode & stat.S_IXUSR)
    if st.st_gid in groups:
        return bool(st.st_mode & stat.S_IXGRP)
    return bool(st.st_mode & stat.S_IXOTH)


def ensure_reachable(path: Path, account: RunAs | None = None) -> None:
    """Make sure the server account (or ``account``) can traverse every ancestor of ``path``.

    Grants traversal (never read or write) with a POSIX ACL where a directory blocks it.
    """
    account = account or server_account()
    if account is None:
        return
    groups = set(os.getgrouplist(account.name, account.gid))
    blocked = [p for p in reversed(path.absolute().parents) if not _can_traverse(p, account, groups)]
    blocked = [p for p in blocked if not _acl_grants(p, account)]
    if not blocked:
        return
    setfacl = shutil.which("setfacl")
    if setfacl is None:
        raise UserError(
            f"the server account '{account.name}' cannot reach {path} ({blocked[0]} blocks it) "
            f"and setfacl is missing; install the 'acl' package, or set TEITEN_HOME to a "
            f"directory that only root can write and '{account.name}' can reach (e.g. "
            "mkdir -m 755 /srv/teiten)"
        )
    for directory in blocked:
        before, extended = _acl(directory, account)
        wanted = "x" if before is None else before[:2] + "x"
        log.info("granting %s traversal of %s (ACL u:%s:%s)", account.name, directory,
                 account.name, wanted)
        procs.run([setfacl, "-m", f"u:{account.name}:{wanted}", str(directory)], timeout=30)
        if not _GRANTED:
            atexit.register(withdraw)
        _GRANTED.append((account, directory, before, extended))


# The traversal grants this process made: (to whom, directory, the account's ACL entry before,
# if any, whether the directory had an extended ACL before).
_GRANTED: list[tuple[RunAs, Path, str | None, bool]] = []


def withdraw() -> list[Path]:
    """Take back the grants this process made, except below which a process of the account
    still works (its working directory or program there). Returns those kept."""
    setfacl = shutil.which("setfacl")
    if setfacl is None or not _GRANTED:
        return []
    busy = {account: _working_places(account) for account, *_ in _GRANTED}
    kept, staying = [], []
    for i in range(len(_GRANTED) - 1, -1, -1):
        account, directory, before, extended = _GRANTED[i]
        if any(place == directory or directory in place.parents for place in busy[account]):
            kept.append(directory)
            staying.append(_GRANTED[i])
            log.info("kept %s's traversal of %s: its processes still work there", account.name,
                     directory)
            continue
        others = [a for a, d, *_ in (*_GRANTED[:i], *staying) if d == directory and a != account]
        if before is not None:
            change = ["-m", f"u:{account.name}:{before}"]
        elif extended or others:  # another account's entry stays, or was there before
            change = ["-x", f"u:{account.name}"]
        else:  # no extended ACL before: none after (not even the mask the grant added)
            change = ["-b"]
        procs.run([setfacl, *change, str(directory)], timeout=30, check=False)
    _GRANTED.clear()
    return kept


def _working_places(account: RunAs) -> list[Path]:
    places = []
    for proc in psutil.process_iter(["uids", "cwd", "exe"]):
        uids = proc.info.get("uids")
        if uids is None or account.uid not in (uids.real, uids.effective):
            continue
        places += [Path(p) for p in (proc.info.get("cwd"), proc.info.get("exe")) if p]
    return places


def _acl(path: Path, account: RunAs) -> tuple[str | None, bool]:
    """The account's own ACL entry of ``path`` ("r-x", or None), and whether ``path`` has an
    extended ACL (entries beyond owner, group and other)."""
    getfacl = shutil.which("getfacl")
    if getfacl is None:
        return None, False
    lines = procs.run([getfacl, "-cp", str(path)], timeout=30, check=False).stdout.splitlines()
    entry = next((line.split(":")[2][:3] for line in lines
                  if line.startswith(f"user:{account.name}:")), None)
    base = ("user::", "group::", "other::")
    return entry, any(line and not line.startswith(base) for line in lines)


def _acl_grants(path: Path, account: RunAs) -> bool:
    entry, _ = _acl(path, account)
    return entry is not None and entry[2:3] == "x"

