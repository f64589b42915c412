"""Parse what sysbench prints for a run of one of its OLTP tests (``--report-interval=1
--histogram``), in the model's own terms: the figures a trial keeps, the latency percentiles
of its histogram, and the rest as details.

Pure functions, no I/O. :func:`parse` never raises, even on the partial output of a run that
failed or was killed: missing figures are ``None`` (or 0 transactions), ``summary`` says
whether the final statistics were printed, and ``errors`` holds sysbench's FATAL messages.

What sysbench 1.0.20 (Debian 12's) prints, checked against real runs (goldens in
tests/golden/sysbench/), all of it on stdout:

* a banner ``sysbench 1.0.20 (using system LuaJIT 2.1.0-beta3)``;
* one line a second, ``[ 1s ] thds: 2 tps: 1422.90 qps: 22770.33 (r/w/o:
  19923.54/0.00/2846.79) lat (ms,95%): 6.09 err/s: 0.00 reconn/s: 0.00``: the latency there
  is the interval's 95th percentile (``--percentile``), not its mean;
* with ``--histogram``, ``Latency histogram (values are in milliseconds)``: one row per
  bucket that holds a transaction, ``value |****  count``. The buckets are sysbench's own:
  1024 on a logarithmic scale from 0.001 ms to 100 s, each latency counted in the nearest
  one, so a bucket's value is within :data:`PRECISION` of the latencies it holds;
* ``SQL statistics``: queries read, write, other, total; ``transactions: N (T per sec.)``,
  ``queries``, ``ignored errors`` (errors the test retries, such as deadlocks) and
  ``reconnects``; ``General statistics``: ``total time: 3.0025s`` and ``total number of
  events``; ``Latency (ms)``: min, avg, max, ``95th percentile`` and sum, rounded to 0.01 ms;
  ``Threads fairness``;
* failures as ``FATAL: ...`` lines (a connection refused, a relation missing, a query
  failing), continued on lines that start with a tab, ``LINE n:`` or the caret under it.
  A run whose threads cannot start exits with status 1 and no statistics; a missing table
  can make sysbench crash (SIGSEGV) after its FATAL lines.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from teiten.model.results import LoadFigures, ProgressPoint

# sysbench's latency histogram: 1024 buckets, logarithmic from 0.001 ms to 100,000 ms, each
# latency counted in the nearest bucket: a bucket's value is within half a step of its own.
BUCKETS, LOW_MS, HIGH_MS = 1024, 0.001, 100_000.0
PRECISION = math.expm1(math.log(HIGH_MS / LOW_MS) / (BUCKETS - 1) / 2)
QUANTILES = (("p50", 0.5), ("p90", 0.9), ("p95", 0.95), ("p99", 0.99), ("p999", 0.999))

_NUM = r"([-+]?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?|nan|-?inf)"
_BANNER = re.compile(r"^sysbench (\d[^\s(]*)")
_SECOND = re.compile(
    rf"^\[\s*{_NUM}s\s*\]\s+thds:\s*(\d+)\s+tps:\s*{_NUM}\s+qps:\s*{_NUM}\s+"
    rf"\(r/w/o:\s*{_NUM}/{_NUM}/{_NUM}\)\s+lat \(ms,(\d+)%\):\s*{_NUM}\s+"
    rf"err/s:\s*{_NUM}\s+reconn/s:\s*{_NUM}")
_BUCKET = re.compile(r"^\s*(\d+(?:\.\d+)?)\s+\|\**\s*(\d+)\s*$")
_COUNTED = re.compile(rf"^(transactions|queries|ignored errors|reconnects):\s+(\d+)\s+\({_NUM} per sec\.\)")
_QUERIES = re.compile(r"^(read|write|other|total):\s+(\d+)$")
_TOTAL_TIME = re.compile(rf"^total time:\s+{_NUM}s$")
_EVENTS = re.compile(r"^total number of events:\s+(\d+)$")
_LATENCY = re.compile(rf"^(min|avg|max|sum|(\d+)th percentile):\s+{_NUM}$")
_THREADS = re.compile(r"^Number of threads: (\d+)$")
_FAIRNESS = re.compile(rf"^(events|execution time) \(avg/stddev\):\s+{_NUM}/{_NUM}$")
# A line that continues the FATAL message before it (libpq's and the server's detail).
_CONTINUATION = re.compile(r"^(?:\t|\s+\^|LINE \d+:|DETAIL:|HINT:)")


@dataclass(frozen=True)
class Second:
    """One ``[ Ns ]`` line of ``--report-interval=1``."""

    t: float
    threads: int
    tps: float
    qps: float
    read_qps: float
    write_qps: float
    other_qps: float
    percentile: int  # the latency's percentile (--percentile; 0 when disabled)
    latency_ms: float  # that percentile of the interval's latencies
    errors_per_s: float
    reconnects_per_s: float


@dataclass(frozen=True)
class SysbenchOutput:
    """Everything a sysbench run printed that teiten keeps."""

    version: str | None
    threads: int | None
    transactions: int
    tps: float | None  # sysbench's own "per sec." of its transactions
    queries: dict[str, int]  # read, write, other, total
    qps: float | None
    ignored_errors: int | None
    reconnects: int | None
    total_time_s: float | None
    events: int | None
    latency_ms: dict[str, float]  # min, avg, max, sum; "p95" for the percentile printed
    fairness: dict[str, list[float]]  # events and execution time per thread: [avg, stddev]
    seconds: tuple[Second, ...]
    histogram: tuple[tuple[float, int], ...]  # (bucket value in ms, transactions)
    errors: tuple[str, ...]  # FATAL messages, continuation lines joined with newlines
    summary: bool  # whether the final statistics were printed

    def mean_latency_ms(self) -> float | None:
        """The mean latency: the summed latencies over the events (the printed avg is
        rounded to 0.01 ms), else the printed avg."""
        total, events = self.latency_ms.get("sum"), self.events
        if total is not None and events:
            return total / events
        return self.latency_ms.get("avg")

    def figures(self) -> LoadFigures:
        """What the store keeps of this run. The per-second points have no mean latency
        (sysbench prints a percentile there, kept in the details) and no failed count."""
        return LoadFigures(
            tps=self.tps, transactions=self.transactions, failed_transactions=None,
            duration_s=self.total_time_s, latency_ms_avg=self.mean_latency_ms(),
            latency_ms_stddev=None, initial_connection_ms=None, pgbench_version=None,
            progress=tuple(ProgressPoint(t=s.t, tps=s.tps, latency_ms=None, latency_stddev_ms=None,
                                         failed=None) for s in self.seconds))

    def percentiles(self) -> dict[str, float | None] | None:
        """The latency percentiles of the histogram, in the figures pgbench's transaction log
        gives (teiten.drivers.pgbench_log: p50 ... p99.9, max, avg in ms, the count and the
        precision); None without a histogram. A percentile is the value of the bucket that
        holds it, as sysbench reads its own (the rank n·q rounded to the nearest); the
        largest and the mean latency are the summary's."""
        total = sum(n for _, n in self.histogram)
        if not total:
            return None
        out: dict[str, float | None] = {f"{name}_ms": percentile(self.histogram, q) for name, q in QUANTILES}
        out.update(max_ms=self.latency_ms.get("max", self.histogram[-1][0]),
                   avg_ms=self.mean_latency_ms(), count=total, skipped=0, failed=0,
                   precision=PRECISION)
        return out

    def details(self) -> dict[str, object]:
        """What the trial keeps beside its figures: the queries, the errors sysbench retried,
        its latency summary, its threads' fairness, and each second's rate of queries and
        latency percentile."""
        per = self.seconds[0].percentile if self.seconds else None
        return {"queries": self.queries, "qps": self.qps, "ignored_errors": self.ignored_errors,
                "reconnects": self.reconnects, "events": self.events,
                "latency_ms": self.latency_ms, "fairness": self.fairness,
                "per_second": {"t": [s.t for s in self.seconds], "qps": [s.qps for s in self.seconds],
                               f"p{per}_ms": [s.latency_ms for s in self.seconds],
                               "errors_per_s": [s.errors_per_s for s in self.seconds]}
                if self.seconds else None}


