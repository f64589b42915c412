"""The noise guard (issue 18, item 3b) as a user meets it: a CPU burner started beside a
running study is measured in the trial it disturbed, that trial is kept, marked, left out of
the analysis and repeated in its block, and the report names the burner. Real clusters,
real pgbench, a real burner process; the guard is on for this test only (conftest turns it
off for the others)."""

from __future__ import annotations

import json
import os
import re
import sqlite3
import subprocess
import sys
from pathlib import Path

import psutil
import pytest
from tests.conftest import ROOT, TEST_HOME

STUDY = """
study: guarded
servers: [{name: pg17, install: "17"}]
workloads: [select-only]
scale: 1
clients: [1]
duration: 3s
repetitions: 3
order: sequential
noise_guard: {max_foreign_cpus: 0.5, repeats: 1}
"""


def test_a_cpu_burner_beside_a_trial_is_caught_named_and_the_trial_repeated(
        pg17, workdir: Path) -> None:
    busy = psutil.cpu_percent(interval=2) / 100 * (psutil.cpu_count() or 1)
    if busy > 0.5:  # the study's max_foreign_cpus
        pytest.skip(f"the machine is already busy ({busy:.1f} CPUs used by other processes): the "
                    "guard rightly marks every trial, so this test cannot single out its burner")
    (workdir / "guarded.yaml").write_text(STUDY)
    store = workdir / "guarded.db"
    env = dict(os.environ, TEITEN_HOME=str(TEST_HOME), PYTHONPATH=str(ROOT / "src"),
               TEITEN_NOISE_GUARD="on")
    run = subprocess.Popen([sys.executable, "-m", "teiten", "run", str(workdir / "guarded.yaml"),
                            "--store", str(store), "--report", str(workdir / "report")],
                           env=env, text=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    burner: subprocess.Popen[bytes] | None = None
    lines = []
    try:
        assert run.stderr is not None
        for line in run.stderr:
            lines.append(line)
            # The second trial (repetition 2) runs with a burner beside it, from its start to
            # its end; no burner is a child of teiten, so all of it is foreign.
            if burner is None and re.search(r"\] 2/\d+ pg17 select-only clients=1 rep=2 \.\.\.",
                                            line):
                burner = subprocess.Popen([sys.executable, "-c", "while True: pass"])
            elif burner is not None and burner.returncode is None and "rep=2: " in line:
                burner.kill()
                burner.wait()
        assert run.wait(timeout=600) == 0, "".join(lines)
    finally:
        if burner is not None and burner.poll() is None:
            burner.kill()
            burner.wait()
        if run.poll() is None:
            run.kill()
            run.wait()
    assert burner is not None, "".join(lines)
    with sqlite3.connect(store) as conn:
        rows = conn.execute("SELECT trial_id, repetition, status, error, repeat_of FROM trials "
                            "ORDER BY order_index").fetchall()
        details = dict(conn.execute("SELECT trial_id, body FROM details WHERE kind='foreign'")
                       .fetchall())
    disturbed = [r for r in rows if r[1] == 2 and r[2] == "disturbed"]
    assert disturbed, rows
    original = disturbed[0]
    assert f"python3 (pid {burner.pid})" in original[3] or f"(pid {burner.pid})" in original[3]
    measured = json.loads(details[original[0]])
    assert measured["cpu_s"] / measured["window_s"] > 0.5
    assert any(c["pid"] == burner.pid for c in measured["top"])
    # Its repeat is in the same block, right after it (the block's last trial), and ran.
    repeat = [r for r in rows if r[4] == original[0]]
    assert len(repeat) == 1 and repeat[0][0] == f"{original[0]}.2" and repeat[0][1] == 2
    assert rows.index(repeat[0]) == rows.index(original) + 1
    assert repeat[0][2] in ("ok", "disturbed")
    assert f"repeated as trial {original[0]}.2" in "".join(lines)
    # The report names the burner and the repeat; the disturbed figures are not analysed.
    report = (workdir / "report" / "report.md").read_text()
    assert f"left out of the analysis and repeated as trial {original[0]}.2" in report
    assert f"(pid {burner.pid})" in report
    assert re.search(r"\| disturbed \|", report) or "disturbed" in report
