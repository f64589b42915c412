"""``trials: {restore: first}`` (issue 57, item 6; the 2014 shape): the study file's choice and
what it refuses, the plan's series (a point's runs back to back, in the place of its first),
when the runner lets a run go on with the data of the runs before it and when it skips it
instead (a series cut by an interruption, a run that did not count), a repeat placed in its
series, and the estimate's restores. The CLI-level run with real PostgreSQL and pgbench is
tests/integration/test_trial_series.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from teiten.model.errors import SpecError
from teiten.model.results import PlannedTrial
from teiten.run import estimate, plan, series
from teiten.servers.base import Server
from teiten.spec import load_text
from teiten.store import Store
from teiten.workloads import resolve

BASE = """\
study: s
servers:
  - {name: a, install: "17"}
  - {name: b, install: "18"}
workloads:
  - pgecons-update
clients: [1, 4]
repetitions: 3
"""


def _study(extra: str = "trials: {restore: first}\n"):  # noqa: ANN202
    return load_text(BASE + extra, "study.yaml").study


@pytest.mark.parametrize(("extra", "message"), [
    ("trials: {restore: first}\nrepetitions: auto\n",
     "trials: {restore: first} runs each point's repetitions as one series on changing data, "
     "which repetitions: auto cannot add to; give a number of repetitions"),
    ("trials: {restore: first}\ntenants: [[a, b]]\n",
     "trials: {restore: first} keeps one server's data between runs; 'tenants' load several "
     "at once: remove one of them"),
    ("trials: {restore: sometimes}\n", "first"),
])
def test_the_choice_refuses_what_it_cannot_keep_sound(extra: str, message: str) -> None:
    with pytest.raises(SpecError) as info:
        load_text(BASE.replace("repetitions: 3\n", "") + extra, "study.yaml")
    text = str(info.value)
    assert "\n" not in text and message in text, text


def test_each_is_the_default_and_plans_blocks() -> None:
    study = load_text(BASE, "study.yaml").study
    assert study.trials.restore == "each" and not study.series
    assert [t.repetition for t in plan.plan(study)] == [1] * 4 + [2] * 4 + [3] * 4


def test_a_points_runs_are_one_series_in_the_place_of_its_first() -> None:
    each, first = load_text(BASE, "study.yaml").study, _study()
    blocks, runs = plan.plan(each), plan.plan(first)
    assert len(runs) == len(blocks) == 12
    assert {t.trial_id for t in runs} == {t.trial_id for t in blocks}, "ids depend on the point only"
    assert [t.order_index for t in runs] == list(range(12))
    points = [t.point for t in blocks if t.repetition == 1]  # block 1's seeded order
    assert [(t.point, t.repetition) for t in runs] == [(p, r) for p in points for r in (1, 2, 3)]
    design = plan.trial_design(first, runs[1], None)
    assert design["restore"] == "first" and design["block"] == 2


def _trial(server: str, clients: int, rep: int, *, repeat_of: str | None = None) -> PlannedTrial:
    tid = f"{server}-{clients}-{rep}" + (".2" if repeat_of else "")
    return PlannedTrial(tid, 0, server, "pgecons-update", clients, 1, rep, 1.0, repeat_of=repeat_of)


class _Runs:
    """The runner's use of teiten.run.series: before, the trial's status, after."""

    def __init__(self, study) -> None:  # noqa: ANN001
        self.study, self.state, self.skipped = study, series.Series(), []
        self.servers = {"a": Server(), "b": Server()}

    def run(self, trial: PlannedTrial, status: str = "ok") -> int | str:
        """The runs whose changes the trial goes on with, or the reason it is skipped."""
        server = self.servers[trial.server]
        got = series.before(self.state, self.study, trial, server,
                            lambda tid, why: self.skipped.append((tid, why)))
        series.after(self.state, trial, got[0] if got else status, server)
        return got[1] if got else server.keep_data


def test_a_run_goes_on_with_the_runs_before_it_of_its_own_series() -> None:
    runs = _Runs(_study())
    assert [runs.run(_trial("a", 1, r)) for r in (1, 2, 3)] == [0, 1, 2]
    assert [runs.run(_trial("b", 1, r)) for r in (1, 2, 3)] == [0, 1, 2]
    assert runs.run(_trial("a", 4, 1)) == 0, "a new series starts on restored data"
    assert runs.skipped == []


def test_restore_each_and_profile_trials_never_keep_changes() -> None:
    runs = _Runs(load_text(BASE, "study.yaml").study)
    assert [runs.run(_trial("a", 1, r)) for r in (1, 2, 3)] == [0, 0, 0]
    runs = _Runs(_study())
    runs.run(_trial("a", 1, 1))
    profile = PlannedTrial("p", 0, "a", "pgecons-update", 1, 1, 2, 1.0, purpose="profile")
    assert runs.run(profile) == 0


def test_a_cut_series_is_not_continued_on_restored_data() -> None:
    """After resume (nothing run in this process), or after a run that failed, a later run
    would start on restored data: it is skipped with the reason, and so are the runs after it."""
    resumed = _Runs(_study())
    why = resumed.run(_trial("a", 1, 2))
    assert isinstance(why, str) and why.startswith(
        "skipped: run 2 of its series (trials: restore: first) would start on restored data, "
        "not on the data run 1 changed")
    assert resumed.run(_trial("a", 1, 3)) != 2 and [t for t, _ in resumed.skipped] == ["a-1-2", "a-1-3"]
    failed = _Runs(_study())
    failed.run(_trial("a", 1, 1), "failed")
    assert isinstance(failed.run(_trial("a", 1, 2)), str)
    other = _Runs(_study())
    other.run(_trial("a", 1, 1))
    other.run(_trial("a", 4, 1))
    assert isinstance(other.run(_trial("a", 1, 2)), str), "another point ran on the data between"


def test_the_repeat_of_a_disturbed_run_goes_on_in_its_series() -> None:
    runs = _Runs(_study())
    runs.run(_trial("a", 1, 1))
    assert runs.run(_trial("a", 1, 2), "disturbed") == 1
    assert runs.run(_trial("a", 1, 2, repeat_of="a-1-2")) == 2, "it saw the disturbed run's changes too"
    assert runs.run(_trial("a", 1, 3)) == 3


def test_a_repeat_in_a_series_is_placed_right_after_the_disturbed_run(tmp_path: Path) -> None:
    store = Store.open(tmp_path / "s.db", create=True)
    trials = plan.plan(_study())
    sid = store.create_study(
        name="s", source="x.yaml", spec_yaml="study: s", spec_json="{}", seed=1,
        created_at="2026-01-01T00:00:00+00:00", fingerprint={}, teiten_version="0",
        servers=[("a", "local", "{}"), ("b", "local", "{}")], trials=trials)
    repeat = store.add_repeat(sid, trials[1], right_after=True)
    assert repeat.order_index == 2
    order = [r.planned.trial_id for r in store.records(sid)]
    assert order[:4] == [trials[0].trial_id, trials[1].trial_id, repeat.trial_id, trials[2].trial_id]


def test_a_series_restores_once_in_the_estimate() -> None:
    """Each server's clusters restore before a series, not before each run (8 restores fewer of
    12 trials), and the WAL a stretch without a restore writes is a whole series'."""
    rates = estimate.Rates()
    each, first = (load_text(BASE + extra, "study.yaml") for extra in ("", "trials: {restore: first}\n"))
    w = {found.key: found for found in resolve(each)}
    _, around_each = estimate.trials_cost(each.study, w, plan.plan(each.study), rates)
    _, around_first = estimate.trials_cost(first.study, w, plan.plan(first.study), rates)
    restore = rates.restore_fixed_s + w["pgecons-update"].data_bytes() / rates.restore_bytes_per_s
    assert around_each - around_first == pytest.approx(8 * restore)
    assert sorted(estimate.unrestored_s(first.study, w, plan.plan(first.study))) == [180.0] * 4
    assert sorted(estimate.unrestored_s(each.study, w, plan.plan(each.study))) == [60.0] * 12
