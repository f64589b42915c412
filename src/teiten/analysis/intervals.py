"""Confidence intervals that keep their label: distribution-free intervals from order statistics.

Each method sorts a set of candidates (the repetitions themselves, the Walsh averages of the
within-block log ratios, or every difference of log TPS between two servers) and takes the k-th
smallest and the k-th largest. The probability that such an interval covers the true value is
known exactly from a null distribution (binomial, Wilcoxon signed-rank, Mann-Whitney U), so no
resampling is needed and the level can be stated honestly: when the repetitions are too few to
reach the requested level, the widest interval ([min, max] of the candidates) is returned with
the level it does reach (3 repetitions: 75% for a median), never labelled with the requested one.
A level of 0 (one repetition) gives no interval at all.

The batch functions (``*_bounds``) work on rows of a NumPy array, one sample per row, so the
coverage simulation of the test suite runs the same code as the report. The references:
- order statistics for a median: Conover, *Practical Nonparametric Statistics* (3rd ed.), §3.2;
  Hollander, Wolfe and Chicken, *Nonparametric Statistical Methods* (3rd ed.), §3.6 (the
  sign-test interval);
- Walsh averages and the signed-rank distribution: Hollander, Wolfe and Chicken §3.3 (Tukey's
  construction of the interval that inverts Wilcoxon's signed-rank test);
- the two-sample Hodges-Lehmann interval: Hollander, Wolfe and Chicken §4.3 (Moses' interval,
  which inverts the Mann-Whitney test); Bauer (1972), JASA 67:687.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from functools import cache

import numpy as np

ORDER_STATISTIC = "order-statistic"
SIGNED_RANK = "signed-rank"
SIGN_TEST = "sign-test"
HODGES_LEHMANN = "hodges-lehmann"
# The skewness test that sends a paired ratio to the sign-test interval (:func:`skewed`): the
# Cabilio-Masaro statistic sqrt(n) (mean - median) / s over its null standard deviation for
# normal data, sqrt(0.5708), beyond this in either direction.
SKEW_Z = 1.96
CM_VARIANCE = 0.5708


@dataclass(frozen=True)
class Interval:
    """A point estimate with its confidence interval.

    ``confidence`` is the level the interval reaches (its exact coverage under the method's
    assumptions), which may be below ``requested`` when the sample is too small to reach it,
    and is at least ``requested`` otherwise. ``method`` names how it was made.
    """

    value: float
    low: float
    high: float
    confidence: float
    requested: float
    method: str

    def contains(self, x: float) -> bool:
        return self.low <= x <= self.high

    @property
    def short(self) -> bool:
        """The sample could not reach the requested level."""
        return self.confidence < self.requested


@dataclass(frozen=True)
class Rank:
    """Which order statistics make the interval: the k-th smallest and the k-th largest of the
    sorted candidates (1-based), and the coverage of that interval."""

    k: int
    level: float


def _rank(counts: Sequence[int], confidence: float) -> Rank | None:
    """The largest k whose interval [c(k), c(N+1-k)] covers with at least ``confidence``.

    ``counts`` is the null distribution of a statistic S on 0..N, symmetric about N/2, such
    that the k-th interval of the N sorted candidates covers with 1 - 2 P(S <= k - 1). When
    even k = 1 falls short, k = 1 with the coverage it reaches; None when that is 0.
    """
    total = sum(counts)
    last = (len(counts)) // 2  # k <= N + 1 - k
    # The k-th interval covers with (total - 2 P(S <= k - 1) total) / total: exact integers
    # until the division, the sum below k kept as k grows (one pass: at 500 blocks the
    # signed-rank distribution has 125,251 values, and summing it afresh for every k took
    # minutes; bench/report_size.py --trials 100000).
    below = counts[0]  # counts[:k] summed, for k = 1
    if total - 2 * below <= 0:
        return None
    k = 1
    while k < last and (total - 2 * (below + counts[k])) / total >= confidence - 1e-12:
        below += counts[k]
        k += 1
    return Rank(k, (total - 2 * below) / total)


@cache
def binomial_counts(n: int) -> tuple[int, ...]:
    """C(n, j) for j = 0..n: how many of the 2^n sign patterns put j values below the median."""
    return tuple(math.comb(n, j) for j in range(n + 1))


@cache
def signed_rank_counts(n: int) -> tuple[int, ...]:
    """How many of the 2^n sign patterns of ranks 1..n give each value of T+ (0..n(n+1)/2)."""
    counts = [1]
    for r in range(1, n + 1):
        grown = counts + [0] * r
        for t, c in enumerate(counts):
            grown[t + r] += c
        counts = grown
    return tuple(counts)


@cache
def u_counts(n: int, m: int) -> tuple[int, ...]:
    """How many of the C(n+m, n) arrangements give each value of U (no ties)."""
    # f(n, m, u) = f(n-1, m, u-m) + f(n, m-1, u): the classic recurrence.
    if n == 0 or m == 0:
        return (1,)
    with_n = u_counts(n - 1, m)
    with_m = u_counts(n, m - 1)
    out = [0] * (n * m + 1)
    for u, c in enumerate(with_m):
        out[u] += c
    for u, c in enumerate(with_n):
        out[u + m] += c
    return tuple(out)


@cache
def median_rank(n: int, confidence: float) -> Rank | None:
    """The order statistics of ``n`` repetitions that bound their median's interval.

    Method: [x(k), x(n-k+1)] covers the true median with probability 1 - 2 P(Binomial(n, 1/2)
    <= k - 1), whatever the (continuous) distribution (the sign-test interval).
    """
    return _rank(binomial_counts(n), confidence)


@cache
def signed_rank_rank(n: int, confidence: float) -> Rank | None:
    """The Walsh averages of ``n`` values that bound the interval of their centre of symmetry.

    Method: [W(k), W(N-k+1)] of the N = n(n+1)/2 sorted Walsh averages covers with
    1 - 2 P(T+ <= k - 1), T+ the Wilcoxon signed-rank statistic under its exact null.
    """
    return _rank(signed_rank_counts(n), confidence)


@cache
def mann_whitney_rank(n: int, m: int, confidence: float) -> Rank | None:
    """The differences x_i - y_j (n * m of them) that bound the interval of the shift.

    Method: [D(k), D(nm-k+1)] covers the shift with 1 - 2 P(U <= k - 1), U the Mann-Whitney
    statistic under its exact null distribution.
    """
    return _rank(u_counts(n, m), confidence)


Bounds = tuple[np.ndarray, np.ndarray, float]  # low and high per row, and the level reached


def median_bounds(samples: np.ndarray, confidence: float) -> Bounds | None:
    """The order-statistic interval of the median of each row (see :func:`median_rank`)."""
    n = samples.shape[-1]
    rank = median_rank(n, confidence)
    if rank is None:
        return None
    ordered = np.sort(samples, axis=-1)
    return ordered[..., rank.k - 1], ordered[..., n - rank.k], rank.level


def walsh_bounds(d: np.ndarray, confidence: float) -> Bounds | None:
    """The signed-rank interval of the centre of each row (see :func:`signed_rank_rank`):
    order statistics of the Walsh averages (d_i + d_j) / 2, i <= j."""
    n = d.shape[-1]
    rank = signed_rank_rank(n, confidence)
    if rank is None:
        return None
    i, j = np.triu_indices(n)
    walsh = np.sort((d[..., i] + d[..., j]) / 2, axis=-1)
    return walsh[..., rank.k - 1], walsh[..., len(i) - rank.k], rank.level


def shift_bounds(x: np.ndarray, y: np.ndarray, confidence: float) -> Bounds | None:
    """The Hodges-Lehmann interval of the shift x - y of each pair of rows (see
    :func:`mann_whitney_rank`): order statistics of every difference x_i - y_j."""
    n, m = x.shape[-1], y.shape[-1]
    rank = mann_whitney_rank(n, m, confidence)
    if rank is None:
        return None
    diffs = (x[..., :, None] - y[..., None, :]).reshape(*x.shape[:-1], n * m)
    diffs = np.sort(diffs, axis=-1)
    return diffs[..., rank.k - 1], diffs[..., n * m - rank.k], rank.level


def paired_bounds(d: np.ndarray, confidence: float) -> Bounds | None:
    """The report's interval of the centre of each row of within-block log ratios: the
    signed-rank interval (:func:`walsh_bounds`), or the sign-test interval of the median
    (:func:`median_bounds`) where the row looks skewed (:func:`skewed`). The level is per row
    (an array) when the rows mix the two."""
    signed = walsh_bounds(d, confidence)
    sign = median_bounds(d, confidence)
    if signed is None or sign is None:
        return None
    flag = np.asarray(skewed(d))
    if not flag.any():
        return signed
    if flag.all():
        return sign
    return (np.where(flag, sign[0], signed[0]), np.where(flag, sign[1], signed[1]),
            np.where(flag, sign[2], signed[2]))  # type: ignore[return-value]


def skewed(d: np.ndarray) -> np.ndarray | bool:
    """Whether the within-block log ratios of each row look skewed, so that the signed-rank
    interval (which assumes them symmetric) would cover less than it states: the test of
    Cabilio and Masaro (1996, Canadian Journal of Statistics 24:349), |sqrt(n) (mean - median)
    / s| > :data:`SKEW_Z` sqrt(0.5708). One server that stalls in some blocks and the other not
    is the case (bench/interval_coverage.py, "asymmetric")."""
    n = d.shape[-1]
    sd = d.std(axis=-1, ddof=1)
    stat = np.sqrt(n) * (d.mean(axis=-1) - np.median(d, axis=-1))
    # Ratios equal to within float rounding (below a billionth on the log scale) are not skewed.
    out = np.abs(stat) > SKEW_Z * math.sqrt(CM_VARIANCE) * np.where(sd > 1e-9, sd, np.inf)
    return bool(out) if out.ndim == 0 else out


def _median(values: Sequence[float]) -> float:
    return float(statistics.median(values))


def walsh_estimate(d: np.ndarray) -> float:
    """The Hodges-Lehmann estimate of the centre of one sample: the median of its Walsh
    averages (d_i + d_j) / 2, i <= j (Hollander, Wolfe and Chicken §3.2). It is the point that
    :func:`walsh_bounds` brackets, so it always lies inside that interval."""
    i, j = np.triu_indices(len(d))
    return float(np.median((d[i] + d[j]) / 2))


def shift_estimate(x: np.ndarray, y: np.ndarray) -> float:
    """The two-sample Hodges-Lehmann estimate of the shift x - y: the median of every
    difference x_i - y_j (Hollander, Wolfe and Chicken §4.2); inside :func:`shift_bounds`."""
    return float(np.median(x[:, None] - y[None, :]))


def median_interval(values: Sequence[float], *, confidence: float = 0.95) -> Interval | None:
    """The median of the repetitions with its distribution-free interval, or None for a single
    repetition (which gives no interval, not a zero-width one).

    Method: the order-statistic (sign-test) interval [x(k), x(n-k+1)], k the largest whose
    coverage 1 - 2 P(Binomial(n, 1/2) <= k - 1) reaches ``confidence``; below 6 repetitions
    no k reaches 95% and the interval is [min, max] at the level it reaches (2: 50%, 3: 75%,
    4: 87.5%, 5: 93.75%).
    """
    if not values:
        raise ValueError("no values")
    found = median_bounds(np.asarray([values], dtype=float), confidence)
    if found is None:
        return None
    low, high, level = found
    return Interval(_median(values), float(low[0]), float(high[0]), level, confidence, ORDER_STATISTIC)


MIN_BLOCKS = 2  # shared blocks below which the ratio is analysed unpaired


def blocked_pairs(values: Sequence[float], blocks: Sequence[Hashable], baseline: Sequence[float],
                  baseline_blocks: Sequence[Hashable]) -> list[tuple[float, float]]:
    """(a, b) per block (repetition set) where both servers have values, in the order of the
    blocks' first appearance; empty when they share fewer than :data:`MIN_BLOCKS` blocks or a
    value is not positive (no log ratio). A block holding several values of one server gives
    their geometric mean. ``blocks`` are aligned with ``values``, ``baseline_blocks`` with
    ``baseline``; empty ones mean the blocks are unknown."""
    if not blocks or not baseline_blocks:
        return []

    def by_block(vals: Sequence[float], keys: Sequence[Hashable]) -> dict[Hashable, list[float]]:
        out: dict[Hashable, list[float]] = {}
        for key, v in zip(keys, vals, strict=True):
            out.setdefault(key, []).append(v)
        return out

    mine, theirs = by_block(values, blocks), by_block(baseline, baseline_blocks)
    shared = [key for key in mine if key in theirs]
    if len(shared) < MIN_BLOCKS or any(v <= 0 for key in shared for v in (*mine[key], *theirs[key])):
        return []

    def centre(vals: list[float]) -> float:
        return vals[0] if len(vals) == 1 else math.exp(sum(math.log(v) for v in vals) / len(vals))

    return [(centre(mine[key]), centre(theirs[key])) for key in shared]


def ratio_interval(values: Sequence[float], baseline: Sequence[float], *, confidence: float = 0.95,
                   blocks: Sequence[Hashable] = (), baseline_blocks: Sequence[Hashable] = (),
                   ) -> Interval | None:
    """The ratio of ``values`` to ``baseline`` (基準比; 前バージョン比 when the baseline is the
    previous version), with a distribution-free interval.

    ``blocks`` and ``baseline_blocks`` name the repetition set (block) of each value.

    Where the two servers share at least two blocks (:func:`blocked_pairs`), the interval is
    paired: the within-block log ratios d_r = log a_r - log b_r, and the one-sample Wilcoxon
    signed-rank interval of their centre (order statistics of the Walsh averages, k from the
    exact signed-rank distribution), exponentiated. Drift that a block shares cancels in d_r.

    Signed-rank or sign test? The signed-rank interval assumes d_r symmetric about its centre.
    That holds whenever the two servers' noise within a block has one shape up to the shift
    (the difference of two independent, identically distributed values is symmetric, however
    skewed each is; different spreads of symmetric noise keep it symmetric too) -- the
    assumption of a pure shift on the log scale that the unpaired method makes as well, and
    what randomising the order within each block gives foreign load. Under it the signed-rank
    interval is the shorter one at the sizes teiten runs (8 blocks, normal noise: about 0.6 of
    the sign-test interval's width) and covers as stated (bench/interval_coverage.py). So
    signed-rank is the choice where d_r looks symmetric. Where one server's noise has another
    shape (it stalls in some blocks and the other does not), d_r is skewed and the signed-rank
    interval covers the ratio of the medians less often than stated (bimodal against normal
    noise: 92% at 10 blocks, 87% at 20, 81% at 30, for a stated 95%). So where d_r looks skewed
    (:func:`skewed`, a test of symmetry at 5%), the interval is the sign-test interval of the
    median of d_r, and the estimate that median (:func:`paired_bounds`): the report's method
    then keeps its label within 0.8 points from 6 to 15 blocks at 95%, and within 0.4 from 6 to
    30 blocks at a six-ratio family's 99.17%; at 95% it falls 2 points short at 20 blocks and 3
    at 30, since the median of the within-block ratios is not quite the ratio of the medians
    (bench/interval_coverage.py, asserted in tests/unit/test_interval_coverage.py). Symmetric
    noise is sent there in about 4% of studies, at a cost in width only.

    Where the servers share fewer than two blocks (studies compared across stores), the
    two-sample Hodges-Lehmann interval of the shift of log TPS, k from the exact Mann-Whitney
    distribution, exponentiated.

    The point estimate is the interval's own (docs/DESIGN.md, "Estimate, interval, verdict"): the
    Hodges-Lehmann estimate of the same method, exponentiated (:func:`walsh_estimate` of the
    within-block log ratios, or :func:`shift_estimate` of the two sets of log TPS), so it always
    lies inside the interval. The ratio of the medians, a different quantity that can fall
    outside it, is the report's ``ratio_pct`` column and nothing else. None when no interval
    exists (one value a side, or a value that is not positive).
    """
    if not values or not baseline:
        raise ValueError("no values")
    pairs = blocked_pairs(values, blocks, baseline, baseline_blocks)
    if pairs:
        d = np.asarray([[math.log(a) - math.log(b) for a, b in pairs]])
        found = paired_bounds(d, confidence)
        if skewed(d[0]):
            estimate, method = float(np.median(d[0])), SIGN_TEST
        else:
            estimate, method = walsh_estimate(d[0]), SIGNED_RANK
    else:
        if any(v <= 0 for v in (*values, *baseline)):
            return None
        x, y = np.log(np.asarray([values], dtype=float)), np.log(np.asarray([baseline], dtype=float))
        found = shift_bounds(x, y, confidence)
        estimate = shift_estimate(x[0], y[0])
        method = HODGES_LEHMANN
    if found is None:
        return None
    low, high, level = found
    return Interval(math.exp(estimate), math.exp(float(low[0])), math.exp(float(high[0])),
                    float(np.min(level)), confidence, method)
