"""The noise guard (issue 18, item 3b) as a user meets it: a CPU burner started beside a
running study is measured in the trial it disturbed, that trial is kept, marked, left out of
the analysis and repeated in its block, and the report names the burner. Real clusters,
real pgbench, a real burner process; the guard is on for this test only (conftest turns it
off for the others)."""

from __future__ import annotations

import json
import re
import sqlite3
from pathlib import Path

import pytest
from tests.burners import run_beside_burner, skip_when_busy

# alone: the noise guard on: another test's load would disturb its trials.
pytestmark = pytest.mark.alone

STUDY = """
study: guarded
servers: [{name: pg17, install: "17"}]
workloads: [select-only]
scale: 1
clients: [1]
duration: 1s
repetitions: 3
order: sequential
noise_guard: {max_foreign_cpus: 0.5, repeats: 1}
"""


def test_a_cpu_burner_beside_a_trial_is_caught_named_and_the_trial_repeated(
        pg17, workdir: Path) -> None:
    skip_when_busy(0.5)  # the study's max_foreign_cpus
    (workdir / "guarded.yaml").write_text(STUDY)
    store = workdir / "guarded.db"
    # The second trial (repetition 2) runs with a burner beside it, from its start to its end;
    # no burner is a child of teiten, so all of it is foreign.
    burned = run_beside_burner(workdir / "guarded.yaml", store, workdir / "report",
                               lambda server, workload, clients, rep: rep == 2)
    (pid,) = burned.pids
    with sqlite3.connect(store) as conn:
        rows = conn.execute("SELECT trial_id, repetition, status, error, repeat_of FROM trials "
                            "ORDER BY order_index").fetchall()
        details = dict(conn.execute("SELECT trial_id, body FROM details WHERE kind='foreign'")
                       .fetchall())
    disturbed = [r for r in rows if r[1] == 2 and r[2] == "disturbed"]
    assert disturbed, rows
    original = disturbed[0]
    assert f"python3 (pid {pid})" in original[3] or f"(pid {pid})" in original[3]
    measured = json.loads(details[original[0]])
    assert measured["cpu_s"] / measured["window_s"] > 0.5
    assert any(c["pid"] == pid for c in measured["top"])
    # Its repeat is in the same block, right after it (the block's last trial), and ran.
    repeat = [r for r in rows if r[4] == original[0]]
    assert len(repeat) == 1 and repeat[0][0] == f"{original[0]}.2" and repeat[0][1] == 2
    assert rows.index(repeat[0]) == rows.index(original) + 1
    assert repeat[0][2] in ("ok", "disturbed")
    assert f"repeated as trial {original[0]}.2" in burned.text
    # The report names the burner and the repeat; the disturbed figures are not analysed.
    report = (workdir / "report" / "report.md").read_text()
    assert f"left out of the analysis and repeated as trial {original[0]}.2" in report
    assert f"(pid {pid})" in report
    assert re.search(r"\| disturbed \|", report) or "disturbed" in report
    # The limit is absolute (no spare_fraction): the report adds nothing about idle CPUs.
    assert "spare_fraction" not in report