def percentile(histogram: tuple[tuple[float, int], ...], q: float) -> float | None:
    """The value of the bucket where the rank ``n·q`` (rounded to the nearest, at least 1)
    falls, as sysbench computes its own percentile."""
    total = sum(n for _, n in histogram)
    if not total:
        return None
    rank = max(1, math.floor(total * q + 0.5))
    seen = 0
    for value, n in histogram:
        seen += n
        if seen >= rank:
            return value
    return histogram[-1][0]


def _num(text: str) -> float | None:
    try:
        value = float(text)
    except ValueError:
        return None
    return None if math.isnan(value) or math.isinf(value) else value


def _second(groups: tuple[str, ...]) -> Second | None:
    """A per-second line's figures; None when one is not a number (nan)."""
    t, threads, tps, qps, read, write, other, pct, lat, err, reconn = groups
    figures = [_num(v) for v in (t, tps, qps, read, write, other, lat, err, reconn)]
    if any(v is None for v in figures):
        return None
    t_, tps_, qps_, read_, write_, other_, lat_, err_, reconn_ = (float(v or 0) for v in figures)
    return Second(t_, int(threads), tps_, qps_, read_, write_, other_, int(pct), lat_, err_, reconn_)


def _errors(lines: list[str]) -> list[str]:
    """The FATAL messages, each with the lines that continue it."""
    found: list[str] = []
    open_ = False
    for line in lines:
        if line.startswith("FATAL: "):
            found.append(line.rstrip())
            open_ = True
        elif open_ and line.strip() and _CONTINUATION.match(line):
            found[-1] += "\n" + line.rstrip()
        else:
            open_ = False
    return found


