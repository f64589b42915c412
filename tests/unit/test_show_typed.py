"""``teiten show`` reads the typed trial (issue 55, item 5): every trial of the golden stores
reads as a :class:`teiten.model.shown.Shown` and prints, and each stored detail prints the
sentence it printed when show read raw rows, including what the golden stores do not hold (a
retrying pgbench, another driver's histogram, a trial's design, a freeze step's machine)."""

from __future__ import annotations

import shutil
from pathlib import Path

from teiten.cli.show import render_text
from teiten.model import shown
from teiten.model.results import LoadFigures, PlannedTrial, TrialRecord
from teiten.store import Store
from teiten.store import shown as stored

GOLDEN = Path(__file__).resolve().parent.parent / "golden" / "report-stores"


def test_every_trial_of_the_golden_stores_reads_typed_and_prints(tmp_path: Path) -> None:
    count = 0
    for db in sorted(GOLDEN.glob("*.db")):
        copy = tmp_path / db.name
        shutil.copy(db, copy)  # opening a store may checkpoint it: never the golden file
        store = Store.open(str(copy))
        try:
            for row in store.trials():
                study_id, trial_id = stored.find(store, f"{row['study_id']}:{row['trial_id']}")
                text = render_text(stored.typed(store, study_id, trial_id))
                assert text.startswith(f"trial {trial_id} of study ") and "server log:" in text
                count += 1
        finally:
            store.close()
    assert count > 200


def _trial(**details: object) -> shown.Shown:
    planned = PlannedTrial("t1", 3, "a", "w", clients=4, threads=2, repetition=2, duration_s=10)
    figures = LoadFigures(tps=123.45, transactions=1234, failed_transactions=None, duration_s=10.0,
                          latency_ms_avg=3.25, latency_ms_stddev=0.5, initial_connection_ms=None,
                          pgbench_version="17.2")
    record = TrialRecord(planned, study_id=1, study="s", status="ok", attempts=1,
                         started_at="10:00", finished_at="10:01", figures=figures)
    steps = details.pop("steps", [])
    return shown.Shown(trial=record, argv=("pgbench", "-c", "4"), notes=(), stdout=None, stderr=None,
                       server_log=None, metrics={}, top_waits=(), statements=(), progress=(), series=(),
                       details=shown.details(details), steps=shown.steps(steps))  # type: ignore[arg-type]


def test_each_detail_prints_its_sentence() -> None:
    text = render_text(_trial(
        pgbench={"latency_limit_ms": 0.5, "late": 12, "skipped": 3, "retried": 4, "retries": 6,
                 "lag_ms_avg": 0.25, "lag_ms_max": 1.5, "something_new": 1,
                 "percentiles": {"count": 1200, "precision": 0.01, "p50_ms": 3.0, "p90_ms": 4.5,
                                 "p95_ms": 5.0, "p99_ms": 8.0, "p999_ms": 12.5, "max_ms": 20.0}},
        design={"block": 2, "order": "random", "duration_s": 10, "restart": "after-changes",
                "prewarm": False, "client_cpus": "0,1"},
        stats={"pg_stat_database": {}, "pg_stat_bgwriter": {}}))
    lines = text.splitlines()
    assert lines[:4] == [
        "trial t1 of study s: a · w · 4 clients (2 threads) · repetition 2 · order 3",
        "status: ok", "started 10:00, finished 10:01, attempts 1",
        "TPS 123.5 (without connection time), 1234 transactions, 0 failed, measured over 10.00 s; "
        "latency 3.250 ms (stddev 0.500)"]
    assert ("limits: 12 of 1234 transactions above the 0.5 ms latency limit; 3 skipped (would have "
            "started too late; not in the latencies); 4 retried after a serialization or deadlock "
            "failure (6 retries); schedule lag 0.250 ms on average, 1.500 at most") in lines
    assert ("latency percentiles (ms): p50 3.000 · p90 4.500 · p95 5.000 · p99 8.000 · p99.9 12.50 · "
            "max 20.00; of 1200 transactions in pgbench's log, within 1.0%") in lines
    assert ("design: block 2, order random, 10 s, restart after-changes, prewarm off, pgbench on CPUs "
            "0,1") in lines
    assert "statistics views with deltas: pg_stat_bgwriter, pg_stat_database" in lines
    assert "command: pgbench -c 4" in lines


def test_another_drivers_histogram_and_an_older_stores_missing_keys() -> None:
    text = render_text(_trial(latency={"driver": "sysbench", "percentiles": {"count": 7, "precision": 0.02}}))
    assert ("latency percentiles (ms): p50 - · p90 - · p95 - · p99 - · p99.9 - · max -; of 7 "
            "transactions in sysbench's latency histogram, within 2.0%") in text.splitlines()
    assert "limits:" not in text and "design:" not in text  # nothing stored, nothing said


def test_a_timed_step_prints_its_plan_cache_and_machine() -> None:
    step = {"name": "query", "param": "q1", "seconds": 0.0125, "rows": 40,
            "plan": {"shape": "Bitmap Heap Scan", "workers_launched": 0, "workers_planned": 0,
                     "shared_hit": 10, "shared_read": 2, "rows_removed_by_index_recheck": 5,
                     "rows_removed_by_filter": 0, "nodes": ["x"]},
            "cache": {"state": "warm", "os_cache": "kept"},
            "extra": {"window_s": 2.0, "cpu_busy_pct": 55.4, "cpu_iowait_pct": 3.2, "device": "vda",
                      "device_util_pct": 12.0, "read_mb_s": 1.25, "write_mb_s": 30.5}}
    lines = render_text(_trial(steps=[step])).splitlines()
    assert lines[lines.index("steps:") + 1] == (
        "  query [q1] · 12.50 ms · 40 rows · workers 0/0, buffers hit 10 read 2, removed by recheck "
        "5, filter 0 · Bitmap Heap Scan · cache warm · CPU busy 55%, I/O wait 3%, vda 12% util, "
        "read 1.2 MB/s, write 30.5 MB/s")


def test_an_application_window_and_one_that_measured_nothing() -> None:
    """A tpcc trial's window and its types; a trial whose transaction log could not be read
    stored only its application's name, and says so (show failed on it before it read typed)."""
    types = [{"name": "new_order", "weight": 45, "count": 900, "failed": 0, "avg_ms": 2.0, "p50_ms": 1.5,
              "p95_ms": 4.0, "p99_ms": 6.0, "response_ms": 1.9}]
    lines = render_text(_trial(app={"app": "tpcc", "tps": 1762.84, "window_s": 2, "rampup_s": 1,
                                    "nopm": 48872.2, "tpm": 103477.0, "types": types})).splitlines()
    at = lines.index("tpcc: 1762.8 per second over the 2 s window after a 1 s ramp-up; NOPM 48,872, "
                     "TPM 103,477; by type:")
    assert lines[at + 1].split() == ["name", "weight", "count", "avg_ms", "p50_ms", "p95_ms", "p99_ms",
                                     "response_ms"]
    assert lines[at + 2].split() == ["new_order", "45", "900", "2.000", "1.500", "4.000", "6.000", "1.900"]
    lines = render_text(_trial(app={"app": "bookstore"})).splitlines()
    assert "bookstore: no window measured; by type:" in lines
