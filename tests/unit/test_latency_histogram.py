"""The streaming latency histogram behind a pgbench workload's percentiles (issue 21, item 4):
every percentile it reports is within its stated precision of the exact nearest-rank
percentile of the same latencies, whatever their distribution; skipped and failed
transactions are counted apart and left out of the latencies, as pgbench does; and a log
is read in chunks, a line cut short by a killed pgbench dropped."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from teiten.drivers import pgbench_log
from teiten.drivers.pgbench_log import PRECISION, QUANTILES, Histogram, bucket_bounds, bucket_of


def _exact(values: np.ndarray, q: float) -> int:
    ordered = np.sort(values)
    return int(ordered[max(1, math.ceil(q * len(ordered) - 1e-9)) - 1])


def test_every_bucket_holds_exactly_its_bounds_and_is_narrow_enough() -> None:
    previous_high = -1
    for index in range(6000):
        low, high = bucket_bounds(index)
        assert low == previous_high + 1  # buckets tile the integers, in order
        assert list(bucket_of(np.array([low, high]))) == [index, index]
        assert (high - low) / 2 <= low * PRECISION or low == high
        previous_high = high


@pytest.mark.parametrize("shape", ["lognormal", "bimodal", "uniform-small", "constant", "heavy-tail"])
def test_percentiles_are_within_the_stated_precision_of_the_exact_ones(shape: str) -> None:
    rng = np.random.default_rng(sum(map(ord, shape)))
    values = {
        "lognormal": lambda: rng.lognormal(7, 1.2, 50_000),
        "bimodal": lambda: np.concatenate([rng.normal(300, 20, 40_000), rng.normal(90_000, 5_000, 900)]),
        "uniform-small": lambda: rng.uniform(0, 400, 30_000),
        "constant": lambda: np.full(1_000, 1234.0),
        "heavy-tail": lambda: (rng.pareto(1.1, 80_000) + 1) * 200,
    }[shape]()
    us = np.maximum(values, 0).astype(np.int64)
    hist = Histogram()
    for part in np.array_split(us, 7):  # added in pieces, as chunks of a log are
        hist.add(part)
    assert hist.total == us.size and hist.max_us == us.max() and hist.min_us == us.min()
    for _, q in QUANTILES:
        exact = _exact(us, q)
        got = hist.percentile_us(q)
        assert got is not None and abs(got - exact) <= exact * PRECISION, (q, exact, got)


def _write(path: Path, lines: list[str], tail: str = "") -> None:
    path.write_text("".join(line + "\n" for line in lines) + tail)


def test_a_log_of_several_threads_is_counted_with_skipped_and_failed_apart(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pgbench_log, "CHUNK", 64)  # many chunks, lines cut across them
    rng = np.random.default_rng(5)
    first = rng.integers(100, 20_000, 500)
    second = rng.integers(100, 20_000, 300)
    lines = [f"0 {i} {v} 0 1732550000 {i}" for i, v in enumerate(first)]
    lines[10] = "0 10 skipped 0 1732550000 10"  # --rate with --latency-limit
    lines[20] = "0 20 failed 0 1732550000 20"   # a serialization failure (pgbench 15+)
    kept = np.delete(first, [10, 20])
    _write(tmp_path / "tx.4242", lines)
    # the second thread's file has the schedule lag column (--rate), and its last line was
    # cut short when pgbench was killed
    _write(tmp_path / "tx.4242.1", [f"1 {i} {v} 0 1732550000 {i} 17" for i, v in enumerate(second)],
           tail="1 300 55")
    hist = pgbench_log.histogram_of_files(tmp_path, "tx", latency_limit_ms=5)
    everything = np.concatenate([kept, second])
    assert (hist.total, hist.skipped, hist.failed) == (everything.size, 1, 1)
    assert hist.late == int(np.count_nonzero(everything > 5000))
    assert hist.sum_us == int(everything.sum())
    summary = hist.summary()
    assert summary["count"] == everything.size and summary["max_ms"] == everything.max() / 1000
    for name, q in QUANTILES:
        exact = _exact(everything, q) / 1000
        assert abs(summary[f"{name}_ms"] - exact) <= exact * PRECISION


def test_lines_of_different_widths_in_one_chunk_are_read_line_by_line(tmp_path: Path) -> None:
    _write(tmp_path / "tx.1", ["0 0 150 0 1732550000 1", "0 1 250 0 1732550000 2 9",
                               "0 2 skipped 0 1732550000 3 4000"])
    hist = pgbench_log.histogram_of_files(tmp_path, "tx")
    assert (hist.total, hist.skipped, hist.max_us, hist.percentile_us(0.5)) == (2, 1, 250, 150)


def test_an_empty_log_has_no_percentiles(tmp_path: Path) -> None:
    (tmp_path / "tx.1").write_text("")
    summary = pgbench_log.histogram_of_files(tmp_path, "tx").summary()
    assert summary["count"] == 0 and summary["p99_ms"] is None and summary["max_ms"] is None
