"""pgbench's per-transaction log (``-l``): reading it, and figures over a time window.

Each line is ``client_id transaction_no time script_no time_epoch time_us [schedule_lag]
[retries]``: ``time`` is the transaction's latency in microseconds (15+: ``failed`` or
``skipped`` instead), and ``time_epoch``/``time_us`` say when it finished. With ``-j N``
pgbench writes one file per thread: ``PREFIX.PID`` and ``PREFIX.PID.1`` ... ``.N-1``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np


@dataclass(frozen=True)
class Logged:
    """One transaction of the log."""

    script: int          # 0-based index of the script pgbench chose
    end: float           # epoch seconds at which it finished
    latency_us: int | None  # None when it failed or was skipped


@dataclass(frozen=True)
class WindowStats:
    """The transactions of one script (or of all, ``script`` None) that finished in a window."""

    script: int | None
    count: int           # finished without failure
    failed: int
    avg_ms: float | None
    p50_ms: float | None
    p95_ms: float | None
    p99_ms: float | None
    stddev_ms: float | None = None

    def to_json(self) -> dict[str, object]:
        return {"count": self.count, "failed": self.failed, "avg_ms": self.avg_ms,
                "p50_ms": self.p50_ms, "p95_ms": self.p95_ms, "p99_ms": self.p99_ms}


def parse(lines: Iterable[str]) -> list[Logged]:
    """The transactions of log lines; lines that are not transactions (or that a killed
    pgbench cut short) are skipped."""
    out = []
    for line in lines:
        f = line.split()
        if len(f) < 6 or not (f[0].isdigit() and f[3].isdigit() and f[4].isdigit() and f[5].isdigit()):
            continue
        latency = int(f[2]) if f[2].isdigit() else None
        out.append(Logged(script=int(f[3]), end=int(f[4]) + int(f[5]) / 1e6, latency_us=latency))
    return out


def read(directory: Path, prefix: str, start: float = 0.0, end: float = math.inf) -> list[Logged]:
    """The transactions that finished in [start, end), from the files pgbench wrote with
    ``--log-prefix DIRECTORY/PREFIX``; read file by file, keeping only those, so that a long
    run's log does not have to fit in memory as objects."""
    out: list[Logged] = []
    for path in sorted(directory.glob(prefix + ".*")):
        with path.open(errors="replace") as f:
            out += [t for t in parse(f) if start <= t.end < end]
    return out


def window_of_files(directory: Path, prefix: str, start: float, end: float,
                    scripts: int) -> tuple[WindowStats, list[WindowStats]]:
    """:func:`window` over the log files of one run."""
    return window(read(directory, prefix, start, end), start, end, scripts)


def window(logged: Sequence[Logged], start: float, end: float,
           scripts: int) -> tuple[WindowStats, list[WindowStats]]:
    """Figures over the transactions that finished in [start, end): all of them, and per
    script (``scripts`` of them, in pgbench's order)."""
    inside = [t for t in logged if start <= t.end < end]
    per = [_stats(i, [t for t in inside if t.script == i]) for i in range(scripts)]
    return _stats(None, inside), per


def _stats(script: int | None, txs: Sequence[Logged]) -> WindowStats:
    lat = np.array([t.latency_us for t in txs if t.latency_us is not None], dtype=float) / 1000
    failed = sum(1 for t in txs if t.latency_us is None)
    if not lat.size:
        return WindowStats(script, 0, failed, None, None, None, None)
    p50, p95, p99 = (float(v) for v in np.percentile(lat, [50, 95, 99]))
    return WindowStats(script, int(lat.size), failed, float(lat.mean()), p50, p95, p99,
                       float(lat.std()))
