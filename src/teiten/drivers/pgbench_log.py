"""pgbench's per-transaction log (``-l``): reading it, and figures over a time window.

Each line is ``client_id transaction_no time script_no time_epoch time_us [schedule_lag]
[retries]``: ``time`` is the transaction's latency in microseconds (15+: ``failed`` or
``skipped`` instead), and ``time_epoch``/``time_us`` say when it finished. With ``-j N``
pgbench writes one file per thread: ``PREFIX.PID`` and ``PREFIX.PID.1`` ... ``.N-1``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from teiten.host import safefs


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
    with safefs.Dir.open(directory) as held:  # the client's: no link it planted is followed
        for name in held.names():
            if name.startswith(prefix + "."):
                with open(held.open_file(name), errors="replace") as f:
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


# -- latency percentiles of a whole run, aggregated as the log is read (issue 21) -------------
#
# A log-linear histogram of the latencies in microseconds, as HdrHistogram lays it out: values
# below 256 each have a bucket of their own; above, each power of two [2^k, 2^(k+1)) is cut into
# 128 buckets of equal width. A bucket is thus at most 1/128 of its smallest value wide, and a
# percentile read at its middle is within 1/256 (0.4%) of the true one. Its counts take a few
# kilobytes whatever the number of transactions; the log is read in chunks of CHUNK bytes.

SUB_BUCKETS = 128
PRECISION = 1 / (2 * SUB_BUCKETS)  # the largest relative error of a reported percentile
QUANTILES = (("p50", 0.5), ("p90", 0.9), ("p95", 0.95), ("p99", 0.99), ("p999", 0.999))
CHUNK = 1 << 20


def bucket_of(us: np.ndarray) -> np.ndarray:
    """The bucket index of each latency (non-negative integers, microseconds)."""
    _, bits = np.frexp(us.astype(np.float64))  # exact: latencies are far below 2^53
    shift = np.maximum(bits - 8, 0)
    return (SUB_BUCKETS * shift + (us >> shift)).astype(np.int64)


def bucket_bounds(index: int) -> tuple[int, int]:
    """The smallest and the largest latency of a bucket."""
    shift = max((index >> 7) - 1, 0)
    low = (index - SUB_BUCKETS * shift) << shift
    return low, low + (1 << shift) - 1


@dataclass
class Histogram:
    """Latencies counted into buckets; skipped and failed transactions counted apart, and
    those above a latency limit counted too (with the limit in whole microseconds)."""

    counts: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    total: int = 0
    skipped: int = 0
    failed: int = 0
    late: int = 0
    sum_us: int = 0
    min_us: int | None = None
    max_us: int | None = None

    def add(self, us: np.ndarray, limit_us: float | None = None) -> None:
        if not us.size:
            return
        found = np.bincount(bucket_of(us))
        if found.size > self.counts.size:
            self.counts = np.pad(self.counts, (0, found.size - self.counts.size))
        self.counts[:found.size] += found
        self.total += int(us.size)
        self.sum_us += int(us.sum())
        low, high = int(us.min()), int(us.max())
        self.min_us = low if self.min_us is None else min(self.min_us, low)
        self.max_us = high if self.max_us is None else max(self.max_us, high)
        if limit_us is not None:
            self.late += int(np.count_nonzero(us > limit_us))

    def percentile_us(self, q: float) -> float | None:
        """The nearest-rank percentile (the smallest latency that at least ``q`` of the
        transactions do not exceed), read at the middle of its bucket and kept within the
        smallest and largest latency seen."""
        if not self.total:
            return None
        rank = max(1, math.ceil(q * self.total - 1e-9))
        index = int(np.searchsorted(np.cumsum(self.counts), rank))
        low, high = bucket_bounds(index)
        assert self.min_us is not None and self.max_us is not None
        return min(max((low + high) / 2, self.min_us), self.max_us)

    def summary(self) -> dict[str, object]:
        """What a trial keeps: the percentiles and the largest latency in milliseconds, the
        counts, and the precision the percentiles are within."""
        out: dict[str, object] = {f"{name}_ms": _ms(self.percentile_us(q)) for name, q in QUANTILES}
        out.update(max_ms=_ms(self.max_us), avg_ms=_ms(self.sum_us / self.total if self.total else None),
                   count=self.total, skipped=self.skipped, failed=self.failed,
                   precision=PRECISION)
        return out


def _ms(us: float | None) -> float | None:
    return None if us is None else us / 1000


def histogram_of_files(directory: Path, prefix: str, *,
                       latency_limit_ms: float | None = None) -> Histogram:
    """The latencies of every transaction in the files pgbench wrote with ``--log-prefix
    DIRECTORY/PREFIX``, in a histogram; ``late`` counts those above ``latency_limit_ms``."""
    hist = Histogram()
    limit_us = None if latency_limit_ms is None else latency_limit_ms * 1000
    with safefs.Dir.open(directory) as held:  # the client's: no link it planted is followed
        for name in held.names():
            if name.startswith(prefix + "."):
                _count_file(hist, held.open_file(name), limit_us)
    return hist


def _count_file(hist: Histogram, fd: int, limit_us: float | None) -> None:
    with open(fd, "rb") as f:
        rest = b""
        while block := f.read(CHUNK):
            block = rest + block
            cut = block.rfind(b"\n") + 1
            rest = block[cut:]
            _count(hist, block[:cut], limit_us)
        _count(hist, rest if rest.endswith(b"\n") else b"", limit_us)  # cut short: dropped


def _count(hist: Histogram, lines: bytes, limit_us: float | None) -> None:
    """Count whole lines: split into fields at once where every line has as many (the usual
    case), else line by line."""
    if not lines:
        return
    fields = lines.split()
    n = lines.count(b"\n")
    width = len(lines[:lines.find(b"\n")].split())
    if width >= 6 and len(fields) == width * n:
        times = np.array(fields[2::width])
    else:
        rows = (line.split() for line in lines.splitlines())
        times = np.array([f[2] for f in rows if len(f) >= 6 and f[0].isdigit()], dtype=bytes)
    skipped = times == b"skipped"
    failed = times == b"failed"
    hist.skipped += int(np.count_nonzero(skipped))
    hist.failed += int(np.count_nonzero(failed))
    hist.add(times[~(skipped | failed)].astype(np.int64), limit_us)
