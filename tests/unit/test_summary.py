"""Medians, ratios to the baseline and mean differences (METHODS S1's table)."""

from __future__ import annotations

import itertools

import pytest

from teiten.analysis.summary import mean_diff_pct, median, section
from teiten.installs.releases import Release
from teiten.model.results import LoadFigures, PlannedTrial, Status, TrialRecord
from teiten.servers.profiles import GB, MB, Sizing, pgbench_data_bytes, settings, shared_buffers_for

_ORDER = itertools.count()


def _t(server: str, clients: int, tps: float | None, status: Status = "ok") -> TrialRecord:
    n = next(_ORDER)
    figures = None if tps is None else LoadFigures(
        tps=tps, transactions=int(tps), failed_transactions=0, duration_s=1.0,
        latency_ms_avg=1000 * clients / tps, latency_ms_stddev=None, initial_connection_ms=None,
        pgbench_version=None)
    return TrialRecord(PlannedTrial(f"t{n}", n, server, "w", clients, 1, 1, 1.0), study_id=1,
                       study="s", status=status, figures=figures)


def test_median_of_odd_and_even_counts() -> None:
    assert median([3.0, 1.0, 2.0]) == 2.0
    assert median([1.0, 2.0, 3.0, 10.0]) == 2.5
    assert median([]) is None


def test_section_ratios_and_mean_difference() -> None:
    trials = [_t("a", 1, 100), _t("a", 1, 110), _t("a", 1, 90),
              _t("b", 1, 95), _t("b", 1, 99), _t("b", 1, 97),
              _t("a", 2, 200), _t("a", 2, 200), _t("a", 2, 200),
              _t("b", 2, 220), _t("b", 2, None, "failed"), _t("b", 2, 210)]
    sec = section(trials, "w", "", [("a", "17"), ("b", "18")], [1, 2])
    base, other = sec.servers
    assert [p.tps_median for p in base.points] == [100, 200]
    assert [p.tps_median for p in other.points] == [97, 215]
    assert other.points[1].n_failed == 1 and other.points[1].n_ok == 2
    assert other.points[0].ratio == pytest.approx(0.97)
    assert other.mean_tps_diff_pct == pytest.approx(((0.97 - 1) + (1.075 - 1)) / 2 * 100)
    assert base.mean_tps_diff_pct is None


def test_mean_diff_skips_points_without_both_values() -> None:
    assert mean_diff_pct([None, 110.0], [100.0, 100.0]) == pytest.approx(10.0)
    assert mean_diff_pct([None], [100.0]) is None


def test_pgecons_profile_is_sized_to_machine_and_data() -> None:
    small = Sizing(ram_bytes=24 * GB, disk_free_bytes=80 * GB, max_clients=4,
                   data_bytes=pgbench_data_bytes(10, 80))
    conf = settings("pgecons", small, Release(180000))
    assert conf["autovacuum"] == "off" and conf["checkpoint_timeout"] == "60min"
    assert conf["log_checkpoints"] == "on" and conf["log_lock_waits"] == "on"
    assert conf["max_connections"] == "100"
    assert conf["max_wal_size"] == "20480MB"
    # before 9.5 the same WAL as checkpoint_segments: 20480 MB / (3 * 16 MB), 9.5's release notes
    old = settings("pgecons", small, Release(90400))
    assert old["checkpoint_segments"] == "426" and "max_wal_size" not in old
    sb, fits = shared_buffers_for(small)
    assert fits and sb >= pgbench_data_bytes(10, 80)
    # S1's original size does not fit this machine: capped at 40% of RAM, and said so.
    big = Sizing(24 * GB, 80 * GB, 192, pgbench_data_bytes(2000, None))
    sb, fits = shared_buffers_for(big)
    assert not fits and sb == int(24 * GB * 0.4)
    assert settings("pgecons", big, Release(180000))["max_connections"] == "212"
    assert pgbench_data_bytes(10, 80) > pgbench_data_bytes(10, None) > 140 * MB


def test_repetitions_auto_is_summed_up_typed_from_its_rule_and_stored_decisions() -> None:
    """The Study table's summary of repetitions: auto: the last decision, the ceiling it raised,
    a block of fewer trials than the first; a stored figure that is no number is refused."""
    from teiten.analysis.stopping import AutoSummary
    from teiten.analysis.summary import _auto
    from teiten.model.studyrecord import Parameters

    study = Parameters.from_json({"repetitions": "auto", "margin_pct": 5,
                                  "auto_repetitions": {"floor": 2, "ceiling": 8, "target_pct": None}})
    trials = [_t("a", 1, 100.0), _t("a", 2, 100.0)]
    last = {"blocks": 3, "decision": "ceiling", "trials": 1, "more_blocks": 2, "more_s": 90.0, "ceiling": 9}
    got = _auto(study, [{"blocks": 2, "decision": "add", "trials": 2}, last], trials)
    assert got == AutoSummary("ceiling", target_pct=3.0, margin_pct=5.0, floor=2, ceiling=9, per_point=True,
                              more_blocks=2, more_s=90.0, last=last)
    assert _auto(study, [], trials) == AutoSummary("unfinished", 3.0, 5.0, 2, 8, False)
    with pytest.raises(ValueError, match="'two' where a whole number belongs"):
        _auto(study, [{"decision": "add", "trials": "two"}], trials)
