"""Statistics for benchmark results: pure functions, each naming its method.

The questions are the PGECons ones (METHODS S1): is this version faster or slower than
the baseline at this client count, and by how much? With three repetitions and a few
percent of noise, the honest answer often is "we cannot tell": these functions say so
instead of calling a difference significant by default (asv's ``is_different``).

The intervals themselves (order statistics, signed-rank, Hodges-Lehmann) live in
:mod:`teiten.analysis.intervals`; this module pairs each with its test, and corrects the
verdicts of a report for its number of comparisons (:func:`holm`).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass

from teiten.analysis import intervals
from teiten.analysis.intervals import Interval, median_interval, ratio_interval

__all__ = ["ALPHA", "Difference", "Interval", "compare", "holm", "median_interval", "ratio_interval"]

ALPHA = 0.05


def median(values: Sequence[float]) -> float:
    return float(statistics.median(values))


def median_known(values: Iterable[float | None]) -> float | None:
    """The median of the values that are known (not None); None when there are none."""
    known = [float(v) for v in values if v is not None]
    return statistics.median(known) if known else None


def _ranks(values: Sequence[float]) -> tuple[list[float], list[int]]:
    """Mid-ranks of ``values`` (1-based, in their order) and the sizes of the groups of ties."""
    order = sorted(range(len(values)), key=lambda i: values[i])
    ranks = [0.0] * len(values)
    ties = []
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        for k in range(i, j + 1):
            ranks[order[k]] = (i + j) / 2 + 1
        if j > i:
            ties.append(j - i + 1)
        i = j + 1
    return ranks, ties


def mann_whitney_u(a: Sequence[float], b: Sequence[float]) -> tuple[float, float]:
    """Two-sided Mann-Whitney U test: (U of ``a``, p-value).

    Exact null distribution (all arrangements equally likely) when there are no ties,
    as scipy.stats.mannwhitneyu(method="exact") computes it; with ties, the normal
    approximation with tie correction and continuity correction.
    """
    n, m = len(a), len(b)
    ranks, ties = _ranks([*a, *b])
    u = sum(ranks[:n]) - n * (n + 1) / 2
    if not ties:
        counts = intervals.u_counts(n, m)
        total = math.comb(n + m, n)
        lo = min(u, n * m - u)
        p = 2 * sum(counts[: int(lo) + 1]) / total
        return u, min(1.0, p)
    mean = n * m / 2
    nn = n + m
    var = n * m / 12 * ((nn + 1) - sum(t**3 - t for t in ties) / (nn * (nn - 1)))
    if var <= 0:
        return u, 1.0
    z = (abs(u - mean) - 0.5) / math.sqrt(var)
    return u, min(1.0, math.erfc(z / math.sqrt(2)))


def wilcoxon_signed_rank(d: Sequence[float]) -> tuple[float, float]:
    """Two-sided Wilcoxon signed-rank test that ``d`` is centred on 0: (T+, p-value).

    Zero differences are dropped (Wilcoxon's convention; scipy's ``zero_method="wilcox"``).
    Exact null distribution (every sign pattern equally likely) when no two |d| tie, as
    scipy.stats.wilcoxon(method="exact") computes it; with ties or zeros, the normal
    approximation with tie correction and continuity correction.
    """
    nonzero = [x for x in d if x != 0]
    n = len(nonzero)
    if n == 0:
        return 0.0, 1.0
    ranks, ties = _ranks([abs(x) for x in nonzero])
    t = sum(r for r, x in zip(ranks, nonzero, strict=True) if x > 0)
    if not ties and n == len(d):
        counts = intervals.signed_rank_counts(n)
        lo = min(t, n * (n + 1) / 2 - t)
        return t, min(1.0, 2 * sum(counts[: int(lo) + 1]) / 2**n)
    mean = n * (n + 1) / 4
    var = n * (n + 1) * (2 * n + 1) / 24 - sum(g**3 - g for g in ties) / 48
    if var <= 0:
        return t, 1.0
    z = max(0.0, abs(t - mean) - 0.5) / math.sqrt(var)
    return t, min(1.0, math.erfc(z / math.sqrt(2)))


def sign_test(d: Sequence[float]) -> float:
    """Two-sided exact sign test that ``d`` has median 0: its p-value (zeros dropped)."""
    pos, neg = sum(1 for x in d if x > 0), sum(1 for x in d if x < 0)
    n = pos + neg
    if n == 0:
        return 1.0
    return min(1.0, 2 * sum(math.comb(n, k) for k in range(min(pos, neg) + 1)) / 2**n)


def min_p_value(n: int, m: int) -> float:
    """The smallest two-sided p-value an exact Mann-Whitney test can give for sizes n, m."""
    return min(1.0, 2 / math.comb(n + m, n))


def min_p_value_paired(n: int) -> float:
    """The smallest two-sided p-value an exact signed-rank test can give for n pairs."""
    return min(1.0, 2 / 2**n)


def repetitions_needed(alpha: float = ALPHA, *, paired: bool = False) -> int:
    """The fewest repetitions per server (equal sizes; blocks when ``paired``) at which the
    test can reach alpha."""
    n = 1
    while (min_p_value_paired(n) if paired else min_p_value(n, n)) > alpha:
        n += 1
    return n


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm-adjusted p-values, in the order given.

    Method: Holm's step-down procedure (Holm 1979, "A simple sequentially rejective multiple
    test procedure"): sort the m p-values, multiply the i-th smallest by m - i + 1, cap at 1,
    and make the sequence non-decreasing. Rejecting where the adjusted p <= alpha keeps the
    chance of any false verdict in the family at most alpha, whatever the dependence between
    the tests.
    """
    m = len(p_values)
    out = [1.0] * m
    running = 0.0
    for step, i in enumerate(sorted(range(m), key=lambda i: p_values[i])):
        running = max(running, min(1.0, (m - step) * p_values[i]))
        out[i] = running
    return out


