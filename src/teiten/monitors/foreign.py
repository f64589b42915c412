"""Foreign load: the CPU that processes outside a trial use during its measured window, and the
memory pressure of the machine over the same window (issue 18, item 3b).

A trial must not be disturbed by other load on the machine. :class:`ForeignMeter` reads every
process at the start of the window and again at its end, and counts what the processes that are
not the trial's used in between. :func:`quiet_check` does the same over a short window before
the first trial, to say how busy the rest of the machine is.

How the CPU is counted
----------------------
- A process is known by ``(pid, create_time)``, so a pid the kernel reused during the window is
  a new process, not the old one.
- The trial's processes are the whole trees (the root and every descendant) of the pids that
  ``ours`` returns. ``ours`` is called at the start and at the end, and a process is the trial's
  when it is in either tree: a pgbench that started after the first reading, or a backend that
  ended before the second, is still the trial's. Their time is left out, and so is the time of
  the children they reaped (their ``children_*`` times).
- Kernel threads (``kthreadd``, pid 2, and its children) are left out: most of their time is
  writeback, journalling and other I/O the trial itself causes, not foreign user-space load.
- A process alive at both readings counts its growth of user + system + children_user +
  children_system. Its children times grow by the whole life of each child it reaped, and a
  child's life includes the children that child reaped (a postmaster's holds its backends'):
  part of it may lie before the window. So the times at the start of every descendant that was
  gone at the end, along an unbroken chain of gone parents, are taken off its growth, and only
  their time inside the window counts. (A descendant orphaned before it died was reaped
  elsewhere: taking it off understates, never overstates.) When one of them was the trial's,
  the children times are left out altogether: the trial's share in them cannot be told apart.
- A process that appeared during the window counts its whole total: it lived only in the window
  (a child's times start at zero when it is forked).
- A process that ended during the window is invisible, unless a foreign process that is alive
  at the end reaped it: then its time is in that parent's children times. A process that was
  orphaned and reaped by init (or a subreaper) counts with init, its time before the window
  included. A process the trial started and orphaned inside the window (a double fork) is in
  neither tree: alive at the end, or reaped by init, it counts as foreign.
- A process whose times could not be read at the start (access denied) is not counted at all
  rather than counted for its whole life.
- The readings are one pass over /proc each (a few milliseconds for a hundred processes), not an
  atomic snapshot: a child reaped between the reading of its parent and its own is counted by
  neither.

The host's steal is the growth of the steal time of /proc/stat's cpu line over the growth of
all its times (not guest, which user holds): the share of all CPU time in which this virtual
machine's vCPUs were ready and the host ran something else. No process shows it.

Memory pressure is the growth of the ``total=`` figures of /proc/pressure/memory (microseconds,
given in milliseconds; absent when the kernel has no PSI) and of pswpin/pswpout in /proc/vmstat
(pages swapped in and out).
"""

from __future__ import annotations

import heapq
import os
import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Protocol

import psutil

from teiten.host import safefs
from teiten.host.guard import FOREIGN, POSTGRES, TOP, Consumer, ForeignLoad, Program, Rule, disturbance
from teiten.model.results import Evidence
from teiten.monitors.base import Ended, Metric, MonitorKind, Sampling, Window

TOP_MIN_S = 0.05     # below this a process is noise, not a consumer worth naming
KTHREADD = 2         # the parent of every kernel thread (in the root pid namespace)
INIT = 1             # holds the orphans it reaped: never a program of its own
SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ksh", "mksh", "fish", "csh", "tcsh", "busybox"})
CLIENTS = frozenset({"pgbench", "sysbench"})  # benchmark clients: named with the server they drive
PSI = Path("/proc/pressure/memory")
VMSTAT = Path("/proc/vmstat")

Key = tuple[int, float]  # (pid, create_time): a process, even when its pid is reused


class _CpuTimes(Protocol):
    """A process's CPU seconds, as psutil reads them (its cpu_times())."""

    @property
    def user(self) -> float: ...
    @property
    def system(self) -> float: ...
    @property
    def children_user(self) -> float: ...
    @property
    def children_system(self) -> float: ...


