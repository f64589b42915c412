"""What ``teiten bisect`` concludes at each step (issue 35, item 4). Pure functions.

The line is the first-parent line from the good commit to the bad one, both included: the first
bad commit is among the commits after good. Each step measures good, bad and the commit midway
as three servers of one study, at the points where the first study found bad slower than good
(the verdict: an interval wholly below 100% and not within the margin; the points of
interest), and reads the report's verdicts (paired, at the family level of the step's
comparisons):

- the midpoint is **bad** at a point when it is slower than good and no different from bad
  within the margin;
- **good** when it is faster than bad and no different from good within the margin;
- otherwise the step **cannot tell** at that point (the interval straddles a bound of the
  margin, or the midpoint lies between good and bad: a second change, or a gradual one).

A step's outcome is bad (or good) only when every point of interest says so; one point that
cannot tell, or two that disagree, stop the search, which then names the range left. A search
over N commits after good needs at most ⌈log2 N⌉ midpoints, so ⌈log2 N⌉ + 2 builds in all.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from teiten.analysis import verdicts as v

BAD, GOOD, CANNOT_TELL = "bad", "good", "cannot-tell"


def point_outcome(against_good: str, against_bad: str) -> str:
    """The midpoint at one point, from its verdicts against good and against bad."""
    if against_good == v.SLOWER and against_bad == v.SAME:
        return BAD
    if against_bad == v.FASTER and against_good == v.SAME:
        return GOOD
    return CANNOT_TELL


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
