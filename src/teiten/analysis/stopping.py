"""``repetitions: auto``: when a study has measured enough (docs/STATISTICS.md, "Stopping
when the answer is good enough").

After the floor's blocks, and after each block after them, each ratio to the baseline is looked
at (:func:`widths`) and stops getting blocks in one of two ways:

- **on the decision** (``Width.settled``): its interval at the level of this look lies wholly
  beyond the margin's band [100 − m, 100 + m] or wholly inside it (teiten.analysis.verdicts.
  settles), so that the verdict the report reads from its narrower printed interval cannot
  change. The j-th look (1 at the floor) is judged at 1 − (1 − ℓ)/j (:func:`look_level`): each
  look is one more chance to stop on a chance extreme, and widening by the looks keeps the
  error rates and the printed interval's label (bench/stopping_coverage.py, asserted in
  tests/unit/test_stopping_coverage.py). A large regression is decided at the floor.
- **on width** (``Width.narrow``): its interval at ℓ, the level the report prints (Bonferroni
  over its m ratios, 1 - 0.05/m) and never below 99% (:func:`decide_level`), is within ±target.

A ratio with no interval at the level asked (too few blocks, no successful trial of a server)
never stops. The next block holds only the ratios not yet stopped, each with its reference
server's point (teiten.run.blocks.next_block): each ratio stops by its own interval, as the
simulation runs it. The study stops when every ratio has (:data:`DECIDED`, or :data:`WIDTH`
when all did on width), at the ceiling, or when the next block would overrun the budget, and
never because a test against 100% became significant: that inflates false verdicts (about 12%
instead of 5% here: bench/stopping_coverage.py). The reason it stopped is stored and printed as
it was.

Why the width rule judges at least 99%: a study that stops when its interval happens to be
narrow stops more often when the blocks happened to agree, and the 95% interval it then prints
covers less than the level it states. Judged on the 95% interval itself, the simulation found
up to 1.65 points less (floor 6, ceiling 12) and 1.44 (floor 8, ceiling 16); judged on the 99%
interval, about 1.0 point less at worst with the defaults. The test suite fails when a case
falls 1.5 points below. A study with one server has no ratio; its medians' intervals are judged
on width instead.

The target is chosen with the margin of "no difference within ±m%" (teiten.spec.study.stop_target:
0.6 m by default): the same simulation shows that two equal servers then end "no difference" in
most studies, and that a true difference of 2m is almost never called "no difference".
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from teiten.analysis import verdicts
from teiten.analysis.intervals import (
    Interval,
    Rank,
    median_interval,
    median_rank,
    ratio_interval,
    signed_rank_rank,
)
from teiten.model.results import Point, TrialRecord

DECIDE_CONFIDENCE = 0.99  # the level of the intervals the stopping rule judges
# Why a study stopped adding blocks, or "add".
WIDTH, CEILING, BUDGET, ADD = "width", "ceiling", "budget", "add"
DECIDED = "decided"  # every ratio settled: beyond or within the margin, or known within ±target
NOTHING = "nothing"  # the study measures no TPS whose interval could be judged (timed steps only)


@dataclass(frozen=True)
class AutoSummary:
    """repetitions: auto's rule and its last decision, for a report's Study table: the decision
    (:data:`WIDTH` ... :data:`ADD`; ``unfinished`` before the first), the target and margin it
    judged by, the floor and the ceiling (raised by ``teiten resume --more-blocks`` where the
    decision says so), whether a block held only some points (one a decision added with fewer
    trials than the first block's), and at the ceiling or the budget about how many more blocks,
    and seconds of trials, would decide the ratios still open. ``last`` is the last decision as
    stored (empty before the first): the Study table of a compare report tells two studies'
    summaries apart by it too."""

    decision: str
    target_pct: float
    margin_pct: float
    floor: int | None
    ceiling: int | None
    per_point: bool
    more_blocks: int | None = None
    more_s: float | None = None
    last: Mapping[str, object] = field(default_factory=dict)


@dataclass(frozen=True)
class Widest:
    """The least precise ratio (or median) of a study after a block: its half-width in percent
    (None: no interval at the confidence asked yet) and where it is."""

    pct: float | None
    where: str


@dataclass(frozen=True)
class Width:
    """One ratio (or median) of a study after a block: its half-width in percent (None: no
    interval at the confidence asked yet), where it is, and the points a block repeats to
    narrow it (the server's and its reference's)."""

    pct: float | None
    where: str
    points: tuple[Point, ...]
    settled: bool = False  # its interval at its look's level lies beyond or within the margin
    centre: float | None = None  # the middle of its interval, as a ratio (1.08: 8% faster)

    def known(self, target_pct: float) -> bool:
        """Whether the ratio needs no more blocks: settled by the margin, or within ±target."""
        return self.settled or (self.pct is not None and self.pct <= target_pct)

    def narrow(self, target_pct: float) -> bool:
        """Whether its interval is within ±target (the first way a ratio stops)."""
        return self.pct is not None and self.pct <= target_pct


def half_width_pct(low: float, high: float) -> float:
    """±how many percent an interval [low, high] of a positive quantity spans around its
    centre: 100 (high - low) / (high + low)."""
    return 100 * (high - low) / (high + low)


def known(low: float, high: float, level: float, confidence: float, target_pct: float) -> bool:
    """Whether an interval of the level ``level`` answers to ±``target_pct`` at ``confidence``."""
    return level >= confidence and half_width_pct(low, high) <= target_pct


def decide_level(comparisons: int, alpha: float = verdicts.ALPHA) -> float:
    """The level the rule judges: the report's own (1 - alpha / m over its m ratios,
    Bonferroni), and at least :data:`DECIDE_CONFIDENCE` (at which the simulation shows that
    stopping on width keeps the printed interval's label)."""
    return max(DECIDE_CONFIDENCE, verdicts.family_level(comparisons, alpha))


def look_level(decide: float, look: int) -> float:
    """The level at which a ratio's ``look``-th look (1: at the floor, 2: one block later, ...)
    is judged against the margin: the decide level's error divided by the number of looks
    taken, 1 − (1 − decide) / look. Each look is one more chance to stop on a chance extreme;
    widening by the looks keeps the printed interval's coverage and the verdicts' error rates
    after stopping (tests/unit/test_stopping_coverage.py; docs/STATISTICS.md, "Stopping when
    the answer is good enough")."""
    return 1 - (1 - decide) / max(1, look)


@functools.cache
def first_look(floor: int, level: float) -> int:
    """The block of a ratio's first look: the floor, or the fewest paired blocks whose intervals
    (signed-rank and sign test) reach ``level`` at all, if later (8 for 99%). A block before it
    is no look: nothing could stop there, so it widens no later one."""
    def reaches(rank: Rank | None) -> bool:
        return rank is not None and rank.level >= level - 1e-12

    n = max(floor, 2)
    while not (reaches(signed_rank_rank(n, level)) and reaches(median_rank(n, level))):
        n += 1
    return n


def widest(trials: Sequence[TrialRecord], baseline: str, confidence: float | None = None) -> Widest | None:
    """The widest ratio interval to the ``baseline`` server over every point of the measured
    (TPS) workloads, judged at ``confidence`` (default: :func:`decide_level` of the study's
    ratios), or the widest median interval when the study has one server; None when nothing is
    measured by TPS (a study of timed steps only). A point planned but without a successful
    trial of either server has no interval yet: it is named, never passed over."""
    return widest_of(widths(trials, baseline, confidence))


def widest_of(found: Sequence[Width] | None) -> Widest | None:
    """The least precise of :func:`widths`: the first without an interval, else the widest."""
    if not found:
        return None
    unknown = [w.where for w in found if w.pct is None]
    if unknown:
        return Widest(None, unknown[0])
    pct, where = max(((w.pct, w.where) for w in found if w.pct is not None), key=lambda pw: pw[0])
    return Widest(pct, where)


def widths(trials: Sequence[TrialRecord], baseline: str, confidence: float | None = None, *,
           margin_pct: float | None = None, floor: int | None = None) -> list[Width] | None:
    """Every ratio interval to the ``baseline`` server (every median interval with one server)
    as :func:`widest` judges them, in the order of workload, clients and server; None when
    nothing is measured by TPS. With a ``margin_pct`` and the ``floor`` of blocks, each ratio
    is also judged against the margin at its look's level (:func:`look_level`; its look is
    the last block both its points ran, less the block of its first look, plus one:
    :func:`first_look`): ``settled`` when that interval
    lies wholly beyond [100 − m, 100 + m] or wholly inside it, so that its verdict, read
    from the narrower printed interval, cannot change with more blocks."""
    # A point whose ok trials carry no TPS is one of timed steps: nothing to judge there.
    steps = {t.point for t in trials if t.status == "ok" and t.tps is None}
    values: dict[Point, list[tuple[float, int]]] = {
        t.point: [] for t in trials if not t.planned.variant and not t.planned.purpose and t.point not in steps}
    for t in trials:
        if t.status == "ok" and t.tps is not None and t.point in values:
            values[t.point].append((t.tps, t.planned.repetition))
    if not values:
        return None
    servers = {p.server for p in values}
    ratios = [p for p in values if p.server != baseline]
    level = confidence if confidence is not None else decide_level(len(ratios))
    found: list[Width] = []
    for point in sorted(values, key=_order):
        rows = values[point]
        if len(servers) == 1:
            found.append(Width(_pct(median_interval([v for v, _ in rows], confidence=level), level)
                               if rows else None, _where(point), (point,)))
            continue
        if point.server == baseline:
            continue
        reference = Point(baseline, point.workload, point.clients, point.variant)
        base = values.get(reference, [])
        interval = ratio_interval([v for v, _ in rows], [v for v, _ in base], confidence=level,
                                  blocks=[r for _, r in rows], baseline_blocks=[r for _, r in base]) \
            if rows and base else None
        settled = False
        if interval is not None and margin_pct is not None and floor is not None:
            # The last block both points ran: a reference that ran on for another ratio
            # adds no look to this one.
            last = max({r for _, r in rows} & {r for _, r in base}, default=floor)
            look = last - first_look(floor, level) + 1
            need = look_level(level, look)
            judged = ratio_interval([v for v, _ in rows], [v for v, _ in base], confidence=need,
                                    blocks=[r for _, r in rows], baseline_blocks=[r for _, r in base])
            settled = judged is not None and judged.confidence >= need - 1e-12 and \
                verdicts.settles((judged.low, judged.high), margin_pct)
        found.append(Width(_pct(interval, level), f"{point.server} / {baseline}, "
                           f"{point.workload}, {_clients(point.clients)}", (point, reference), settled,
                           None if interval is None else (interval.low + interval.high) / 2))
    return found or None


def _order(p: Point) -> tuple[str, int, str]:
    return (p.workload, p.clients, p.server)


def _where(p: Point) -> str:
    return f"{p.server}, {p.workload}, {_clients(p.clients)}"


def _clients(n: int) -> str:
    return f"{n} client" if n == 1 else f"{n} clients"


def _pct(interval: Interval | None, confidence: float) -> float | None:
    if interval is None or interval.confidence < confidence:
        return None
    return half_width_pct(interval.low, interval.high)


def decide(found: Sequence[Width] | None, *, blocks: int, target_pct: float, ceiling: int,
           spent_s: float, block_s: float, budget_s: float) -> str:
    """After ``blocks`` blocks: stop on width (every ratio within ±target), on the decision
    (every ratio within ±target or settled by the margin, at least one by the margin), because
    nothing is measured by TPS (``found`` None), at the ceiling, or when one more block
    (``block_s``, the mean so far) would end after the budget; else add a block. A ratio with
    no interval yet (no successful trial, or too few blocks for the level) is never known."""
    if not found:
        return NOTHING
    if all(w.narrow(target_pct) for w in found):
        return WIDTH
    if all(w.known(target_pct) for w in found):
        return DECIDED
    if blocks >= ceiling:
        return CEILING
    if spent_s + block_s > budget_s:
        return BUDGET
    return ADD


def blocks_to_decide(width: Width, blocks: int, *, target_pct: float,
                     margin_pct: float) -> int | None:
    """About how many blocks in all would decide the open ratio ``width`` after ``blocks``, if
    the noise stays as it was: its interval narrows as 1/sqrt(blocks) (its centre kept) until
    it lies beyond or within [100 − m, 100 + m] or within ±target, whichever comes first. An
    estimate (each later look is judged at a slightly higher level); None without an interval."""
    if width.pct is None or width.centre is None or blocks < 1:
        return None
    centre = 100 * width.centre
    low_edge, high_edge = 100 - margin_pct, 100 + margin_pct
    if centre > high_edge:
        room = centre - high_edge
    elif centre < low_edge:
        room = low_edge - centre
    else:
        room = min(centre - low_edge, high_edge - centre)
    wanted = max(target_pct, 100 * room / centre)  # the half-width that decides it, in %
    return max(blocks, math.ceil(blocks * (width.pct / wanted) ** 2))
