"""Interval coverage: how often each interval of the report covers the true value, against the level
it states, per method, noise and number of repetitions (python -m bench.interval_coverage).

The simulation of docs/STATISTICS.md "Testing a method": repetitions drawn from normal noise
(CV 5%), log-normal noise, Student-t with 3 degrees of freedom, a bimodal mixture (80% at 1.0, 20% at
0.3: a machine that was busy for a while) and a slow linear drift, n = 3 ... 30, with a fixed seed. It
runs the report's own code (teiten.analysis.intervals, whose batch functions take one sample per row),
so a change of method shows here. tests/unit/test_interval_coverage.py asserts the same cases: no
coverage more than 1.5 points below the stated level.

Methods:
- median: the order-statistic interval of one point's median; the true value is the noise's median.
- paired ratio: the signed-rank interval of the within-block log ratios (the servers share repetition
  sets); the drift is shared by both servers within a block. True value: a known ratio (1.05).
- unpaired ratio: the two-sample Hodges-Lehmann interval (no shared blocks); the drift runs over each
  server's repetitions alike.
- paired ratio, asymmetric: one server's noise is bimodal, the other's normal, so the within-block
  difference is skewed; the true value is the ratio of the two true medians. The report's method
  (the sign-test interval where the ratios look skewed: teiten.analysis.intervals.paired_bounds)
  is asserted from 6 blocks: at 95% up to 15 blocks, and at a six-ratio family's 99.17% for
  every n; its stated level is the mean over the draws of the level each interval states.
Cases reported here and not asserted, because their assumptions do not hold:
- paired ratio, asymmetric, below 6 blocks and at 95% beyond 15 (the median of the ratios that
  the sign test brackets is not quite the ratio of the medians: 1 to 1.6 points short at 3 blocks,
  2 at 20 blocks, 3 at 30), and the signed-rank and sign-test intervals each alone.
- median, percentile bootstrap: the method the report used before, labelled 95% whatever n.
"""

from __future__ import annotations

import argparse
import math
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from teiten.analysis import intervals

SIZES = (3, 4, 5, 6, 8, 10, 15, 20, 30)
DRAWS = 10_000
SEED = 20260509
CONFIDENCE = 0.95
RATIO = 1.05  # the true ratio of the two servers: a shift of log(1.05) on the log scale
CHUNK = 2_000  # draws per batch, so that n = 30 (900 differences a draw) stays small in memory

Noise = Callable[[np.random.Generator, tuple[int, int]], np.ndarray]  # (draws, n) -> TPS factors


def _normal(rng: np.random.Generator, shape: tuple[int, int]) -> np.ndarray:
    return 1 + 0.05 * rng.standard_normal(shape)


def _lognormal(rng: np.random.Generator, shape: tuple[int, int]) -> np.ndarray:
    return np.exp(0.25 * rng.standard_normal(shape))


def _student_t3(rng: np.random.Generator, shape: tuple[int, int]) -> np.ndarray:
    # On the log scale, so that the heavy tail never gives a TPS <= 0.
    return np.exp(0.05 * rng.standard_t(3, shape))


BUSY_SHARE, BUSY_LEVEL, MODE_CV = 0.2, 0.3, 0.03


def _bimodal(rng: np.random.Generator, shape: tuple[int, int]) -> np.ndarray:
    level = np.where(rng.random(shape) < BUSY_SHARE, BUSY_LEVEL, 1.0)
    return level * (1 + MODE_CV * rng.standard_normal(shape))


# The mixture's median lies in the upper mode (the lower one holds 20% < 50%): the point where the
# upper mode's CDF reaches (0.5 - 0.2) / 0.8 (the lower mode is entirely below it).
BIMODAL_MEDIAN = 1 + MODE_CV * statistics.NormalDist().inv_cdf((0.5 - BUSY_SHARE) / (1 - BUSY_SHARE))


DRIFT = 0.10  # from the first repetition to the last: 10% slower or faster


def drift_factor(n: int) -> np.ndarray:
    """A slow linear drift over the n repetitions (blocks), level 1 at the middle of the study."""
    return 1 + DRIFT * (np.arange(n) / max(n - 1, 1) - 0.5)