MANN_WHITNEY = "mann-whitney"
SIGNED_RANK = "signed-rank"
SIGN_TEST = "sign-test"  # paired, where the within-block ratios look skewed


@dataclass(frozen=True)
class Difference:
    """Whether ``values`` differ from ``baseline``, and how sure we can be."""

    ratio: Interval | None          # None when no interval exists (one value a side)
    p_value: float | None          # None when the test cannot reach alpha with these sizes
    significant: bool | None       # None: too few repetitions to tell
    needed: int                    # repetitions per server that could reach alpha
    test: str = MANN_WHITNEY       # or SIGNED_RANK or SIGN_TEST (paired by block)
    p_min: float = 1.0             # the smallest p the test can give with these sizes

    @property
    def paired(self) -> bool:
        return self.test in (SIGNED_RANK, SIGN_TEST)

    @property
    def verdict(self) -> str:
        if self.significant is None:
            return "too few repetitions to tell"
        return "significant" if self.significant else "no significant difference"


def compare(values: Sequence[float], baseline: Sequence[float], *, alpha: float = ALPHA,
            confidence: float = 0.95, blocks: Sequence[Hashable] = (),
            baseline_blocks: Sequence[Hashable] = ()) -> Difference:
    """The ratio with its interval (:func:`ratio_interval`), and a test run only when the
    sizes can reach ``alpha``.

    The test matches the interval, so that the verdict and the interval agree: where the
    servers share blocks (repetition sets), the exact Wilcoxon signed-rank test of the
    within-block log ratios (the sign test where they look skewed and the interval is the
    sign test's); otherwise the Mann-Whitney U test of the two sets of values.
    """
    interval = ratio_interval(values, baseline, confidence=confidence, blocks=blocks,
                              baseline_blocks=baseline_blocks)
    pairs = intervals.blocked_pairs(values, blocks, baseline, baseline_blocks)
    if pairs:
        p_min = min_p_value_paired(len(pairs))  # the sign test's too
        needed = repetitions_needed(alpha, paired=True)
        test = SIGN_TEST if interval is not None and interval.method == intervals.SIGN_TEST \
            else SIGNED_RANK
        if p_min > alpha:
            return Difference(interval, None, None, needed, test, p_min)
        d = [math.log(a) - math.log(b) for a, b in pairs]
        p = sign_test(d) if test == SIGN_TEST else wilcoxon_signed_rank(d)[1]
        return Difference(interval, p, p <= alpha, needed, test, p_min)
    p_min = min_p_value(len(values), len(baseline))
    needed = repetitions_needed(alpha)
    if p_min > alpha:
        return Difference(interval, None, None, needed, MANN_WHITNEY, p_min)
    _, p = mann_whitney_u(values, baseline)
    return Difference(interval, p, p <= alpha, needed, MANN_WHITNEY, p_min)


def cv(values: Sequence[float]) -> float | None:
    """Coefficient of variation (sample standard deviation / mean); None below 2 values."""
    if len(values) < 2:
        return None
    mean = statistics.fmean(values)
    return statistics.stdev(values) / mean if mean else None


