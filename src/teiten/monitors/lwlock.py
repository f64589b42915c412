"""Per-lock LWLock statistics from a server built with ``-DLWLOCK_STATS`` (METHODS S2, 2014
bottleneck analysis: "lock requests per transaction" and "contentions per transaction").

Such a server makes every process print, as it exits, one line per LWLock it touched. The
lines are written with a bare ``fprintf(stderr, ...)`` (``print_lwlock_stats`` in
src/backend/storage/lmgr/lwlock.c), not through elog: they carry no log_line_prefix and no
``LOG:`` tag, they land wherever the postmaster's stderr goes (the ``pg_ctl -l`` file, or
the plain ``.log`` file of the logging collector, never the csvlog), and a process killed
with SIGKILL prints nothing. The exiting process holds the first main-array LWLock while it
prints, so two processes' blocks do not interleave. The formats, read in the source:

* 9.3 and older: ``PID %d lwlock %d: shacq %u exacq %u blk %u`` -- a bare lock number.
* 9.4: ``PID %d lwlock %s %d: shacq %u exacq %u blk %u spindelay %u`` -- tranche name and
  index in it; every built-in lock is in tranche ``main`` (``main 4`` is ProcArrayLock).
* 9.5, 9.6: the same plus `` dequeue self %u`` (read in a 9.6devel copy; the counter came
  with the 9.5 LWLock rewrite).
* 10 and later (read in 12, 15.18 and 19devel; 16 to 18 print the same):
  ``PID %d lwlock %s %p: shacq %u exacq %u blk %u spindelay %u dequeue self %u`` -- the
  instance is the lock's address. Individual locks have their own tranche from 10 on, named
  like ``ProcArrayLock`` (built-in groups: ``buffer_mapping``) in 10 to 12 and ``ProcArray``,
  ``BufferMapping``, ``WALInsert`` from 13 on.

What the counts mean, in 15.18 (lwlock.c): shacq/exacq count LWLockAcquire calls only --
LWLockConditionalAcquire and LWLockAcquireOrWait (XLogFlush takes WALWrite that way) are not
counted, though their sleeps are; blk counts sleeps in LWLockAcquire, LWLockAcquireOrWait
and LWLockWaitForVar; spindelay counts spin delays on the lock's wait-list mutex. Only
processes that went through InitProcess print: backends, autovacuum and background workers,
not the auxiliary processes (startup, checkpointer, bgwriter, walwriter). Every printing
process also reports the one exclusive acquisition of main-array lock 0 that
print_lwlock_stats makes; in 15 that lock is named ``<unassigned:0>``.

A lock here is the tranche name, summed over its instances and the processes, except in
the ``main`` tranche of 9.4 to 9.6 and the bare numbers of 9.3, where one tranche holds many
unrelated locks: there each index is its own lock (``main 4``; ``main 7`` for a 9.3
``lwlock 7``). Which number is which lock depends on the version's lwlock.h.

The parser takes any text -- a whole log, or what was written after a byte offset -- and
ignores everything else (log_line_prefix'd lines, csvlog records, pgbench output), a
partial first line and an unterminated last line (a line cut at ``blk 3`` of ``blk 35``
would otherwise parse, with a wrong count). Pure functions; :func:`read_window` is the one
helper that reads a file.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from teiten.host import safefs
from teiten.model.results import Evidence
from teiten.monitors.base import Ended, Monitor, MonitorKind, Window

# The instance is "%d" (9.4 to 9.6) or "%p" (10+: "0x7f...", or "(nil)" from glibc). The
# greedy start takes the last "PID" of a line, so that a line cut short and run into the
# next one counts as the next one only.
_LINE = re.compile(
    r"^.*PID (?P<pid>\d+) lwlock (?:(?P<tranche>\S.*?) (?P<instance>\S+)|(?P<lockid>\d+)): "
    r"shacq (?P<shacq>\d+) exacq (?P<exacq>\d+) blk (?P<blk>\d+)"
    r"(?: spindelay (?P<spindelay>\d+)(?: dequeue self (?P<dequeue>\d+))?)?\s*$"
)
# The tranche of 9.4 to 9.6 that holds every built-in lock, told apart by index.
_MAIN_TRANCHE = "main"


@dataclass(frozen=True)
class LWLockLine:
    """One line of ``print_lwlock_stats``: one process, one lock instance."""

    pid: int
    lock: str  # tranche name, or "main N" (see the module docstring)
    instance: str  # "0x7f..." (10+), the index (9.4 to 9.6; 9.3: the lock number)
    shacq: int
    exacq: int
    blk: int
    spindelay: int | None  # None in 9.3 and older
    dequeue_self: int | None  # None in 9.4 and older


@dataclass(frozen=True)
class LockStats:
    """Counts of one lock, summed over its instances and over processes."""

    lock: str
    shacq: int  # shared acquisitions
    exacq: int  # exclusive acquisitions
    blk: int  # times a process had to sleep for it (contentions)
    spindelay: int | None  # spin delays on the lock's wait-list mutex; None when not printed
    dequeue_self: int | None  # queued, then got it without sleeping; None when not printed
    instances: int  # distinct instances (addresses or indexes) seen
    pids: int  # distinct processes that touched it

    @property
    def requests(self) -> int:
        """Acquisitions in either mode."""
        return self.shacq + self.exacq


@dataclass(frozen=True)
class LWLockStats:
    """Everything parsed from a log: the lines, and sums per lock and per process."""

    lines: tuple[LWLockLine, ...]

    @property
    def pids(self) -> tuple[int, ...]:
        """Processes that printed statistics, in order of first appearance."""
        return tuple(dict.fromkeys(line.pid for line in self.lines))

    @property
    def locks(self) -> tuple[LockStats, ...]:
        """Sums per lock over all processes, by lock name."""
        return _sum_locks(self.lines)

    def lock(self, name: str) -> LockStats | None:
        """The sums of one lock; None when no process touched it."""
        return next((s for s in self.locks if s.lock == name), None)

    def for_pid(self, pid: int) -> tuple[LockStats, ...]:
        """Sums per lock of one process."""
        return _sum_locks(line for line in self.lines if line.pid == pid)

    def only(self, pids: Iterable[int]) -> LWLockStats:
        """The statistics of some processes only (say, a trial's backends)."""
        keep = set(pids)
        return LWLockStats(tuple(line for line in self.lines if line.pid in keep))


@dataclass(frozen=True)
class PerTransaction:
    """One row of the 2014 table: a lock's requests and contentions per transaction."""

    lock: str
    requests_per_tx: float  # (shacq + exacq) / transactions
    contentions_per_tx: float  # blk / transactions
    requests: int
    contentions: int
    shared_per_tx: float = 0.0  # shacq / transactions (the 2014 figures split the requests)
    exclusive_per_tx: float = 0.0  # exacq / transactions


def parse_line(line: str) -> LWLockLine | None:
    """Parse one (newline-free) line; None if it is not an LWLOCK_STATS line.

    Text before ``PID`` (a log_line_prefix, a csvlog field) is allowed; text after the last
    count is not, so that a line cut short or run into another is not taken for one.
    """
    match = _LINE.match(line)
    if match is None:
        return None
    spindelay, dequeue = match.group("spindelay"), match.group("dequeue")
    tranche, instance = match.group("tranche"), match.group("instance")
    if tranche is None:  # 9.3 and older: "lwlock 7"
        tranche, instance = _MAIN_TRANCHE, match.group("lockid")
    return LWLockLine(
        pid=int(match.group("pid")),
        lock=f"{tranche} {instance}" if tranche == _MAIN_TRANCHE else tranche,
        instance=instance,
        shacq=int(match.group("shacq")),
        exacq=int(match.group("exacq")),
        blk=int(match.group("blk")),
        spindelay=int(spindelay) if spindelay is not None else None,
        dequeue_self=int(dequeue) if dequeue is not None else None,
    )


def parse(text: str, *, starts_mid_line: bool = False) -> LWLockStats:
    """Parse the LWLOCK_STATS lines of ``text``, ignoring every other line.

    ``starts_mid_line``: the text was read from an offset that may not be the start of a
    line; everything up to the first newline is then dropped. (Without it a cut first line
    is still safe -- it cannot start with ``PID`` unless only a log prefix was cut off -- but
    the caller usually knows.) A last line without its newline is always dropped: the
    process may still have been writing it.
    """
    if starts_mid_line:
        cut = text.find("\n")
        text = text[cut + 1 :] if cut >= 0 else ""
    complete, _, _unterminated = text.rpartition("\n")
    lines = (parse_line(raw) for raw in complete.split("\n"))
    return LWLockStats(tuple(line for line in lines if line is not None))


def read_window(path: Path, offset: int = 0) -> LWLockStats:
    """Parse what was written to the log file ``path`` from byte ``offset`` on.

    The byte before ``offset`` says whether the window starts at a line boundary.
    """
    directory, name = safefs.parent_and_name(path)  # a server log: never through a link
    with directory:
        fd = directory.open_file(name)
    with os.fdopen(fd, "rb") as f:
        start = max(offset - 1, 0)
        f.seek(start)
        data = f.read(safefs.READ_LIMIT)  # what a trial's window can hold, and no more
    mid_line = offset > 0 and data[:1] != b"\n"
    text = data[offset - start :].decode("utf-8", errors="replace")
    return parse(text, starts_mid_line=mid_line)


def per_transaction(
    stats: LWLockStats | Iterable[LockStats], transactions: int, *, top: int | None = None
) -> list[PerTransaction]:
    """Lock requests and contentions per transaction, most requested lock first.

    The PGECons 2014 method (METHODS S2): each lock's shared plus exclusive acquisitions,
    and its blocks, summed over the processes of the run and divided by the number of
    transactions it committed. Ties are broken by contentions, then by name.
    """
    if transactions <= 0:
        raise ValueError(f"per-transaction figures need a positive transaction count, got {transactions}")
    locks = stats.locks if isinstance(stats, LWLockStats) else tuple(stats)
    rows = [
        PerTransaction(
            lock=s.lock,
            requests_per_tx=s.requests / transactions,
            contentions_per_tx=s.blk / transactions,
            requests=s.requests,
            contentions=s.blk,
            shared_per_tx=s.shacq / transactions,
            exclusive_per_tx=s.exacq / transactions,
        )
        for s in locks
    ]
    rows.sort(key=lambda r: (-r.requests, -r.contentions, r.lock))
    return rows[:top] if top is not None else rows


def _sum_locks(lines: Iterable[LWLockLine]) -> tuple[LockStats, ...]:
    totals: dict[str, list[int]] = {}  # shacq, exacq, blk, spindelay, dequeue
    seen: dict[str, list[bool]] = {}  # whether spindelay / dequeue self were printed
    instances: dict[str, set[str]] = {}
    pids: dict[str, set[int]] = {}
    for line in lines:
        t = totals.setdefault(line.lock, [0, 0, 0, 0, 0])
        s = seen.setdefault(line.lock, [False, False])
        t[0] += line.shacq
        t[1] += line.exacq
        t[2] += line.blk
        if line.spindelay is not None:
            t[3] += line.spindelay
            s[0] = True
        if line.dequeue_self is not None:
            t[4] += line.dequeue_self
            s[1] = True
        instances.setdefault(line.lock, set()).add(line.instance)
        pids.setdefault(line.lock, set()).add(line.pid)
    return tuple(
        LockStats(
            lock=name,
            shacq=t[0],
            exacq=t[1],
            blk=t[2],
            spindelay=t[3] if seen[name][0] else None,
            dequeue_self=t[4] if seen[name][1] else None,
            instances=len(instances[name]),
            pids=len(pids[name]),
        )
        for name, t in sorted(totals.items())
    )


def window_stats(log_text: str, start: int, transactions: int) -> dict[str, object] | None:
    """LWLOCK_STATS of a -DLWLOCK_STATS build, from what the server logged from ``start`` (the
    start of the load) to its shutdown (every backend prints its counts as it exits): per lock,
    summed over processes, and per transaction (METHODS S2, 2014). None when it logged none."""
    mid_line = start > 0 and log_text[start - 1:start] != "\n"
    stats = parse(log_text[start:], starts_mid_line=mid_line)
    if not stats.lines:
        return None
    rows = per_transaction(stats, transactions)
    return {"transactions": transactions, "processes": len(stats.pids),
            "locks": [{"lock": r.lock, "requests_per_tx": r.requests_per_tx,
                       "contentions_per_tx": r.contentions_per_tx, "requests": r.requests,
                       "contentions": r.contentions, "shared_per_tx": r.shared_per_tx,
                       "exclusive_per_tx": r.exclusive_per_tx} for r in rows]}


class LWLockWatch(Monitor):
    """Where the load's window of the server's log begins; at the end, the LWLOCK_STATS that
    the server logged from there (a -DLWLOCK_STATS build's): its details ``lwlock``."""

    def __init__(self, window: Window):
        self.server = window.server
        self.mark: int | None = None

    def start(self) -> None:
        self.mark = self.server.log_mark()

    def contribute(self, evidence: Evidence, ended: Ended) -> None:
        if self.mark is not None and ended.transactions:
            locks = window_stats(ended.log, self.mark, ended.transactions)
            if locks:
                evidence.details["lwlock"] = locks


KIND = MonitorKind("lwlock", LWLockWatch, layer=0)
