"""The store's schema versioning: migrations, refusal of newer stores, non-stores."""

from __future__ import annotations

import sqlite3
from dataclasses import replace
from pathlib import Path

import pytest

from teiten.model.errors import StoreError, StoreVersionError, UserError
from teiten.model.results import (
    Evidence,
    LoadFigures,
    PlannedTrial,
    Point,
    ProgressPoint,
    StatementLatency,
    StepRecord,
    TrialResult,
)
from teiten.model.studyrecord import MORE_BLOCKS, Append, Grant
from teiten.store import Store
from teiten.store.schema import SCHEMA_VERSION


def _new(path: Path) -> tuple[Store, int]:
    store = Store.open(path, create=True)
    sid = store.create_study(
        name="s", source="x.yaml", spec_yaml="study: s", spec_json="{}", seed=1,
        created_at="2026-01-01T00:00:00+00:00", fingerprint={"cpu_model": "x"},
        teiten_version="0", servers=[("a", "local", "{}")],
        trials=[PlannedTrial("t1", 0, "a", "w", 1, 1, 1, 5.0),
                PlannedTrial("t2", 1, "a", "w", 2, 1, 1, 5.0)])
    return store, sid


def test_a_new_store_has_the_current_schema_and_the_plan(tmp_path: Path) -> None:
    store, sid = _new(tmp_path / "s.db")
    assert store.conn.execute("SELECT value FROM meta").fetchone()[0] == str(SCHEMA_VERSION)
    assert store.conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert [r["status"] for r in store.trials(sid)] == ["planned", "planned"]
    store.mark_running(sid, "t1", "now")
    assert store.reset_interrupted(sid) == 1
    assert store.trials(sid)[0]["attempts"] == 1


def test_update_spec_sets_keys_and_appends_to_lists_in_one_transaction(tmp_path: Path) -> None:
    """What a run adds to its study's spec: keys set, and entries added to a list (the runs,
    the guard's runs, the blocks granted, auto's decisions) by whichever process writes, each
    read and written in one transaction, so that two writers both keep theirs."""
    store, sid = _new(tmp_path / "s.db")
    other = Store.open(tmp_path / "s.db")  # another process's connection
    store.update_spec(sid, {"testbed": "rack-3", MORE_BLOCKS: Append({"after": 3, "blocks": 2})})
    other.update_spec(sid, {MORE_BLOCKS: Append({"after": 5, "blocks": 1}), "testbed": "rack-4"})
    store.update_spec(sid, {"runs": 7})
    store.update_spec(sid, {"runs": Append({"wall_s": 1.5})})  # a key that held no list starts one
    assert store.study(sid).spec == {"testbed": "rack-4", MORE_BLOCKS: [{"after": 3, "blocks": 2},
                                                                        {"after": 5, "blocks": 1}],
                                     "runs": [{"wall_s": 1.5}]}
    record = other.study_results(sid).record
    assert record.more_blocks == (Grant(3, 2), Grant(5, 1)) and record.granted_until() == 6
    other.close()
    store.close()


def test_a_store_from_a_newer_teiten_is_refused(tmp_path: Path) -> None:
    store, _ = _new(tmp_path / "s.db")
    store.conn.execute("UPDATE meta SET value='99' WHERE key='schema_version'")
    store.close()
    with pytest.raises(StoreVersionError, match=f"schema 99, newer than this teiten's "
                       f"{SCHEMA_VERSION}; upgrade teiten"):
        Store.open(tmp_path / "s.db")


def test_other_files_are_not_stores(tmp_path: Path) -> None:
    (tmp_path / "garbage.db").write_bytes(b"not sqlite at all" * 100)
    with pytest.raises(StoreError, match="is not a teiten store"):
        Store.open(tmp_path / "garbage.db")
    with sqlite3.connect(tmp_path / "other.db") as conn:
        conn.execute("CREATE TABLE x (y)")
    with pytest.raises(StoreError, match="an SQLite file but not a teiten store"):
        Store.open(tmp_path / "other.db")
    with pytest.raises(UserError, match="no store at"):
        Store.open(tmp_path / "missing.db")
    assert not (tmp_path / "missing.db").exists()


