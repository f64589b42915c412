"""repetitions: auto stops on width, and the intervals it then prints keep their label
(docs/STATISTICS.md, "Stopping when the answer is good enough"): a seeded simulation of the
stopping rule with the report's own code (bench/stopping_coverage.py), and the rule's decisions."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from bench import interval_coverage as ic
from bench import stopping_coverage as sim

from teiten.analysis import stopping
from teiten.results import LoadFigures, PlannedTrial, TrialRecord

TOLERANCE_POINTS = 1.5


@pytest.fixture(scope="module")
def rows() -> list[sim.StopCoverage]:
    return sim.asserted()


def test_the_printed_interval_covers_as_it_states_after_stopping_on_width(
        rows: list[sim.StopCoverage]) -> None:
    short = [f"{r.noise} ±{r.target_pct:g}%: {100 * r.coverage:.2f}% for a stated {100 * r.level:.2f}%"
             for r in rows if r.shortfall > TOLERANCE_POINTS]
    assert not short, short


def test_the_simulation_exercises_the_rule(rows: list[sim.StopCoverage]) -> None:
    """Studies stop on width at the floor, in between and at the ceiling: the rule is what
    the simulation measures, not a fixed n."""
    assert {r.noise for r in rows} == {"normal", "student-t3", "bimodal", "drift", "bimodal/normal"}
    assert all(r.draws >= 20_000 for r in rows)
    assert max(r.on_width for r in rows) > 0.95 and min(r.on_width for r in rows) < 0.05
    assert any(sim.FLOOR + 1 < r.mean_blocks < sim.CEILING - 1 for r in rows)


def test_stopping_on_significance_would_inflate_false_verdicts() -> None:
    """Why the rule never stops on a significant test: with no true difference, a study that
    stops as soon as its interval excludes 1 ends 'different' about twice as often as 5%."""
    rng = np.random.default_rng(sim.SEED)
    assert sim.stop_on_significance(ic.CASES[0], 10_000, rng) > 0.08


def _trial(server: str, rep: int, tps: float, clients: int = 1) -> TrialRecord:
    figures = LoadFigures(tps=tps, transactions=100, failed_transactions=0, duration_s=1.0,
                          latency_ms_avg=1.0, latency_ms_stddev=0.1, initial_connection_ms=1.0,
                          pgbench_version="18")
    planned = PlannedTrial(f"{server}-{rep}-{clients}", rep, server, "w", clients, 1, rep, 1.0)
    return TrialRecord(planned, study_id=1, study="s", status="ok", figures=figures)


def test_the_widest_ratio_and_the_decisions() -> None:
    steady = [_trial(s, r, (100 if s == "a" else 110) * (1 + 0.001 * r)) for r in range(1, 9)
              for s in ("a", "b")]
    found = stopping.widest(steady, "a", stopping.DECIDE_CONFIDENCE)
    assert found is not None and found.pct is not None and found.pct < 1
    assert found.where == "b / a, w, 1 client"
    assert stopping.decide(found, blocks=8, target_pct=5, ceiling=16, spent_s=80, block_s=10,
                           budget_s=600) == stopping.WIDTH
    few = stopping.widest(steady[:12], "a", stopping.DECIDE_CONFIDENCE)  # 6 blocks: no 99% yet
    assert few is not None and few.pct is None
    assert stopping.decide(few, blocks=6, target_pct=5, ceiling=16, spent_s=60, block_s=10,
                           budget_s=600) == stopping.ADD
    assert stopping.decide(few, blocks=16, target_pct=5, ceiling=16, spent_s=60, block_s=10,
                           budget_s=600) == stopping.CEILING
    assert stopping.decide(few, blocks=6, target_pct=5, ceiling=16, spent_s=595, block_s=10,
                           budget_s=600) == stopping.BUDGET
    assert stopping.decide(None, blocks=6, target_pct=5, ceiling=16, spent_s=0, block_s=10,
                           budget_s=600) == stopping.NOTHING  # nothing measured by TPS to judge
    one = stopping.widest([t for t in steady if t.planned.server == "a"], "a", 0.95)
    assert one is not None and one.where == "a, w, 1 client"  # one server: its medians


def test_a_point_without_a_successful_trial_is_never_known() -> None:
    """Every trial of b disturbed: no ratio exists, so the study is not "known within ±5%"."""
    steady = [_trial(s, r, (100 if s == "a" else 110) * (1 + 0.001 * r)) for r in range(1, 9)
              for s in ("a", "b")]
    disturbed = [replace(t, status="disturbed") if t.planned.server == "b" else t for t in steady]
    found = stopping.widest(disturbed, "a")
    assert found == stopping.Widest(None, "b / a, w, 1 client")
    assert stopping.decide(found, blocks=8, target_pct=5, ceiling=16, spent_s=80, block_s=10,
                           budget_s=600) == stopping.ADD
    everything = [replace(t, status="disturbed") for t in steady]
    assert stopping.widest(everything, "a") == stopping.Widest(None, "b / a, w, 1 client")


def test_the_rule_judges_the_level_the_report_prints() -> None:
    """Six ratios: each printed at 1 - 0.05/6 = 99.17%, which the rule judges (above 99%)."""
    assert stopping.decide_level(6) == pytest.approx(1 - 0.05 / 6)
    assert stopping.decide_level(1) == stopping.DECIDE_CONFIDENCE == 0.99


def test_equal_servers_end_no_difference_and_a_double_margin_never_does() -> None:
    """The target and the margin chosen together (docs/STATISTICS.md, "Stopping when the answer is
    good enough"): at the defaults (margin ±5%, target ±3%, floor 8, ceiling 16, six comparisons)
    two equal servers whose trials vary by 2% within a block end "no difference within ±5%" in at
    least 80% of studies, and a true difference of twice the margin is called "no difference" in
    at most 5% (here: never)."""
    rng = np.random.default_rng(sim.SEED + 7)
    equal = sim.verdict_rates(0.02, 1.0, 4000, rng)
    assert equal.target_pct == 3 and equal.rates["no-difference"] >= 0.80, equal
    for ratio in (1.10, 1 / 1.10):
        far = sim.verdict_rates(0.02, ratio, 4000, rng)
        assert far.rates["no-difference"] <= 0.05, far
    noisy_far = sim.verdict_rates(0.05, 1.10, 4000, rng)
    assert noisy_far.rates["no-difference"] <= 0.05, noisy_far
