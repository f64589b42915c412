"""The stopping rule of ``repetitions: auto`` keeps the intervals' label (python -m bench.stopping_coverage).

A study with ``repetitions: auto`` runs ``floor`` blocks, then adds one block at a time until every
ratio's interval is within ±target (teiten.analysis.stopping.known at decide_level: the report's
Bonferroni level, at least 99%) or the ceiling is reached. The coverage part checks a single
comparison: the interval it then prints is the report's 95% paired interval of the within-block log
ratios of all its blocks (signed-rank, or the sign test's where they look skewed), judged at 99%;
the cases are interval_coverage's, and its asymmetric one (one server bimodal, the other normal).
``--decide 0.95`` shows the rule that judges the printed interval itself, which covers up to about
1.7 points less than it states. The verdict part shows how
studies of the quick study's six comparisons end, at several noise levels and true ratios.
Because the number of blocks depends on the data, that interval's coverage could differ from the
fixed-n coverage the label states; stopping on width (precision) is known to change it little, and
stopping on significance to inflate false verdicts badly (docs/STATISTICS.md). This simulation
checks both, with the report's own code, on the noise cases of bench/interval_coverage.py:

- stop on width: the coverage of the final interval against the level it states (the smallest level
  stated over the draws); tests/unit/test_stopping_coverage.py fails when it falls 1.5 points below;
- stop on significance (shown, not used): under no difference, how often a study that stops as soon
  as its interval excludes 1 ends with a false "different" verdict, against the 5% a fixed-n test
  allows.
"""

from __future__ import annotations

import argparse
import time
from dataclasses import dataclass

import numpy as np

from bench import interval_coverage as ic
from teiten.analysis import intervals, stopping, verdicts
from teiten.spec.study import stop_target

FLOOR, CEILING = 8, 16  # the defaults of repetitions: auto (spec.study.AutoRepetitions)
TARGETS = (4.0, 5.0, 6.0, 8.0)  # ±%: at CV 5%, from mostly the ceiling to mostly the floor
DRAWS = 40_000  # the worst case's shortfall then has a standard error of about 0.1 point
SEED = 20261124


@dataclass(frozen=True)
class StopCoverage:
    noise: str
    target_pct: float
    floor: int
    ceiling: int
    level: float         # the level the final intervals state, on average over the draws
    coverage: float      # the share of final intervals that cover the true ratio
    mean_blocks: float
    on_width: float      # the share of draws that stopped on width (the rest at the ceiling)
    draws: int

    @property
    def shortfall(self) -> float:
        return 100 * (self.level - self.coverage)


def _log_ratios(case: ic.Case, rng: np.random.Generator, size: int, n: int, ratio: float,
                other: ic.Case | None = None) -> np.ndarray:
    """(size, n) within-block log ratios of a = ratio x b, each block's drift shared by both;
    b's noise is ``other``'s where given (the asymmetric case: one server stalls, the other not)."""
    a, b = ratio * case.draw(rng, (size, n)), (other or case).draw(rng, (size, n))
    shared = ic.drift_factor(n) if case.drift else 1.0
    return np.log(a * shared) - np.log(b * shared)


def _known(judged: tuple[np.ndarray, np.ndarray, np.ndarray | float], decide: float,
           target_pct: float) -> np.ndarray:
    """teiten.analysis.stopping.known for every draw at once (each its own level where the
    report's method mixes signed-rank and sign-test intervals)."""
    low, high, level = judged
    return (np.asarray(level) >= decide) & np.asarray(
        stopping.half_width_pct(np.exp(low), np.exp(high)) <= target_pct)


def stop_on_width(case: ic.Case, target_pct: float, draws: int, rng: np.random.Generator, *,
                  floor: int = FLOOR, ceiling: int = CEILING,
                  decide: float = stopping.DECIDE_CONFIDENCE,
                  other: ic.Case | None = None) -> StopCoverage:
    """The report's paired interval (teiten.analysis.intervals.paired_bounds: signed-rank, or
    the sign test where the ratios look skewed) judged and printed after each block."""
    truth = np.log(ic.RATIO * case.median / (other or case).median)
    d = _log_ratios(case, rng, draws, ceiling, ic.RATIO, other)
    stopped = np.zeros(draws, dtype=bool)
    covered = np.zeros(draws, dtype=bool)
    blocks = np.full(draws, ceiling)
    stated = np.zeros(draws)
    for n in range(floor, ceiling + 1):
        judged = intervals.paired_bounds(d[:, :n], decide)
        found = intervals.paired_bounds(d[:, :n], ic.CONFIDENCE)
        assert found is not None and judged is not None
        done = _known(judged, decide, target_pct) if n < ceiling else np.ones(draws, dtype=bool)
        low, high, level = found
        now = done & ~stopped
        if now.any():
            covered[now] = (low[now] <= truth) & (truth <= high[now])
            blocks[now] = n
            stated[now] = np.broadcast_to(level, low.shape)[now]
        stopped |= now
    on_width = float(np.mean(blocks < ceiling))
    noise = case.noise if other is None else f"{case.noise}/{other.noise}"
    return StopCoverage(noise, target_pct, floor, ceiling, float(stated.mean()), float(covered.mean()),
                        float(blocks.mean()), on_width, draws)


