"""The noise guard's rule (issue 33, item 4): relative to the CPUs a trial left idle, never
below its floor, absolute when a study sets max_foreign_cpus; and what a stored spec says."""

from __future__ import annotations

import random

import pytest

from teiten.monitors.foreign import FLOOR_CPUS, SPARE_FRACTION, ForeignLoad, Rule
from teiten.spec import load_text
from teiten.spec.study import NoiseGuardSpec

STUDY = """
study: s
servers: [{name: a, install: "17"}]
workloads: [select-only]
"""


def test_the_limit_is_a_share_of_what_the_trial_left_idle() -> None:
    rule = Rule()
    assert rule.limit(2, 1.2) == pytest.approx(0.4)     # 1 client on 2 CPUs: 0.8 left idle
    assert rule.limit(16, 1.2) == pytest.approx(7.4)    # 1 client on 16 CPUs: a browser passes
    assert rule.limit(2, 2.0) == FLOOR_CPUS             # saturating: only the floor
    assert rule.limit(2, 2.3) == FLOOR_CPUS             # own above capacity (rounding): the floor
    assert rule.limit(None, 1.0) == rule.limit(2, None) == FLOOR_CPUS  # unknown: the floor
    assert Rule(fraction=1.0, floor=0.1).limit(4, 1.0) == pytest.approx(3.0)
    # Absolute: whatever the trial left idle.
    assert Rule(absolute=0.5).limit(16, 1.0) == Rule(absolute=0.5).limit(None, None) == 0.5


def test_beside_a_saturating_trial_the_rule_is_the_floor() -> None:
    """Where the trial and the foreign load fill the machine (own + foreign = capacity), the
    relative rule marks exactly the foreign load above the floor, for any fraction below 1."""
    rng = random.Random(7)
    for _ in range(2000):
        capacity = rng.choice([1, 2, 4, 16, 64])
        foreign = rng.uniform(0, capacity)
        rule = Rule(fraction=rng.uniform(0.01, 0.99), floor=rng.uniform(0.05, 1.0))
        found = ForeignLoad(2.0, 2 * foreign, own_cpu_s=2 * (capacity - foreign), capacity=capacity)
        assert (found.cpus > rule.limit_of(found)) == (found.cpus > rule.floor + 1e-12)


def test_a_quiet_moment_before_a_trial_takes_its_own_use_at_its_most() -> None:
    rule = Rule()
    assert rule.before(1, 1, 2) == FLOOR_CPUS            # 2 CPUs: a 1-client trial may fill them
    assert rule.before(1, 1, 16) == pytest.approx(7.0)   # 16 CPUs: 14 certainly left idle
    assert rule.before(64, 8, 16) == FLOOR_CPUS


def test_the_spec_defaults_are_the_rules() -> None:
    guard = load_text(STUDY, "<test>").study.noise_guard
    assert guard.max_foreign_cpus is None
    assert Rule.of(guard.model_dump()) == Rule() == Rule(None, SPARE_FRACTION, FLOOR_CPUS)
    assert Rule.of(NoiseGuardSpec(spare_fraction=0.75, floor_cpus=0.1).model_dump()) == \
        Rule(fraction=0.75, floor=0.1)


def test_a_study_that_sets_max_foreign_cpus_keeps_the_absolute_rule() -> None:
    study = load_text(STUDY + "noise_guard: {max_foreign_cpus: 0.5, repeats: 1}\n", "<test>").study
    assert Rule.of(study.noise_guard.model_dump()) == Rule(absolute=0.5)
    # A store made before the relative rule holds its default, 0.25: it was judged absolutely.
    stored = {"enabled": True, "max_foreign_cpus": 0.25, "repeats": 2}
    assert Rule.of(stored) == Rule(absolute=0.25)


@pytest.mark.parametrize("body, wrong", [
    ("{spare_fraction: 0}", "spare_fraction"), ("{spare_fraction: 1.5}", "spare_fraction"),
    ("{floor_cpus: -1}", "floor_cpus"), ("{max_foreign_cpus: 0}", "max_foreign_cpus")])
def test_bad_guard_values_are_refused(body: str, wrong: str) -> None:
    with pytest.raises(Exception, match=wrong):
        load_text(STUDY + f"noise_guard: {body}\n", "<test>")


def test_a_stored_foreign_load_of_before_the_rule_reads_back() -> None:
    old = {"window_s": 3.0, "cpu_s": 0.6, "top": [], "memory": {}}
    found = ForeignLoad.from_json(old)
    assert found.own_cpu_s is None and found.capacity is None and found.own_cpus is None
    assert Rule().limit_of(found) == FLOOR_CPUS
    new = ForeignLoad(3.0, 0.6, own_cpu_s=3.6, capacity=2)
    assert ForeignLoad.from_json(new.to_json()) == new and new.own_cpus == pytest.approx(1.2)
