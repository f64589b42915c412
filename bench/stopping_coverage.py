"""The stopping rule of ``repetitions: auto`` keeps the intervals' label (python -m bench.stopping_coverage).

A study with ``repetitions: auto`` runs ``floor`` blocks, then adds one block at a time until every
ratio's 99% interval is within ±target (teiten.analysis.stopping.known at DECIDE_CONFIDENCE) or the
ceiling is reached. The interval it then prints is the 95% signed-rank interval of the within-block
log ratios of all its blocks. ``--decide 0.95`` shows the rule that judges the printed interval
itself, which covers up to about 1.7 points less than it states.
Because the number of blocks depends on the data, that interval's coverage could differ from the
fixed-n coverage the label states; stopping on width (precision) is known to change it little, and
stopping on significance to inflate false verdicts badly (../shared/STATISTICS.md). This simulation
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
from teiten.analysis import intervals, stopping

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


def _log_ratios(case: ic.Case, rng: np.random.Generator, size: int, n: int, ratio: float) -> np.ndarray:
    """(size, n) within-block log ratios of a = ratio x b, each block's drift shared by both."""
    a, b = ratio * case.draw(rng, (size, n)), case.draw(rng, (size, n))
    shared = ic.drift_factor(n) if case.drift else 1.0
    return np.log(a * shared) - np.log(b * shared)


def stop_on_width(case: ic.Case, target_pct: float, draws: int, rng: np.random.Generator, *,
                  floor: int = FLOOR, ceiling: int = CEILING,
                  decide: float = stopping.DECIDE_CONFIDENCE) -> StopCoverage:
    truth = np.log(ic.RATIO)
    d = _log_ratios(case, rng, draws, ceiling, ic.RATIO)
    stopped = np.zeros(draws, dtype=bool)
    covered = np.zeros(draws, dtype=bool)
    blocks = np.full(draws, ceiling)
    stated = np.zeros(draws)
    for n in range(floor, ceiling + 1):
        judged = intervals.walsh_bounds(d[:, :n], decide)
        found = intervals.walsh_bounds(d[:, :n], ic.CONFIDENCE)
        assert found is not None and judged is not None
        done = stopping.known(np.exp(judged[0]), np.exp(judged[1]), judged[2], decide, target_pct) \
            if n < ceiling else np.ones(draws, dtype=bool)
        low, high, level = found
        now = done & ~stopped
        if now.any():
            covered[now] = (low[now] <= truth) & (truth <= high[now])
            blocks[now] = n
            stated[now] = level
        stopped |= now
    on_width = float(np.mean(blocks < ceiling))
    return StopCoverage(case.noise, target_pct, floor, ceiling, float(stated.mean()), float(covered.mean()),
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


def asserted(draws: int = DRAWS, seed: int = SEED, *,
             decide: float = stopping.DECIDE_CONFIDENCE) -> list[StopCoverage]:
    """Every noise case whose studies do stop on width at these targets (the log-normal case's
    spread keeps every study to the ceiling: a fixed n, asserted in bench/interval_coverage)."""
    rng = np.random.default_rng(seed)
    return [stop_on_width(case, target, draws, rng, decide=decide)
            for case in ic.CASES if case.noise != "log-normal" for target in TARGETS]


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
    print(f"\n({time.monotonic() - t0:.1f} s)")


if __name__ == "__main__":
    main()
