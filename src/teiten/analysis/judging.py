"""The ratios a report prints beside the TPS table's, judged as those are (docs/STATISTICS.md,
"Verdicts"): each version against the one before it, a core count's peak against the fewer
cores', a degradation rate, a latency percentile against the baseline's.

Each table is its own family: its m ratios each get an interval at 1 − α/m (Bonferroni), so
that the table's intervals hold together with at least 1 − α, and its note says so. The
printed ratio is the interval's own Hodges–Lehmann estimate (never the ratio of the medians,
which can lie outside it), and the verdict is read from the printed interval with the study's
margin, in the four words of :mod:`teiten.analysis.verdicts`.
"""

from __future__ import annotations

import statistics
from collections.abc import Hashable, Sequence

from teiten.analysis import intervals, verdicts
from teiten.analysis.verdicts import Judged, Verdict


def ratio(values: Sequence[float], baseline: Sequence[float], *, comparisons: int,
          margin_pct: float = verdicts.MARGIN_PCT, alpha: float = verdicts.ALPHA,
          blocks: Sequence[Hashable] = (), baseline_blocks: Sequence[Hashable] = (),
          lower_is_better: bool = False) -> Judged:
    """``values`` against ``baseline`` in a family of ``comparisons`` ratios: the estimate, the
    interval at the family's level (by block where the two share blocks) and the verdict."""
    required = verdicts.family_level(comparisons, alpha)

    def judged(estimate: float | None, ci: tuple[float, float] | None, level: float | None,
               verdict: Verdict) -> Judged:
        return Judged(estimate, ci, level, verdict, required, max(1, comparisons), margin_pct,
                      lower_is_better)

    if not values or not baseline or statistics.median(baseline) <= 0:
        return judged(None, None, None, Verdict(verdicts.UNSURE, verdicts.NO_RATIO))
    found = intervals.ratio_interval(values, baseline, confidence=required, blocks=blocks,
                                     baseline_blocks=baseline_blocks)
    if found is None:
        return judged(statistics.median(values) / statistics.median(baseline), None, None,
                      Verdict(verdicts.UNSURE, verdicts.NO_INTERVAL))
    ci = (found.low, found.high)
    return judged(found.value, ci, found.confidence,
                  verdicts.judge(ci, found.confidence, required=required, margin_pct=margin_pct,
                                 lower_is_better=lower_is_better))


def as_judged(p_estimate: float | None, ci: tuple[float, float] | None, level: float | None,
              verdict: str, reason: str, *, comparisons: int, alpha: float = verdicts.ALPHA,
              margin_pct: float = verdicts.MARGIN_PCT, required: float = 0.0) -> Judged:
    """A TPS ratio the report already judged (a point of the TPS table), as a :class:`Judged`,
    so that a table showing the same pair says the same thing in the same digits (``required``:
    the level the TPS table's interval was computed at, where it is not the family's)."""
    return Judged(p_estimate, ci, level, Verdict(verdict, reason),
                  required or verdicts.family_level(comparisons, alpha), max(1, comparisons), margin_pct)
