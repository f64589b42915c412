"""What ``teiten bisect`` concludes at each step (issue 35, item 4; issue 53, item 4). Pure
functions.

The line is the first-parent line from the good commit to the bad one, both included: the first
bad commit is among the commits after good. Each step measures good, bad and the commit midway
as three servers of one study, at the points where the first study found bad slower than good
(the verdict: an interval wholly below 100%; the points of interest), and asks at each point on
which side of the point midway between good and bad the midpoint lies (:func:`midway`): in each
block, the midpoint's TPS over the geometric mean of good's and bad's,
mid / sqrt(good x bad), paired within the block as the report's ratios are, and its interval at
the level the step's family (its points of interest) needs:

- the midpoint is **bad** at a point when that interval lies wholly below 100% (nearer bad);
- **good** when it lies wholly above 100% (nearer good);
- otherwise the step **cannot tell** at that point (the interval holds 100%: a midpoint midway
  between the two, as a gradual change or a second change makes it, or too few blocks).

The rule asks where the midpoint lies, not whether it is within a margin of good or of bad, so
a build that differs from its neighbours by a few percent (the A/A floor of builds: another
file, another placement) does not stop it, and a regression smaller than the study's margin is
placed as soon as the blocks place it: a wrong side is named at most in α/2 of the steps
where the midpoint lies exactly midway, and less the nearer it lies to one end
(tests/unit/test_bisection.py simulates it). A step's outcome is bad (or good) only when every
point of interest says so; one point that cannot tell, or two that disagree, stop the search,
which then names the range left. A search over N commits after good needs at most ⌈log2 N⌉
midpoints, so ⌈log2 N⌉ + 2 builds in all.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from teiten.analysis import verdicts as v
from teiten.analysis.intervals import Interval, ratio_interval

BAD, GOOD, CANNOT_TELL = "bad", "good", "cannot-tell"
# The share of the gap between good and bad that a step's ratios are measured within (their
# target_pct): the midpoint lies half the gap from the point midway, and a contrast of the three
# servers measured so is placed (its interval about 0.9 of the ratios' half-width, at the lower
# level of the step's family than the stopping rule's 99%).
TARGET_OF_GAP = 0.4


def midway(good: Mapping[int, float], bad: Mapping[int, float], mid: Mapping[int, float], *,
           confidence: float) -> Interval | None:
    """The midpoint's TPS over the point midway between good's and bad's, per block (each a
    block's TPS of one server): mid / sqrt(good x bad) in the blocks all three ran, and its
    paired interval at ``confidence`` (teiten.analysis.intervals.ratio_interval: signed-rank,
    or the sign test where the block values look skewed). None with fewer than two such blocks."""
    blocks = sorted(set(good) & set(bad) & set(mid))
    if len(blocks) < 2 or any(x[b] <= 0 for b in blocks for x in (good, bad, mid)):
        return None
    return ratio_interval([mid[b] for b in blocks], [math.sqrt(good[b] * bad[b]) for b in blocks],
                          confidence=confidence, blocks=blocks, baseline_blocks=blocks)


def point_outcome(found: Interval | None, required: float) -> str:
    """The midpoint at one point, from :func:`midway`'s interval (``required``: the level the
    step's family needs): bad when it lies wholly below 100% on its printed digits, good when
    wholly above, else cannot tell."""
    if found is None or found.confidence < required - 1e-9:
        return CANNOT_TELL
    if v.printed_pct(found.high) < 100:
        return BAD
    if v.printed_pct(found.low) > 100:
        return GOOD
    return CANNOT_TELL


def step_target(gap_ratio: float, target_pct: float) -> float:
    """The ``target_pct`` of a step's study when the first study found bad at ``gap_ratio`` of
    good (0.88: 12% slower) at its point of interest nearest 100%: :data:`TARGET_OF_GAP` of
    the gap, never above the study's own target, never below 0.5%."""
    return max(0.5, min(target_pct, TARGET_OF_GAP * 100 * abs(1 - gap_ratio)))


def step_outcome(outcomes: Sequence[str]) -> str:
    """bad or good when every point of interest says so, else cannot tell."""
    return outcomes[0] if outcomes and len(set(outcomes)) == 1 else CANNOT_TELL


def most_builds(commits: int) -> int:
    """The builds a search over ``commits`` commits after good may need: good, bad and
    ⌈log2 commits⌉ midpoints."""
    return 2 + math.ceil(math.log2(commits)) if commits > 1 else 2


@dataclass
class Search:
    """The state of a bisection over ``line`` (commit hashes, good first, bad last)."""

    line: Sequence[str]
    good: int = 0
    bad: int = field(default=-1)

    def __post_init__(self) -> None:
        if len(self.line) < 2:
            raise ValueError("a line to bisect holds a good and a later bad commit")
        if self.bad < 0:
            self.bad = len(self.line) - 1

    @property
    def done(self) -> bool:
        """True when the first bad commit is known: bad follows good directly."""
        return self.bad - self.good <= 1

    def midpoint(self) -> int:
        """The index of the commit midway (rounded down) between good and bad."""
        if self.done:
            raise ValueError("the search is done: nothing lies between good and bad")
        return (self.good + self.bad) // 2

    def record(self, mid: int, outcome: str) -> None:
        """Move good or bad to ``mid`` (bad or good); cannot tell moves nothing."""
        if not self.good < mid < self.bad:
            raise ValueError(f"commit {mid} is not between good {self.good} and bad {self.bad}")
        if outcome == BAD:
            self.bad = mid
        elif outcome == GOOD:
            self.good = mid

    @property
    def first_bad(self) -> str:
        return self.line[self.bad]

    @property
    def left(self) -> Sequence[str]:
        """The commits that may still be the first bad one (after good, up to bad)."""
        return self.line[self.good + 1:self.bad + 1]
