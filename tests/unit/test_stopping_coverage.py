"""repetitions: auto stops on width, and the intervals it then prints keep their label
(docs/STATISTICS.md, "Stopping when the answer is good enough"): a seeded simulation of the
stopping rule with the report's own code (bench/stopping_coverage.py), and the rule's decisions."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest
from bench import interval_coverage as ic
from bench import stopping_coverage as sim

from teiten.analysis import stopping, verdicts
from teiten.model.results import LoadFigures, PlannedTrial, TrialRecord

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


# The noise of the within-block log ratios teiten meets (issue 53: 5 to 20% on a 2-CPU machine),
# the true ratios that try the rule where it is weakest (on the margin: 105%, and 7% off, just
# beyond it), and the ceilings of the default study (12) and of repetitions: auto (16).
DECISION_SDS = (0.02, 0.05, 0.10)
DECISION_RATIOS = (1.0, 1.05, 1 / 1.05, 1.07, 1 / 1.07, 1.25)
DECISION_CEILINGS = (12, 16)
STUDIES = 1500


@pytest.fixture(scope="module")
def decisions() -> list[sim.DecisionRun]:
    rng = np.random.default_rng(sim.SEED + 53)
    runs = [sim.stop_on_decision(sd, ratio, STUDIES, rng, ceiling=ceiling)
            for ceiling in DECISION_CEILINGS for sd in DECISION_SDS for ratio in DECISION_RATIOS]
    return runs + [sim.stop_on_decision(sd, ratio, STUDIES, rng, noise="student-t3", ceiling=16)
                   for sd in (0.03, 0.06) for ratio in (1.0, 1.05, 1.07)]


def _bound(share: float, n: int) -> float:
    """A share plus two standard errors of its estimate from n draws: the simulation's own noise."""
    return share + 2 * math.sqrt(share * (1 - share) / n)


def test_stopping_on_the_decision_keeps_the_error_rates_and_the_label(
        decisions: list[sim.DecisionRun]) -> None:
    """Stop on the decision (docs/STATISTICS.md, "Stopping when the answer is good enough"): a
    ratio stops once its interval, widened by its number of looks, lies beyond or within the
    ±5% margin. Over six comparisons,
    equal servers end faster or slower in at most 5% of studies; a true ±7% ends "no difference"
    in at most 5% of points; the printed interval covers within 1.5 points of its label."""
    studies = [r for r in decisions if r.ratio == 1.0]
    assert all(r.wrong_study <= _bound(0.05, STUDIES) for r in studies), \
        [(r.noise, r.sd, r.ceiling, r.wrong_study) for r in studies]
    seven = [r for r in decisions if abs(abs(math.log(r.ratio)) - math.log(1.07)) < 1e-9]
    assert all(r.rates["no-difference"] <= 0.05 for r in seven), \
        [(r.noise, r.sd, r.ratio, r.rates) for r in seven]
    assert all(r.shortfall <= TOLERANCE_POINTS for r in decisions), \
        [(r.noise, r.sd, r.ratio, r.ceiling, r.shortfall) for r in decisions if r.shortfall > 1]
    # A true difference is never read the other way round.
    assert all(r.wrong_study <= 0.001 for r in decisions if r.ratio != 1.0)


@pytest.mark.parametrize("ceiling", [16, 32])
def test_two_ratios_keep_their_label_printed_at_the_level_they_were_judged(ceiling: int) -> None:
    """A study of two ratios (the default study's shape: read and update at one client count)
    stopped on the decision: printed at 1 - 0.05/2 = 97.5%, below the 99% the rule judged them
    at, a true ±7% at 5% noise covers about 95.5% (up to 2 points short, at ceilings 16 to 40);
    printed at the level the rule judged (the report's at_least for repetitions: auto), every
    case keeps its label within 1.5 points, equal servers end faster or slower in at most 5% of
    studies and a true ±7% "no difference" in at most 5% of ratios."""
    rng = np.random.default_rng(sim.SEED + ceiling)
    runs = [sim.stop_on_decision(sd, ratio, STUDIES, rng, comparisons=2, ceiling=ceiling,
                                 at_least=stopping.DECIDE_CONFIDENCE)
            for sd in (0.05, 0.08) for ratio in (1.0, 1.07, 1 / 1.07)]
    assert {r.level for r in runs} == {0.99}
    assert all(r.shortfall <= TOLERANCE_POINTS for r in runs), [(r.sd, r.ratio, r.shortfall) for r in runs]
    assert all(r.wrong_study <= _bound(0.05, STUDIES) for r in runs if r.ratio == 1.0), runs
    assert all(r.rates["no-difference"] <= 0.05 for r in runs if r.ratio != 1.0), runs


