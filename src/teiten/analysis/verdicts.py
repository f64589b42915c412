"""The verdict of a ratio, read from its printed interval (docs/STATISTICS.md, "Verdicts" and
"Stopping when the answer is good enough"). Pure functions.

Four words, the same everywhere a ratio is judged:
- **no difference within ±m%**: the interval lies inside [100 − m, 100 + m] (equivalence, as in
  two one-sided tests: a difference larger than the margin is excluded at the interval's level);
- **faster** / **slower**: otherwise, the interval lies wholly above / below 100%;
- **cannot tell**: anything else, with its reason: no ratio exists (a server has no successful
  trial there), one block gives no interval, the blocks are too few for the interval to reach
  the level the report's comparisons need, or the interval straddles 100% and reaches beyond
  the margin.

"Not significant" is never read as "no difference": an interval of 72–309% cannot tell.

The intervals are Bonferroni-corrected over the report's family of m comparisons: each at
1 − α/m, so that every printed interval holds at once with at least 1 − α and no verdict read
from one can disagree with it (Holm's step-down, used before, has no matching intervals). An
interval whose blocks cannot reach 1 − α/m is printed with the level it reaches and judges
nothing.

An interval inside the margin is "no difference within ±m%" even where it also excludes 100%
(99.1–99.9%): the margin is the study's statement of a difference that does not matter, and with
enough blocks every pair of builds differs by some tenth of a percent; the cell's interval still
shows the direction. So equal servers measured precisely read "no difference" (not, in one study
of twenty, "0.7% slower"), and a difference is called faster or slower only when it may exceed
the margin and its direction is known.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from decimal import Decimal

ALPHA = 0.05
MARGIN_PCT = 5.0  # the default margin of "no difference within ±m%" (a study's margin_pct)
PRINTED_PCT_DECIMALS = 1  # a ratio is printed as 103.1%: verdicts judge the printed digits

FASTER = "faster"
SLOWER = "slower"
SAME = "no-difference"
UNSURE = "cannot-tell"
WORDS = (FASTER, SLOWER, SAME, UNSURE)

# Why a point cannot tell.
NO_RATIO = "no-ratio"          # a server has no successful trial at the point
NO_INTERVAL = "no-interval"    # one value a side (one block) gives no interval
SHORT = "short"                # the blocks cannot reach the level the family needs
WIDE = "wide"                  # the interval straddles 100% and reaches beyond the margin


@dataclass(frozen=True)
class Verdict:
    word: str          # one of WORDS
    reason: str = ""   # for UNSURE: NO_RATIO, NO_INTERVAL, SHORT or WIDE

    @property
    def decided(self) -> bool:
        return self.word != UNSURE


@dataclass(frozen=True)
class Judged:
    """A ratio beside the TPS table's (a step along a line of versions, a gain with cores, a
    degradation rate, a latency percentile's ratio), judged as the TPS ratios are: its
    interval's own estimate, the interval at the level its table's family needs, and the
    verdict read from them (:func:`teiten.analysis.judging.ratio`)."""

    estimate: float | None          # the interval's estimate; the ratio of medians without one
    ci: tuple[float, float] | None  # as ratios (1.0 = equal)
    level: float | None             # the level ci reaches
    verdict: Verdict
    required: float                 # the level each interval of the family needs
    comparisons: int                # the family's size (its table's ratios)
    margin_pct: float = MARGIN_PCT
    lower_is_better: bool = False   # a ratio of latencies


def family_level(comparisons: int, alpha: float = ALPHA) -> float:
    """The level each interval of a family of ``comparisons`` is computed at (Bonferroni):
    1 − α/m, so that all of them hold at once with at least 1 − α."""
    return 1 - alpha / max(1, comparisons)


def required_text(level: float) -> str:
    """The level a family needs, as printed: in percent with two decimals rounded *up*
    (1 − 0.05/6 → "99.17", 1 − 0.05/4 → "98.75", 0.95 → "95"), so that it never reads the same
    as a level reached just short of it, which is printed rounded down ("99.2% short of 99.29%")."""
    pct = math.ceil(level * 10000 - 1e-6) / 100
    return f"{pct:.2f}".rstrip("0").rstrip(".")


def judge(interval: tuple[float, float] | None, level: float | None, *, required: float,
          margin_pct: float = MARGIN_PCT, has_ratio: bool = True,
          lower_is_better: bool = False) -> Verdict:
    """The verdict of a ratio whose interval is ``interval`` (as ratios, 1.0 = equal) at the
    level ``level`` it reaches, in a family that needs ``required``. With
    ``lower_is_better`` (a ratio of latencies) "faster" is an interval wholly below 100%."""
    if not has_ratio:
        return Verdict(UNSURE, NO_RATIO)
    if interval is None or level is None:
        return Verdict(UNSURE, NO_INTERVAL)
    if level < required - 1e-9:
        return Verdict(UNSURE, SHORT)
    low, high = printed_pct(interval[0]), printed_pct(interval[1])
    m = Decimal(str(margin_pct))
    if 100 - m <= low and high <= 100 + m:
        return Verdict(SAME)
    if low > 100:
        return Verdict(SLOWER if lower_is_better else FASTER)
    if high < 100:
        return Verdict(FASTER if lower_is_better else SLOWER)
    return Verdict(UNSURE, WIDE)


def settles(interval: tuple[float, float], margin_pct: float = MARGIN_PCT) -> bool:
    """Whether an interval (as ratios) lies wholly beyond [100 − m, 100 + m] or wholly inside
    it, on its printed digits: then every narrower interval inside it reads the same verdict
    (faster or slower; no difference within ±m%), which more blocks cannot change (the stopping
    rule of repetitions: auto, teiten.analysis.stopping)."""
    low, high = printed_pct(interval[0]), printed_pct(interval[1])
    m = Decimal(str(margin_pct))
    return (100 - m <= low and high <= 100 + m) or low > 100 + m or high < 100 - m


def printed_pct(ratio: float) -> Decimal:
    """A ratio in percent as the report prints it (``1.03149`` → ``103.1``): verdicts are read
    from the printed bounds, so that a reader who checks "wholly above 100%" or "inside ±5%"
    against the digits always agrees (an interval from 99.996% prints as 100.0% and is not
    called faster)."""
    return Decimal(f"{ratio * 100:.{PRINTED_PCT_DECIMALS}f}")
