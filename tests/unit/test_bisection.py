"""teiten.analysis.bisection: what a step concludes from its verdicts, and that the search over
N commits after good names the first bad one in at most ⌈log2 N⌉ midpoints, wherever it is."""

from __future__ import annotations

import math

import pytest

from teiten.analysis import bisection as b
from teiten.analysis import verdicts as v


@pytest.mark.parametrize(("against_good", "against_bad", "outcome"), [
    (v.SLOWER, v.SAME, b.BAD),
    (v.SAME, v.FASTER, b.GOOD),
    (v.SLOWER, v.FASTER, b.CANNOT_TELL),  # between the two: a second or a gradual change
    (v.SLOWER, v.SLOWER, b.CANNOT_TELL),  # slower than bad too
    (v.SAME, v.SAME, b.CANNOT_TELL),      # within the margin of both: good and bad too close
    (v.UNSURE, v.SAME, b.CANNOT_TELL),    # an interval across a bound of the margin
    (v.SAME, v.UNSURE, b.CANNOT_TELL),
    (v.FASTER, v.FASTER, b.CANNOT_TELL),
])
def test_a_point_is_bad_or_good_only_when_both_verdicts_say_so(against_good: str, against_bad: str,
                                                               outcome: str) -> None:
    assert b.point_outcome(against_good, against_bad) == outcome


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
