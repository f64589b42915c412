"""Application workloads without a server: pgbench's transaction log (real files of 15.18
and 18.6 in tests/golden/pgbench_log), the TPC-C run-time constants, and the figures the
report draws from each trial's details."""

from __future__ import annotations

import random
import shutil
from pathlib import Path
from typing import Any

import pytest

from teiten import workloads
from teiten.analysis.apps import app_point, capacity
from teiten.analysis.model import AppPoint
from teiten.drivers import pgbench_log
from teiten.model.details import APP
from teiten.model.errors import UserError
from teiten.workloads.apps import _statements, digest, run_time_constants

GOLDEN = Path(__file__).parent.parent / "golden" / "pgbench_log"


@pytest.mark.parametrize("major", ["15", "18"])
def test_reads_every_thread_file_of_a_real_log(major: str, tmp_path: Path) -> None:
    # pgbench -j 2 writes PREFIX.PID and PREFIX.PID.1
    shutil.copy(GOLDEN / f"pg{major}-tx.0", tmp_path / "tx.4242")
    shutil.copy(GOLDEN / f"pg{major}-tx.1", tmp_path / "tx.4242.1")
    (tmp_path / "other.4242").write_text("0 1 5 0 1 1\n")
    logged = pgbench_log.read(tmp_path, "tx")
    assert len(logged) == 80
    assert {t.script for t in logged} <= {0, 1}
    assert all(t.latency_us is not None and t.latency_us >= 0 for t in logged)
    first = (GOLDEN / f"pg{major}-tx.0").read_text().split()
    assert logged[0].end == pytest.approx(int(first[4]) + int(first[5]) / 1e6)


def test_window_counts_only_what_finished_inside_it() -> None:
    lines = ["0 1 1000 0 100 0", "0 2 2000 1 100 500000", "1 1 3000 0 101 0",
             "1 2 failed 1 101 100", "0 3 4000 0 102 0", "not a transaction line"]
    logged = pgbench_log.parse(lines)
    assert len(logged) == 5
    overall, per = pgbench_log.window(logged, 100.5, 102.0, 2)
    assert (overall.count, overall.failed) == (2, 1)
    assert overall.avg_ms == pytest.approx(2.5)
    assert [(p.count, p.failed) for p in per] == [(1, 0), (1, 1)]
    assert per[0].p50_ms == pytest.approx(3.0)
    empty, _ = pgbench_log.window(logged, 200, 300, 2)
    assert empty.count == 0 and empty.avg_ms is None


def test_percentiles_are_ordered() -> None:
    rng = random.Random(1)
    lines = [f"0 {i} {rng.randrange(100, 100000)} 0 {1000 + i // 100} {i % 100 * 10000}"
             for i in range(5000)]
    overall, _ = pgbench_log.window(pgbench_log.parse(lines), 0, 10**10, 1)
    assert overall.p50_ms is not None and overall.p95_ms is not None and overall.p99_ms is not None
    assert overall.p50_ms < overall.p95_ms < overall.p99_ms


def test_run_time_c_constants_keep_the_spec_distance_from_the_load() -> None:
    for seed in range(500):
        for c_load in (0, 100, 255):
            c = run_time_constants(c_load, random.Random(seed))
            delta = (c["c_last_run"] - c_load) % 256
            assert 65 <= delta <= 119 and delta not in (96, 112)
            assert 0 <= c["c_id_run"] <= 1023 and 0 <= c["ol_i_id_run"] <= 8191


def test_keys_files_split_into_statements() -> None:
    text = "-- keys\nALTER TABLE a\n  ADD PRIMARY KEY (x);\n\nCREATE INDEX b ON a (y);\n"
    assert _statements(text) == ["ALTER TABLE a\n  ADD PRIMARY KEY (x);", "CREATE INDEX b ON a (y);"]


def _run(tps: float, nopm: float | None = None, counts: tuple[int, int] = (90, 10)) -> dict[str, Any]:
    return {"app": "tpcc", "tps": tps, "nopm": nopm, "tpm": tps * 60, "tpm_pgbench": tps * 60,
            "types": [{"name": "new_order", "weight": 45, "count": counts[0], "avg_ms": 2.0,
                       "p50_ms": 1.5, "p95_ms": 4.0, "p99_ms": 6.0, "response_ms": 1.9},
                      {"name": "payment", "weight": 55, "count": counts[1], "avg_ms": 1.0,
                       "p50_ms": 0.8, "p95_ms": 2.0, "p99_ms": 3.0, "response_ms": 0.9}]}


def test_a_point_is_the_median_of_its_repetitions() -> None:
    p = app_point(4, [APP.read(r) for r in (_run(100, 2000), _run(300, 6000), _run(200, 4000, (80, 20)))])
    assert (p.tps, p.nopm, p.runs) == (200, 4000, 3)
    [new_order, payment] = p.types
    assert new_order.share == pytest.approx(0.9)
    assert new_order.target == pytest.approx(0.45)
    assert payment.p95_ms == 2.0


def test_capacity_is_where_the_measurement_leaves_the_theory() -> None:
    def pt(users: int, measured: float) -> AppPoint:
        return AppPoint(clients=users, runs=1, tps=measured, theoretical=users * 10.0)
    assert capacity([pt(1, 9.8), pt(2, 19.5), pt(4, 38.5), pt(8, 70.0), pt(16, 75.0)]) == (4, 8)
    assert capacity([pt(1, 9.9), pt(2, 19.9)]) == (2, None)
    assert capacity([pt(1, 5.0), pt(2, 19.9)]) == (None, 1)


def test_the_capacity_rule_holds_over_the_noise() -> None:
    """The S4 case of issue 18: a dip to a 93.9% median at 16 users whose repetitions still
    reach 95% is not the capacity; 64 users at 95.9% still fit; only a point whose every
    repetition is below 95% ends it."""
    def pt(users: int, *shares: float) -> AppPoint:
        runs = [{"app": "bookstore", "tps": users * 10.0 * s, "theoretical_tps": users * 10.0,
                 "types": []} for s in shares]
        return app_point(users, [APP.read(r) for r in runs])
    dip = pt(16, 0.939, 0.925, 0.962)
    assert dip.share_ci == (0.925, 0.962) and dip.share_level == 0.75
    points = [pt(1, 0.99, 0.98, 1.0), dip, pt(64, 0.959, 0.97, 0.95), pt(128, 0.80, 0.84, 0.9)]
    assert capacity(points) == (64, 128)


def test_types_are_matched_by_name_and_missing_ones_do_not_count() -> None:
    a, b = _run(100), _run(100)
    b["types"] = list(reversed(b["types"]))  # another order of the same scripts
    c = _run(100)
    c["types"][1]["count"] = 0
    c["types"][1].update(avg_ms=None, p50_ms=None, p95_ms=None, p99_ms=None)
    [new_order, payment] = app_point(2, [APP.read(r) for r in (a, b, c)]).types
    assert (new_order.name, payment.name) == ("new_order", "payment")
    assert payment.p95_ms == 2.0 and payment.share == pytest.approx(0.1)


def test_a_study_is_not_resumed_with_changed_app_sql() -> None:
    stored = {"key": "tpcc", "scripts": [], "scale": 1, "fillfactor": None, "modifies_data": True,
              "app": "tpcc", "options": {"warehouses": 1}, "digest": digest("tpcc")}
    assert workloads.from_json(stored).option("warehouses") == 1
    with pytest.raises(UserError, match="SQL and scripts have changed since this study started"):
        workloads.from_json({**stored, "digest": "0" * 16})
