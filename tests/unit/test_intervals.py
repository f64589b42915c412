"""The distribution-free intervals (teiten.analysis.intervals), the signed-rank test and Holm's
correction, against hand-worked values, brute-force enumeration and SciPy's independent values."""

from __future__ import annotations

import itertools
import math
import random

import numpy as np
import pytest
from scipy import stats as sps

from teiten.analysis import intervals, stats


@pytest.mark.parametrize(("n", "level"), [(2, 0.5), (3, 0.75), (4, 0.875), (5, 0.9375), (6, 0.96875)])
def test_a_median_below_six_repetitions_is_min_max_at_the_level_it_reaches(n: int, level: float) -> None:
    values = [100.0 + 3 * i * (-1) ** i for i in range(n)]
    ci = stats.median_interval(values)
    assert ci is not None
    assert (ci.low, ci.high) == (min(values), max(values))
    assert ci.confidence == pytest.approx(level) and ci.requested == 0.95
    assert ci.method == "order-statistic" and ci.value == pytest.approx(float(np.median(values)))
    assert ci.short == (level < 0.95)


def test_one_repetition_gives_no_interval_and_none_is_an_error() -> None:
    assert stats.median_interval([22174.5]) is None  # not a zero-width interval
    with pytest.raises(ValueError):
        stats.median_interval([])


def test_the_median_takes_the_largest_k_that_reaches_the_level() -> None:
    # n = 9: 1 - 2 P(B <= 1) = 1 - 2 * 10/512 = 96.1% (k = 2); k = 3 gives 82.0%.
    values = [float(v) for v in (9, 1, 8, 2, 7, 3, 6, 4, 5)]
    ci = stats.median_interval(values)
    assert ci is not None and (ci.low, ci.high) == (2.0, 8.0)
    assert ci.confidence == pytest.approx(1 - 2 * 10 / 512)
    lower = stats.median_interval(values, confidence=0.8)
    assert lower is not None and (lower.low, lower.high) == (3.0, 7.0)
    assert lower.confidence == pytest.approx(1 - 2 * 46 / 512)


