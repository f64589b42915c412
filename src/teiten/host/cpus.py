"""CPU cores as a factor: choosing CPUs, confining a server to them, and checking that it
stayed there (METHODS S2/S4: the 2014 team rebooted with ``maxcpus``; teiten confines).

A server is confined with a cpuset cgroup (v2 or v1: teiten.host.cgroups) where teiten may create
one (as root): the kernel then keeps every process the postmaster forks on those CPUs, and no
process can widen its own set. Elsewhere (not root, TEITEN_CGROUPS=off) the postmaster starts
under ``taskset``: CPU affinity is inherited by every backend, background and parallel worker.
Either way :class:`AffinityWatch` reads the allowed CPUs of every server process during the
trial, and a process found outside the set fails the trial.
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import psutil

from teiten.host import cgroups
from teiten.host.procs import RunAs
from teiten.model.errors import UserError

CPUSET_ROOT = cgroups.CPUSET_ROOT  # the v1 cpuset hierarchy
_TOPOLOGY = Path("/sys/devices/system/cpu")


def available() -> list[int]:
    """The CPUs teiten itself may run on."""
    return sorted(os.sched_getaffinity(0))


def parse_list(text: str) -> list[int]:
    """'0-2,5' -> [0, 1, 2, 5], the kernel's cpu-list format."""
    cpus: set[int] = set()
    for part in str(text).replace(" ", "").split(","):
        m = re.fullmatch(r"(\d+)(?:-(\d+))?", part)
        if not m:
            raise ValueError(f"cannot read '{text}' as a CPU list; write it like 0-3 or 0,2,4")
        first, last = int(m.group(1)), int(m.group(2) or m.group(1))
        if last < first:
            raise ValueError(f"'{part}' runs backwards; write the lower CPU first")
        cpus.update(range(first, last + 1))
    return sorted(cpus)


def format_list(cpus: Iterable[int]) -> str:
    """[0, 1, 2, 5] -> '0-2,5'."""
    ordered = sorted(set(cpus))
    runs: list[str] = []
    i = 0
    while i < len(ordered):
        j = i
        while j + 1 < len(ordered) and ordered[j + 1] == ordered[j] + 1:
            j += 1
        runs.append(str(ordered[i]) if i == j else f"{ordered[i]}-{ordered[j]}")
        i = j + 1
    return ",".join(runs)


def _sibling_rank(cpu: int) -> tuple[int, int, int]:
    """(thread index within its core, package, core id): physical cores come before their
    hyperthread siblings, so that 'cores: 4' means four cores where the machine has them."""
    topo = _TOPOLOGY / f"cpu{cpu}" / "topology"
    try:
        # safe: files of the kernel (/sys, /proc, the cgroup filesystem)
        siblings = parse_list((topo / "thread_siblings_list").read_text().strip())
        package = int((topo / "physical_package_id").read_text())
        core = int((topo / "core_id").read_text())
    except (OSError, ValueError):
        return (0, 0, cpu)
    return (siblings.index(cpu) if cpu in siblings else 0, package, core)


NODES = Path("/sys/devices/system/node")


def numa_nodes(root: Path | None = None) -> dict[int, list[int]]:
    """NUMA node -> its CPUs, as the kernel lists them under ``root`` (default :data:`NODES`;
    empty where it lists none)."""
    root = root or NODES
    nodes = {}
    try:
        # safe: files of the kernel (/sys), or a test's made-up copy of them
        found = sorted(root.glob("node[0-9]*"))
        for node in found:
            text = (node / "cpulist").read_text().strip()
            nodes[int(node.name[4:])] = parse_list(text) if text else []
    except (OSError, ValueError):
        return {}
    return nodes


