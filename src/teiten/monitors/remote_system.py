"""The system monitor's backend for a server on another host: /proc read there over ssh.

One remote shell loop prints /proc/uptime, /proc/stat, /proc/loadavg, /proc/meminfo,
/proc/diskstats and /proc/net/dev once a second, each block headed by a marker line; a
reader thread parses each complete sample into a :class:`Reading`. ``read()`` returns the
newest sample that it has not returned before, waiting (bounded) for the next one, so
:class:`~teiten.monitors.system.SystemMonitor` gets one fresh sample per interval from a
single ssh session instead of a connection per second.

The remote clock of a sample is /proc/uptime (monotonic, 10 ms resolution); CPU times in
/proc/stat count USER_HZ ticks (``getconf CLK_TCK`` on the remote), turned into seconds.
The figures are the same as LocalBackend's (psutil): user includes nice, irq includes
softirq, memory used is MemTotal - MemAvailable, cached is Cached + SReclaimable.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from importlib.resources import files

from teiten.host import procs
from teiten.host.remote import Ssh
from teiten.model.errors import ServerError
from teiten.model.results import Evidence
from teiten.monitors.base import Ended, Metric, MonitorKind, Sampling, Window
from teiten.monitors.system import CPU_KEYS, Reading, SystemMonitor, SystemResult

log = logging.getLogger(__name__)

MARK = "@@teiten "
SECTOR = 512  # /proc/diskstats counts 512-byte sectors whatever the device's own size
FILES = ("uptime", "stat", "loadavg", "meminfo", "diskstats", "net/dev")

# The loop that samples the host's /proc, sent as it is (a package file beside this one).
# safe: a file of teiten's own package
_LOOP = (files("teiten.monitors") / "remote_system.sh").read_text(encoding="utf-8")


def _cpu(fields: list[str], hz: float) -> dict[str, float]:
    # user nice system idle iowait irq softirq steal (guest time is already in user)
    v = [float(x) / hz for x in fields[:8]] + [0.0] * max(0, 8 - len(fields))
    return {"user": v[0] + v[1], "system": v[2], "idle": v[3], "iowait": v[4],
            "irq": v[5] + v[6], "steal": v[7]}


@dataclass(frozen=True)
class ProcFiles:
    """One sample's /proc files (FILES, in their order), each as its lines."""

    uptime: list[str]
    stat: list[str]
    loadavg: list[str]
    meminfo: list[str]
    diskstats: list[str]
    net_dev: list[str]

    @classmethod
    def of(cls, blocks: Mapping[str, list[str]]) -> ProcFiles:
        """The files of a sample's blocks (name -> lines); KeyError names the first missing."""
        return cls(*(blocks[name] for name in FILES))


def parse_sample(blocks: dict[str, list[str]], hz: float) -> Reading:
    """One sample's /proc files (name -> lines) as a Reading."""
    files = ProcFiles.of(blocks)
    at = float(files.uptime[0].split()[0])
    cpu: dict[str, float] = {}
    per_cpu: list[dict[str, float]] = []
    ctx = 0
    for line in files.stat:
        parts = line.split()
        if not parts:
            continue
        if parts[0] == "cpu":
            cpu = _cpu(parts[1:], hz)
        elif parts[0].startswith("cpu") and parts[0][3:].isdigit():
            per_cpu.append(_cpu(parts[1:], hz))
        elif parts[0] == "ctxt":
            ctx = int(parts[1])
    load = files.loadavg[0].split()
    mem: dict[str, float] = {}
    for line in files.meminfo:
        key, _, rest = line.partition(":")
        if rest.split():
            mem[key] = float(rest.split()[0]) * 1024
    memory = {"used": mem.get("MemTotal", 0.0) - mem.get("MemAvailable", 0.0),
              "cached": mem.get("Cached", 0.0) + mem.get("SReclaimable", 0.0),
              "dirty": mem.get("Dirty", 0.0), "writeback": mem.get("Writeback", 0.0)}
    disks: dict[str, tuple[int, int, int, int, int]] = {}
    for line in files.diskstats:
        f = line.split()
        if len(f) < 13:
            continue
        # reads, sectors read, writes, sectors written, ms doing I/O
        disks[f[2]] = (int(f[3]), int(f[7]), int(f[5]) * SECTOR, int(f[9]) * SECTOR, int(f[12]))
    nics: dict[str, tuple[int, int, int, int]] = {}
    for line in files.net_dev:
        name, sep, rest = line.partition(":")
        f = rest.split()
        if not sep or len(f) < 10:
            continue  # the two header lines
        nics[name.strip()] = (int(f[0]), int(f[8]), int(f[1]), int(f[9]))
    return Reading(at=at, cpu=cpu, per_cpu=per_cpu, ctx_switches=ctx, load1=float(load[0]),
                   running=int(load[3].split("/")[0]), memory=memory, disks=disks, nics=nics)