def stop_on_significance(case: ic.Case, draws: int, rng: np.random.Generator, *, floor: int = FLOOR,
                         ceiling: int = CEILING) -> float:
    """Under no difference (ratio 1): the share of studies that end with an interval excluding 1
    when each stops as soon as one does (or at the ceiling)."""
    d = _log_ratios(case, rng, draws, ceiling, 1.0)
    false = np.zeros(draws, dtype=bool)
    for n in range(floor, ceiling + 1):
        found = intervals.walsh_bounds(d[:, :n], ic.CONFIDENCE)
        assert found is not None
        low, high, _ = found
        false |= (low > 0) | (high < 0)
    return float(false.mean())


@dataclass(frozen=True)
class VerdictRates:
    """How studies that stop on width end, at one per-trial noise and one true ratio: the share
    of each verdict of the printed (Bonferroni-corrected) interval."""

    cv: float
    ratio: float
    target_pct: float
    margin_pct: float
    comparisons: int
    rates: dict[str, float]
    mean_blocks: float


def verdict_rates(cv: float, ratio: float, draws: int, rng: np.random.Generator, *,
                  margin_pct: float = verdicts.MARGIN_PCT, target_pct: float | None = None,
                  comparisons: int = 6, floor: int = FLOOR, ceiling: int = CEILING) -> VerdictRates:
    """Studies of ``comparisons`` ratios (the quick study's six by default), each block's two
    trials with normal noise of ``cv`` and a drift both share, stopped by the rule
    (teiten.analysis.stopping.decide_level, the target of teiten.spec.study.stop_target), and
    judged as the report judges (teiten.analysis.verdicts.judge) one of the ratios."""
    target = stop_target(target_pct, margin_pct)
    level = verdicts.family_level(comparisons)
    decide = stopping.decide_level(comparisons)
    a = ratio * (1 + cv * rng.standard_normal((draws, ceiling)))
    b = 1 + cv * rng.standard_normal((draws, ceiling))
    d = np.log(a) - np.log(b)
    stopped = np.zeros(draws, dtype=bool)
    words = np.full(draws, "", dtype=object)
    blocks = np.full(draws, ceiling)
    for n in range(floor, ceiling + 1):
        judged = intervals.paired_bounds(d[:, :n], decide)
        printed = intervals.paired_bounds(d[:, :n], level)
        assert judged is not None and printed is not None
        done = _known(judged, decide, target) if n < ceiling else np.ones(draws, dtype=bool)
        now = done & ~stopped
        stated = np.broadcast_to(printed[2], printed[0].shape)
        for i in np.flatnonzero(now):
            words[i] = verdicts.judge((float(np.exp(printed[0][i])), float(np.exp(printed[1][i]))),
                                      float(stated[i]), required=level, margin_pct=margin_pct).word
        blocks[now] = n
        stopped |= now
    rates = {w: float(np.mean(words == w)) for w in verdicts.WORDS}
    return VerdictRates(cv, ratio, target, margin_pct, comparisons, rates, float(blocks.mean()))


VERDICT_CVS = (0.01, 0.02, 0.03, 0.05)  # per trial, within a block


@dataclass(frozen=True)
class DecisionRun:
    """Studies stopped by the whole rule of repetitions: auto (each ratio on its own: settled by
    the margin at its look's level, or known within ±target; else the ceiling), at one noise and
    one true ratio: how each ratio's printed interval then reads, how often it covers the truth,
    and how many blocks it took."""

    noise: str
    sd: float             # the within-block log ratios' standard deviation (the noise's scale)
    ratio: float
    floor: int
    ceiling: int
    comparisons: int
    rates: dict[str, float]  # each verdict's share of the ratios
    wrong_study: float       # the share of studies in which some ratio read the wrong direction
    level: float             # the printed level (the family's)
    coverage: float          # the share of printed intervals that cover the true ratio
    mean_blocks: float
    at_floor: float          # the share of ratios decided at the floor
    draws: int

    @property
    def shortfall(self) -> float:
        return 100 * (self.level - self.coverage)