def memory_node(cpus: Iterable[int], root: Path | None = None) -> int | None:
    """The NUMA node whose memory a process pinned to ``cpus`` should use: the one node that holds
    every one of them, where the machine has more than one node; None where it has one (nothing
    to choose) or the CPUs span nodes (no one node is theirs)."""
    nodes = numa_nodes(root)
    if len(nodes) < 2:
        return None
    wanted = set(cpus)
    holding = [node for node, its in nodes.items() if wanted & set(its)]
    return holding[0] if len(holding) == 1 and wanted <= set(nodes[holding[0]]) else None


def choose(count: int, among: list[int] | None = None) -> list[int]:
    """``count`` CPUs out of ``among`` (default: :func:`available`), one per physical core
    first. Raises :class:`UserError` when there are not that many."""
    pool = among if among is not None else available()
    if count > len(pool):
        raise UserError(f"{count} cores asked, but teiten may use only {len(pool)} CPUs here "
                        f"({format_list(pool)}); ask for at most {len(pool)}")
    return sorted(sorted(pool, key=lambda c: (_sibling_rank(c), c))[:count])


def client_cpus(choice: str, server: list[int]) -> list[int] | None:
    """The CPUs pgbench is pinned to: None for 'any' (not pinned), the server's own CPUs for
    'same', the rest of the machine for 'others', or an explicit list."""
    if choice == "any":
        return None
    if choice == "same":
        return list(server)
    pool = available()
    if choice == "others":
        rest = [c for c in pool if c not in server]
        if not rest:
            raise UserError(f"client_cpus: others leaves no CPU for pgbench: the server has all of "
                            f"{format_list(pool)}; give the server fewer cores or use "
                            "client_cpus: same or any")
        return rest
    cpus = parse_list(choice)
    outside = [c for c in cpus if c not in pool]
    if outside:
        raise UserError(f"client_cpus: CPU {format_list(outside)} is not one teiten may use "
                        f"here ({format_list(pool)})")
    return cpus


@dataclass
class Placement:
    """Where a server's processes may run, and how that is enforced: on some CPUs (None: any),
    and in a cgroup that may also hold them to a memory and an I/O limit."""

    cpus: list[int] | None
    mechanism: str  # "cgroup-v2", "cpuset-cgroup" (v1) or "affinity"
    group: cgroups.Group | None = None

    def wrap(self, argv: list[str], *, run_as: RunAs | None) -> tuple[list[str], RunAs | None]:
        """``argv`` so that the process it starts, and all it forks, stay on the CPUs, and the
        account to run it as (None: root, where it joins a cgroup before it drops to ``run_as``)."""
        if self.group is not None:
            return self.group.wrap(argv, run_as=run_as)
        if self.cpus is None:
            return argv, run_as
        return ["taskset", "-c", format_list(self.cpus), *argv], run_as

    def to_json(self) -> dict[str, object]:
        return {"cpus": format_list(self.cpus) if self.cpus is not None else "all",
                "cores": len(self.cpus) if self.cpus is not None else None,
                "mechanism": self.mechanism,
                "cgroup": str(self.group.dirs[0]) if self.group is not None else None}

    def close(self) -> None:
        """Remove the cgroup (the kernel refuses while a process is still in it)."""
        if self.group is not None:
            self.group.close()


def confine(cpus: list[int] | None, label: str, *, memory_bytes: int | None = None,
            io: Sequence[cgroups.IoLimit] = ()) -> Placement:
    """A placement on ``cpus`` (None: any), held to ``memory_bytes`` and ``io`` too: a new
    cgroup (v2 or v1) named after ``label`` where teiten may make one (root), otherwise CPU
    affinity; a memory or I/O limit without a cgroup is a :class:`UserError`."""
    limits = cgroups.Limits(cpus=cpus, memory_bytes=memory_bytes, io=tuple(io))
    group = cgroups.create(label, limits)
    if group is None:
        if memory_bytes is not None or io:
            raise UserError(f"{label}: memory and I/O limits need a cgroup, which teiten makes "
                            "only as root with cgroups on (TEITEN_CGROUPS not off); run as root "
                            "or remove 'limits'")
        return Placement(cpus, "affinity")
    return Placement(cpus, group.mechanism, group)