@dataclass(frozen=True)
class _Info:
    """What one pass reads of a process (psutil's ``info`` of ATTRS): None where psutil could
    not read it (access denied, a zombie's)."""

    pid: int
    ppid: int | None
    name: str | None
    cpu_times: _CpuTimes | None
    create_time: float | None


ATTRS = [f.name for f in fields(_Info)]


@dataclass(frozen=True)
class _Proc:
    ppid: int
    name: str
    own: float | None    # user + system seconds; None when they could not be read
    kids: float | None   # children_user + children_system seconds

    @property
    def total(self) -> float:
        return (self.own or 0.0) + (self.kids or 0.0)


@dataclass(frozen=True)
class _Reading:
    at: float                        # monotonic seconds, the middle of the pass
    procs: dict[Key, _Proc]
    by_pid: dict[int, Key]
    memory: dict[str, float]
    cpu: tuple[float, float] | None = None  # (steal, all) CPU seconds of the machine, /proc/stat

    def trees(self, roots: Iterable[Key]) -> set[Key]:
        """The processes of this reading that are one of ``roots`` or descend from one."""
        children: defaultdict[int, list[Key]] = defaultdict(list)
        for key, proc in self.procs.items():
            children[proc.ppid].append(key)
        found = {r for r in roots if r in self.procs}
        todo = list(found)
        while todo:
            for child in children.get(todo.pop()[0], ()):
                if child not in found:
                    found.add(child)
                    todo.append(child)
        return found


def _read_processes() -> _Reading:
    began = time.monotonic()
    procs: dict[Key, _Proc] = {}
    for p in psutil.process_iter(ATTRS, ad_value=None):
        # process_iter already skips processes that vanish during the pass; attributes it could
        # not read (access denied, a zombie's) come back as None. It keeps one Process object
        # per live process from pass to pass, and the object keeps its create_time: a step of
        # the wall clock (which moves btime) between the readings does not change a key.
        info = _Info(**p.info)
        if info.create_time is None or info.ppid is None:
            continue
        t = info.cpu_times
        own = kids = None
        if t is not None:
            own = t.user + t.system
            kids = t.children_user + t.children_system
        # The first 15 characters of psutil's name are exactly comm: psutil lengthens a 15-character
        # comm from the command line, which may hold a password.
        name = (info.name or "?")[:15]
        procs[(info.pid, info.create_time)] = _Proc(info.ppid, name, own, kids)
    memory = _read_memory()
    return _Reading(at=(began + time.monotonic()) / 2, procs=procs,
                    by_pid={pid: (pid, created) for pid, created in procs}, memory=memory,
                    cpu=_read_cpu())


CPU_PARTS = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal")  # not guest:
# the kernel counts a guest's time in user (and nice) already


def _read_cpu() -> tuple[float, float] | None:
    """The machine's steal and all CPU seconds so far (/proc/stat's cpu line); None where the
    kernel does not count steal (not Linux)."""
    times = psutil.cpu_times()
    if not hasattr(times, "steal"):
        return None
    return float(times.steal), float(sum(getattr(times, name, 0.0) for name in CPU_PARTS))


def _steal_pct(before: _Reading, after: _Reading) -> float | None:
    """The share of all CPU time the host took over the window between two readings, in
    percent, rounded to a hundredth (the kernel counts in clock ticks)."""
    if before.cpu is None or after.cpu is None or after.cpu[1] <= before.cpu[1]:
        return None
    stolen = max(after.cpu[0] - before.cpu[0], 0.0)
    return round(min(100.0, 100 * stolen / (after.cpu[1] - before.cpu[1])), 2)