def detectable_difference(cv_a: float, cv_b: float, n_a: int, n_b: int, *,
                          alpha: float = ALPHA, power: float = 0.8) -> float:
    """The smallest relative difference the study could have detected (as a fraction).

    Method: the normal approximation for two independent means with the observed
    coefficients of variation, (z_(1-alpha/2) + z_power) * sqrt(cv_a^2/n_a + cv_b^2/n_b).
    A rough, stated guide, not a promise.
    """
    nd = statistics.NormalDist()
    z = nd.inv_cdf(1 - alpha / 2) + nd.inv_cdf(power)
    return z * math.sqrt(cv_a**2 / n_a + cv_b**2 / n_b)


def detectable_difference_paired(d: Sequence[float], *, alpha: float = ALPHA,
                                 power: float = 0.8) -> float | None:
    """The smallest relative difference a study paired by block could have detected (as a
    fraction), from its within-block log ratios ``d``; None below 2 blocks.

    Method: the normal approximation for a mean difference of paired measurements,
    (z_(1-alpha/2) + z_power) * sd(d) / sqrt(n): the drift the blocks share is not noise here.
    A rough, stated guide, not a promise.
    """
    if len(d) < 2:
        return None
    nd = statistics.NormalDist()
    z = nd.inv_cdf(1 - alpha / 2) + nd.inv_cdf(power)
    return z * statistics.stdev(d) / math.sqrt(len(d))


@dataclass(frozen=True)
class Stability:
    steady_from: int        # index of the first steady second (ramp-up before it)
    drift_pct_per_min: float  # slope of the steady part, % of its mean per minute
    stalls: int             # steady seconds below half the steady median
    cv: float | None        # of the steady seconds


def steady_state_start(series: Sequence[float], *, tolerance: float = 0.1,
                       max_fraction: float = 0.3) -> int:
    """The first second from which the per-second TPS stays near its level.

    Rule: the level is the median of the second half of the run; the ramp-up is the
    leading seconds that are more than ``tolerance`` below it, never more than
    ``max_fraction`` of the run (a run that never settles is reported as unstable, not
    trimmed away).
    """
    if len(series) < 3:
        return 0
    level = median(series[len(series) // 2:])
    limit = int(len(series) * max_fraction)
    k = 0
    while k < limit and series[k] < level * (1 - tolerance):
        k += 1
    return k


MIN_DRIFT_SECONDS = 10


def stability(series: Sequence[float]) -> Stability:
    """Ramp-up, drift and stalls of a per-second TPS series (pgbench -P 1).

    Drift (the least-squares slope, as % of the mean per minute) is only estimated from
    at least MIN_DRIFT_SECONDS steady seconds: over a few seconds, noise extrapolated to a
    minute would look like a trend.
    """
    start = steady_state_start(series)
    steady = list(series[start:])
    if len(steady) < 2:
        return Stability(start, 0.0, 0, None)
    level = median(steady)
    stalls = sum(1 for y in steady if y < level / 2)
    if len(steady) < MIN_DRIFT_SECONDS:
        return Stability(start, 0.0, stalls, cv(steady))
    xs = range(len(steady))
    mx, my = statistics.fmean(xs), statistics.fmean(steady)
    sxx = sum((x - mx) ** 2 for x in xs)
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, steady, strict=True)) / sxx
    return Stability(start, 100 * slope * 60 / my if my else 0.0, stalls, cv(steady))


@dataclass(frozen=True)
class Saturation:
    peak_clients: int
    peak_tps: float
    knee_clients: int      # the last client count up to which TPS grows about linearly


def saturation(points: Sequence[tuple[int, float]], *, efficiency: float = 0.8) -> Saturation | None:
    """Where TPS peaks, and the knee where it stops growing linearly with clients.

    Method: the knee is the largest client count c such that TPS(c) is at least
    ``efficiency`` times the linear extrapolation from the smallest client count,
    TPS(c_min) * c / c_min, for c and every smaller count ("scales until N clients").
    """
    pts = sorted((c, t) for c, t in points if t is not None)
    if not pts:
        return None
    peak = max(pts, key=lambda p: p[1])
    c0, t0 = pts[0]
    knee = c0
    for c, t in pts[1:]:
        if t >= efficiency * t0 * c / c0:
            knee = c
        else:
            break
    return Saturation(peak[0], peak[1], knee)
