"""The system monitor: CPU, load, context switches, memory, block devices and network,
sampled every second during the measured window (what the seeds read from sar/vmstat).

Sampling is split from the source of the counters: a backend returns raw cumulative
counters, the monitor turns consecutive readings into per-second rates. ``LocalBackend``
reads this machine with psutil; a backend for a remote server only has to return the
same :class:`Reading` (for instance from /proc read over ssh).
"""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

import psutil

from teiten.host.cgroups import block_device

CPU_FIELDS = ("user", "system", "iowait", "idle", "steal", "irq")
# The whole window's CPU shares as a trial's metrics, by the system summary's names.
CPU_KEYS = {"cpu_user": "cpu.user", "cpu_sys": "cpu.system", "cpu_iowait": "cpu.iowait",
            "cpu_idle": "cpu.idle", "cpu_steal": "cpu.steal", "cpu_irq": "cpu.irq"}


@dataclass(frozen=True)
class Reading:
    """Cumulative counters at one instant (seconds of CPU time, counts, bytes)."""

    at: float
    cpu: dict[str, float]                 # CPU_FIELDS -> seconds, whole machine
    per_cpu: list[dict[str, float]]
    ctx_switches: int
    load1: float
    running: int                          # runnable tasks (the run queue)
    memory: dict[str, float]              # used, cached, dirty, writeback (bytes)
    disks: dict[str, tuple[int, int, int, int, int]]  # reads, writes, rbytes, wbytes, busy ms
    nics: dict[str, tuple[int, int, int, int]]        # rx bytes, tx bytes, rx packets, tx packets


class Backend(Protocol):
    def read(self) -> Reading: ...


def _cpu(t: object) -> dict[str, float]:
    get = lambda name: float(getattr(t, name, 0.0))  # noqa: E731 - steal/iowait are Linux-only
    return {"user": get("user") + get("nice"), "system": get("system"),
            "iowait": get("iowait"), "idle": get("idle"), "steal": get("steal"),
            "irq": get("irq") + get("softirq")}


def _meminfo() -> dict[str, float]:
    # psutil has no Dirty/Writeback: the two lines the seeds' vmstat shows are read here.
    out = {}
    try:
        # safe: a file of the kernel
        for line in Path("/proc/meminfo").read_text().splitlines():
            key, _, rest = line.partition(":")
            if key in ("Dirty", "Writeback"):
                out[key.lower()] = float(rest.split()[0]) * 1024
    except OSError:
        pass
    return out


def _running() -> int:
    # /proc/loadavg's fourth field is "runnable/total"; psutil exposes only the averages.
    try:
        # safe: a file of the kernel
        return int(Path("/proc/loadavg").read_text().split()[3].split("/")[0])
    except (OSError, IndexError, ValueError):
        return 0


class LocalBackend:
    """Counters of this machine, from psutil."""

    def read(self) -> Reading:
        vm = psutil.virtual_memory()
        memory = {"used": float(vm.used), "cached": float(getattr(vm, "cached", 0.0)),
                  **_meminfo()}
        disks = {name: (d.read_count, d.write_count, d.read_bytes, d.write_bytes,
                        int(getattr(d, "busy_time", 0)))
                 for name, d in (psutil.disk_io_counters(perdisk=True) or {}).items()}
        nics = {name: (n.bytes_recv, n.bytes_sent, n.packets_recv, n.packets_sent)
                for name, n in psutil.net_io_counters(pernic=True).items()}
        return Reading(
            at=time.monotonic(), cpu=_cpu(psutil.cpu_times()),
            per_cpu=[_cpu(t) for t in psutil.cpu_times(percpu=True)],
            ctx_switches=psutil.cpu_stats().ctx_switches, load1=os.getloadavg()[0],
            running=_running(), memory=memory, disks=disks, nics=nics)


def device_of(path: Path) -> str | None:
    """The block device (as psutil names it, e.g. 'vda' or 'nvme0n1') holding ``path``; a
    partition (vda1) by its own name: psutil counts both."""
    found = block_device(path)
    return found.name if found is not None else None


def _pct(part: float, total: float) -> float:
    return 100.0 * part / total if total > 0 else 0.0