def parse(stdout: str, stderr: str = "") -> SysbenchOutput:
    """Parse a sysbench run's stdout (and stderr, which holds little or nothing)."""
    top = _Statistics()
    counted: dict[str, tuple[int, float | None]] = {}  # transactions, ...: (count, per second)
    queries: dict[str, int] = {}
    latency: dict[str, float] = {}
    fairness: dict[str, list[float]] = {}
    seconds: list[Second] = []
    histogram: list[tuple[float, int]] = []
    in_histogram = False
    for raw in stdout.splitlines():
        line = raw.strip()
        if raw.startswith("Latency histogram"):
            in_histogram = True
            continue
        if in_histogram:
            if (m := _BUCKET.match(raw)) is not None:
                histogram.append((float(m.group(1)), int(m.group(2))))
                continue
            if "distribution" in raw:
                continue
            in_histogram = False
        if (m := _BANNER.match(line)) and top.version is None:
            top.version = m.group(1)
        elif m := _THREADS.match(line):
            top.threads = int(m.group(1))
        elif (m := _SECOND.match(line)) and (second := _second(m.groups())) is not None:
            seconds.append(second)
        elif m := _COUNTED.match(line):
            counted[m.group(1)] = (int(m.group(2)), _num(m.group(3)))
        elif m := _QUERIES.match(line):
            queries[m.group(1)] = int(m.group(2))
        elif m := _TOTAL_TIME.match(line):
            top.total_time, top.timed = _num(m.group(1)), True
        elif m := _EVENTS.match(line):
            top.events = int(m.group(1))
        elif (m := _LATENCY.match(line)) and (value := _num(m.group(3))) is not None:
            latency[f"p{m.group(2)}" if m.group(2) else m.group(1)] = value
        elif (m := _FAIRNESS.match(line)) and None not in (_num(m.group(2)), _num(m.group(3))):
            fairness[m.group(1).replace(" ", "_")] = [float(m.group(2)), float(m.group(3))]
    errors = _errors(stdout.splitlines()) + _errors(stderr.splitlines())
    nothing: tuple[int | None, float | None] = (None, None)
    transactions, tps = counted.get("transactions", nothing)
    ignored_errors, _ = counted.get("ignored errors", nothing)
    reconnects, _ = counted.get("reconnects", nothing)
    _, qps = counted.get("queries", nothing)
    return SysbenchOutput(
        version=top.version, threads=top.threads, transactions=transactions or 0, tps=tps,
        queries=queries, qps=qps, ignored_errors=ignored_errors,
        reconnects=reconnects, total_time_s=top.total_time,
        events=top.events, latency_ms=latency, fairness=fairness, seconds=tuple(seconds),
        histogram=tuple(histogram), errors=tuple(errors),
        summary=transactions is not None and top.timed)


@dataclass
class _Statistics:
    """What sysbench prints once: its version, its threads, the final statistics' total time
    (``timed``: the line was printed, even when its value is not a number) and events."""

    version: str | None = None
    threads: int | None = None
    total_time: float | None = None
    timed: bool = False
    events: int | None = None