def _settles(low: np.ndarray, high: np.ndarray, margin_pct: float) -> np.ndarray:
    """teiten.analysis.verdicts.settles for every draw at once (log bounds, printed digits)."""
    lo, hi = np.round(100 * np.exp(low), 1), np.round(100 * np.exp(high), 1)
    return ((100 - margin_pct <= lo) & (hi <= 100 + margin_pct)) | (lo > 100 + margin_pct) | \
        (hi < 100 - margin_pct)


def _words(low: np.ndarray, high: np.ndarray, margin_pct: float) -> np.ndarray:
    """teiten.analysis.verdicts.judge of every printed interval at its level (log bounds)."""
    lo, hi = np.round(100 * np.exp(low), 1), np.round(100 * np.exp(high), 1)
    return np.where((100 - margin_pct <= lo) & (hi <= 100 + margin_pct), verdicts.SAME,
                    np.where(lo > 100, verdicts.FASTER, np.where(hi < 100, verdicts.SLOWER, verdicts.UNSURE)))


def stop_on_decision(sd: float, ratio: float, studies: int, rng: np.random.Generator, *,
                     noise: str = "normal", comparisons: int = 6, floor: int = FLOOR,
                     ceiling: int = CEILING, margin_pct: float = verdicts.MARGIN_PCT,
                     target_pct: float | None = None, at_least: float = 0.0) -> DecisionRun:
    """``studies`` studies of ``comparisons`` ratios, each ratio's within-block log ratios
    log(ratio) + sd * noise (normal, or Student-t with 3 degrees of freedom), each
    ratio stopped by the rule of teiten.analysis.stopping (settled by the margin at the level of
    its look, stopping.look_level; or within ±target at stopping.decide_level; else the
    ceiling) and read as the report reads its printed interval at the family's level, or
    ``at_least`` where that is higher (the report prints a study that stopped on its intervals
    at the level the rule judged them at: teiten.analysis.compare.with_family)."""
    target = stop_target(target_pct, margin_pct)
    level = max(verdicts.family_level(comparisons), at_least)
    decide = stopping.decide_level(comparisons)
    size = studies * comparisons
    e = rng.standard_normal((size, ceiling)) if noise == "normal" else rng.standard_t(3, (size, ceiling))
    d = np.log(ratio) + sd * e
    truth = np.log(ratio)  # symmetric noise: the centre the interval estimates
    stopped = np.zeros(size, dtype=bool)
    words = np.full(size, verdicts.UNSURE, dtype=object)
    covered = np.zeros(size, dtype=bool)
    blocks = np.full(size, ceiling)
    for n in range(floor, ceiling + 1):
        printed = intervals.paired_bounds(d[:, :n], level)
        wide = intervals.paired_bounds(d[:, :n], decide)
        need = stopping.look_level(decide, n - floor + 1)
        look = intervals.paired_bounds(d[:, :n], need)
        assert printed is not None and wide is not None
        done = _known((wide[0], wide[1], wide[2]), decide, target)
        if look is not None:
            done |= (np.asarray(look[2]) >= need - 1e-12) & _settles(look[0], look[1], margin_pct)
        if n == ceiling:
            done = np.ones(size, dtype=bool)
        now = done & ~stopped
        reached = np.broadcast_to(np.asarray(printed[2]) >= level - 1e-12, (size,))
        said = np.where(reached, _words(printed[0], printed[1], margin_pct), verdicts.UNSURE)
        words[now] = said[now]
        covered[now] = ((printed[0] <= truth) & (truth <= printed[1]))[now]
        blocks[now] = n
        stopped |= now
    # The wrong direction: either, for equal servers; the other one, for a true difference.
    wrong_ratio = np.isin(words, (verdicts.FASTER, verdicts.SLOWER)) if ratio == 1 else \
        words == (verdicts.SLOWER if ratio > 1 else verdicts.FASTER)
    return DecisionRun(noise, sd, ratio, floor, ceiling, comparisons,
                       {w: float(np.mean(words == w)) for w in verdicts.WORDS},
                       float(wrong_ratio.reshape(studies, comparisons).any(axis=1).mean()),
                       level, float(covered.mean()), float(blocks.mean()),
                       float(np.mean(blocks == floor)), size)


