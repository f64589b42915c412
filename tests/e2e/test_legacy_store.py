"""Stores written by older teiten open, migrate and report the same numbers.

Each of tests/golden/store-COMMIT/ holds the store of the same small real study (legacy.yaml:
PostgreSQL 15 and 18, read and update, 1 and 2 clients, 3 repetitions, seed 7), run by the code
of COMMIT, and what that code's ``teiten results --format json`` (results.json) and ``teiten
report`` (tables.json) printed for it. The tests read a copy, never the committed file.

- store-b08acca: written before the typed middle (schema 3). Today's code must give every trial
  and every median and ratio unchanged. Its intervals and verdicts are left out of the
  comparison: the issue on trustworthy answers changed how they are computed.
- store-9d2c785: written at the last commit before issue 37's first store step (schema 5; its
  study also sets margin_pct: 4, an option b08acca lacked). Everything is compared, intervals,
  estimates and verdicts included, since they were computed by code that computes them as
  today's does. Its README.md gives the commands that wrote it.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from tests.conftest import run_cli

from teiten.store.rows import HEADLINE_FIELDS, LATER_FIELDS
from teiten.store.schema import SCHEMA_VERSION

GOLDENS = Path(__file__).resolve().parent.parent / "golden"
# Columns an interval method decides, left out for b08acca; everything else must be equal.
INTERVAL_WORDS = ("ci_", "significance", "p_value", "needed", "detectable", "estimate", "verdict", "margin")


@dataclass(frozen=True)
class Golden:
    commit: str
    schema: int  # the store's schema version as that commit wrote it
    intervals_compared: bool  # False: the tables are compared without INTERVAL_WORDS's columns

    @property
    def directory(self) -> Path:
        return GOLDENS / f"store-{self.commit}"


B08ACCA = Golden("b08acca", 3, False)
# Written by the code of 9d2c785: nothing left out of the tables, since nothing in them depends
# on the machine or the moment that reads the store (a copy read twice printed the same bytes).
C9D2C785 = Golden("9d2c785", 5, True)
# The fields of 'teiten results' added since b08acca: the study id, the workloads' headline
# figures, why a trial ran (later ones are added to these lists where they are defined).
ADDED = {"study_id", *HEADLINE_FIELDS, *LATER_FIELDS}


@pytest.fixture(params=[B08ACCA, C9D2C785], ids=lambda g: g.commit)
def golden(request: pytest.FixtureRequest) -> Golden:
    return request.param


@pytest.fixture()
def store(golden: Golden, tmp_path: Path) -> Path:
    copy = tmp_path / "legacy.db"
    shutil.copy(golden.directory / "legacy.db", copy)
    return copy


def _schema_version(store: Path) -> int:
    # Read-only: the version as the file holds it, before teiten opens (and migrates) it.
    conn = sqlite3.connect(f"file:{store}?mode=ro", uri=True)
    try:
        return int(conn.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()[0])
    finally:
        conn.close()


def test_every_trial_reads_as_before(golden: Golden, store: Path) -> None:
    now = json.loads(run_cli("results", "--store", str(store), "--format", "json", check=True).stdout)
    before = json.loads((golden.directory / "results.json").read_text())
    assert len(before) == 24 and len(now) == 24
    # Every field the golden's commit printed, as it printed it; the columns added since (for
    # b08acca: the study id, the workloads' headline figures, why a trial ran) come on top, and
    # are empty for this pgbench study (every trial of it ran in the blocks).
    assert [{k: r[k] for k in b} for r, b in zip(now, before, strict=True)] == before
    added = {k for r, b in zip(now, before, strict=True) for k in set(r) - set(b)}
    assert added == ADDED - set(before[0])
    assert {r["study_id"] for r in now} == {1} and {r["purpose"] for r in now} == {""}
    assert all(r[k] is None for r in now for k in HEADLINE_FIELDS)


def _without_intervals(tables: dict[str, Any]) -> dict[str, Any]:
    out = []
    for table in tables["tables"]:
        keep = [c for c in table["columns"] if not any(w in c for w in INTERVAL_WORDS)]
        out.append({**table, "columns": keep, "rows": [{c: row[c] for c in keep} for row in table["rows"]]})
    return {**tables, "tables": out}


def _as_before(now: dict[str, Any], before: dict[str, Any]) -> dict[str, Any]:
    """``now`` in the shape of ``before``: exports only append (columns to a table, tables to
    the list), so every table of ``before`` is in ``now`` with its columns first, in order."""
    tables = {t["name"]: t for t in now["tables"]}
    shaped = []
    for old in before["tables"]:
        new = tables.get(old["name"])
        assert new is not None, f"table {old['name']} is gone"
        assert new["columns"][:len(old["columns"])] == old["columns"], f"{old['name']}: columns moved"
        shaped.append({**new, "columns": old["columns"],
                       "rows": [{c: row[c] for c in old["columns"]} for row in new["rows"]]})
    return {**now, "tables": shaped}


def test_medians_and_ratios_report_as_before(golden: Golden, store: Path, tmp_path: Path) -> None:
    run_cli("report", "--store", str(store), "--out", str(tmp_path / "report"), check=True)
    now = json.loads((tmp_path / "report" / "tables.json").read_text())
    before = json.loads((golden.directory / "tables.json").read_text())
    if not golden.intervals_compared:
        now, before = _without_intervals(now), _without_intervals(before)
    kinds = {t["kind"] for t in before["tables"]}
    assert {"tps", "ratio", "summary"} <= kinds, kinds
    ratio = next(t for t in before["tables"] if t["kind"] == "ratio")
    assert "ratio_pct" in ratio["columns"] and ratio["rows"], "the golden has ratios to compare"
    if golden.intervals_compared:
        assert {"ratio_ci_low_pct", "estimate_pct", "verdict"} <= set(ratio["columns"])
        assert {row["margin_pct"] for row in ratio["rows"]} == {4.0}, "the study's margin_pct"
    assert _as_before(now, before) == before


def test_opens_migrated_and_lists_its_study(golden: Golden, store: Path) -> None:
    assert _schema_version(store) == golden.schema
    listed = json.loads(run_cli("studies", "--store", str(store), "--format", "json",
                                check=True).stdout)
    assert [{k: s[k] for k in ("study_id", "name", "state", "trials", "ok", "failed",
                               "disturbed", "skipped", "planned")} for s in listed] == [
        {"study_id": 1, "name": f"legacy-{golden.commit}", "state": "finished", "trials": 24,
         "ok": 24, "failed": 0, "disturbed": 0, "skipped": 0, "planned": 0}]
    assert _schema_version(store) == SCHEMA_VERSION  # opening it took every step since
    # One trial, everything known about it, agrees with the golden's list of trials.
    first = json.loads((golden.directory / "results.json").read_text())[0]
    shown = json.loads(run_cli("show", "--store", str(store), "--format", "json",
                               first["trial_id"], check=True).stdout)
    # (A headline field such as steps is a summary there and the whole table here.)
    common = [k for k in first if k in shown and k not in HEADLINE_FIELDS]
    assert {"trial_id", "server", "workload", "clients", "tps", "status"} <= set(common)
    assert {k: shown[k] for k in common} == {k: first[k] for k in common}
    # The committed file was never opened: SQLite would have left its -wal or -shm beside it.
    assert not [p.name for p in golden.directory.iterdir() if p.name.endswith(("-wal", "-shm"))]
