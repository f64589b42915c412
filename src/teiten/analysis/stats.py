"""Statistics for benchmark results: pure functions, each naming its method.

The questions are the PGECons ones (METHODS S1): is this version faster or slower than
the baseline at this client count, and by how much? With three repetitions and a few
percent of noise, the honest answer often is "we cannot tell": these functions say so
instead of calling a difference significant by default (asv's ``is_different``).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cache

import numpy as np

ALPHA = 0.05
BOOTSTRAP_ROUNDS = 2000


def median(values: Sequence[float]) -> float:
    return float(statistics.median(values))


def median_known(values: Iterable[float | None]) -> float | None:
    """The median of the values that are known (not None); None when there are none."""
    known = [float(v) for v in values if v is not None]
    return statistics.median(known) if known else None


def _seed(*groups: Sequence[float]) -> int:
    # Deterministic per input, so that a report rendered twice shows the same intervals.
    return hash(tuple(tuple(round(v, 9) for v in g) for g in groups)) & 0xFFFFFFFF


@dataclass(frozen=True)
class Interval:
    value: float
    low: float
    high: float
    confidence: float

    def contains(self, x: float) -> bool:
        return self.low <= x <= self.high


def median_ci(values: Sequence[float], *, confidence: float = 0.95,
              rounds: int = BOOTSTRAP_ROUNDS) -> Interval:
    """The median with a percentile-bootstrap confidence interval.

    Method: resample the repetitions with replacement ``rounds`` times, take the median
    of each resample, and report the (1-c)/2 and (1+c)/2 percentiles of those medians.
    With 3 repetitions the interval is necessarily coarse (it cannot be narrower than
    what 3 values allow): that is the honest width.
    """
    if not values:
        raise ValueError("no values")
    meds = _resampled_medians(values, rounds, np.random.default_rng(_seed(values)))
    tail = (1 - confidence) / 2
    low, high = np.quantile(meds, [tail, 1 - tail])
    return Interval(median(values), float(low), float(high), confidence)


def ratio_ci(values: Sequence[float], baseline: Sequence[float], *, confidence: float = 0.95,
             rounds: int = BOOTSTRAP_ROUNDS) -> Interval:
    """median(values) / median(baseline), with a bootstrap confidence interval.

    Method: resample each group independently (the repetitions of two servers are not
    paired measurements of one thing), take the ratio of the resampled medians, and report
    its percentile interval.
    """
    if not values or not baseline:
        raise ValueError("no values")
    rng = np.random.default_rng(_seed(values, baseline))
    a = _resampled_medians(values, rounds, rng)
    b = _resampled_medians(baseline, rounds, rng)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratios = np.where(b != 0, a / np.where(b != 0, b, 1), np.inf)
    tail = (1 - confidence) / 2
    low, high = np.quantile(ratios, [tail, 1 - tail])
    return Interval(median(values) / median(baseline), float(low), float(high), confidence)


def _resampled_medians(values: Sequence[float], rounds: int,
                       rng: np.random.Generator) -> np.ndarray:
    """The medians of ``rounds`` resamples (with replacement) of ``values``."""
    data = np.asarray(values, dtype=float)
    picks = rng.integers(0, len(data), size=(rounds, len(data)))
    return np.median(data[picks], axis=1)


@cache
def _u_counts(n: int, m: int) -> tuple[int, ...]:
    """How many of the C(n+m, n) arrangements give each value of U (no ties)."""
    # f(n, m, u) = f(n-1, m, u-m) + f(n, m-1, u): the classic recurrence.
    if n == 0 or m == 0:
        return (1,)
    with_n = _u_counts(n - 1, m)
    with_m = _u_counts(n, m - 1)
    out = [0] * (n * m + 1)
    for u, c in enumerate(with_m):
        out[u] += c
    for u, c in enumerate(with_n):
        out[u + m] += c
    return tuple(out)


def mann_whitney_u(a: Sequence[float], b: Sequence[float]) -> tuple[float, float]:
    """Two-sided Mann-Whitney U test: (U of ``a``, p-value).

    Exact null distribution (all arrangements equally likely) when there are no ties,
    as scipy.stats.mannwhitneyu(method="exact") computes it; with ties, the normal
    approximation with tie correction and continuity correction.
    """
    n, m = len(a), len(b)
    pooled = sorted([(v, 0) for v in a] + [(v, 1) for v in b])
    ranks: list[float] = [0.0] * len(pooled)
    i = 0
    ties = []
    while i < len(pooled):
        j = i
        while j + 1 < len(pooled) and pooled[j + 1][0] == pooled[i][0]:
            j += 1
        for k in range(i, j + 1):
            ranks[k] = (i + j) / 2 + 1
        if j > i:
            ties.append(j - i + 1)
        i = j + 1
    r_a = sum(r for r, (_, g) in zip(ranks, pooled, strict=True) if g == 0)
    u = r_a - n * (n + 1) / 2
    if not ties:
        counts = _u_counts(n, m)
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


def min_p_value(n: int, m: int) -> float:
    """The smallest two-sided p-value an exact Mann-Whitney test can give for sizes n, m."""
    return min(1.0, 2 / math.comb(n + m, n))


def repetitions_needed(alpha: float = ALPHA) -> int:
    """The fewest repetitions per server (equal sizes) at which the test can reach alpha."""
    n = 1
    while min_p_value(n, n) > alpha:
        n += 1
    return n


@dataclass(frozen=True)
class Difference:
    """Whether ``values`` differ from ``baseline``, and how sure we can be."""

    ratio: Interval
    p_value: float | None          # None when the test cannot reach alpha with these sizes
    significant: bool | None       # None: too few repetitions to tell
    needed: int                    # repetitions per server that could reach alpha

    @property
    def verdict(self) -> str:
        if self.significant is None:
            return "too few repetitions to tell"
        return "significant" if self.significant else "no significant difference"


def compare(values: Sequence[float], baseline: Sequence[float], *, alpha: float = ALPHA,
            confidence: float = 0.95) -> Difference:
    """Ratio with its CI, and a Mann-Whitney test run only when it can reach ``alpha``."""
    interval = ratio_ci(values, baseline, confidence=confidence)
    needed = repetitions_needed(alpha)
    if min_p_value(len(values), len(baseline)) > alpha:
        return Difference(interval, None, None, needed)
    _, p = mann_whitney_u(values, baseline)
    return Difference(interval, p, p <= alpha, needed)


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