def _read_memory() -> dict[str, float]:
    out: dict[str, float] = {}
    try:
        # safe: /proc and /sys files of the kernel
        for line in PSI.read_text().splitlines():
            kind, _, rest = line.partition(" ")
            for part in rest.split():
                if part.startswith("total=") and kind in ("some", "full"):
                    out[f"psi_{kind}_ms"] = int(part[len("total="):]) / 1000
    except OSError:
        pass  # no PSI: a kernel without CONFIG_PSI, or booted with psi=0 (reading fails then)
    try:
        # safe: /proc and /sys files of the kernel
        for line in VMSTAT.read_text().splitlines():
            name, _, value = line.partition(" ")
            if name in ("pswpin", "pswpout"):
                out[f"swap_{name[4:]}_pages"] = float(value)
    except OSError:
        pass  # not Linux
    return out


def _kernel_threads(reading: _Reading) -> set[Key]:
    # In a pid namespace of its own (a container) pid 2 may be an ordinary process, and kernel
    # threads are not visible at all: only a pid 2 that is kthreadd is taken for it.
    kthreadd = reading.by_pid.get(KTHREADD)
    if kthreadd is None or reading.procs[kthreadd].name != "kthreadd":
        return set()
    return {kthreadd} | {k for k, p in reading.procs.items() if p.ppid == KTHREADD}


class ForeignMeter:
    """Start at the beginning of a measured window, stop at its end.

    ``ours`` returns the root pids whose whole process trees belong to the trial (the teiten
    process, whose descendants include pgbench, and the PostgreSQL postmaster); ``theirs``, the
    pids in those trees that are not the trial's after all (with their own trees: the backends
    of another program's clients of an external server on this machine). Both are called at
    start and at stop.
    """

    def __init__(self, ours: Callable[[], Iterable[int]],
                 theirs: Callable[[], Iterable[int]] = tuple):
        self.ours = ours
        self.theirs = theirs
        self.capacity = len(os.sched_getaffinity(0))  # the CPUs the trial may use
        self._start: _Reading | None = None
        self._roots: set[Key] = set()
        self._others: set[Key] = set()

    def start(self) -> None:
        self._start = _read_processes()
        self._roots = self._root_keys(self._start)
        self._others = self._keys(self._start, self.theirs())

    def stop(self) -> ForeignLoad:
        if self._start is None:
            raise RuntimeError("ForeignMeter.stop() called before start()")
        before, self._start = self._start, None
        after = _read_processes()
        roots = self._roots | self._root_keys(after)
        others = self._others | self._keys(after, self.theirs())
        ours = (before.trees(roots) | after.trees(roots)) - before.trees(others) - after.trees(others)
        kernel = _kernel_threads(before) | _kernel_threads(after)
        used, own, solo = _use(before, after, kernel, ours)
        top = heapq.nlargest(TOP, ((s, pid) for pid, s in used.items() if s >= TOP_MIN_S))
        names = {key[0]: after.procs[key].name for key in after.procs}
        programs = _programs(after, used, solo)
        # Rounded to the millisecond: the kernel counts in clock ticks (10 ms), the rest is float noise.
        return ForeignLoad(window_s=round(max(after.at - before.at, 0.0), 4),
                           cpu_s=round(sum(used.values()), 3),
                           top=tuple(Consumer(pid, names[pid], round(s, 3)) for s, pid in top),
                           memory={k: max(v - before.memory[k], 0.0) for k, v in after.memory.items()
                                   if k in before.memory},
                           own_cpu_s=round(own, 3), capacity=self.capacity, programs=programs,
                           steal_pct=_steal_pct(before, after))

    def _root_keys(self, reading: _Reading) -> set[Key]:
        return self._keys(reading, self.ours())

    @staticmethod
    def _keys(reading: _Reading, pids: Iterable[int]) -> set[Key]:
        return {reading.by_pid[pid] for pid in pids if pid in reading.by_pid}


