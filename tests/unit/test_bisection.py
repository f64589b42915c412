"""teiten.analysis.bisection: where a step places its midpoint (against the point midway between
good and bad), the rule's error rates simulated at the step sizes teiten runs, and that the search
over N commits after good names the first bad one in at most ⌈log2 N⌉ midpoints, wherever it is."""

from __future__ import annotations

import math
from collections import Counter

import numpy as np
import pytest

from teiten.analysis import bisection as b


def _step(rng: np.random.Generator, blocks: int, gap: float, where: float, sd: float = 0.07
          ) -> tuple[dict[int, float], dict[int, float], dict[int, float]]:
    """One step's TPS per block: good at 1000, bad ``gap`` below it (0.12: 12% slower), the
    midpoint ``where`` of the way from good to bad on the log scale (1: bad itself); each block
    shares a drift of the machine, each trial has its own log-normal noise of SD ``sd``."""
    out: tuple[dict[int, float], dict[int, float], dict[int, float]] = ({}, {}, {})
    low = math.log(1 - gap)
    for block in range(1, blocks + 1):
        drift = rng.normal(0, 0.05)
        for server, centre in zip(out, (0.0, low, where * low), strict=True):
            server[block] = 1000 * math.exp(centre + drift + rng.normal(0, sd))
    return out


def test_the_midpoint_is_placed_by_its_side_of_the_point_midway() -> None:
    good = {1: 1000.0, 2: 1010.0, 3: 990.0, 4: 1005.0, 5: 995.0, 6: 1000.0, 7: 1002.0, 8: 998.0}
    bad = {b: 0.88 * v for b, v in good.items()}
    placed = b.midway(good, bad, {k: v * (1 + (k % 3 - 1) / 100) for k, v in bad.items()},
                      confidence=0.95)
    assert placed is not None and placed.high < 1 and b.point_outcome(placed, 0.95) == b.BAD
    assert placed.value == pytest.approx(math.sqrt(0.88), abs=0.01)  # mid / sqrt(good x bad)
    placed = b.midway(good, bad, dict(good), confidence=0.95)
    assert placed is not None and b.point_outcome(placed, 0.95) == b.GOOD
    # Only the blocks all three ran count; fewer than two give nothing; a level short of the
    # family's cannot tell.
    assert b.midway(good, {1: 880.0}, good, confidence=0.95) is None
    three = b.midway({k: good[k] for k in (1, 2, 3)}, bad, good, confidence=0.95)
    assert three is not None and three.confidence < 0.95
    assert b.point_outcome(three, 0.95) == b.CANNOT_TELL and b.point_outcome(None, 0.95) == b.CANNOT_TELL


@pytest.mark.parametrize("blocks", [8, 20])
def test_a_midpoint_midway_is_called_good_or_bad_in_at_most_alpha_of_steps(blocks: int) -> None:
    """The rule's error: a midpoint that lies exactly midway (a gradual change) is placed on a
    side in at most α = 5% of the steps of one point of interest (each side about α/2), at the
    step sizes teiten runs; so a midpoint nearer one end is placed on the other less often."""
    rng = np.random.default_rng(53)
    n = 1500
    found = Counter(b.point_outcome(b.midway(*_step(rng, blocks, 0.12, 0.5), confidence=0.95), 0.95)
                    for _ in range(n))
    # 5% with a Monte Carlo allowance of three standard errors (0.017 at 1,500 steps)
    assert (found[b.BAD] + found[b.GOOD]) / n <= 0.05 + 0.017, found
    assert found[b.BAD] / n <= 0.025 + 0.012 and found[b.GOOD] / n <= 0.025 + 0.012, found


def test_a_commit_12_percent_slower_is_placed_at_the_blocks_a_step_runs() -> None:
    """The case issue 53 asks for: bad 12% slower than good, at a trial noise of 7% (the default
    study's on this project's 2-CPU machine): the spinning commit as the midpoint is placed bad
    (the harmless one before it good) in about 85% of steps of 20 blocks (60% at 12, 75% at 16),
    and never on the wrong side; the rest cannot tell, and bisect then names the range left."""
    rng = np.random.default_rng(12)
    n = 600
    for where, right, wrong in ((1.0, b.BAD, b.GOOD), (0.0, b.GOOD, b.BAD)):
        found = Counter(b.point_outcome(b.midway(*_step(rng, 20, 0.12, where), confidence=0.95), 0.95)
                        for _ in range(n))
        assert found[right] / n >= 0.8 and found[wrong] == 0, (where, found)


def test_a_step_measures_its_ratios_within_a_share_of_the_gap() -> None:
    assert b.step_target(0.88, 6.0) == pytest.approx(4.8)   # 12% slower: 0.4 of 12
    assert b.step_target(0.50, 6.0) == 6.0                   # never above the study's own
    assert b.step_target(0.999, 3.0) == 0.5                  # never below half a percent


def test_a_step_decides_only_when_every_point_agrees() -> None:
    assert b.step_outcome([b.BAD, b.BAD]) == b.BAD
    assert b.step_outcome([b.GOOD]) == b.GOOD
    assert b.step_outcome([b.BAD, b.GOOD]) == b.CANNOT_TELL
    assert b.step_outcome([b.GOOD, b.CANNOT_TELL]) == b.CANNOT_TELL
    assert b.step_outcome([]) == b.CANNOT_TELL


@pytest.mark.parametrize("n", range(1, 40))
def test_the_search_finds_any_first_bad_commit_within_the_bound(n: int) -> None:
    line = [f"c{i}" for i in range(n + 1)]  # c0 good, cn bad
    for first_bad in range(1, n + 1):
        search, mids = b.Search(line), 0
        while not search.done:
            mid = search.midpoint()
            mids += 1
            search.record(mid, b.BAD if mid >= first_bad else b.GOOD)
        assert search.first_bad == f"c{first_bad}"
        assert 2 + mids <= b.most_builds(n) == 2 + math.ceil(math.log2(n))


def test_cannot_tell_leaves_the_range_and_refuses_a_commit_outside_it() -> None:
    search = b.Search(["g", "a", "b", "c", "d"])
    search.record(search.midpoint(), b.CANNOT_TELL)
    assert list(search.left) == ["a", "b", "c", "d"]
    search.record(2, b.GOOD)
    assert list(search.left) == ["c", "d"] and search.midpoint() == 3
    with pytest.raises(ValueError, match="not between"):
        search.record(1, b.BAD)
    with pytest.raises(ValueError, match="a good and a later bad"):
        b.Search(["only"])
