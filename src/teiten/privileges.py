"""Running PostgreSQL as an unprivileged account when teiten itself runs as root.

PostgreSQL refuses to start as root. As root, teiten runs initdb, pg_ctl and postgres as
the ``postgres`` account (or ``$TEITEN_SERVER_USER``), and makes sure that account can
traverse to the binaries and data directories: where a parent directory (typically
``/root``, mode 700) blocks it, teiten grants traversal only (``setfacl -m u:USER:x``).
"""

from __future__ import annotations

import logging
import os
import pwd
import shutil
import stat
from functools import cache
from pathlib import Path

from teiten import procs
from teiten.errors import UserError
from teiten.procs import RunAs

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
            f"account '{name}' to run it as; create one (useradd --system {name}) or set "
            f"TEITEN_SERVER_USER to an existing unprivileged account"
        ) from None
    if pw.pw_uid == 0:
        raise UserError(f"TEITEN_SERVER_USER={name} is root; name an unprivileged account")
    return RunAs(name=name, uid=pw.pw_uid, gid=pw.pw_gid, home=pw.pw_dir)


def _can_traverse(path: Path, account: RunAs, groups: set[int]) -> bool:
    st = path.stat()
    if st.st_uid == account.uid:
        return bool(st.st_mode & stat.S_IXUSR)
    if st.st_gid in groups:
        return bool(st.st_mode & stat.S_IXGRP)
    return bool(st.st_mode & stat.S_IXOTH)


def ensure_reachable(path: Path) -> None:
    """Make sure the server account can traverse every ancestor of ``path``.

    Grants traversal (never read or write) with a POSIX ACL where a directory blocks it.
    """
    account = server_account()
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
            f"directory that '{account.name}' can reach (e.g. /var/tmp/teiten)"
        )
    for directory in blocked:
        log.info("granting %s traversal of %s (ACL u:%s:x)", account.name, directory, account.name)
        procs.run([setfacl, "-m", f"u:{account.name}:x", str(directory)], timeout=30)


def _acl_grants(path: Path, account: RunAs) -> bool:
    getfacl = shutil.which("getfacl")
    if getfacl is None:
        return False
    done = procs.run([getfacl, "-cp", str(path)], timeout=30, check=False)
    return any(
        line.startswith(f"user:{account.name}:") and line.split(":")[2][2:3] == "x"
        for line in done.stdout.splitlines()
    )