class _Parser:
    """Turns the stream's lines into readings."""

    def __init__(self, mark: str):
        self.mark = mark
        self.hz = 100.0
        self.blocks: dict[str, list[str]] = {}
        self.current: list[str] | None = None

    def feed(self, line: str) -> Reading | None:
        if not line.startswith(self.mark):
            if self.current is not None:
                self.current.append(line)
            return None
        name = line[len(self.mark):].strip()
        if name.startswith("hz "):
            self.hz = float(name.split()[1]) or 100.0
            return None
        if name == "end":
            blocks, self.blocks, self.current = self.blocks, {}, None
            try:
                return parse_sample(blocks, self.hz)
            except (KeyError, IndexError, ValueError) as exc:
                log.warning("unreadable sample from the remote /proc: %s", exc)
                return None
        self.current = self.blocks.setdefault(name, [])
        return None


class RemoteBackend:
    """Counters of the host behind ``ssh``, streamed by one remote loop.

    The loop starts on the first ``read()`` and runs until ``close()`` (which may be
    followed by more reads: the loop then starts again).
    """

    def __init__(self, ssh: Ssh, *, every_s: int = 1, wait_s: float = 20.0):
        self.ssh = ssh
        self.every_s = every_s
        self.wait_s = wait_s  # the longest wait for a sample (the first one connects)
        self._proc: procs.Background | None = None
        self._thread: threading.Thread | None = None
        self._cond = threading.Condition()
        self._latest: Reading | None = None
        self._seq = 0
        self._returned = 0
        self._ended = False

    def _start(self) -> None:
        self.ssh.check()
        mark = f"{MARK}{id(self):x} "  # never the start of a line of /proc
        self._proc = self.ssh.stream(_LOOP, str(self.every_s), mark, *FILES, what="system monitor")
        self._ended = False
        self._thread = threading.Thread(target=self._reader, args=(self._proc, _Parser(mark)),
                                        name="teiten-remote-sysmon", daemon=True)
        self._thread.start()

    def _reader(self, proc: procs.Background, parser: _Parser) -> None:
        lines: Iterable[str] = proc.proc.stdout or ()
        for line in lines:
            reading = parser.feed(line.rstrip("\n"))
            if reading is not None:
                with self._cond:
                    self._latest = reading
                    self._seq += 1
                    self._cond.notify_all()
        with self._cond:
            self._ended = True
            self._cond.notify_all()

    def read(self) -> Reading:
        """The newest sample not returned before; waits for the next one when there is
        none yet (at most ``wait_s``)."""
        if self._proc is None:
            self._start()
        with self._cond:
            self._cond.wait_for(lambda: self._seq > self._returned or self._ended,
                                timeout=self.wait_s)
            if self._seq > self._returned:
                self._returned = self._seq
                assert self._latest is not None
                return self._latest
            ended = self._ended
        why = "the monitoring loop ended" if ended else f"no sample within {self.wait_s:g} s"
        stderr = ""
        if ended and self._proc is not None:
            stderr = procs.tail(self._proc.stop(timeout=5).stderr, 2)
            self._proc = None
        raise ServerError(f"system monitor on {self.ssh.label}: {why}"
                          + (f": {stderr}" if stderr else ""))

    def close(self) -> None:
        """Stop the remote loop (it ends at its next write to the closed channel)."""
        proc, self._proc = self._proc, None
        if proc is not None:
            # End the local ssh first and let the reader see the end of its output: only
            # then may stop() collect what is left (two readers of one pipe would race).
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.proc.pid, signal.SIGTERM)
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None
        if proc is not None:
            proc.stop(timeout=5)


class HostWatch(Sampling[SystemResult]):
    """The system of the host of a server on another machine, over the window: its series
    under the source ``server-system``, its CPU shares as ``host_cpu_*``."""

    def contribute(self, evidence: Evidence, ended: Ended) -> None:
        host = self.seen
        if host is None:
            return
        evidence.series.extend(("server-system", t, name, value)
                               for t, sample in host.series for name, value in sample.items())
        evidence.metrics.update({f"host_{key}": host.summary[name]
                                 for key, name in CPU_KEYS.items() if name in host.summary})
        evidence.details["server_system_summary"] = host.summary


def _host(window: Window) -> HostWatch | None:
    backend = window.server.remote_monitor() if window.monitors else None
    return HostWatch(SystemMonitor(backend=backend)) if backend is not None else None


KIND = MonitorKind("host", _host, layer=1,
                   metrics=(Metric("host_cpu_{part}", "%", "gauge", "metric.host_cpu"),))
