"""The percentiles of a pgbench workload against a recount of pgbench's own transaction log
(issue 21, item 4): real PostgreSQL 17, real pgbench with -M prepared, a rate and a latency
limit. The histogram counts every transaction pgbench says it processed and every one it
skipped, exactly; its percentiles are within its stated precision of the exact ones."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
from tests.conftest import scratch_database

from teiten.drivers import pgbench_log
from teiten.drivers.pgbench_log import PRECISION, QUANTILES
from teiten.drivers.pgbench_output import parse
from teiten.host import procs


def _recount(directory: Path) -> tuple[np.ndarray, int]:
    """Every latency (us) and the skipped count, line by line from pgbench's files."""
    latencies, skipped = [], 0
    for path in sorted(directory.glob("tx.*")):
        for line in path.read_text().splitlines():
            time = line.split()[2]
            if time == "skipped":
                skipped += 1
            else:
                latencies.append(int(time))
    return np.array(latencies, dtype=np.int64), skipped


def test_histogram_matches_a_recount_of_pgbench_log(pg17, tmp_path: Path) -> None:  # noqa: ANN001
    pgbench = str(pg17.binary("pgbench"))
    with scratch_database(pg17) as db:
        procs.run([pgbench, "-i", "-s", "1", "-q", db.conninfo], timeout=120, what="pgbench -i")
        # two threads (two log files); a rate far above what 4 clients of tpcb-like reach on
        # these machines, and a 1 ms limit: some transactions are skipped, and some of those run are late
        done = procs.run([pgbench, "-n", "-M", "prepared", "-R", "20000", "-L", "1", "-c", "4",
                          "-j", "2", "-T", "3", "-b", "tpcb-like", "-l", "--log-prefix",
                          str(tmp_path / "tx"), db.conninfo], timeout=120, what="pgbench")
    out = parse(done.stdout, done.stderr)
    assert len(list(tmp_path.glob("tx.*"))) == 2
    latencies, skipped = _recount(tmp_path)
    hist = pgbench_log.histogram_of_files(tmp_path, "tx", latency_limit_ms=1)
    assert out.skipped and out.late, done.stdout
    assert out.transactions and hist.total == latencies.size == out.transactions
    assert hist.skipped == skipped == out.skipped
    # pgbench counts late on the unrounded latency; its log rounds to whole microseconds
    assert int(np.count_nonzero(latencies > 1000)) <= (out.late or 0) \
        <= int(np.count_nonzero(latencies >= 1000))
    assert hist.late == int(np.count_nonzero(latencies > 1000))
    assert hist.max_us == latencies.max()
    assert math.isclose(hist.sum_us / hist.total / 1000, out.latency_ms_avg or 0, rel_tol=0.01)
    ordered = np.sort(latencies)
    for _, q in QUANTILES:
        exact = ordered[max(1, math.ceil(q * ordered.size)) - 1]
        got = hist.percentile_us(q)
        assert got is not None and abs(got - exact) <= exact * PRECISION, (q, exact, got)
