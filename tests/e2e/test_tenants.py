"""Tenants (issue 23; METHODS S5's two guests at once): two real clusters loaded at once, each
by its own pgbench, beside their trials alone in the same blocks; the report gives each
tenant's degradation against itself alone, with intervals, and compares it with nothing else."""

from __future__ import annotations

import json
import re
import shutil
import sqlite3
from contextlib import closing
from typing import Any

import pytest
from tests.conftest import TEST_HOME, clusters_snapshot, run_cli

STUDY = """\
study: tenants-e2e
servers:
  - {name: guest1, install: "18"}
  - {name: guest2, install: "18", settings: {synchronous_commit: "off"}}
tenants:
  - [guest1, guest2]
workloads: [tpcb-like]
scale: 1
clients: [1, 2]
duration: 1s
repetitions: 2
seed: 5
"""


@pytest.fixture(scope="module")
def finished() -> dict[str, Any]:
    work = TEST_HOME / "work" / "e2e-tenants"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    (work / "s.yaml").write_text(STUDY)
    before = clusters_snapshot("tenants-e2e")
    plan = run_cli("plan", str(work / "s.yaml"), check=True)
    done = run_cli("run", str(work / "s.yaml"), "--store", str(work / "r.db"),
                   "--report", str(work / "report"), timeout=900)
    assert done.returncode == 0, done.stderr
    return {"work": work, "plan": plan.stdout, "stderr": done.stderr,
            "leftovers": clusters_snapshot("tenants-e2e") - before}


def test_the_group_is_a_point_of_every_block(finished: dict[str, Any]) -> None:
    rows = [line.split() for line in finished["plan"].splitlines()[1:]]
    servers = [r[2] for r in rows]
    assert servers.count("guest1+guest2") == servers.count("guest1") == servers.count("guest2") == 4
    assert not finished["leftovers"], finished["leftovers"]


def test_each_tenant_had_its_own_pgbench_started_together(finished: dict[str, Any]) -> None:
    with closing(sqlite3.connect(finished["work"] / "r.db")) as conn:
        group = conn.execute("SELECT trial_id, status, transactions, argv FROM trials WHERE "
                             "server='guest1+guest2'").fetchall()
        loads = dict(conn.execute("SELECT trial_id, body FROM details WHERE kind='load'"))
    assert [g[1] for g in group] == ["ok"] * 4
    for trial_id, _, transactions, _ in group:
        load = json.loads(loads[trial_id])
        parts = {p["node"]: p for p in load["parts"]}
        assert set(parts) == {"guest1", "guest2"}, load
        assert all(p["transactions"] > 0 and p["returncode"] == 0 for p in parts.values())
        assert transactions == sum(p["transactions"] for p in parts.values())
        assert load["skew_s"] < 1.0, "released by one barrier, they ran at the same time"
    shown = run_cli("show", group[-1][0], "--store", str(finished["work"] / "r.db"), check=True)
    assert re.search(r"started from: guest1: data [^;]+(; server [^;]+)?; guest2: data ",
                     shown.stdout), shown.stdout


def test_the_report_gives_each_tenant_against_itself_alone(finished: dict[str, Any]) -> None:
    report = (finished["work"] / "report" / "report.md").read_text()
    for tenant, alone in (("guest1 (with guest2)", "guest1"), ("guest2 (with guest1)", "guest2")):
        assert f"### Degradation rate: {tenant} against {alone}" in report
        assert f"- tpcb-like: {tenant} against {alone}: " in report, "the answer pairs it with itself"
        assert f"Ratio to baseline: {tenant} / {alone}" in report
    assert "guest2 (with guest1) against guest1" not in report, "never against another server"
    tables = json.loads((finished["work"] / "report" / "tables.json").read_text())
    found = [t for t in tables["tables"] if t["kind"] == "degradation"]
    assert len(found) == 2, [t["name"] for t in found]
    assert {(t["rows"][0]["a"], t["rows"][0]["b"]) for t in found} == {
        ("guest1", "guest1 (with guest2)"), ("guest2", "guest2 (with guest1)")}
    for t in found:
        assert [r["clients"] for r in t["rows"]] == [1, 2]
        assert all(r["degradation_ci_low"] is not None and r["degradation_ci_high"] is not None
                   for r in t["rows"]), t["rows"]