@dataclass(frozen=True)
class Case:
    noise: str
    draw: Noise
    median: float        # the true median of one server's TPS factors
    drift: bool = False  # multiply by drift_factor over the repetitions


CASES = (
    Case("normal", _normal, 1.0),
    Case("log-normal", _lognormal, 1.0),
    Case("student-t3", _student_t3, 1.0),
    Case("bimodal", _bimodal, BIMODAL_MEDIAN),
    Case("drift", _normal, 1.0, drift=True),
)


@dataclass(frozen=True)
class Coverage:
    method: str
    noise: str
    n: int
    level: float      # the level the method states for this n
    coverage: float   # the share of draws whose interval covered the true value
    draws: int

    @property
    def shortfall(self) -> float:
        """How far, in points of percent, the coverage fell below the stated level (negative: above)."""
        return 100 * (self.level - self.coverage)


def _draw(case: Case, rng: np.random.Generator, shape: tuple[int, int]) -> np.ndarray:
    x = case.draw(rng, shape)
    return x * drift_factor(shape[1]) if case.drift else x


def _chunks(draws: int) -> list[int]:
    return [min(CHUNK, draws - start) for start in range(0, draws, CHUNK)]


def median_coverage(case: Case, n: int, draws: int, rng: np.random.Generator) -> Coverage:
    covered, level = 0, 0.0
    for size in _chunks(draws):
        found = intervals.median_bounds(_draw(case, rng, (size, n)), CONFIDENCE)
        assert found is not None
        low, high, level = found
        covered += int(np.count_nonzero((low <= case.median) & (case.median <= high)))
    return Coverage("median", case.noise, n, level, covered / draws, draws)


def paired_coverage(case: Case, n: int, draws: int, rng: np.random.Generator,
                    baseline: Case | None = None, *, method: str = "report",
                    confidence: float = CONFIDENCE) -> Coverage:
    """Server a = RATIO x server b, each block's drift shared by both (it cancels in the log ratio).
    With ``baseline``, server b's noise is that case's (the asymmetric case). ``method``: the
    report's (the signed-rank interval of the within-block log ratios, or the sign-test interval
    of their median where they look skewed: teiten.analysis.intervals.paired_bounds), or one of
    the two alone ("signed-rank", "sign-test"). The stated level is the mean over the draws of
    the level each draw's interval states."""
    bounds = {"report": intervals.paired_bounds, "signed-rank": intervals.walsh_bounds,
              "sign-test": intervals.median_bounds}[method]
    other = baseline or case
    truth = np.log(RATIO * case.median / other.median)
    covered, stated = 0, 0.0
    for size in _chunks(draws):
        a, b = RATIO * case.draw(rng, (size, n)), other.draw(rng, (size, n))
        shared = drift_factor(n) if case.drift else 1.0
        found = bounds(np.log(a * shared) - np.log(b * shared), confidence)
        assert found is not None
        low, high, level = found
        covered += int(np.count_nonzero((low <= truth) & (truth <= high)))
        stated += float(np.sum(np.broadcast_to(level, low.shape)))
    name = "paired ratio" + (", asymmetric" if baseline else "") + \
        ("" if method == "report" else f", {method} interval alone") + \
        ("" if confidence == CONFIDENCE else f", asked {100 * confidence:.2f}%")
    return Coverage(name, case.noise if baseline is None else f"{case.noise}/{other.noise}", n,
                    stated / draws, covered / draws, draws)


def unpaired_coverage(case: Case, n: int, draws: int, rng: np.random.Generator) -> Coverage:
    truth = np.log(RATIO)
    covered, level = 0, 0.0
    for size in _chunks(draws):
        a, b = RATIO * _draw(case, rng, (size, n)), _draw(case, rng, (size, n))
        found = intervals.shift_bounds(np.log(a), np.log(b), CONFIDENCE)
        assert found is not None
        low, high, level = found
        covered += int(np.count_nonzero((low <= truth) & (truth <= high)))
    return Coverage("unpaired ratio", case.noise, n, level, covered / draws, draws)