def remove_stale(label_prefix: str) -> list[str]:
    """Remove empty cgroups a killed run left, whose names start with ``label_prefix``."""
    return cgroups.remove_stale(label_prefix)


def _kind(pid: int) -> str | None:
    """'client backend', 'parallel worker', 'checkpointer', ... from the process title, or
    None while a just-forked child still has the postmaster's command line."""
    try:
        # safe: files of the kernel
        title = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return None
    if not title.startswith("postgres:"):
        return None
    title = title.removeprefix("postgres:").strip()
    if title.startswith("parallel worker"):
        return "parallel worker"
    known = ("checkpointer", "background writer", "walwriter", "autovacuum launcher",
             "autovacuum worker", "logical replication launcher", "logger", "stats collector",
             "archiver", "walsender", "walreceiver", "startup", "io worker", "walsummarizer")
    for name in known:
        if title.startswith(name):
            return name
    return "client backend"


@dataclass
class AffinityReport:
    """What :class:`AffinityWatch` saw."""

    expected: list[int]
    checks: int = 0
    processes: int = 0
    kinds: dict[str, int] = field(default_factory=dict)
    escaped: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, object]:
        return {"expected": format_list(self.expected), "checks": self.checks,
                "processes": self.processes, "kinds": dict(sorted(self.kinds.items())),
                "escaped": self.escaped}

    def failure(self) -> str | None:
        if not self.escaped:
            return None
        more = f" (and {len(self.escaped) - 1} more)" if len(self.escaped) > 1 else ""
        return (f"server processes ran outside CPUs {format_list(self.expected)}: "
                f"{self.escaped[0]}{more}")


class AffinityWatch:
    """Reads the allowed CPUs of the postmaster and of every child it has, every ``interval``
    seconds, from a thread. Every server process (backends, background and parallel workers)
    is a direct child of the postmaster; parallel workers live briefly, hence the short
    interval and the kernel's cheap list of children instead of a scan of all processes."""

    def __init__(self, postmaster: int, expected: list[int], *, interval: float = 0.02):
        self.postmaster = postmaster
        self.report = AffinityReport(expected)
        self.interval = interval
        self._kinds: dict[int, str | None] = {}
        self._escaped: set[int] = set()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="affinity", daemon=True)

    def start(self) -> None:
        self.check()
        self._thread.start()

    def stop(self) -> AffinityReport:
        self._stop.set()
        self._thread.join(timeout=10)
        self.check()
        self._summarise()
        return self.report

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            self.check()

    def _children(self) -> list[int]:
        try:
            # safe: files of the kernel
            text = Path(f"/proc/{self.postmaster}/task/{self.postmaster}/children").read_text()
            return [int(p) for p in text.split()]
        except (OSError, ValueError):
            try:
                return [c.pid for c in psutil.Process(self.postmaster).children()]
            except psutil.Error:
                return []

    def check(self) -> None:
        self.report.checks += 1
        allowed = set(self.report.expected)
        for pid in [self.postmaster, *self._children()]:
            try:
                cpus = os.sched_getaffinity(pid)
            except OSError:
                continue  # it has exited
            if pid not in self._kinds or self._kinds[pid] is None:
                self._kinds[pid] = "postmaster" if pid == self.postmaster else _kind(pid)
            if not cpus <= allowed and pid not in self._escaped:
                self._escaped.add(pid)
                self.report.escaped.append(f"pid {pid} ({self._kinds[pid] or 'server process'}) "
                                           f"may run on {format_list(cpus)}")

    def _summarise(self) -> None:
        """Processes by kind; a process that ended before it set its title is 'unnamed'."""
        self.report.processes = len(self._kinds)
        kinds: dict[str, int] = {}
        for kind in self._kinds.values():
            kinds[kind or "unnamed"] = kinds.get(kind or "unnamed", 0) + 1
        self.report.kinds = kinds
