"""perf profiles of the server during the window, folded stacks, flame graphs; and the
clear message when perf cannot run."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import pytest
from tests.conftest import run_cli

STUDY = """
study: prof
servers:
  - {name: pg17, install: "17"}
  - {name: pg18, install: "18"}
workloads: [pgecons-read]
scale: 1
clients: [1, 2]
duration: 2s
repetitions: 1
order: sequential
profile: {points: [{clients: 1}]}
"""


def _profiles(store: Path) -> dict[str, dict[str, object]]:
    with sqlite3.connect(store) as conn:
        return {f"{server}/{clients}": json.loads(body) for server, clients, body in conn.execute(
            "SELECT t.server, t.clients, d.body FROM details d JOIN trials t "
            "USING (study_id, trial_id) WHERE d.kind = 'profile'")}


@pytest.mark.requires(None if shutil.which("perf") else "perf is not installed here")
def test_profiles_of_the_chosen_points_with_flame_graphs(pg17, pg18, workdir: Path) -> None:
    (workdir / "prof.yaml").write_text(STUDY)
    store = workdir / "prof.db"
    done = run_cli("run", str(workdir / "prof.yaml"), "--store", str(store), "--report",
                   str(workdir / "report"))
    assert done.returncode == 0, done.stderr
    profiles = _profiles(store)
    assert set(profiles) == {"pg17/1", "pg18/1"}, "only the chosen points are profiled"
    for key, prof in profiles.items():
        assert prof["event"] in ("cycles", "cpu-clock")
        assert int(prof["samples"]) > 20, key  # type: ignore[call-overload]
        folded = str(prof["folded"])
        # Server-side frames of the S1 read query, resolved from the postgres binary.
        assert "postgres" in folded and ("ExecScan" in folded or "_bt_" in folded
                                          or "ExecAgg" in folded), key
        assert str(prof["svg"]).lstrip().startswith("<?xml"), key
    report = workdir / "report"
    graphs = sorted(p.name for p in (report / "flamegraphs").iterdir())
    assert any(g.startswith("diff-") for g in graphs), graphs
    assert len(graphs) == 3, graphs  # pg17, pg18, and the differential one
    html = (report / "report.html").read_text()
    assert "flamegraphs/" in html


def test_without_perf_the_trial_says_so(pg17, workdir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (workdir / "prof.yaml").write_text(STUDY.replace('  - {name: pg18, install: "18"}\n', ""))
    store = workdir / "noperf.db"
    monkeypatch.setenv("TEITEN_PERF", "/nonexistent/perf")  # run_cli passes os.environ on
    done = run_cli("run", str(workdir / "prof.yaml"), "--store", str(store), "--no-report")
    assert done.returncode == 0, done.stderr
    with sqlite3.connect(store) as conn:
        rows = conn.execute("SELECT clients, status, notes FROM trials ORDER BY clients").fetchall()
    assert [(c, s) for c, s, _ in rows] == [(1, "ok"), (2, "ok")]
    assert "perf is not installed" in rows[0][2]
    assert "profile" not in rows[1][2]
    assert not _profiles(store)
