"""The 2014 trial shape (issue 57, item 6; METHODS S2): ``trials: {restore: first}`` runs a
point's three repetitions back to back on the same data, a CHECKPOINT before each and no restore
between them, and the report, in English and Japanese, and ``teiten show`` say which runs saw
updated data; ``restore: each`` (the default) restores the data before every run. Real
PostgreSQL, real pgbench (tpcb-like at scale 1, runs of 1 s), the real CLI.

What the runs saw is read from the server itself: a script of the mix logs the rows of
pgbench_history (``RAISE LOG``, kept in each trial's server log), which every tpcb-like
transaction adds one to and which ``pgbench -i`` leaves empty."""

from __future__ import annotations

import csv
import re
from pathlib import Path
from typing import Any

from tests.conftest import run_cli
from tests.studyrun import run_study

COUNT = "DO $$BEGIN RAISE LOG 'teiten-history-rows %', (SELECT count(*) FROM pgbench_history); END$$;\n"

STUDY = """
study: {name}
servers:
  - {{name: pg17, install: "17"}}
workloads:
  - {{name: tpcb, scripts: [{{builtin: tpcb-like, weight: 10}}, {{script: {count}, weight: 1}}]}}
scale: 1
clients: [1]
duration: 1s
repetitions: {reps}
trials: {{restore: {restore}}}
noise_guard: {{enabled: false}}
"""


def _run(name: str, restore: str, reps: int, tmp: Path) -> dict[str, Any]:
    count = tmp / f"{name}-count.pgbench"
    count.write_text(COUNT)
    return run_study(name, STUDY.format(name=name, count=count, reps=reps, restore=restore),
                     work=name, key=lambda r: r["repetition"], timeout=300)


def _rows(log: str) -> list[int]:
    """pgbench_history's rows each time the script counted them in a trial's window."""
    return [int(n) for n in re.findall(r"teiten-history-rows (\d+)", log)]


def _show(store: Path, trial_id: str) -> str:
    done = run_cli("show", "--store", str(store), trial_id, check=True)
    return done.stdout


def test_restore_first_keeps_the_first_runs_updates_and_says_so(tmp_path: Path) -> None:
    found = _run("series-first", "first", 3, tmp_path)
    assert found["run"].returncode == 0, found["run"].stderr
    trials = found["trials"]
    assert sorted(trials) == [1, 2, 3] and all(t["status"] == "ok" for t in trials.values())
    order = sorted(trials.values(), key=lambda t: t["order_index"])
    assert [t["repetition"] for t in order] == [1, 2, 3], "a point's runs back to back, in order"
    rows = {rep: _rows(t["server_log"]) for rep, t in trials.items()}
    assert all(rows.values()), f"every run counted the history: {rows}"
    # No restore between runs: each run starts with every row the runs before it added.
    assert min(rows[2]) >= max(rows[1]) > 0 and min(rows[3]) >= max(rows[2]), rows
    starts = {rep: found["details"][(t["trial_id"], "cycle")]["start"] for rep, t in trials.items()}
    assert starts[1]["data"] in ("as loaded", "restored") and "runs_before" not in starts[1]
    assert [starts[2].get("runs_before"), starts[3].get("runs_before")] == [1, 2], starts
    assert all(found["details"][(t["trial_id"], "cycle")]["seconds"]["checkpoint"] > 0
               for t in trials.values()), "a CHECKPOINT before every run"

    assert ("started from: updated data: not restored, as the 2 runs of its series before it "
            "changed it (trials: restore: first)") in _show(found["store"], trials[3]["trial_id"])
    first = _show(found["store"], trials[1]["trial_id"])
    assert "updated data" not in first and "restore first" in first

    md = found["md"]
    assert ("† marks the runs that saw updated data: each point's repetitions ran back to back "
            "as one series (trials: restore: first)") in md and "(2 of 3 trials)" in md
    marked = {line.split("|")[5].strip() for line in md.splitlines()
              if any(f"| {t['trial_id']} |" in line for t in trials.values())}
    assert marked == {"1", "2†", "3†"}, marked
    ja = found["work"] / "ja"
    run_cli("report", "--store", str(found["store"]), "--out", str(ja), "--lang", "ja", check=True)
    text = (ja / "report.md").read_text()
    assert "† は更新済みのデータで測定した実行を示す" in text and "(3 試行のうち 2 試行)" in text
    with (found["work"] / "report" / "tables" / "trials.csv").open() as f:
        csv_rows = {r["trial_id"]: r["runs_before"] for r in csv.DictReader(f)}
    assert {csv_rows[t["trial_id"]] for t in order} == {"0", "1", "2"}, csv_rows


def test_restore_each_restores_before_every_run(tmp_path: Path) -> None:
    found = _run("series-each", "each", 2, tmp_path)
    assert found["run"].returncode == 0, found["run"].stderr
    trials = found["trials"]
    rows = {rep: _rows(t["server_log"]) for rep, t in trials.items()}
    assert all(rows.values()), f"every run counted the history: {rows}"
    assert min(rows[2]) < max(rows[1]), f"the second run started on restored data: {rows}"
    start = found["details"][(trials[2]["trial_id"], "cycle")]["start"]
    assert start["data"] == "restored" and "runs_before" not in start, start
    assert "updated data" not in _show(found["store"], trials[2]["trial_id"])
    assert "†" not in found["md"]