def test_a_large_difference_is_decided_at_the_floor_and_the_rule_stops_early(
        decisions: list[sim.DecisionRun]) -> None:
    """25% apart at the noise of a quiet machine: decided at the floor; equal servers measured
    precisely stop early ("no difference" at the floor), as the width rule alone did too; the
    rule still runs to the ceiling where nothing can be decided."""
    far = [r for r in decisions if r.ratio == 1.25 and r.sd <= 0.05]
    assert far and all(r.at_floor >= 0.95 and r.rates["faster"] == 1.0 for r in far), far
    assert all(r.at_floor >= 0.85 for r in decisions if r.ratio == 1.0 and r.sd == 0.02)
    assert any(r.mean_blocks > r.ceiling - 0.5 for r in decisions)


def test_stopping_on_significance_would_inflate_false_verdicts() -> None:
    """Why the rule never stops on a test against 100% (only on the margin, widened by the
    looks): with no true difference, a study that stops as soon as its interval excludes 1
    ends 'different' about twice as often as 5%."""
    rng = np.random.default_rng(sim.SEED)
    assert sim.stop_on_significance(ic.CASES[0], 10_000, rng) > 0.08


def test_each_look_widens_the_level_the_margin_is_judged_at() -> None:
    assert stopping.look_level(0.99, 1) == pytest.approx(0.99)
    assert stopping.look_level(0.99, 4) == pytest.approx(0.9975)
    assert stopping.look_level(1 - 0.05 / 6, 1) < 1 - 2 / 2 ** 8  # reachable at a floor of 8
    # A floor below the blocks a 99% interval needs: the first look is at 8, not at the floor
    # (bisect's studies run floor 4), and each later look is reachable when it comes.
    assert stopping.first_look(4, 0.99) == stopping.first_look(8, 0.99) == 8
    assert stopping.first_look(10, 0.99) == 10
    assert stopping.first_look(4, 0.95) == 6
    from teiten.analysis.intervals import signed_rank_rank
    for j in range(1, 12):
        rank = signed_rank_rank(8 + j - 1, stopping.look_level(0.99, j))
        assert rank is not None and rank.level >= stopping.look_level(0.99, j)


def test_the_vectorised_reading_is_the_reports() -> None:
    """The simulation reads intervals as teiten.analysis.verdicts does, on the printed digits."""
    rng = np.random.default_rng(1)
    low = np.log(rng.uniform(0.85, 1.15, 4000))
    high = low + np.log(rng.uniform(1.0, 1.2, 4000))
    for lo, hi, settles, word in zip(low, high, sim._settles(low, high, 5), sim._words(low, high, 5),
                                     strict=True):
        interval = (float(np.exp(lo)), float(np.exp(hi)))
        assert verdicts.settles(interval, 5) == bool(settles)
        assert verdicts.judge(interval, 0.995, required=0.99).word == word


def _trial(server: str, rep: int, tps: float, clients: int = 1) -> TrialRecord:
    figures = LoadFigures(tps=tps, transactions=100, failed_transactions=0, duration_s=1.0,
                          latency_ms_avg=1.0, latency_ms_stddev=0.1, initial_connection_ms=1.0,
                          pgbench_version="18")
    planned = PlannedTrial(f"{server}-{rep}-{clients}", rep, server, "w", clients, 1, rep, 1.0)
    return TrialRecord(planned, study_id=1, study="s", status="ok", figures=figures)


