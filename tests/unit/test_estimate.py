"""teiten plan's estimate (teiten.run.estimate): the arithmetic of the model, the rates learnt
back from what a run measured, and the file that keeps them."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from teiten.run.estimate import MB, Observed, Rates, estimate, learn
from teiten.run.plan import plan
from teiten.spec import load_text
from teiten.workloads import resolve, variants

STUDY = """
study: est
servers: [{name: a, install: "17"}]
workloads: [tpcb-like, select-only]
scale: 10
clients: [1, 2]
duration: 10s
repetitions: 3
order: sequential
"""

RATES = Rates(prepare_fixed_s=2.0, pgbench_load_bytes_per_s=50 * MB, trial_fixed_s=0.5,
              prewarm_bytes_per_s=500 * MB, restore_fixed_s=0.1, restore_bytes_per_s=100 * MB,
              wal_bytes_per_s=10 * MB)


def _study(text: str = STUDY):  # noqa: ANN202
    loaded = load_text(text, Path("est.yaml"))
    return loaded.study, {w.key: w for w in resolve(loaded)}


def test_the_estimate_adds_loading_windows_cycles_and_restores() -> None:
    study, found = _study()
    trials = plan(study)
    got = estimate(study, found, trials, RATES)
    update, read = found["tpcb-like"].data_bytes(), found["select-only"].data_bytes()
    loading = 2 * 2.0 + (update + read) / (50 * MB)
    # 12 trials of 10 s; each prewarms its data; every tpcb-like trial after the first of
    # its cluster (5 of 6) restores it.
    around = 12 * 0.5 + 6 * (update + read) / (500 * MB) + 5 * (0.1 + update / (100 * MB))
    assert got.trials == 12 and got.windows_s == 120
    assert got.loading_s == pytest.approx(loading)
    assert got.wall_s == pytest.approx(loading + 120 + around)
    assert got.disk_bytes == pytest.approx(2 * (update + read) + 10 * 10 * MB + 64 * MB, abs=1)
    assert "from default rates" in estimate(study, found, trials, Rates()).text()


def test_a_read_only_study_writes_no_wal_and_restores_nothing() -> None:
    study, found = _study(STUDY.replace("[tpcb-like, select-only]", "[select-only]"))
    got = estimate(study, found, plan(study), RATES)
    read = found["select-only"].data_bytes()
    assert got.disk_bytes == 2 * read
    assert got.wall_s == pytest.approx(2.0 + read / (50 * MB) + 60 + 6 * (0.5 + read / (500 * MB)))


def test_auto_repetitions_give_a_range_bounded_by_the_budget() -> None:
    text = STUDY.replace("repetitions: 3", "repetitions: auto\nauto_repetitions: "
                         "{floor: 5, ceiling: 20, target_pct: 5, budget: 5min}")
    study, found = _study(text)
    got = estimate(study, found, plan(study), RATES,
                   most=plan(study, blocks=study.auto_repetitions.ceiling))
    assert got.trials == 20 and got.wall_s_most is not None
    assert got.wall_s < got.wall_s_most == pytest.approx(got.loading_s + 300)  # the budget
    assert "from its floor of blocks to its ceiling or budget" in got.text()


def test_rates_are_learnt_back_from_what_a_run_measured() -> None:
    size = 500 * MB
    cycle = {"seconds": {"begin": 2.0, "restore": 1.0, "prewarm": 0.5, "start": 0.3,
                         "load": 10.2, "end": 0.3, "stop": 0.25, "collect": 0.1}}
    seen = [Observed(cycle, size, 10.0, 200 * MB), Observed(cycle, size, 10.0, 100 * MB)]
    got = learn(Rates(), seen, [(size, False, 12.0), (10 * MB, False, 1.5)], between_s=0.4,
                when="2026-11-25T10:00:00+00:00")
    assert got.prepare_fixed_s == 1.5  # the small data set
    assert got.pgbench_load_bytes_per_s == pytest.approx(size / 10.5)
    assert got.restore_bytes_per_s == pytest.approx(size / 1.0)
    assert got.prewarm_bytes_per_s == pytest.approx(size / 0.5)
    # Everything but the window, the prewarm and the restore, with the time between trials.
    assert got.trial_fixed_s == pytest.approx(12.6 - 10.0 - 0.5 - 1.0 + 0.4)
    assert got.wal_bytes_per_s == pytest.approx(20 * MB)  # the most a trial wrote
    assert got.studies == 1 and "1 earlier run " in got.source()
    assert learn(got, [], [], between_s=0, when="x") is got


def test_the_rates_file_round_trips_and_a_bad_one_gives_the_defaults(tmp_path: Path) -> None:
    RATES.save(tmp_path)
    assert Rates.load(tmp_path) == RATES
    (tmp_path / "rates.json").write_text("{not json")
    assert Rates.load(tmp_path) == Rates()
    assert Rates.load(tmp_path / "nowhere") == Rates()


@pytest.mark.parametrize("body", ["[]", "null", '"x"', '{"trial_fixed_s": 0, "prewarm_bytes_per_s": 0}',
                                  '{"restore_bytes_per_s": "fast", "studies": true}',
                                  '{"wal_bytes_per_s": NaN, "measured_at": 5}',
                                  '{"restore_fixed_s": -1, "studies": -2}'])
def test_a_damaged_rates_file_never_breaks_the_estimate(body: str, tmp_path: Path) -> None:
    (tmp_path / "rates.json").write_text(body)
    rates = Rates.load(tmp_path)
    study, found = _study()
    assert estimate(study, found, plan(study), rates).wall_s > 0
    assert rates.prewarm_bytes_per_s > 0 and rates.restore_bytes_per_s > 0
    assert isinstance(rates.measured_at, str) and rates.studies >= 0 and rates.restore_fixed_s >= 0


def test_an_applications_ramp_up_is_not_learnt_as_fixed_cost() -> None:
    cycle = {"seconds": {"begin": 1.0, "load": 72.0, "end": 0.5, "collect": 0.5}}
    got = learn(Rates(), [Observed(cycle, 10 * MB, 10.0, None, rampup_s=60.0)], [], between_s=0,
                when="x")
    assert got.trial_fixed_s == pytest.approx(74.0 - 10.0 - 60.0)


def test_a_statement_trial_grows_with_its_data() -> None:
    """The fixed part from small data sets, the rate from large ones: a full-size built-in's
    variants are not estimated at a small copy's seconds."""
    small, large = 10 * MB, 64 * MB + 1000 * MB
    seen = [Observed({"seconds": {"load": 2.0}}, small, None, None),
            Observed({"seconds": {"load": 2.5}}, small, None, None),
            Observed({"seconds": {"load": 22.25}}, large, None, None)]
    got = learn(Rates(), seen, [], between_s=0, when="x")
    assert got.statement_trial_s == pytest.approx(2.25)
    assert got.statement_bytes_per_s == pytest.approx(1000 * MB / 20.0)
    study, found = _study("study: s\nservers: [{name: a, install: \"17\"}]\nworkloads:\n"
                          "  - {name: freeze, rows: 1000000000, frozen: [0, 100], cache: [warm]}\n"
                          "repetitions: 1\n")
    [w] = found.values()
    trials = plan(study, variants(study))
    windows = estimate(study, found, trials, got).windows_s
    assert len(trials) == 2 and w.data_bytes() > 100 * 1024 * MB
    assert windows == pytest.approx(2 * (2.25 + (w.data_bytes() - 64 * MB) / (50 * MB)))


