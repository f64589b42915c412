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

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

PERMUTATIONS = 999
ALPHA = 0.05


@dataclass(frozen=True)
class Change:
    boundary: int      # the change is between version boundary - 1 and version boundary
    q: float           # the energy statistic of the split
    p: float           # its permutation p-value


def _q_all(d: np.ndarray, cuts: np.ndarray) -> np.ndarray:
    """Q at each cut (the number of observations on the left) of one ordered segment, from
    its matrix of pairwise distances."""
    s = d.cumsum(0).cumsum(1)
    n = d.shape[0]
    m = cuts
    k = n - m
    left = s[m - 1, m - 1]
    between = s[m - 1, n - 1] - left
    right = s[n - 1, n - 1] - left - 2 * between
    # left and right hold each pair twice (both orders): the mean over pairs is sum / (m(m-1))
    within_left = np.where(m > 1, left / np.maximum(m * (m - 1), 1), 0.0)
    within_right = np.where(k > 1, right / np.maximum(k * (k - 1), 1), 0.0)
    energy = 2 * between / (m * k) - within_left - within_right
    return m * k / n * energy


def best_split(values: np.ndarray, sizes: Sequence[int]) -> tuple[int, float]:
    """(the boundary, as a count of groups on the left, and its Q) of the largest Q."""
    cuts = np.cumsum(sizes)[:-1]
    d = np.abs(values[:, None] - values[None, :])
    q = _q_all(d, cuts)
    i = int(np.argmax(q))
    return i + 1, float(q[i])


def _p_value(values: np.ndarray, sizes: Sequence[int], q: float, permutations: int,
             rng: np.random.Generator) -> float:
    cuts = np.cumsum(sizes)[:-1]
    d = np.abs(values[:, None] - values[None, :])
    hits = 0
    for _ in range(permutations):
        order = rng.permutation(len(values))
        if float(np.max(_q_all(d[np.ix_(order, order)], cuts))) >= q - 1e-12:
            hits += 1
    return (1 + hits) / (1 + permutations)


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
