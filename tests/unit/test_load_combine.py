"""Several pgbench runs that ran together, summed into one (teiten.drivers.load.combine),
on the outputs of real runs (the goldens of test_pgbench_output)."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from teiten.drivers.load import _started, combine
from teiten.drivers.pgbench_output import PgbenchOutput, parse

GOLDEN = Path(__file__).parent.parent / "golden" / "pgbench"


def golden(major: str, case: str) -> PgbenchOutput:
    base = GOLDEN / major / case
    return parse(base.with_suffix(".stdout").read_text(), base.with_suffix(".stderr").read_text())


def test_one_run_is_itself() -> None:
    out = golden("17", "read")
    assert combine([out]) is out


def test_transactions_and_tps_add_up_and_latency_is_weighted() -> None:
    a, b = golden("17", "read"), golden("18", "select_only")
    both = combine([a, b])
    assert both.transactions == a.transactions + b.transactions
    assert both.tps == pytest.approx((a.tps or 0) + (b.tps or 0))
    assert both.clients == (a.clients or 0) + (b.clients or 0)
    low, high = sorted([a.latency_ms_avg or 0, b.latency_ms_avg or 0])
    assert low <= (both.latency_ms_avg or 0) <= high
    expected = ((a.latency_ms_avg or 0) * a.transactions
                + (b.latency_ms_avg or 0) * b.transactions) / both.transactions
    assert both.latency_ms_avg == pytest.approx(expected)


def test_pooled_stddev_covers_the_spread_between_runs() -> None:
    a = golden("17", "read")
    both = combine([a, a])
    assert both.latency_ms_stddev == pytest.approx(a.latency_ms_stddev)
    # Two runs with different means: the pooled deviation is at least the larger one's share.
    b = golden("18", "select_only")
    mixed = combine([a, b])
    assert mixed.latency_ms_stddev is not None
    assert mixed.latency_ms_stddev >= min(a.latency_ms_stddev or 0, b.latency_ms_stddev or 0)
    assert math.isfinite(mixed.latency_ms_stddev)


def test_progress_adds_up_second_by_second() -> None:
    a = golden("17", "read")
    both = combine([a, a])
    assert len(both.progress) == len(a.progress)
    for one, two in zip(a.progress, both.progress, strict=True):
        assert two.tps == pytest.approx(2 * one.tps)


def test_an_aborted_run_makes_the_whole_aborted() -> None:
    ok, bad = golden("17", "read"), golden("17", "server_killed")
    both = combine([ok, bad])
    assert both.aborted
    assert both.errors == ok.errors + bad.errors


def test_the_remote_start_line_is_read_and_removed() -> None:
    stderr, at = _started("teiten-started 1790000000.250000000\nprogress: 1.0 s, 5.0 tps\n", 1.0)
    assert at == pytest.approx(1790000000.25)
    assert stderr == "progress: 1.0 s, 5.0 tps\n"
    assert _started("no such line\n", 7.0) == ("no such line\n", 7.0)
