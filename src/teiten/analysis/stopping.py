"""``repetitions: auto``: when a study has measured enough (docs/STATISTICS.md, "Stopping
when the answer is good enough").

After each block (repetition set) the study asks: is every ratio to the baseline known within
±target? It judges the interval the report prints (the signed-rank interval of the within-block
log ratios, Bonferroni-corrected over the report's m ratios: 1 - 0.05/m), and never below 99%
(:func:`decide_level`): a ratio is known when that interval is within ±target, and one that has
no such interval yet (too few blocks for the level, or no successful trial of a server) is not.
The next block holds only the ratios not yet known, each with its reference server's point
(:func:`widths`, teiten.blocks.next_block): each ratio stops on its own width, as the simulation
runs it. The study stops on width, or at the ceiling, or when the next block would overrun the budget,
and never because a test became significant: stopping on significance inflates false verdicts
(about 12% instead of 5% here: bench/stopping_coverage.py). The reason it stopped is stored and
printed as it was: "every ratio known" only when every ratio was.

Why never below 99%: a study that stops when its interval happens to be narrow stops more often
when the blocks happened to agree, and the 95% interval it then prints covers less than the
level it states for its number of blocks. Judged on the 95% interval itself, the simulation
(bench/stopping_coverage.py: normal, t3, bimodal and drifting noise, targets ±2 to ±10%)
found up to 1.65 points less (floor 6, ceiling 12) and 1.44 (floor 8, ceiling 16); judged on
the 99% interval, about 1.0 point less at worst with the defaults (floor 8, ceiling 16,
40,000 draws: 1.04 to 1.21 over four seeds, normal or drifting noise at ±5 or ±6%). The test suite
fails when a case falls 1.5 points below (tests/unit/test_stopping_coverage.py). A study with
one server has no ratio; its medians' intervals are judged instead.

The target is chosen with the margin of "no difference within ±m%" (teiten.spec.study.stop_target:
0.6 m by default): the same simulation shows that two equal servers then end "no difference" in
most studies, and that a true difference of 2m is almost never called "no difference".
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from teiten.analysis import verdicts
from teiten.analysis.intervals import Interval, median_interval, ratio_interval
from teiten.results import Point, TrialRecord

DECIDE_CONFIDENCE = 0.99  # the level of the intervals the stopping rule judges
# Why a study stopped adding blocks, or "add".
WIDTH, CEILING, BUDGET, ADD = "width", "ceiling", "budget", "add"
NOTHING = "nothing"  # the study measures no TPS whose interval could be judged (timed steps only)


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

    def known(self, target_pct: float) -> bool:
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


def widths(trials: Sequence[TrialRecord], baseline: str, confidence: float | None = None
           ) -> list[Width] | None:
    """Every ratio interval to the ``baseline`` server (every median interval with one server)
    as :func:`widest` judges them, in the order of workload, clients and server; None when
    nothing is measured by TPS."""
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
        found.append(Width(_pct(interval, level), f"{point.server} / {baseline}, "
                           f"{point.workload}, {_clients(point.clients)}", (point, reference)))
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


def decide(found: Widest | None, *, blocks: int, target_pct: float, ceiling: int,
           spent_s: float, block_s: float, budget_s: float) -> str:
    """After ``blocks`` blocks: stop on width (every ratio within ±target), because nothing is
    measured by TPS (``found`` None), at the ceiling, or when one more block (``block_s``, the
    mean so far) would end after the budget; else add a block. A ratio with no interval yet
    (no successful trial, or too few blocks for the level) is never "within ±target"."""
    if found is None:
        return NOTHING
    if found.pct is not None and found.pct <= target_pct:
        return WIDTH
    if blocks >= ceiling:
        return CEILING
    if spent_s + block_s > budget_s:
        return BUDGET
    return ADD