def bootstrap_coverage(case: Case, n: int, draws: int, rng: np.random.Generator,
                       rounds: int = 400) -> Coverage:
    """The percentile bootstrap of the median that the report used before, labelled 95%."""
    covered = 0
    for size in _chunks(draws):
        x = _draw(case, rng, (size, n))
        picks = rng.integers(0, n, size=(size, rounds, n))
        meds = np.median(np.take_along_axis(x[:, None, :], picks, axis=2), axis=2)
        low, high = np.quantile(meds, [0.025, 0.975], axis=1)
        covered += int(np.count_nonzero((low <= case.median) & (case.median <= high)))
    return Coverage("median, percentile bootstrap (before)", case.noise, n, CONFIDENCE, covered / draws,
                    draws)


FAMILY = 1 - 0.05 / 6  # the level of each of the quick study's six ratios (Bonferroni)
# The asymmetric case is asserted from 6 blocks (where 95% can be reached at all) to 15 at 95%,
# and from 6 on at the family's level; outside, it falls short (reported_only).
ASYMMETRIC_MIN_N, ASYMMETRIC_MAX_N = 6, 15


def asserted(draws: int = DRAWS, seed: int = SEED) -> list[Coverage]:
    """Every case the test suite asserts: each method, noise and n, one seeded generator; and
    the asymmetric paired case with the report's method, from ASYMMETRIC_MIN_N blocks: at 95% up
    to ASYMMETRIC_MAX_N, and at a family's level (six ratios) for every n."""
    rng = np.random.default_rng(seed)
    out = []
    for run in (median_coverage, paired_coverage, unpaired_coverage):
        for case in CASES:
            for n in SIZES:
                out.append(run(case, n, draws, rng))
    bimodal, normal = CASES[3], CASES[0]
    out += [paired_coverage(bimodal, n, draws, rng, baseline=normal) for n in SIZES
            if ASYMMETRIC_MIN_N <= n <= ASYMMETRIC_MAX_N]
    out += [paired_coverage(bimodal, n, draws, rng, baseline=normal, confidence=FAMILY)
            for n in SIZES if n >= ASYMMETRIC_MIN_N]
    return out


def reported_only(draws: int = DRAWS, seed: int = SEED + 1) -> list[Coverage]:
    """The cases shown but not asserted (their assumptions do not hold)."""
    rng = np.random.default_rng(seed)
    bimodal, normal = CASES[3], CASES[0]
    out = [paired_coverage(bimodal, n, draws, rng, baseline=normal) for n in SIZES
           if not ASYMMETRIC_MIN_N <= n <= ASYMMETRIC_MAX_N]
    out += [paired_coverage(bimodal, n, draws, rng, baseline=normal, method=m) for m in
            ("signed-rank", "sign-test") for n in SIZES]
    out += [bootstrap_coverage(case, n, min(draws, 2_000), rng) for case in CASES for n in SIZES]
    return out


def table(rows: list[Coverage]) -> str:
    """Per method: the level it states for each n, then the coverage per noise, in percent."""
    lines = []
    for method in dict.fromkeys(r.method for r in rows):
        mine = [r for r in rows if r.method == method]
        sizes = sorted({r.n for r in mine})
        lines.append(f"{method} ({mine[0].draws} draws per cell)")
        lines.append(f"  {'n':<22}" + "".join(f"{n:>7}" for n in sizes))
        levels = {r.n: r.level for r in mine}
        # Rounded down, as the report prints it: a label never promises more than it gives.
        lines.append(f"  {'stated level %':<22}" + "".join(f"{math.floor(1000 * levels[n]) / 10:>7.1f}"
                                                          for n in sizes))
        for noise in dict.fromkeys(r.noise for r in mine):
            cells = {r.n: r for r in mine if r.noise == noise}
            lines.append(f"  {noise:<22}" + "".join(
                f"{100 * cells[n].coverage:>6.1f}{'!' if cells[n].shortfall > 1.5 else ' '}" for n in sizes))
        lines.append("")
    lines.append("! coverage more than 1.5 points below the stated level")
    return "\n".join(lines)


def main(draws: int = DRAWS) -> list[Coverage]:
    start = time.perf_counter()
    rows = asserted(draws)
    print(table(rows), flush=True)
    print(f"\n(asserted cases: {time.perf_counter() - start:.1f} s)\n")
    print("Not asserted (assumptions that do not hold):\n")
    print(table(reported_only(draws)), flush=True)
    return rows


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--draws", type=int, default=DRAWS)
    main(ap.parse_args().draws)
