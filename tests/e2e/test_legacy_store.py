"""A store written before the typed middle (commit b08acca) opens and reports the same numbers.

tests/golden/store-b08acca/ holds the store of a small real study (legacy.yaml: PostgreSQL 15 and
18, read and update, 1 and 2 clients, 3 repetitions) and what b08acca's `teiten results --format
json` and `teiten report` (tables.json) printed for it. Today's code must give every trial and every
median and ratio unchanged. The intervals and verdicts are left out of the comparison: the issue on
trustworthy answers may change how they are computed.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from tests.conftest import run_cli

from teiten.store.rows import HEADLINE_FIELDS, LATER_FIELDS

GOLDEN = Path(__file__).resolve().parent.parent / "golden" / "store-b08acca"
# Columns an interval method decides; everything else must be equal.
INTERVAL_WORDS = ("ci_", "significance", "p_value", "needed", "detectable", "estimate", "verdict", "margin")


@pytest.fixture()
def store(tmp_path: Path) -> Path:
    copy = tmp_path / "legacy.db"
    shutil.copy(GOLDEN / "legacy.db", copy)
    return copy


def test_every_trial_reads_as_before(store: Path) -> None:
    now = json.loads(run_cli("results", "--store", str(store), "--format", "json", check=True).stdout)
    before = json.loads((GOLDEN / "results.json").read_text())
    assert len(before) == 24 and len(now) == 24
    # Every field b08acca printed, as it printed it; the columns added since (the study id,
    # the workloads' headline figures, why a trial ran) come on top, and are empty for this
    # pgbench study (every trial of it ran in the blocks).
    assert [{k: r[k] for k in b} for r, b in zip(now, before, strict=True)] == before
    added = {k for r, b in zip(now, before, strict=True) for k in set(r) - set(b)}
    assert added == {"study_id", *HEADLINE_FIELDS, *LATER_FIELDS}
    assert {r["study_id"] for r in now} == {1} and {r["purpose"] for r in now} == {""}
    assert all(r[k] is None for r in now for k in HEADLINE_FIELDS)


def _without_intervals(tables: dict[str, Any]) -> dict[str, Any]:
    out = []
    for table in tables["tables"]:
        keep = [c for c in table["columns"] if not any(w in c for w in INTERVAL_WORDS)]
        out.append({**table, "columns": keep, "rows": [{c: row[c] for c in keep} for row in table["rows"]]})
    return {**tables, "tables": out}


def test_medians_and_ratios_report_as_before(store: Path, tmp_path: Path) -> None:
    run_cli("report", "--store", str(store), "--out", str(tmp_path / "report"), check=True)
    now = _without_intervals(json.loads((tmp_path / "report" / "tables.json").read_text()))
    before = _without_intervals(json.loads((GOLDEN / "tables.json").read_text()))
    kinds = {t["kind"] for t in before["tables"]}
    assert {"tps", "ratio", "summary"} <= kinds, kinds
    ratio = next(t for t in before["tables"] if t["kind"] == "ratio")
    assert "ratio_pct" in ratio["columns"] and ratio["rows"], "the golden has ratios to compare"
    assert now == before
