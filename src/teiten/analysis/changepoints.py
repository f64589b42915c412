"""Where along a line of versions performance changed (issue 19): E-divisive means.

The observations are the log TPS of every ok repetition, grouped by version in version
order. A change point is a boundary between two versions. E-divisive (Matteson and James,
2014; MongoDB's performance CI, Daly et al., ICPE 2020) splits a segment where the energy
statistic between its two sides is largest,

    Q(A, B) = m n / (m + n) * (2/(m n) sum|a - b| - 1/C(m,2) sum|a - a'| - 1/C(n,2) sum|b - b'|)

(exponent 1), and keeps the split when a permutation test says it is unlikely without a
change: the segment's observations are shuffled ``permutations`` times, the largest Q over
the same boundaries taken each time, and p = (1 + as large or larger) / (1 + permutations).
Under no change anywhere in the segment the observations are exchangeable, so the test holds
its level (tests/unit/test_changepoints.py simulates it). The segments on either side are
then searched the same way, until no split is significant. Only boundaries between versions
are candidates: repetitions of one version are one group.

Written here rather than taken from ``signal-processing-algorithms`` (MongoDB's, which
searches every index of a series and has no notion of groups) or ``ruptures`` (no
significance test): the grouped search is forty lines of numpy.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

PERMUTATIONS = 999
ALPHA = 0.05
# values x boundaries x permutations computed at once: arrays of 256 kB, which the allocator
# reuses (at 8 MB each was a fresh mapping, and the kernel's time as large as the sums')
_STACK = 1 << 15


@dataclass(frozen=True)
class Change:
    boundary: int      # the change is between version boundary - 1 and version boundary
    q: float           # the energy statistic of the split
    p: float           # its permutation p-value


def _q_at_cuts(values: np.ndarray, labels: np.ndarray, sizes: Sequence[int]) -> np.ndarray:
    """Q at each boundary between the groups of a segment's ``values`` (of ``sizes``), for
    each row of ``labels`` (the group of each value: the segment as it is, or a permutation
    of it), shape (rows, groups - 1).

    For |x - y| in one dimension the sums of distances need no matrix of them. With the
    values sorted and g_t the gap between the t-th smallest and the next, a pair's distance is
    the sum of the gaps between them; at a boundary with m values on its left and k on its
    right, of the t + 1 smallest a_t are on the left and b_t = t + 1 - a_t on the right, so

        sum over the left's pairs (both orders)   2 sum_t g_t a_t (m - a_t)
        sum over the right's pairs (both orders)  2 sum_t g_t b_t (k - b_t)
        sum between them                          sum_t g_t (a_t (k - b_t) + b_t (m - a_t))

    and a_t is a cumulative count: O(values x groups) a row, where the matrix of distances
    was O(values^2). Each sum is a combination of sum_t g_t a_t, sum_t g_t a_t^2 and
    sum_t g_t (t + 1) a_t."""
    n, groups = len(values), len(sizes)
    order = np.argsort(values, kind="stable")
    g = np.diff(values[order])
    r = np.arange(1, n, dtype=float)
    ranked = labels[:, order]  # each row's groups, the smallest value's first
    # a: (rows, groups - 1, n - 1), of the t + 1 smallest values those left of each boundary
    a = (ranked[:, None, :-1] < np.arange(1, groups)[:, None]).cumsum(2, dtype=np.int32).astype(float)
    s1, s2, s3 = a @ g, (a * a) @ g, a @ (g * r)
    m = np.cumsum(sizes)[:-1].astype(float)  # the left side's size at each boundary
    k = n - m
    r1, r2 = float(g @ r), float(g @ (r * r))
    left = 2 * (m * s1 - s2)
    right = 2 * (k * r1 - r2 + 2 * s3 - k * s1 - s2)
    between = (k - m) * s1 - 2 * s3 + 2 * s2 + m * r1
    # left and right hold each pair twice (both orders): the mean over pairs is sum / (m(m-1))
    within_left = np.where(m > 1, left / np.maximum(m * (m - 1), 1), 0.0)
    within_right = np.where(k > 1, right / np.maximum(k * (k - 1), 1), 0.0)
    energy = 2 * between / (m * k) - within_left - within_right
    return m * k / n * energy


def best_split(values: np.ndarray, sizes: Sequence[int]) -> tuple[int, float]:
    """(the boundary, as a count of groups on the left, and its Q) of the largest Q."""
    labels = np.repeat(np.arange(len(sizes)), sizes)[None, :]
    q = _q_at_cuts(values, labels, sizes)[0]
    i = int(np.argmax(q))
    return i + 1, float(q[i])


def _p_value(values: np.ndarray, sizes: Sequence[int], q: float, permutations: int,
             rng: np.random.Generator) -> float:
    n = len(values)
    place = np.repeat(np.arange(len(sizes)), sizes)  # the group of each position
    step = max(1, _STACK // (n * len(sizes)))  # permutations at a time
    hits = 0
    for done in range(0, permutations, step):
        rows = min(step, permutations - done)
        # each row shuffled as rng.permutation(n) would, one after another
        orders = rng.permuted(np.tile(np.arange(n), (rows, 1)), axis=1)
        labels = np.empty_like(orders)  # position j holds value orders[i, j]: it takes j's group
        labels[np.arange(rows)[:, None], orders] = place
        hits += int(np.count_nonzero(_q_at_cuts(values, labels, sizes).max(1) >= q - 1e-12))
    return (1 + hits) / (1 + permutations)


def testable(groups: Sequence[Sequence[float]]) -> bool:
    """Whether :func:`change_points` tests the line at all: two groups with values, and three
    values in all."""
    sizes = [len(g) for g in groups if len(g)]
    return len(sizes) >= 2 and sum(sizes) >= 3


def permutations_for(alpha: float) -> int:
    """Permutations enough for a test at ``alpha``: ``PERMUTATIONS``, or more where alpha is
    small (a level divided over many lines). The p-value (1 + hits) / (1 + permutations) holds
    its level with any number of them, but a split is kept only while hits stay below
    k = (1 + permutations) alpha: with k >= 10, a split whose exact p is half the level is kept
    97% of the time (hits ~ Binomial(permutations, alpha / 2), mean 5); with k < 1, never."""
    return max(PERMUTATIONS, math.ceil(10 / alpha - 1e-9) - 1)


def change_points(groups: Sequence[Sequence[float]], *, alpha: float = ALPHA,
                  permutations: int = PERMUTATIONS, seed: int = 0) -> list[Change]:
    """The significant change points of a line of groups (each version's log TPS values),
    as boundaries between groups, in order. Groups without values are left out of the
    search (a boundary then spans them)."""
    kept = [i for i, g in enumerate(groups) if len(g)]
    rng = np.random.default_rng(seed)
    found: list[Change] = []
    segments = [(0, len(kept))]  # over ``kept``: [start, end)
    while segments:
        start, end = segments.pop()
        if end - start < 2:
            continue
        part = [np.asarray(groups[kept[i]], dtype=float) for i in range(start, end)]
        sizes = [len(g) for g in part]
        values = np.concatenate(part)
        if len(values) < 3:
            continue
        at, q = best_split(values, sizes)
        p = _p_value(values, sizes, q, permutations, rng)
        if p <= alpha:
            found.append(Change(kept[start + at], q, p))
            segments += [(start, start + at), (start + at, end)]
    return sorted(found, key=lambda c: c.boundary)
