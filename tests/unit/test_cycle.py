"""A trial's cycle as the report and 'teiten show' read it (teiten.analysis.cycle): the phases
the server timed are taken out of the runner's begin and end, the measured window out of the
load, and a study's trials add up."""

from __future__ import annotations

import pytest

from teiten.analysis.cycle import PHASES, add, machine_time, phases, start_key, started_from
from teiten.model.cycles import cycle as stored_cycle
from teiten.model.cycles import start as stored_start
from teiten.model.studyrecord import StoredRun, StudyRecord
from teiten.servers.base import Cycle

BODY = {"seconds": {"begin": 1.0, "restore": 0.4, "start": 0.3, "prewarm": 0.1,
                    "checkpoint": 0.05, "load": 10.2, "end": 0.5, "stop": 0.3, "collect": 0.2},
        "start": {"data": "restored", "restore": "reflink clone", "after": "changed",
                  "server": "restarted"}}
STORED = stored_cycle(BODY)  # as the store's reader gives it


def test_phases_split_begin_end_and_load() -> None:
    got = phases(STORED, 10.0).seconds
    assert list(got) == list(PHASES)
    assert got["begin other"] == pytest.approx(0.15)
    assert got["window"] == 10.0 and got["around window"] == pytest.approx(0.2)
    assert got["end other"] == pytest.approx(0.2)
    assert sum(got.values()) == pytest.approx(1.0 + 10.2 + 0.5 + 0.2)  # nothing counted twice
    assert phases(STORED, 10.0).overhead() == pytest.approx(11.9 / 10.0)


def test_a_workload_without_a_window_is_all_window() -> None:
    got = phases(STORED, None)
    assert got.window == 10.2 and got.seconds["around window"] == 0


def test_a_study_adds_up_and_counts_its_starting_states() -> None:
    loaded = stored_cycle({"seconds": {"begin": 0.5, "start": 0.4, "load": 5.0, "end": 0.2, "stop": 0.2},
                           "start": {"data": "as loaded", "server": "restarted"}})
    external = stored_cycle({"seconds": {"begin": 0.1, "load": 5.0, "end": 0.0},
                             "start": {"data": "as the last trial left it",
                                       "server": "not restarted (external)"}})
    found = machine_time({"a": STORED, "b": loaded, "c": external}, {"a": 10.0, "b": 5.0, "c": 5.0})
    assert found is not None and found.trials == 3 and found.restarted == 2
    assert found.starts == {"reflink": 1, "loaded": 1, "unchanged": 1}
    assert found.phases.total == pytest.approx(
        add([phases(STORED, 10.0), phases(loaded, 5.0), phases(external, 5.0)]).total)
    assert found.phases.window == 20.0
    assert machine_time({}, {}) is None


def test_how_a_trial_started_in_words() -> None:
    assert started_from(STORED.start) == ("data restored from the snapshot by reflink clone; "
                                            "server restarted")
    crashed = stored_start({"data": "restored", "restore": "incremental copy", "after": "crash"})
    assert started_from(crashed) == "data restored from the snapshot by incremental copy after a crash"
    assert start_key(stored_start({"data": "restored", "restore": "full copy"})) == "full"
    assert "not recorded" in started_from(stored_start({}))


def test_the_cycle_record_adds_up_repeated_phases() -> None:
    cycle = Cycle()
    for _ in range(2):
        with cycle.phase("stop"):
            pass
    assert set(cycle.to_json()["seconds"]) == {"stop"}  # type: ignore[arg-type]


def test_a_leftover_stop_is_counted_once() -> None:
    cycle = stored_cycle({"seconds": {"begin": 3.0, "stop_leftover": 1.5, "start": 0.5, "load": 10.0,
                                      "end": 0.5, "stop": 0.4, "collect": 0.1}})
    got = phases(cycle, 10.0)
    assert got.seconds["stop"] == pytest.approx(1.9) and got.seconds["begin other"] == pytest.approx(1.0)
    assert got.total == pytest.approx(3.0 + 10.0 + 0.5 + 0.1)


def test_a_trial_that_measured_nothing_has_no_window() -> None:
    got = phases(stored_cycle({"seconds": {"begin": 1.0, "load": 4.0, "end": 0.2}}), 0.0)
    assert got.window == 0 and got.seconds["around window"] == 4.0 and got.overhead() is None


RUN = {"started": "2026-11-26T00:00:00Z", "wall_s": 30.0, "clusters_loaded": 2, "trials_run": 1,
       "seconds": {"start": 0.8, "setup": 0.4, "load data": 6.0, "quiet check": 2.0,
                   "trials": 20.0, "finish": 0.8}}


def _runs(*stored: dict[str, object]) -> tuple[StoredRun, ...]:
    """The runs as the study's record reads them from its stored spec."""
    return StudyRecord.from_json({"runs": list(stored)}).runs


def test_the_runs_wall_time_splits_into_cycles_between_and_outside() -> None:
    found = machine_time({"a": STORED}, {"a": 10.0}, _runs(RUN, {**RUN, "clusters_loaded": 0}))
    assert found is not None and found.run is not None
    run = found.run
    assert (run.runs, run.wall, run.clusters_loaded) == (2, 60.0, 2)
    parts = run.parts(found.phases.total, found.trials)
    assert parts is not None
    assert parts == pytest.approx({"cycles": 11.9, "between": 40.0 - 11.9, "load data": 12.0,
                                   "quiet check": 4.0, "start": 2.4, "finish": 1.6})
    assert sum(parts.values()) == pytest.approx(run.wall)  # the parts are the whole wall time
    # Trials that ran in a run that kept no time (it was interrupted): no split is claimed,
    # whether their cycles fit in the kept runs' time or not.
    assert run.parts(found.phases.total, 3) is None
    assert run.parts(41.0, 1) is None
    assert machine_time({"a": STORED}, {"a": 10.0}, _runs({**RUN, "trials_run": None})
                        ).run.parts(11.9, 1) is None  # type: ignore[union-attr]
    assert machine_time({"a": STORED}, {"a": 10.0}).run is None  # type: ignore[union-attr]


def test_a_servers_start_is_stored_as_it_was_found_out_in_order() -> None:
    """servers.base.Started, as each kind's begin_trial fills it: its set parts only, in the
    order the store has always kept them, and read back by the store's reader."""
    restarted = Cycle()
    restarted.start.restored("reflink clone", crashed=True)
    restarted.start.clone_at_prepare_s = 0.0123
    restarted.start.programs_evicted = {"evicted_files": 3}
    restarted.start.server = "restarted"
    body = restarted.to_json()["start"]
    assert body == {"data": "restored", "restore": "reflink clone", "after": "crash",
                    "clone_at_prepare_s": 0.0123, "programs_evicted": {"evicted_files": 3},
                    "server": "restarted"}
    assert isinstance(body, dict) and list(body) == ["data", "restore", "after", "clone_at_prepare_s",
                                                     "programs_evicted", "server"]
    kept = Cycle()
    kept.start.unrestored(True)
    kept.start.server = "kept running from the trial before"
    assert kept.to_json()["start"] == {"data": "as the last trial left it",
                                       "server": "kept running from the trial before"}
    group = Cycle()
    group.start.tenants = {"a": kept.start.to_json()}
    assert group.to_json()["start"] == {"tenants": {"a": kept.start.to_json()}}
    assert stored_start(kept.start.to_json()).server == "kept running from the trial before"
    assert Cycle().to_json()["start"] == {}
