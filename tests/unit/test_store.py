"""The store's schema versioning: migrations, refusal of newer stores, non-stores."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from teiten.errors import StoreError, StoreVersionError, UserError
from teiten.store import PlannedTrial, Store
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
