"""METHODS S2's 2014 bottleneck analysis on a real -DLWLOCK_STATS build: every trial's lock
requests and contentions per transaction, from what the backends print as they exit, and
the report's tables of them: per server, and by core count with shared and exclusive
requests apart (the shape of s2-cores-2014, small)."""

from __future__ import annotations

import csv
import json
import re
import sqlite3
from contextlib import closing
from pathlib import Path

import pytest
from tests.conftest import run_cli

pytestmark = pytest.mark.slow


def test_lock_statistics_per_transaction(lwlock_build, workdir: Path) -> None:  # noqa: ANN001
    (workdir / "lw.yaml").write_text(f"""
study: lw
servers:
  - {{name: lw, install: {lwlock_build.name}}}
cores: [1, 2]
workloads: [tpcb-like]
clients: [1, 4]
scale: 1
duration: 1s
repetitions: 2
""")
    store = workdir / "lw.db"
    done = run_cli("run", str(workdir / "lw.yaml"), "--store", str(store), "--report",
                   str(workdir / "rep"))
    assert done.returncode == 0, done.stderr
    rows = json.loads(run_cli("results", "--store", str(store), "--format", "json").stdout)
    assert {r["status"] for r in rows} == {"ok"}
    with closing(sqlite3.connect(store)) as conn:  # what 'teiten show' gives as details.lwlock
        lwlock = {t: json.loads(body) for t, body in conn.execute(
            "SELECT trial_id, body FROM details WHERE kind = 'lwlock'")}
    for row in rows:
        stats = lwlock[row["trial_id"]]
        assert stats["transactions"] == row["transactions"]
        locks = {lk["lock"]: lk for lk in stats["locks"]}
        # tpcb-like touches buffers, WAL and the proc array in every transaction.
        for name in ("BufferContent", "BufferMapping", "WALInsert", "ProcArray"):
            assert locks[name]["requests_per_tx"] > 1.0, (name, locks[name])
        # One xid per transaction, and a little more: the counts are of every process that
        # exited in the window, and in a 1 s trial of few transactions a monitor's connection
        # or an autovacuum worker weighs (the suite once measured 1.38 requests a transaction).
        assert 0.8 <= locks["XidGen"]["requests_per_tx"] <= 1.6, locks["XidGen"]
        # The figures are the sums over the processes of the window divided by transactions.
        for lk in stats["locks"]:
            assert lk["requests_per_tx"] == pytest.approx(lk["requests"] / row["transactions"])
            assert lk["shared_per_tx"] + lk["exclusive_per_tx"] == pytest.approx(lk["requests_per_tx"])
        assert 0.8 <= locks["XidGen"]["exclusive_per_tx"] <= 1.3, locks["XidGen"]  # taken exclusive
        assert locks["BufferMapping"]["shared_per_tx"] > 1.0  # looked up shared
        # Only processes that exited after the load started: pgbench's backends, the
        # monitors' connections and the launchers at shutdown (not the prewarm connection).
        assert row["clients"] + 1 <= stats["processes"] <= row["clients"] + 8
    assert {r["server"] for r in rows} == {"lw-1core", "lw-2cores"}
    report = (workdir / "rep" / "report.md").read_text()
    for server in ("lw-1core", "lw-2cores"):
        table = report.split("### LWLock requests and contentions per transaction: "
                             f"{server} (LWLOCK\\_STATS)", 1)[1]
        assert re.search(r"^\| BufferContent \| \d+\.\d{3} \| \d\.\d{4} \| \d+\.\d{3} \| \d\.\d{4} \|$",
                         table, re.M)
    # By core count at 4 clients: shared, exclusive and contentions per transaction for 1 and
    # 2 cores, the figures of <stem>-lock-cores.csv, which the stored trials give.
    table = report.split("### LWLock requests and contentions per transaction by core count: lw, "
                         "4 clients (LWLOCK\\_STATS)", 1)[1].split("\n### ", 1)[0]
    assert "shared/tx (1 core)" in table and "exclusive/tx (2 cores)" in table
    line = re.search(r"^\| ProcArray \|((?: [\d.]+ \|){6})$", table, re.M)
    assert line, table
    with (workdir / "rep" / "tables" / "tpcb-like-lock-cores.csv").open() as fh:
        exported = {(r["lock"], int(r["cores"])): r for r in csv.DictReader(fh)}
    shown = [float(v) for v in line[1].split("|") if v.strip()]
    proc = [exported[("ProcArray", c)] for c in (1, 2)]
    assert shown == [float(proc[i][k]) for i in (0, 1) for k in
                     ("shared_per_transaction", "exclusive_per_transaction",
                      "contentions_per_transaction")]
    # The TPS table carries each server's CPU idle beside its TPS (the 2014 tables).
    assert "CPU idle %: lw-1core" in report and "CPU idle %: lw-2cores" in report


def test_an_ordinary_build_has_no_lock_statistics(pg17, workdir: Path) -> None:
    (workdir / "plain.yaml").write_text("""
study: plain
servers: [{name: pg17, install: "17"}]
workloads: [tpcb-like]
clients: [2]
scale: 1
duration: 1s
repetitions: 1
""")
    store = workdir / "plain.db"
    assert run_cli("run", str(workdir / "plain.yaml"), "--store", str(store), "--no-report").returncode == 0
    [row] = json.loads(run_cli("results", "--store", str(store), "--format", "json").stdout)
    shown = json.loads(run_cli("show", row["trial_id"], "--store", str(store), "--format", "json").stdout)
    assert "lwlock" not in shown["details"]
