"""An external server that runs on this machine, seen by the noise guard (issue 54, item 9).

A PostgreSQL the user started on this machine, given as ``external:``, serves the trial's
pgbench with backends that are not teiten's descendants: without this module the noise guard
counted them as another program's load, and such a study stopped, "busy", on its own load.

:func:`postmaster_here` finds that server's postmaster from one of teiten's connections: the
backend that serves it (``pg_backend_pid()``) must be a process here whose TCP peer is that very
connection's socket (over a Unix socket: a process here named ``postgres``), so that a server
in another pid namespace (a container, another machine) is never taken for a process of this
one. The postmaster's tree is then the trial's, as a local server's is (its checkpointer, WAL
writer, autovacuum, and the backends of the trial's pgbench, which start and end inside the
window), except :func:`other_clients`: the backends of TCP clients that are not teiten's, alive
when the guard looks (at the start and the end of each window): another program's benchmark
against the same server stays foreign load. A backend over a Unix socket ("[local]"), or one
that starts and ends inside one window, cannot be told apart: it counts as the trial's.
"""

from __future__ import annotations

import contextlib
import os
import re
import socket

import psutil
import psycopg

# A client backend's process title: "postgres: USER DB HOST(PORT) STATE" over TCP,
# "postgres: USER DB [local] STATE" over a Unix socket.
_TCP_CLIENT = re.compile(r"\(\d+\)")


def _peer_is(process: psutil.Process, address: tuple[str, int]) -> bool:
    return any(c.raddr and (c.raddr[0], c.raddr[1]) == address
               for c in process.net_connections("inet"))


def postmaster_here(conn: psycopg.Connection) -> psutil.Process | None:
    """The postmaster of the server ``conn`` reaches, when it runs on this machine; else None."""
    try:
        row = conn.execute("SELECT pg_backend_pid()").fetchone()
        backend = psutil.Process(int(row[0])) if row else None
        if backend is None:
            return None
        with socket.socket(fileno=os.dup(conn.pgconn.socket)) as mine:
            family, name = mine.family, mine.getsockname()
        if family in (socket.AF_INET, socket.AF_INET6):
            if not _peer_is(backend, (name[0], name[1])):
                return None
        elif not backend.name().startswith("postgres"):
            return None
        return backend.parent()
    except (psutil.Error, OSError, psycopg.Error, ValueError):
        return None


def other_clients(postmaster: psutil.Process) -> list[int]:
    """The backends of ``postmaster`` that serve TCP clients other than teiten and its
    descendants (pgbench), now."""
    ours: set[tuple[str, int]] = set()
    me = psutil.Process()
    with contextlib.suppress(psutil.Error):
        for process in [me, *me.children(recursive=True)]:
            with contextlib.suppress(psutil.Error):
                ours.update((c.laddr[0], c.laddr[1]) for c in process.net_connections("inet")
                            if c.laddr)
    found = []
    try:
        children = postmaster.children()
    except psutil.Error:
        return []
    for child in children:
        with contextlib.suppress(psutil.Error):
            if _TCP_CLIENT.search(" ".join(child.cmdline())) and not any(
                    c.raddr and (c.raddr[0], c.raddr[1]) in ours
                    for c in child.net_connections("inet")):
                found.append(child.pid)
    return found
