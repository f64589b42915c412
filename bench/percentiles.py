"""The cost of latency percentiles (issue 21, item 4), in two figures:

1. TPS of pgbench with its transaction log (-l, as ``percentiles: true`` runs it) divided by
   TPS without, interleaved in pairs on fresh trials of one server (select-only, the highest
   rate of transactions and so the most log lines per second), and the seconds teiten then
   takes to read the log into its histogram, after the window.
2. Aggregating a log of 1 and of 10 million transactions: seconds, and the peak memory of
   the process that reads it (a fresh Python for each, beside one that only imports numpy and
   teiten), so that the memory is seen not to grow with the log.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from bench.common import install, interleaved_pairs, local_server, summary, workload
from teiten.drivers import pgbench, pgbench_log
from teiten.host import client_account, paths
from teiten.servers.base import Endpoint

READER = """
import re, sys, time
from pathlib import Path
from teiten.drivers import pgbench_log
started = time.monotonic()
if sys.argv[1] != "-":
    hist = pgbench_log.histogram_of_files(Path(sys.argv[1]), "tx", latency_limit_ms=5)
    assert hist.total + hist.skipped == int(sys.argv[2]), hist.total
# VmHWM: this process's own peak (ru_maxrss would keep the peak of the parent it forked from)
status = Path("/proc/self/status").read_text()
print(time.monotonic() - started, re.search(r"VmHWM:\\s+(\\d+) kB", status).group(1))
"""


def tps_ratio(pairs: int, duration: float, clients: int) -> None:
    inst = install("17")
    w = workload("select-only", 10)
    reads: list[float] = []

    def run(endpoint: Endpoint, log: bool) -> float:
        extra: list[str] = []
        if log:
            log_dir = Path(tempfile.mkdtemp(prefix="teiten-bench-log-", dir=paths.clusters_dir()))
            client_account.hand_over(log_dir)  # pgbench writes it as the client account
            extra = ["-l", "--log-prefix", str(log_dir / "tx")]
        done = pgbench.run(inst, endpoint, w, clients=clients, threads=max(1, clients // 2),
                           duration_s=duration, extra=extra)
        if log:
            started = time.monotonic()
            hist = pgbench_log.histogram_of_files(log_dir, "tx")
            reads.append(time.monotonic() - started)
            assert hist.total == done.output.transactions, (hist.total, done.output.transactions)
            subprocess.run(["rm", "-rf", str(log_dir)], check=True)
        return float(done.output.tps or 0)

    with local_server(inst, w) as server:
        server.prepare(w)
        ratios = interleaved_pairs(server, w, {"log": lambda e: run(e, True),
                                               "no-log": lambda e: run(e, False)}, pairs)
    print(summary("TPS with pgbench's transaction log / without (select-only)", ratios))
    print(summary(f"seconds to read one {duration:g} s trial's log into the histogram", reads))


def _write_log(directory: Path, transactions: int) -> None:
    """A two-thread log of ``transactions`` lines with a schedule lag column, about one in a
    thousand skipped, latencies log-normal around 1 ms."""
    rng = np.random.default_rng(7)
    per_file = transactions // 2
    for thread, name in enumerate(("tx.100", "tx.100.1")):
        with (directory / name).open("w") as f:
            for start in range(0, per_file, 1_000_000):
                n = min(1_000_000, per_file - start)
                lat = rng.lognormal(7, 0.8, n).astype(np.int64)
                times = lat.astype(str).astype(object)
                times[rng.random(n) < 0.001] = "skipped"
                f.write("".join(f"{thread} {start + i} {t} 0 1732550000 {i % 1_000_000} 12\n"
                                for i, t in enumerate(times)))


def _reader(directory: str, transactions: int) -> tuple[float, float]:
    """Seconds and peak resident memory (MB) of a fresh process that reads the log."""
    done = subprocess.run([sys.executable, "-c", READER, directory, str(transactions)],
                          capture_output=True, text=True, check=True)
    seconds, peak_kb = done.stdout.split()
    return float(seconds), int(peak_kb) / 1024


def aggregation(sizes: list[int]) -> None:
    _, base_mb = _reader("-", 0)
    print(f"  a process that only imports teiten's log reader: {base_mb:.0f} MB peak")
    for n in sizes:
        with tempfile.TemporaryDirectory(prefix="teiten-bench-log-", dir=paths.clusters_dir()) as d:
            _write_log(Path(d), n)
            size = sum(p.stat().st_size for p in Path(d).iterdir())
            seconds, peak_mb = _reader(d, n)
        print(f"  {n:,} transactions ({size / 1e6:.0f} MB of log): read in {seconds:.1f} s "
              f"({n / seconds / 1e6:.2f} M lines/s), peak memory {peak_mb:.0f} MB "
              f"(+{peak_mb - base_mb:.0f} MB)", flush=True)


def main(pairs: int = 5, duration: float = 10, clients: int = 2,
         sizes: tuple[int, ...] = (1_000_000, 10_000_000)) -> None:
    tps_ratio(pairs, duration, clients)
    aggregation(list(sizes))


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--pairs", type=int, default=5)
    ap.add_argument("--duration", type=float, default=10)
    ap.add_argument("--sizes", type=int, nargs="*", default=[1_000_000, 10_000_000])
    a = ap.parse_args()
    main(a.pairs, a.duration, sizes=tuple(a.sizes))
