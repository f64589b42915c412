"""The report's latency percentiles table (issue 21, item 4) recounted from the store: a
fixture study run for real (tests/golden/report-stores/percentiles.db: pg17 and pg18, a
paced select-only with 'percentiles: true', two repetitions of two client counts). Each
median is the median of the trials' own percentiles; each interval is what the method
gives at two repetitions ([min, max], 50%) and two shared blocks (the smallest and the
largest per-block ratio, 50%)."""

from __future__ import annotations

import csv
import json
import shutil
import sqlite3
import statistics
from pathlib import Path

import pytest

from teiten.report.build import write_study_report
from teiten.store.db import Store
from teiten.store.rows import result_rows

FIXTURE = Path(__file__).resolve().parent.parent / "golden" / "report-stores" / "percentiles.db"


def _trials() -> dict[tuple[str, int], dict[int, dict[str, float]]]:
    """(server, clients) -> repetition -> that trial's percentiles."""
    with sqlite3.connect(FIXTURE) as conn:
        rows = conn.execute(
            "SELECT t.server, t.clients, t.repetition, d.body FROM trials t JOIN details d "
            "ON d.trial_id = t.trial_id AND d.kind = 'pgbench' WHERE t.status = 'ok'").fetchall()
    out: dict[tuple[str, int], dict[int, dict[str, float]]] = {}
    for server, clients, rep, body in rows:
        out.setdefault((server, clients), {})[rep] = json.loads(body)["percentiles"]
    return out


@pytest.fixture(scope="module")
def table(tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[str, int], dict[str, str]]:
    tmp = tmp_path_factory.mktemp("percentiles")
    shutil.copyfile(FIXTURE, tmp / "s.db")
    store = Store.open(tmp / "s.db")
    try:
        [study] = store.studies()
        write_study_report(store, study.id, tmp / "out")
    finally:
        store.close()
    [path] = (tmp / "out" / "tables").glob("*-percentiles.csv")
    with path.open() as f:
        return {(r["server"], int(r["clients"])): r for r in csv.DictReader(f)}


def test_every_point_has_a_row_of_medians_of_its_trials(table) -> None:  # noqa: ANN001
    found = _trials()
    assert set(table) == set(found) and len(found) == 4
    for key, reps in found.items():
        row = table[key]
        assert int(row["n_ok"]) == len(reps) == 2
        for name in ("p50", "p90", "p95", "p99", "p999", "max"):
            expected = statistics.median(r[f"{name}_ms"] for r in reps.values())
            assert float(row[f"{name}_ms"]) == round(expected, 3), (key, name)
        for name in ("p95", "p99"):  # two repetitions: [min, max] at 50%
            values = [r[f"{name}_ms"] for r in reps.values()]
            assert (float(row[f"{name}_ci_low_ms"]), float(row[f"{name}_ci_high_ms"])) == (
                round(min(values), 3), round(max(values), 3))
            assert float(row[f"{name}_ci_level_pct"]) == 50.0


def test_ratios_to_the_baseline_pair_the_repetitions(table) -> None:  # noqa: ANN001
    found = _trials()
    for (server, clients), reps in found.items():
        row = table[(server, clients)]
        if server == "pg17":
            assert row["p95_ratio_pct"] == "" and row["p99_ratio_pct"] == ""
            continue
        base = found[("pg17", clients)]
        for name in ("p95", "p99"):
            key = f"{name}_ms"
            ratio = statistics.median(r[key] for r in reps.values()) / \
                statistics.median(r[key] for r in base.values())
            assert float(row[f"{name}_ratio_pct"]) == round(ratio * 100, 1)
            per_block = [reps[rep][key] / base[rep][key] for rep in sorted(reps)]
            assert float(row[f"{name}_ratio_ci_low_pct"]) == round(min(per_block) * 100, 1)
            assert float(row[f"{name}_ratio_ci_high_pct"]) == round(max(per_block) * 100, 1)
            assert float(row[f"{name}_ratio_ci_level_pct"]) == 50.0


def test_another_driver_s_percentiles_make_the_same_table(table, tmp_path: Path) -> None:  # noqa: ANN001
    """A driver other than pgbench keeps the percentiles of its own histogram as details
    'latency' (in the same figures): moved there, the trials give the same table."""
    shutil.copyfile(FIXTURE, tmp_path / "s.db")
    with sqlite3.connect(tmp_path / "s.db") as conn:
        rows = conn.execute("SELECT study_id, trial_id, body FROM details WHERE kind = 'pgbench' "
                            "AND body LIKE '%percentiles%'").fetchall()
        assert rows
        for study_id, trial_id, body in rows:
            found = json.loads(body)
            moved = {"percentiles": found.pop("percentiles"), "driver": "another"}
            conn.execute("UPDATE details SET body = ? WHERE study_id = ? AND trial_id = ? AND "
                         "kind = 'pgbench'", (json.dumps(found), study_id, trial_id))
            conn.execute("INSERT INTO details VALUES (?, ?, 'latency', ?)",
                         (study_id, trial_id, json.dumps(moved)))
    moved_to = {trial_id: json.loads(body)["percentiles"] for _, trial_id, body in rows}
    store = Store.open(tmp_path / "s.db")
    try:
        [study] = store.studies()
        write_study_report(store, study.id, tmp_path / "out")
        exported = {r["trial_id"]: r for r in result_rows(store)}  # teiten results' columns
    finally:
        store.close()
    [path] = (tmp_path / "out" / "tables").glob("*-percentiles.csv")
    with path.open() as f:
        assert {(r["server"], int(r["clients"])): r for r in csv.DictReader(f)} == table
    for trial_id, found in moved_to.items():
        assert exported[trial_id]["p95_ms"] == found["p95_ms"] is not None
    report = (tmp_path / "out" / "report.md").read_text()
    assert "### Latency percentiles (ms), from another's latency histogram" in report
    assert "pgbench's transaction log" not in report and "read from another's own histogram" in report