def _use(before: _Reading, after: _Reading, kernel: set[Key], ours: set[Key]
         ) -> tuple[dict[int, float], float, dict[int, float]]:
    """CPU seconds per pid of the foreign processes alive at the end of the window, the CPU
    seconds of the trial's own (``ours``) in all, and the foreign ones' own seconds per pid
    (without the children they reaped)."""
    # The children seen at the start and gone at the end, by parent: they were reaped (by that
    # parent, unless they were orphaned first) and their whole life is in its children times.
    gone: defaultdict[Key, list[Key]] = defaultdict(list)
    for key, proc in before.procs.items():
        parent = before.by_pid.get(proc.ppid)
        if key not in after.procs and parent is not None:
            gone[parent].append(key)
    used: defaultdict[int, float] = defaultdict(float)
    solo: defaultdict[int, float] = defaultdict(float)
    own = 0.0
    for key, now in after.procs.items():
        if key in kernel:
            continue
        then = before.procs.get(key)
        alone = 0.0
        if then is None:
            grew = now.total if now.own is not None else 0.0  # born inside the window
            alone = now.own or 0.0
        elif then.own is None or then.kids is None or now.own is None or now.kids is None:
            continue  # unreadable at one end: not counted rather than counted for its whole life
        else:
            kids = now.kids - then.kids
            reaped = _gone_below(key, gone)
            if reaped & ours and key not in ours:
                kids = 0.0  # the trial's share in a foreign parent's children cannot be told apart
            else:
                kids -= sum(before.procs[k].total for k in reaped)
            alone = max(now.own - then.own, 0.0)
            grew = alone + max(kids, 0.0)
        if key in ours:
            own += grew
        else:
            used[key[0]] += grew
            solo[key[0]] += alone
    return dict(used), own, dict(solo)


def _programs(after: _Reading, used: Mapping[int, float], solo: Mapping[int, float]
              ) -> tuple[Program, ...]:
    """The foreign processes alive at the end of the window, by program, largest first (issue
    53, item 6). A process belongs to its parent's program when the parent is foreign and of
    the same program: the same name, or the parent's name and a suffix (stress-ng-cpu under
    stress-ng); so a PostgreSQL server's backends are its postmaster's. A benchmark client
    (pgbench) joins the server it drives: the one it has a TCP connection to the port of, else,
    with no TCP connection to a server here, the only other server that ran. Left out: pid 1
    (it holds the orphans it reaped, their lives before the window too) and shells that used
    no CPU themselves (what they count is what they reaped)."""
    proc_of = {key[0]: proc for key, proc in after.procs.items()}

    def first(pid: int) -> int:
        seen = {pid}
        while True:
            proc, parent = proc_of[pid], proc_of[pid].ppid
            if parent in seen or parent == INIT or parent not in used or \
                    not _same_program(proc_of[parent].name, proc.name):
                return pid
            seen.add(parent)
            pid = parent

    groups: defaultdict[int, list[int]] = defaultdict(list)
    for pid in used:
        groups[first(pid)].append(pid)
    # The servers that ran in the window (an idle one is neither named nor driven)
    servers = {pid: _server_of(pid) for pid, members in groups.items()
               if proc_of[pid].name == POSTGRES and sum(used[m] for m in members) >= TOP_MIN_S}
    found: list[Program] = []
    paired: set[int] = set()
    for pid, members in groups.items():
        name = proc_of[pid].name
        if name not in CLIENTS:
            continue
        server = _driven(pid, servers)
        if server is not None:
            paired.add(server)
            members = members + groups[server]
            found.append(Program(name, pid, len(members), sum(used[m] for m in members),
                                 servers[server]))
        else:
            found.append(Program(name, pid, len(members), sum(used[m] for m in members)))
    for pid, members in groups.items():
        name = proc_of[pid].name
        if name in CLIENTS or pid in paired or pid == INIT:
            continue
        cpu_s = sum(used[m] for m in members)
        if name in SHELLS and sum(solo.get(m, 0.0) for m in members) < TOP_MIN_S:
            continue  # an idle shell: its time is what it reaped
        found.append(Program(name, pid, len(members), cpu_s, servers.get(pid)))
    kept = sorted((p for p in found if p.cpu_s >= TOP_MIN_S and p.pid != INIT),
                  key=lambda p: p.cpu_s, reverse=True)[:TOP]
    return tuple(Program(p.name, p.pid, p.processes, round(p.cpu_s, 3), p.server) for p in kept)


