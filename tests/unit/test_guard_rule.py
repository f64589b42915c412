"""The noise guard's rule (issue 33, item 4): an absolute limit by default (the calibration,
bench/guard_calibration.py, found that idle CPUs do not shield a trial on a virtual machine);
with spare_fraction above 0, a share of the CPUs the trial left idle where that is more; and
what a stored spec says."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from tests.conftest import run_cli
from tests.truestores import Truth, build

from teiten.host.guard import LIMIT_CPUS, SPARE_FRACTION, ForeignLoad, Rule
from teiten.spec import load_text
from teiten.spec.study import NoiseGuardSpec
from teiten.store import Store

STUDY = """
study: s
servers: [{name: a, install: "17"}]
workloads: [select-only]
"""


def _guard(text: str = "") -> NoiseGuardSpec:
    return load_text(STUDY + text, "<test>").study.noise_guard


def test_by_default_the_limit_is_absolute_whatever_the_trial_left_idle() -> None:
    rule = Rule.of(_guard().model_dump())
    assert rule == Rule() == Rule(LIMIT_CPUS, SPARE_FRACTION) == Rule(0.25, 0.0)
    assert rule.limit(2, 0.8) == rule.limit(16, 1.0) == rule.limit(None, None) == 0.25
    assert rule.before(1, 1, 16) == 0.25
    # What teiten stored before the rule had a form, and a study that sets the limit, read the same.
    assert Rule.of({"enabled": True, "max_foreign_cpus": 0.25, "repeats": 2}) == rule
    assert Rule.of(_guard("noise_guard: {max_foreign_cpus: 0.5, repeats: 1}\n").model_dump()) == \
        Rule(0.5, 0.0)


def test_a_spare_fraction_allows_a_share_of_what_the_trial_left_idle() -> None:
    rule = Rule.of(_guard("noise_guard: {spare_fraction: 0.5}\n").model_dump())
    assert rule == Rule(0.25, 0.5)
    assert rule.limit(2, 1.2) == pytest.approx(0.4)     # 1 client on 2 CPUs: 0.8 left idle
    assert rule.limit(16, 1.2) == pytest.approx(7.4)    # 1 client on 16 CPUs
    assert rule.limit(2, 2.0) == 0.25                   # saturating: the limit itself
    assert rule.limit(2, 2.3) == 0.25                   # own above capacity (rounding)
    assert rule.limit(None, 1.0) == rule.limit(2, None) == 0.25  # unknown: the limit itself
    # Before a trial its own use is taken at its most: on 2 CPUs a 1-client trial may fill them.
    assert rule.before(1, 1, 2) == 0.25 and rule.before(1, 1, 16) == pytest.approx(7.0)
    assert rule.before(64, 8, 16) == 0.25


def test_beside_a_saturating_trial_any_fraction_is_the_absolute_limit() -> None:
    """Where the trial and the foreign load fill the machine (own + foreign = capacity), the
    rule marks exactly the foreign load above max_foreign_cpus, for any fraction below 1."""
    rng = random.Random(7)
    for _ in range(2000):
        capacity = rng.choice([1, 2, 4, 16, 64])
        foreign = rng.uniform(0, capacity)
        rule = Rule(rng.uniform(0.05, 1.0), rng.uniform(0.0, 0.99))
        found = ForeignLoad(2.0, 2 * foreign, own_cpu_s=2 * (capacity - foreign), capacity=capacity)
        assert (found.cpus > rule.limit_of(found)) == (found.cpus > rule.limit_cpus + 1e-12)


@pytest.mark.parametrize("body, wrong", [
    ("{spare_fraction: -0.1}", "spare_fraction"), ("{spare_fraction: 1.5}", "spare_fraction"),
    ("{max_foreign_cpus: 0}", "max_foreign_cpus")])
def test_bad_guard_values_are_refused(body: str, wrong: str) -> None:
    with pytest.raises(Exception, match=wrong):
        _guard(f"noise_guard: {body}\n")


def test_a_stored_foreign_load_of_before_the_own_cpu_reads_back() -> None:
    old = {"window_s": 3.0, "cpu_s": 0.6, "top": [], "memory": {}}
    found = ForeignLoad.from_json(old)
    assert found.own_cpu_s is None and found.capacity is None and found.own_cpus is None
    assert Rule(0.25, 0.5).limit_of(found) == 0.25
    new = ForeignLoad(3.0, 0.6, own_cpu_s=3.6, capacity=2)
    assert ForeignLoad.from_json(new.to_json()) == new and new.own_cpus == pytest.approx(1.2)


@pytest.mark.parametrize("lang, said", [
    ("en", "The study sets noise_guard.spare_fraction 0.5: a trial kept beside it foreign load up "
           "to 0.5 of the CPUs it left idle, where that is more than 0.25 CPUs."),
    ("ja", "この試験は noise_guard.spare_fraction 0.5 を指定しています")])
def test_the_report_says_when_idle_cpus_were_allowed_foreign_load(tmp_path: Path, lang: str,
                                                                  said: str) -> None:
    reports = {}
    for name, guard in (("spare", {"enabled": True, "max_foreign_cpus": 0.25, "spare_fraction": 0.5,
                                   "repeats": 2}),
                        ("plain", {"enabled": True, "max_foreign_cpus": 0.25, "spare_fraction": 0.0,
                                   "repeats": 2})):
        path = build(tmp_path / f"{name}.db", Truth(blocks=3, cv=0.01, clients=(1,),
                                                     workloads=("pgecons-read",)))
        store = Store.open(path)
        try:
            store.update_spec(store.studies()[0].id, {"noise_guard": guard})
        finally:
            store.close()
        done = run_cli("report", "--store", str(path), "--out", str(tmp_path / name), "--lang", lang)
        assert done.returncode == 0, done.stderr
        # Markdown escapes the underscores of noise\_guard.spare\_fraction.
        reports[name] = (tmp_path / name / "report.md").read_text().replace("\\_", "_")
    assert said in reports["spare"]
    assert "spare_fraction" not in reports["plain"]


def test_programs_are_named_summed_and_read_back_and_old_loads_name_their_processes() -> None:
    """Issue 53, item 6: the names the guard gives (worded from the stored load), in both
    languages; a load stored before programs were kept names its busy processes by pid, in CPUs,
    leaving out pid 1 and the idle ones."""
    from teiten.host.guard import Consumer, Program, who

    server = {"pid": 40, "port": 5433, "datadir": "/x"}
    found = ForeignLoad(2.0, 6.0, (Consumer(11, "stress-ng-cpu", 1.9),), programs=(
        Program("stress-ng", 10, 3, 3.8), Program("pgbench", 30, 6, 2.4, server),
        Program("postgres", 50, 4, 1.6, {"pid": 50, "port": 5434}), Program("python3", 60, 1, 0.2)))
    assert ForeignLoad.from_json(found.to_json()) == found
    assert who(found) == ("stress-ng (3 processes) 1.9 CPUs, another benchmark: pgbench against the "
                          "server on port 5433 (data directory /x), 1.2 CPUs, another PostgreSQL "
                          "server: the server on port 5434 (4 processes), 0.8 CPUs")
    assert who(found, "ja") == ("stress-ng（3 プロセス）1.9 CPU、別のベンチマーク: ポート 5433 のサーバー"
                                "（データディレクトリ /x）に対する pgbench、1.2 CPU、別の PostgreSQL "
                                "サーバー: ポート 5434 のサーバー（4 プロセス）、0.8 CPU")
    idle = ForeignLoad(2.0, 0.9, programs=(Program("init", 1, 1, 0.8), Program("sh", 7, 1, 0.05),
                                           Program("python3", 8, 1, 0.04)))
    assert who(idle) == "sh (pid 7) 0.0 CPUs, python3 (pid 8) 0.0 CPUs"  # none busy: the largest
    old = ForeignLoad.from_json({"window_s": 2.0, "cpu_s": 2.2, "memory": {}, "top": [
        {"pid": 1, "name": "systemd", "cpu_s": 1.2}, {"pid": 812, "name": "stress-ng", "cpu_s": 1.0},
        {"pid": 9, "name": "bash", "cpu_s": 0.06}]})
    assert old.programs is None and who(old) == "stress-ng (pid 812) 0.5 CPUs"
    with pytest.raises(ValueError, match="programs"):
        ForeignLoad.from_json({**found.to_json(), "programs": {"a": 1}})