def test_an_old_store_is_migrated_step_by_step_and_keeps_its_trials(tmp_path: Path) -> None:
    from teiten.store.schema import MIGRATIONS

    path = tmp_path / "old.db"
    conn = sqlite3.connect(path, isolation_level=None)
    MIGRATIONS[1](conn)  # a store as version 1 of teiten wrote it
    conn.execute("INSERT INTO meta VALUES ('schema_version', '1')")
    conn.execute("INSERT INTO studies (name, source, spec_yaml, spec_json, seed, state, created_at,"
                 " fingerprint, teiten_version) VALUES ('s', 'x', 'y', '{}', 1, 'finished', 'now',"
                 " '{}', '0')")
    conn.execute("INSERT INTO trials (study_id, trial_id, order_index, server, workload, clients,"
                 " threads, repetition, planned_duration_s, status, tps) VALUES (1, 't', 0, 'a',"
                 " 'w', 1, 1, 1, 5, 'ok', 123.0)")
    conn.close()
    store = Store.open(path)
    assert store.conn.execute("SELECT value FROM meta").fetchone()[0] == str(SCHEMA_VERSION)
    assert store.trials(1)[0]["tps"] == 123.0
    assert store.conn.execute("SELECT count(*) FROM metrics").fetchone()[0] == 0
    assert store.trials(1)[0]["variant"] == ""  # 3: a pgbench trial has no variant
    assert store.steps(1) == []


def test_step_7_names_the_real_kind_of_every_server_of_an_older_store(tmp_path: Path) -> None:
    """Before step 7 every server was stored as 'local' or 'external'."""
    from teiten.store.schema import MIGRATIONS

    path = tmp_path / "six.db"
    conn = sqlite3.connect(path, isolation_level=None)
    conn.row_factory = sqlite3.Row
    for step in range(1, 7):
        MIGRATIONS[step](conn)
    conn.execute("INSERT INTO meta VALUES ('schema_version', '6')")
    conn.execute("INSERT INTO studies (name, source, spec_yaml, spec_json, seed, state, created_at,"
                 " fingerprint, teiten_version) VALUES ('s', 'x', 'y', '{}', 1, 'finished', 'now',"
                 " '{}', '0')")
    stored = [("here", "local", '{"name": "here", "ssh": null, "docker": null}'),
              ("far", "local", '{"name": "far", "ssh": "db1", "docker": null}'),
              ("box", "local", '{"name": "box", "docker": {"network": "bridge"}}'),
              ("guest", "local", '{"name": "guest", "vm": {"vcpus": 2}}'),
              ("ext", "external", '{"name": "ext", "external": {"host": "h"}}')]
    conn.executemany("INSERT INTO servers (study_id, name, position, kind, spec_json) "
                     "VALUES (1, ?, 0, ?, ?)", stored)
    conn.close()
    store = Store.open(path)
    kinds = dict(store.conn.execute("SELECT name, kind FROM servers").fetchall())
    assert kinds == {"here": "local", "far": "ssh", "box": "docker", "guest": "vm",
                     "ext": "external"}
    assert {s.name: s.kind for s in store.study_results(1).servers} == kinds