def asserted(draws: int = DRAWS, seed: int = SEED, *,
             decide: float = stopping.DECIDE_CONFIDENCE) -> list[StopCoverage]:
    """Every noise case whose studies do stop on width at these targets (the log-normal case's
    spread keeps every study to the ceiling: a fixed n, asserted in bench/interval_coverage)."""
    rng = np.random.default_rng(seed)
    bimodal, normal = ic.CASES[3], ic.CASES[0]
    return [stop_on_width(case, target, draws, rng, decide=decide)
            for case in ic.CASES if case.noise != "log-normal" for target in TARGETS] + \
        [stop_on_width(bimodal, target, draws, rng, decide=decide, other=normal) for target in TARGETS]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--draws", type=int, default=DRAWS)
    parser.add_argument("--decide", type=float, default=stopping.DECIDE_CONFIDENCE,
                        help="the level of the interval the rule judges")
    args = parser.parse_args(argv)
    t0 = time.monotonic()
    rows = asserted(args.draws, decide=args.decide)
    print(f"stop when the {100 * args.decide:g}% interval is within the target; the 95% interval is "
          f"printed; floor {FLOOR}, ceiling {CEILING}, true ratio {ic.RATIO}, {args.draws} draws each")
    print(f"{'noise':<12} {'target':>7} {'level':>7} {'coverage':>9} {'short':>6} {'blocks':>7} "
          f"{'on width':>9}")
    for r in rows:
        print(f"{r.noise:<12} {r.target_pct:>6g}% {100 * r.level:>6.2f}% {100 * r.coverage:>8.2f}% "
              f"{r.shortfall:>6.2f} {r.mean_blocks:>7.2f} {100 * r.on_width:>8.1f}%")
    print(f"worst shortfall: {max(r.shortfall for r in rows):.2f} points")
    rng = np.random.default_rng(SEED + 1)
    print("\nstop on significance (not used), no true difference: false verdicts")
    for case in ic.CASES:
        print(f"{case.noise:<12} {100 * stop_on_significance(case, args.draws, rng):6.2f}% "
              f"(a fixed-n test allows 5%)")
    print(f"\nverdicts after stopping: margin ±{verdicts.MARGIN_PCT:g}%, target ±{stop_target(None, 5):g}%, "
          f"6 comparisons, floor {FLOOR}, ceiling {CEILING}, {args.draws // 10} draws each")
    print(f"{'cv':>5} {'ratio':>6} {'no diff':>8} {'faster':>7} {'slower':>7} {'cannot':>7} {'blocks':>7}")
    for cv in VERDICT_CVS:
        for ratio in (1.0, 1.05, 1.10):
            r = verdict_rates(cv, ratio, args.draws // 10, rng)
            print(f"{cv:>5g} {ratio:>6g} {100 * r.rates[verdicts.SAME]:>7.1f}% "
                  f"{100 * r.rates[verdicts.FASTER]:>6.1f}% {100 * r.rates[verdicts.SLOWER]:>6.1f}% "
                  f"{100 * r.rates[verdicts.UNSURE]:>6.1f}% {r.mean_blocks:>7.2f}")
    print(f"\nstop on the decision (a ratio settled beyond or within ±{verdicts.MARGIN_PCT:g}% at "
          f"its look's level, or within ±{stop_target(None, 5):g}%), 6 comparisons, floor {FLOOR}, "
          f"{args.draws // 20} studies each; wrong: the share of studies with a ratio read the "
          f"wrong way (either way for equal servers)")
    print(f"{'noise':<10} {'sd':>5} {'ceil':>4} {'ratio':>6} {'no diff':>8} {'faster':>7} "
          f"{'slower':>7} {'cannot':>7} {'wrong':>6} {'short':>6} {'blocks':>7} {'floor':>6}")
    for noise in ("normal", "student-t3"):
        for ceiling in (12, 16):
            for sd in (0.02, 0.05, 0.10):
                for ratio in (1.0, 1.05, 1.07, 1.25):
                    d = stop_on_decision(sd, ratio, args.draws // 20, rng, noise=noise, ceiling=ceiling)
                    print(f"{noise:<10} {sd:>5g} {ceiling:>4} {ratio:>6g} "
                          f"{100 * d.rates[verdicts.SAME]:>7.2f}% {100 * d.rates[verdicts.FASTER]:>6.2f}% "
                          f"{100 * d.rates[verdicts.SLOWER]:>6.2f}% {100 * d.rates[verdicts.UNSURE]:>6.2f}% "
                          f"{100 * d.wrong_study:>5.2f}% {d.shortfall:>6.2f} {d.mean_blocks:>7.2f} "
                          f"{100 * d.at_floor:>5.1f}%")
    print(f"\n({time.monotonic() - t0:.1f} s)")


if __name__ == "__main__":
    main()
