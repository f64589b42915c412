"""Studies as rows of a store (issue 21, item 2): two runs into one store are listed by
'teiten studies' with their machine, state and trial counts; the results table carries each
trial's study id; a study id that does not exist is one line and exit status 2 for every
command that takes one. Real clusters, the real CLI."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

from tests.conftest import run_cli

STUDY = """
study: {name}
servers: [{{name: pg17, install: "17"}}]
workloads: [select-only]
scale: 1
clients: [1]
duration: 1s
repetitions: {reps}
"""


def test_two_studies_in_one_store(pg17, workdir: Path) -> None:
    for name, reps in (("first", 1), ("second", 2)):
        (workdir / f"{name}.yaml").write_text(STUDY.format(name=name, reps=reps))
        done = run_cli("run", f"{name}.yaml", "--store", "s.db", "--no-report", cwd=workdir)
        assert done.returncode == 0, done.stderr

    listed = json.loads(run_cli("studies", "--store", "s.db", "--format", "json", cwd=workdir,
                                check=True).stdout)
    assert [(s["study_id"], s["name"], s["state"], s["trials"], s["ok"], s["planned"])
            for s in listed] == [(1, "first", "finished", 1, 1, 0), (2, "second", "finished", 2, 2, 0)]
    assert all(s["machine"] and s["started_at"] <= s["finished_at"] for s in listed)
    table = run_cli("studies", "--store", "s.db", cwd=workdir, check=True).stdout.splitlines()
    assert table[0].split()[:6] == ["study_id", "name", "machine", "started_at", "state", "trials"]
    assert len(table) == 3

    rows = run_cli("results", "--store", "s.db", cwd=workdir, check=True).stdout.splitlines()
    assert rows[0].split()[0] == "study_id"
    assert sorted(r.split()[0] for r in rows[1:]) == ["1", "2", "2"]
    got = list(csv.DictReader(io.StringIO(run_cli("results", "--store", "s.db", "--format", "csv",
                                                  "--study-id", "2", cwd=workdir,
                                                  check=True).stdout)))
    assert [r["study_id"] for r in got] == ["2", "2"] and {r["study"] for r in got} == {"second"}

    for args in (("results", "--study-id", "9"), ("report", "--study-id", "9", "--out", "r"),
                 ("resume", "--study-id", "9"), ("clean", "--study-id", "9")):
        bad = run_cli(*args, "--store", "s.db", cwd=workdir)
        assert bad.returncode == 2, (args, bad.stderr)
        assert bad.stderr.strip().splitlines() == [
            "teiten: error: s.db has no study 9; 'teiten studies --store s.db' lists them"], bad.stderr
    assert not (workdir / "r").exists(), "nothing is made for a study that does not exist"


def test_a_store_without_studies_says_so(workdir: Path) -> None:
    import sqlite3

    from teiten.store import Store

    Store.open(workdir / "empty.db", create=True).close()
    done = run_cli("studies", "--store", "empty.db", cwd=workdir)
    assert done.returncode == 0 and done.stdout == ""
    assert "empty.db holds no study yet" in done.stderr
    with sqlite3.connect(workdir / "empty.db") as conn:
        assert conn.execute("SELECT count(*) FROM studies").fetchone() == (0,)
