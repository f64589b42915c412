"""How much of its limits a limited server used over a trial's measured window (METHODS S11:
the 2020 report's CPU, memory and IOPS "as a % of the provisioned limit"), read from the
counters of the cgroup that holds it (teiten.host.cgroups): the I/O its processes issued on the
limited disks, as rates over the window, and the largest memory it held (sampled twice a
second, page cache included).

On cgroup v1, the counters and the throttle both see the I/O a server's processes issue
themselves (reads, direct writes, and the writeback that their fsync and flush requests start);
the kernel's own flusher threads write back dirty pages outside the group, unthrottled and
uncounted. On v2 the writeback of the group's pages is charged to it too.

A monitor of a report table's folder: :mod:`teiten.monitors.registry` finds it there, after
the monitors of ``teiten/monitors/``; it stands on the monitors' floor of the import graph.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass

from teiten.host.cgroups import Group
from teiten.model.details import DetailsKind
from teiten.model.results import Evidence
from teiten.monitors.base import Ended, Metric, MonitorKind, Sampling, Window

SAMPLE_S = 0.5
# The metrics it stores, which the table's figures read (teiten.tables.limits)
LIMIT_MEMORY_PEAK_BYTES = "limit_memory_peak_bytes"
LIMIT_READ_IOPS = "limit_read_iops"
LIMIT_WRITE_IOPS = "limit_write_iops"
LIMIT_READ_BPS = "limit_read_bps"
LIMIT_WRITE_BPS = "limit_write_bps"
RATES = {"read_ios": LIMIT_READ_IOPS, "write_ios": LIMIT_WRITE_IOPS,
         "read_bytes": LIMIT_READ_BPS, "write_bytes": LIMIT_WRITE_BPS}
MEMORY = LIMIT_MEMORY_PEAK_BYTES


def counted(version: int) -> str:
    """Which writes the group's counters and throttle see, as the report says it."""
    return "v2: all, writeback of its pages included" if version == 2 else \
        "v1: its processes' own I/O (reads, direct writes, fsync-started writeback); not the kernel flusher's"


@dataclass(frozen=True)
class LimitsDetails:
    """What a limited server's group counted over a trial (``limits``): the limited devices,
    the cgroup version (v1, v2), and which writes its counters and throttle see."""

    devices: tuple[str, ...] = ()
    cgroup: str = ""
    counted: str = ""


LIMITS = DetailsKind("limits", LimitsDetails)


class LimitsWatch:
    """The counters of a limited server's group over one measured window."""

    def __init__(self, group: Group):
        self.group = group
        self._first: dict[str, float] = {}
        self._began = 0.0
        self._peak = 0.0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self._first = self.group.usage()
        self._began = time.monotonic()
        self._peak = self._first.get("memory_bytes", 0.0)
        if "memory_bytes" in self._first:
            self._thread = threading.Thread(target=self._sample, name="limits-watch", daemon=True)
            self._thread.start()

    def _sample(self) -> None:
        while not self._stop.wait(SAMPLE_S):
            self._peak = max(self._peak, self.group.usage().get("memory_bytes", 0.0))

    def stop(self) -> dict[str, float]:
        """The window's rates of each counted I/O, per second, and the memory peak."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        last = self.group.usage()
        seconds = max(time.monotonic() - self._began, 1e-6)
        out = {name: (last[key] - self._first.get(key, 0.0)) / seconds
               for key, name in RATES.items() if key in last}
        if "memory_bytes" in last:
            out[MEMORY] = max(self._peak, last["memory_bytes"])
        return out


class LimitsMonitor(Sampling[dict[str, float]]):
    """A limited server's use of its limits over the window: the metrics ``limit_*``, and which
    devices and writes its group counted."""

    def __init__(self, group: Group):
        super().__init__(LimitsWatch(group))
        self.group = group

    def contribute(self, evidence: Evidence, ended: Ended) -> None:
        if self.seen is None:
            return
        group = self.group
        evidence.metrics.update(self.seen)
        LIMITS.put(evidence.details, LimitsDetails(tuple(io.device for io in group.limits.io),
                                                   f"v{group.version}", counted(group.version)))


def _limits(window: Window) -> LimitsMonitor | None:
    group = window.server.limits_group()
    return LimitsMonitor(group) if group is not None else None


KIND = MonitorKind(LIMITS.name, _limits, layer=2, metrics=(
    *(Metric(name, "IOPS" if name.endswith("iops") else "bytes/s", "rate", f"metric.{name}")
      for name in RATES.values()),
    Metric(MEMORY, "bytes", "peak", f"metric.{MEMORY}")))
