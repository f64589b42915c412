"""The statistics against known distributions and against SciPy's independent values."""

from __future__ import annotations

import random

import pytest
from scipy import stats as sps

from teiten.analysis import stats


@pytest.mark.parametrize(("a", "b"), [
    ([1.0, 2.0, 3.0], [4.0, 5.0, 6.0]),
    ([10.1, 10.5, 9.8, 10.2], [11.0, 10.9, 11.5, 12.0]),
    ([5.0, 7.0, 6.5, 8.0, 9.1], [6.1, 7.2, 5.5, 8.8, 9.9]),
    ([1.0, 2.0], [3.0, 4.0, 5.0, 6.0, 7.0, 8.0]),
])
def test_mann_whitney_exact_matches_scipy(a: list[float], b: list[float]) -> None:
    u, p = stats.mann_whitney_u(a, b)
    ref = sps.mannwhitneyu(a, b, alternative="two-sided", method="exact")
    assert u == ref.statistic
    assert p == pytest.approx(ref.pvalue, rel=1e-9)


def test_mann_whitney_with_ties_matches_scipy_asymptotic() -> None:
    a, b = [1.0, 2.0, 2.0, 3.0, 5.0], [2.0, 3.0, 4.0, 4.0, 6.0, 7.0]
    u, p = stats.mann_whitney_u(a, b)
    ref = sps.mannwhitneyu(a, b, alternative="two-sided", method="asymptotic",
                           use_continuity=True)
    assert u == ref.statistic
    assert p == pytest.approx(ref.pvalue, rel=1e-9)


def test_three_repetitions_are_too_few_to_tell() -> None:
    # Even complete separation of 3 vs 3 gives p = 0.1: the test must not run.
    assert stats.min_p_value(3, 3) == pytest.approx(0.1)
    assert stats.repetitions_needed(0.05) == 4
    d = stats.compare([110.0, 111.0, 112.0], [100.0, 101.0, 102.0])
    assert d.significant is None and d.p_value is None
    assert d.verdict == "too few repetitions to tell" and d.needed == 4
    d = stats.compare([110.0, 111.0, 112.0, 113.0], [100.0, 101.0, 102.0, 103.0])
    assert d.significant is True and d.p_value == pytest.approx(2 / 70)
    d = stats.compare([100.0, 103.0, 101.0, 102.0], [102.5, 100.5, 101.5, 99.0])
    assert d.significant is False


def test_median_interval_covers_the_true_median() -> None:
    # Was the percentile bootstrap; now the order-statistic interval, whose coverage
    # tests/unit/test_interval_coverage.py simulates in full.
    rng = random.Random(1)
    covered = 0
    trials = 120
    for _ in range(trials):
        sample = [rng.gauss(100, 10) for _ in range(25)]
        ci = stats.median_interval(sample)
        assert ci is not None and ci.confidence >= 0.95
        if ci.contains(100.0):
            covered += 1
    assert 0.85 <= covered / trials <= 1.0


def test_ratio_interval_brackets_the_ratio_and_is_deterministic() -> None:
    a, b = [103.0, 105.0, 104.0, 106.0, 104.5], [100.0, 101.0, 99.5, 100.5, 100.2]
    r = stats.ratio_interval(a, b)
    assert r is not None
    assert r.low <= r.value <= r.high
    assert r.value == pytest.approx(104.5 / 100.2)
    assert r.low > 1.0  # clearly faster
    assert stats.ratio_interval(a, b) == r


def test_cv_and_detectable_difference() -> None:
    assert stats.cv([10.0]) is None
    assert stats.cv([9.0, 10.0, 11.0]) == pytest.approx(0.1)
    # 10% noise and 3 repetitions: only a difference of ~23% or more could be detected.
    mde = stats.detectable_difference(0.1, 0.1, 3, 3)
    assert mde == pytest.approx((1.959964 + 0.841621) * (2 * 0.01 / 3) ** 0.5, rel=1e-4)


def test_steady_state_skips_the_ramp_up_and_measures_drift_and_stalls() -> None:
    series = [100.0, 500.0, 950.0] + [1000.0] * 20 + [300.0] + [1000.0] * 6
    s = stats.stability(series)
    assert s.steady_from == 2  # 100 and 500 are ramp-up; 950 is within 10%
    assert s.stalls == 1
    flat = stats.stability([1000.0] * 30)
    assert flat.drift_pct_per_min == pytest.approx(0.0)
    rising = stats.stability([1000.0 + 10 * i for i in range(60)])
    assert rising.drift_pct_per_min > 30
    assert stats.steady_state_start([0.0] * 10 + [1000.0] * 5) <= 4  # never trims > 30%


def test_saturation_finds_the_peak_and_the_knee() -> None:
    # Linear to 2 clients (2 cores), flat after, as in METHODS S1's findings.
    sat = stats.saturation([(1, 1000.0), (2, 1950.0), (4, 2100.0), (8, 2050.0)])
    assert sat is not None
    assert (sat.peak_clients, sat.knee_clients) == (4, 2)
    assert stats.saturation([]) is None