def test_the_widest_ratio_and_the_decisions() -> None:
    steady = [_trial(s, r, (100 if s == "a" else 110) * (1 + 0.001 * r)) for r in range(1, 9)
              for s in ("a", "b")]
    found = stopping.widths(steady, "a", stopping.DECIDE_CONFIDENCE)
    widest = stopping.widest_of(found)
    assert widest is not None and widest.pct is not None and widest.pct < 1
    assert widest.where == "b / a, w, 1 client"
    assert stopping.decide(found, blocks=8, target_pct=5, ceiling=16, spent_s=80, block_s=10,
                           budget_s=600) == stopping.WIDTH
    few = stopping.widths(steady[:12], "a", stopping.DECIDE_CONFIDENCE)  # 6 blocks: no 99% yet
    assert few is not None and few[0].pct is None
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
    found = stopping.widths(disturbed, "a")
    assert stopping.widest_of(found) == stopping.Widest(None, "b / a, w, 1 client")
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


def test_a_ratio_beyond_the_margin_settles_at_the_floor_and_its_later_looks_are_wider() -> None:
    """b is 30% faster with 4% noise: its 99% interval at the floor of 8 is wide (beyond ±3%) but
    lies wholly above 105%: settled, and the study stops on the decision. Judged as a later
    look of the same data (floor 6: its third look), the level asked is wider still."""
    rng = np.random.default_rng(4)
    trials = [_trial(s, r, (100 if s == "a" else 130) * (1 + 0.04 * rng.standard_normal()))
              for r in range(1, 9) for s in ("a", "b")]
    (found,) = stopping.widths(trials, "a", margin_pct=5, floor=8) or []
    assert found.settled and found.pct is not None and found.pct > 3 and found.known(3)
    assert stopping.decide([found], blocks=8, target_pct=3, ceiling=16, spent_s=80, block_s=10,
                           budget_s=600) == stopping.DECIDED
    (plain,) = stopping.widths(trials, "a") or []  # no margin given: the width rule alone
    assert not plain.settled and not plain.known(3)
    # Within ±5% but wider than ±3%: settled too ("no difference" cannot change).
    same = [_trial(s, r, 100 * (1 + 0.01 * rng.standard_normal())) for r in range(1, 9) for s in ("a", "b")]
    (level,) = stopping.widths(same, "a", margin_pct=5, floor=8) or []
    assert level.settled
    # Straddling the margin's edge: not settled.
    edge = [_trial(s, r, (100 if s == "a" else 105) * (1 + 0.03 * rng.standard_normal()))
            for r in range(1, 9) for s in ("a", "b")]
    (open_,) = stopping.widths(edge, "a", margin_pct=5, floor=8) or []
    assert not open_.settled and not open_.known(3)


def test_a_reference_that_runs_on_for_another_ratio_adds_no_look_to_a_settled_one() -> None:
    """Three servers, a the baseline: b/a settles at the floor; c/a does not, so block 9 holds
    c and a. b/a pairs the same 8 blocks as before: its look is still the first, and it stays
    settled (a later look's wider level must not reopen a ratio whose data did not change)."""
    rng = np.random.default_rng(9)
    trials = [_trial(s, r, {"a": 100, "b": 118, "c": 104}[s] * (1 + 0.03 * rng.standard_normal()))
              for r in range(1, 9) for s in ("a", "b", "c")]
    before = {w.where: w.settled for w in stopping.widths(trials, "a", margin_pct=5, floor=8) or []}
    trials += [_trial(s, 9, 100 * (1 + 0.03 * rng.standard_normal())) for s in ("a", "c")]
    after = {w.where: w.settled for w in stopping.widths(trials, "a", margin_pct=5, floor=8) or []}
    assert before["b / a, w, 1 client"] and after["b / a, w, 1 client"], (before, after)