def _brute_signed_rank(n: int) -> list[int]:
    counts = [0] * (n * (n + 1) // 2 + 1)
    for signs in itertools.product((0, 1), repeat=n):
        counts[sum(r for r, s in zip(range(1, n + 1), signs, strict=True) if s)] += 1
    return counts


def _brute_u(n: int, m: int) -> list[int]:
    counts = [0] * (n * m + 1)
    for picked in itertools.combinations(range(n + m), n):
        counts[sum(p - i for i, p in enumerate(picked))] += 1  # b values below each a
    return counts


def test_exact_null_distributions_match_enumeration() -> None:
    for n in range(1, 11):
        assert list(intervals.signed_rank_counts(n)) == _brute_signed_rank(n)
    for n, m in itertools.product(range(1, 7), repeat=2):
        assert list(intervals.u_counts(n, m)) == _brute_u(n, m)
    assert list(intervals.binomial_counts(4)) == [1, 4, 6, 4, 1]


@pytest.mark.parametrize(("n", "m", "k"), [(5, 5, 3), (6, 6, 6), (8, 8, 14), (4, 6, 3), (10, 10, 24)])
def test_hodges_lehmann_k_matches_the_classic_tables(n: int, m: int, k: int) -> None:
    # Critical values of U for a two-sided 5% test (Hollander, Wolfe and Chicken, table A.6):
    # k = U_critical + 1.
    rank = intervals.mann_whitney_rank(n, m, 0.95)
    assert rank is not None and rank.k == k and rank.level >= 0.95


@pytest.mark.parametrize(("n", "k"), [(6, 1), (7, 3), (8, 4), (10, 9), (15, 26), (20, 53)])
def test_signed_rank_k_matches_the_classic_tables(n: int, k: int) -> None:
    rank = intervals.signed_rank_rank(n, 0.95)
    assert rank is not None and rank.k == k and rank.level >= 0.95


def test_unpaired_ratio_of_three_a_side_is_all_differences_at_90_percent() -> None:
    a, b = [110.0, 104.0, 107.0], [100.0, 103.0, 98.0]
    r = stats.ratio_interval(a, b)
    assert r is not None and r.method == "hodges-lehmann"
    # The Hodges-Lehmann estimate: the median of the nine ratios a_i / b_j (1.0097 ... 1.122), which
    # is 110 / 103, not the ratio of the medians 107 / 100.
    assert r.value == pytest.approx(110.0 / 103.0)
    assert r.confidence == pytest.approx(0.9) and r.short  # 1 - 2/20
    assert r.low == pytest.approx(min(x / y for x in a for y in b))
    assert r.high == pytest.approx(max(x / y for x in a for y in b))


def test_paired_ratio_uses_the_blocks_it_shares() -> None:
    a, b = [110.0, 104.0, 107.0], [100.0, 103.0, 98.0]
    r = stats.ratio_interval(a, b, blocks=[1, 2, 3], baseline_blocks=[1, 2, 3])
    assert r is not None and r.method == "signed-rank"
    assert r.confidence == pytest.approx(0.75)  # 3 blocks: 1 - 2/8
    ratios = [x / y for x, y in zip(a, b, strict=True)]
    assert (r.low, r.high) == (pytest.approx(min(ratios)), pytest.approx(max(ratios)))
    # One block in common is too few to pair: unpaired, then.
    alone = stats.ratio_interval(a, b, blocks=[1, 2, 3], baseline_blocks=[3, 4, 5])
    assert alone is not None and alone.method == "hodges-lehmann"
    assert stats.ratio_interval([5.0], [4.0]) is None  # one value a side: no interval


def test_blocked_pairs_match_blocks_and_merge_a_repeated_one() -> None:
    pairs = intervals.blocked_pairs([4.0, 9.0, 5.0, 7.0], ["r1", "r2", "r2", "r9"],
                                    [2.0, 3.0, 1.0], ["r2", "r1", "r3"])
    assert pairs == [(4.0, 3.0), (pytest.approx(math.sqrt(45.0)), 2.0)]
    assert intervals.blocked_pairs([1.0, 2.0], ["r1", "r2"], [1.0, 2.0], []) == []
    assert intervals.blocked_pairs([0.0, 2.0], ["r1", "r2"], [1.0, 2.0], ["r1", "r2"]) == []


def test_walsh_interval_matches_its_definition() -> None:
    rng = random.Random(7)
    d = [rng.gauss(0.02, 0.05) for _ in range(12)]
    rank = intervals.signed_rank_rank(12, 0.95)
    assert rank is not None
    walsh = sorted((d[i] + d[j]) / 2 for i in range(12) for j in range(i, 12))
    found = intervals.walsh_bounds(np.asarray([d]), 0.95)
    assert found is not None
    assert (found[0][0], found[1][0]) == (walsh[rank.k - 1], walsh[len(walsh) - rank.k])


@pytest.mark.parametrize("n", [6, 8, 10, 13])
def test_the_paired_interval_excludes_no_change_exactly_when_the_test_rejects(n: int) -> None:
    """The interval inverts the test: 1 lies outside it iff p <= 1 - its level."""
    rng = random.Random(n)
    for _ in range(200):
        shift = rng.choice((0.0, 0.02, 0.05))
        a = [math.exp(shift + rng.gauss(0, 0.04)) for _ in range(n)]
        b = [math.exp(rng.gauss(0, 0.04)) for _ in range(n)]
        r = stats.ratio_interval(a, b, blocks=range(n), baseline_blocks=range(n))
        assert r is not None
        _, p = stats.wilcoxon_signed_rank([math.log(x / y) for x, y in zip(a, b, strict=True)])
        assert (not r.contains(1.0)) == (p <= 1 - r.confidence + 1e-12)


@pytest.mark.parametrize(("n", "m"), [(4, 4), (5, 5), (5, 7), (8, 8)])
def test_the_unpaired_interval_excludes_no_change_exactly_when_the_test_rejects(n: int, m: int) -> None:
    rng = random.Random(n * 100 + m)
    for _ in range(200):
        shift = rng.choice((0.0, 0.03, 0.06))
        a = [math.exp(shift + rng.gauss(0, 0.04)) for _ in range(n)]
        b = [math.exp(rng.gauss(0, 0.04)) for _ in range(m)]
        r = stats.ratio_interval(a, b)
        assert r is not None
        _, p = stats.mann_whitney_u(a, b)
        assert (not r.contains(1.0)) == (p <= 1 - r.confidence + 1e-12)


@pytest.mark.parametrize("d", [
    [0.1, -0.2, 0.35, 0.4, 0.05, -0.07],
    [1.5, 2.5, -0.5, 3.5, 4.5, 5.5, 6.5, -7.5],
    [-0.01, -0.02, -0.04, -0.08, -0.16],
    [0.3, -0.1, 0.25, 0.6, -0.45, 0.7, 0.9, 0.15, -0.2, 0.33, 0.12],
])
def test_signed_rank_exact_matches_scipy(d: list[float]) -> None:
    t, p = stats.wilcoxon_signed_rank(d)
    ref = sps.wilcoxon(d, method="exact")
    assert min(t, len(d) * (len(d) + 1) / 2 - t) == ref.statistic
    assert p == pytest.approx(ref.pvalue, rel=1e-9)


def test_signed_rank_with_ties_and_zeros_matches_scipy_approximation() -> None:
    d = [0.0, 1.0, -1.0, 2.0, 2.0, 3.0, -3.0, 4.0, 5.0, 5.0]
    _, p = stats.wilcoxon_signed_rank(d)
    ref = sps.wilcoxon(d, zero_method="wilcox", correction=True, method="approx")
    assert p == pytest.approx(ref.pvalue, rel=1e-9)


def test_holm_adjusts_step_down_and_keeps_the_order_given() -> None:
    # Sorted: 0.005 * 4 = 0.02, 0.01 * 3 = 0.03, 0.03 * 2 = 0.06, 0.04 * 1 = 0.04 -> 0.06.
    assert stats.holm([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert stats.holm([0.5, 0.9]) == pytest.approx([1.0, 1.0])
    assert stats.holm([0.02]) == [0.02] and stats.holm([]) == []


def test_paired_comparison_uses_the_signed_rank_test_and_needs_six_blocks() -> None:
    # A drift shared within each block hides the difference from the unpaired test; pairing by
    # block finds it.
    drift = [1.0, 1.3, 0.8, 1.6, 0.7, 1.2]
    a = [1000 * f * 1.04 * (1 + e) for f, e in zip(drift, (0.002, -0.001, 0.0, 0.001, -0.002, 0.001),
                                                   strict=True)]
    b = [1000 * f * (1 + e) for f, e in zip(drift, (0.0, 0.001, -0.001, 0.002, 0.0, -0.001), strict=True)]
    blocks = list(range(1, 7))
    paired = stats.compare(a, b, blocks=blocks, baseline_blocks=blocks)
    assert paired.paired and paired.test == "signed-rank" and paired.needed == 6
    assert paired.p_value == pytest.approx(2 / 64) and paired.significant is True
    assert paired.ratio is not None and paired.ratio.low > 1.03 and paired.ratio.high < 1.05
    unpaired = stats.compare(a, b)
    assert unpaired.test == "mann-whitney" and unpaired.significant is False
    assert unpaired.ratio is not None and unpaired.ratio.contains(1.0)
    few = stats.compare(a[:5], b[:5], blocks=blocks[:5], baseline_blocks=blocks[:5])
    assert few.significant is None and few.p_min == pytest.approx(2 / 32)  # 5 blocks cannot reach 5%
    assert stats.repetitions_needed(0.05 / 6, paired=True) == 8
    assert stats.repetitions_needed(0.05 / 6) == 5