def test_restart_after_changes_counts_the_trials_that_go_on_with_a_running_server() -> None:
    """restart: after-changes (issue 24): a read-only trial right after one of the same server
    and workload keeps the server (no stop, no start): the estimate counts those at the
    fixed cost such trials were measured at; a data-changing workload is restarted as ever."""
    text = STUDY.replace("order: sequential", "order: sequential\nrestart: after-changes")
    study, found = _study(text)
    trials = plan(study)
    every = estimate(study, found, trials, replace(RATES, kept_fixed_s=0.2))
    study_all, _ = _study(STUDY)
    restarted = estimate(study_all, found, trials, replace(RATES, kept_fixed_s=0.2))
    # Per block, sequential: tpcb-like 1, 2 (restarted: they change data), select-only 1
    # (restarted: another workload before it), select-only 2 (kept): 3 of the 12 are kept.
    assert restarted.wall_s - every.wall_s == pytest.approx(3 * (0.5 - 0.2))
    cycle = {"seconds": {"begin": 1.0, "load": 10.3, "end": 0.1, "collect": 0.1},
             "start": {"server": "kept running from the trial before"}}
    fresh = {"seconds": {"begin": 2.0, "load": 10.3, "end": 0.4, "collect": 0.1},
             "start": {"server": "restarted"}}
    got = learn(Rates(), [Observed(cycle, 10 * MB, 10.0, None), Observed(fresh, 10 * MB, 10.0, None)],
                [], between_s=0.0, when="x")
    assert got.kept_fixed_s == pytest.approx(1.5) and got.trial_fixed_s == pytest.approx(2.8)