def test_a_trial_result_goes_in_and_the_study_comes_back_in_one_piece(tmp_path: Path) -> None:
    store, sid = _new(tmp_path / "s.db")
    figures = LoadFigures(tps=500.0, transactions=1000, failed_transactions=0, duration_s=2.0,
                          latency_ms_avg=2.0, latency_ms_stddev=0.5, initial_connection_ms=1.5,
                          pgbench_version="18.6",
                          progress=(ProgressPoint(1.0, 490.0, 2.0, 0.4, 0),
                                    ProgressPoint(2.0, 510.0, 1.9, 0.6, 0)),
                          statements=(StatementLatency(0, 1, 0.5, 0, "SELECT 1;"),))
    evidence = Evidence(series=[("system", 1.0, "cpu.user", 40.0)], metrics={"cpu_user": 40.0},
                        waits=[("client backend", "CPU", "CPU", 9)], details={"app": {"nopm": 3}})
    store.finish_trial(sid, TrialResult("t1", "ok", "2026-01-01T00:00:05+00:00", figures=figures,
                                        argv=("pgbench", "-n"), server_log="log", notes=("a note",),
                                        evidence=evidence))
    step = StepRecord("query", "k1", 0.25, 3, {"plan": None, "extra": {"x": 1}})
    store.finish_trial(sid, TrialResult("t2", "failed", "2026-01-01T00:00:09+00:00",
                                        error="step 2 failed: boom", steps=(step,)))
    found = store.study_results(sid)
    assert (found.name, found.seed, found.fingerprint) == ("s", 1, {"cpu_model": "x"})
    assert [(s.name, s.position, s.kind) for s in found.servers] == [("a", 0, "local")]
    first, second = found.trials
    assert first.point == Point("a", "w", 1) and first.status == "ok" and first.study_id == sid
    assert first.figures == replace(figures, progress=(), statements=())
    assert second.status == "failed" and second.error == "step 2 failed: boom"
    assert second.figures is None and found.ok() == (first,)
    assert [(r["t"], r["tps"], r["failed"]) for r in store.progress(sid, "t1")] == [
        (1.0, 490.0, 0), (2.0, 510.0, 0)]
    assert [r["command"] for r in store.statements(sid, "t1")] == ["SELECT 1;"]
    assert store.metrics(sid, "t1") == {"cpu_user": 40.0}
    assert store.details(sid, "t1") == {"app": {"nopm": 3}}
    assert store.steps(sid, "t2") == [("t2", step)]
    assert first.row()["tps"] == 500.0 and first.row()["variant"] == ""


def test_a_result_that_contradicts_itself_is_refused() -> None:
    with pytest.raises(ValueError, match="a failed or disturbed trial has an error"):
        TrialResult("t", "failed", "now")
    with pytest.raises(ValueError, match="a failed or disturbed trial has an error"):
        TrialResult("t", "disturbed", "now")
    with pytest.raises(ValueError, match="a failed or disturbed trial has an error"):
        TrialResult("t", "ok", "now", error="but it failed")
    with pytest.raises(ValueError, match="ok, failed or disturbed"):
        TrialResult("t", "skipped", "now")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="at least 1 client"):
        Point("a", "w", 0)


def test_a_disturbed_trial_is_kept_and_repeated_in_its_block(tmp_path: Path) -> None:
    """A disturbed trial keeps its figures and reason; its repeat is a new trial placed after
    the last trial of the same repetition set, the later trials one place on; a repeat of a
    repeat counts from the original."""
    store = Store.open(tmp_path / "s.db", create=True)
    plan = [PlannedTrial(f"t{i}", i, "a", "w", c, 1, rep, 5.0)
            for i, (c, rep) in enumerate([(1, 1), (2, 1), (1, 2), (2, 2)])]
    sid = store.create_study(
        name="s", source="x.yaml", spec_yaml="study: s", spec_json="{}", seed=1,
        created_at="2026-01-01T00:00:00+00:00", fingerprint={}, teiten_version="0",
        servers=[("a", "local", "{}")], trials=plan)
    figures = LoadFigures(tps=100.0, transactions=500, failed_transactions=0, duration_s=5.0,
                          latency_ms_avg=1.0, latency_ms_stddev=0.1, initial_connection_ms=1.0,
                          pgbench_version="18")
    store.finish_trial(sid, TrialResult("t0", "disturbed", "now", error="foreign load",
                                        figures=figures))
    repeat = store.add_repeat(sid, plan[0])
    assert (repeat.trial_id, repeat.order_index, repeat.repeat_of, repeat.repetition) == (
        "t0.2", 2, "t0", 1)
    again = store.add_repeat(sid, repeat)
    assert (again.trial_id, again.order_index, again.repeat_of) == ("t0.3", 3, "t0")
    assert [(r.trial_id, r.planned.order_index) for r in store.records(sid)] == [
        ("t0", 0), ("t1", 1), ("t0.2", 2), ("t0.3", 3), ("t2", 4), ("t3", 5)]
    found = store.study_results(sid)
    assert found.trials[0].status == "disturbed" and found.trials[0].tps == 100.0
    assert found.trials[0].error == "foreign load" and found.ok() == ()
    assert store.status_counts(sid) == {"disturbed": 1, "planned": 5}