def _same_program(parent: str, child: str) -> bool:
    return child == parent or child.startswith(parent + "-")


def _server_of(postmaster: int) -> dict[str, int | str]:
    """What names another PostgreSQL server: its postmaster's pid, and where it can be read,
    its data directory (the postmaster's working directory) and port (postmaster.pid). Read at
    the end of the window, for the few servers that ran beside it."""
    out: dict[str, int | str] = {"pid": postmaster}
    try:
        datadir = psutil.Process(postmaster).cwd()
        # another account's data directory: read without following a link it planted there
        lines = safefs.read_text(Path(datadir) / "postmaster.pid", limit=4096).splitlines()
    except (psutil.Error, OSError, safefs.UnsafePath):
        return out
    if lines and lines[0].strip() == str(postmaster):  # the working directory is its data directory
        out["datadir"] = datadir
        if len(lines) > 3 and lines[3].strip().isdigit():
            out["port"] = int(lines[3])
    return out


def _driven(client: int, servers: Mapping[int, Mapping[str, int | str]]) -> int | None:
    """The server (its postmaster's pid) that the benchmark client ``client`` drives: the one
    whose port it has a TCP connection to; with no TCP connection to a server here (a Unix
    socket), the only server that ran beside it; else None."""
    try:
        ports = {c.raddr.port for c in psutil.Process(client).net_connections("tcp") if c.raddr}
    except (psutil.Error, OSError):
        ports = set()
    by_port = [pid for pid, s in servers.items() if s.get("port") in ports]
    if by_port:
        return by_port[0]
    if not ports and len(servers) == 1:
        return next(iter(servers))
    return None


def _gone_below(key: Key, gone: Mapping[Key, list[Key]]) -> set[Key]:
    """The descendants of ``key`` seen at the start and gone at the end whose whole chain of
    parents up to ``key`` is gone too: the times of all of them reach ``key``'s children times
    (a child's children times hold the children it reaped), so all of their times at the start
    are time before the window."""
    found: set[Key] = set()
    todo = list(gone.get(key, ()))
    while todo:
        child = todo.pop()
        if child not in found:
            found.add(child)
            todo.extend(gone.get(child, ()))
    return found


def quiet_check(seconds: float = 2.0, *,
                ours: Callable[[], Iterable[int]] = lambda: [os.getpid()],
                theirs: Callable[[], Iterable[int]] = tuple) -> ForeignLoad:
    """Before the first trial: how much CPU the rest of the machine uses over a short window.

    By default this process and its descendants are ours; everything else is foreign.
    """
    meter = ForeignMeter(ours, theirs)
    meter.start()
    time.sleep(seconds)  # one bounded wait: the window itself
    return meter.stop()


class ForeignWatch(Sampling[ForeignLoad]):
    """The noise guard's meter over one trial's window (the guard on): the foreign load as the
    details ``foreign`` and the metric ``foreign_cpus``, judged by the guard's rule. Ours:
    teiten (the load's driver is its child) and the server's processes; the rest is foreign."""

    def __init__(self, window: Window, rule: Rule):
        server = window.server
        super().__init__(ForeignMeter(lambda: [os.getpid(), *server.server_pids()],
                                      server.foreign_pids))
        self.rule = rule

    def contribute(self, evidence: Evidence, ended: Ended) -> None:
        if self.seen is not None:
            FOREIGN.put(evidence.details, self.seen)
            evidence.metrics[FOREIGN_CPUS.name] = self.seen.cpus

    def disturbance(self) -> str | None:
        return disturbance(self.seen, self.rule) if self.seen is not None else None


def _foreign(window: Window) -> ForeignWatch | None:
    guard = window.guard
    return ForeignWatch(window, Rule.of(guard.model_dump())) if guard is not None else None


FOREIGN_CPUS = Metric("foreign_cpus", "CPUs", "gauge", "metric.foreign_cpus")
# Innermost: it starts last and stops first, so that its window is the load's.
KIND = MonitorKind(FOREIGN.name, _foreign, layer=9, metrics=(FOREIGN_CPUS,))