def rates(a: Reading, b: Reading) -> dict[str, float]:
    """Per-second figures between two readings, as flat metric names."""
    dt = max(b.at - a.at, 1e-6)
    out: dict[str, float] = {}

    def cpu_shares(prefix: str, x: dict[str, float], y: dict[str, float]) -> None:
        deltas = {k: max(0.0, y[k] - x[k]) for k in CPU_FIELDS}
        total = sum(deltas.values())
        for k in CPU_FIELDS:
            out[f"{prefix}.{k}"] = _pct(deltas[k], total)

    cpu_shares("cpu", a.cpu, b.cpu)
    for i, (x, y) in enumerate(zip(a.per_cpu, b.per_cpu, strict=False)):
        cpu_shares(f"cpu{i}", x, y)
    out["load.1m"] = b.load1
    out["load.running"] = float(b.running)
    out["ctx_switches_s"] = (b.ctx_switches - a.ctx_switches) / dt
    for k, v in b.memory.items():
        out[f"mem.{k}"] = v
    for name, d1 in b.disks.items():
        d0 = a.disks.get(name)
        if d0 is None:
            continue
        out[f"disk.{name}.reads_s"] = (d1[0] - d0[0]) / dt
        out[f"disk.{name}.writes_s"] = (d1[1] - d0[1]) / dt
        out[f"disk.{name}.read_mb_s"] = (d1[2] - d0[2]) / dt / 1e6
        out[f"disk.{name}.write_mb_s"] = (d1[3] - d0[3]) / dt / 1e6
        out[f"disk.{name}.util"] = min(100.0, _pct((d1[4] - d0[4]) / 1000.0, dt))
    for name, n1 in b.nics.items():
        n0 = a.nics.get(name)
        if n0 is None:
            continue
        out[f"net.{name}.rx_bytes_s"] = (n1[0] - n0[0]) / dt
        out[f"net.{name}.tx_bytes_s"] = (n1[1] - n0[1]) / dt
        out[f"net.{name}.rx_packets_s"] = (n1[2] - n0[2]) / dt
        out[f"net.{name}.tx_packets_s"] = (n1[3] - n0[3]) / dt
    return out


@dataclass
class SystemResult:
    series: list[tuple[float, dict[str, float]]] = field(default_factory=list)  # (t, metrics)
    summary: dict[str, float] = field(default_factory=dict)  # whole-window rates
    devices: dict[str, str] = field(default_factory=dict)    # role (data, wal) -> device


class SystemMonitor:
    """Samples a backend every ``interval`` seconds in a thread, between start() and stop()."""

    def __init__(self, backend: Backend | None = None, *, interval: float = 1.0,
                 devices: dict[str, str] | None = None):
        self.backend = backend or LocalBackend()
        self.interval = interval
        self.result = SystemResult(devices=dict(devices or {}))
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._first: Reading | None = None

    def start(self) -> None:
        self._first = self.backend.read()
        self._thread = threading.Thread(target=self._loop, name="teiten-sysmon", daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        assert self._first is not None
        prev = self._first
        while not self._stop.wait(self.interval - ((time.monotonic() - self._first.at)
                                                   % self.interval)):
            now = self.backend.read()
            self.result.series.append((round(now.at - self._first.at, 3), rates(prev, now)))
            prev = now

    def stop(self) -> SystemResult:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)
        if self._first is not None:
            last = self.backend.read()
            whole = rates(self._first, last)
            # Rates over the whole window; instantaneous gauges as their mean over samples.
            gauges = [k for k in whole if k.startswith(("mem.", "load."))]
            for k in gauges:
                values = [m[k] for _, m in self.result.series if k in m] or [whole[k]]
                whole[k] = sum(values) / len(values)
            self.result.summary = whole
        return self.result


@dataclass(frozen=True)
class StepReading:
    """The counters a timed step is judged by, at one instant: CPU seconds of the whole
    machine, and the data device's (reads, writes, read bytes, write bytes, busy ms)."""

    at: float
    cpu: dict[str, float]
    disk: tuple[int, int, int, int, int] | None


class StepMeter:
    """The machine around each timed step of a measured-statement trial (METHODS S6, S8-S10:
    "until I/O is the limit" needs the CPU and the device beside the time). Two readings per
    step, outside its timed part; the machine is the server's own (a server on this machine).
    Below a second the shares rest on few of the kernel's 10 ms ticks: the report shows them
    for the steps that last one."""

    def __init__(self, device: str | None):
        self.device = device  # the data directory's device, as psutil names it (None: unknown)

    def read(self) -> StepReading:
        disk = None
        if self.device is not None:
            found = (psutil.disk_io_counters(perdisk=True) or {}).get(self.device)
            if found is not None:
                disk = (found.read_count, found.write_count, found.read_bytes, found.write_bytes,
                        int(getattr(found, "busy_time", 0)))
        return StepReading(time.monotonic(), _cpu(psutil.cpu_times()), disk)

    def figures(self, a: StepReading, b: StepReading) -> dict[str, float | str]:
        """The step's shares of all CPUs (busy: neither idle nor waiting for I/O) and its data
        device's %util and throughput, as the step's extra figures."""
        dt = max(b.at - a.at, 1e-6)
        deltas = {k: max(0.0, b.cpu[k] - a.cpu[k]) for k in CPU_FIELDS}
        total = sum(deltas.values())
        out: dict[str, float | str] = {
            "window_s": round(dt, 6),
            "cpu_busy_pct": round(_pct(total - deltas["idle"] - deltas["iowait"], total), 2),
            "cpu_iowait_pct": round(_pct(deltas["iowait"], total), 2)}
        if a.disk is not None and b.disk is not None and self.device is not None:
            d0, d1 = a.disk, b.disk
            out.update({"device": self.device,
                        "device_util_pct": round(min(100.0, _pct((d1[4] - d0[4]) / 1000.0, dt)), 2),
                        "read_mb_s": round((d1[2] - d0[2]) / dt / 1e6, 3),
                        "write_mb_s": round((d1[3] - d0[3]) / dt / 1e6, 3)})
        return out
