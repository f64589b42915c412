"""The versions the PGECons reports compared (issue 19): 9.6 and 13 from Maven Central's zonky
binaries, which have no pgbench, beside 18 from PyPI, in one study; one pgbench (the newest of
the study's installs that has one) drives every server, so the client is no difference
between them; every trial ok, the monitors' figures present for 9.6 as for 18. Real clusters,
real pgbench, the real CLI."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from tests.conftest import clusters_snapshot, run_cli

from teiten.installs import Install

STUDY = """
study: versions
servers:
  - {name: pg96, install: "maven:9.6"}
  - {name: pg13, install: "maven:13"}
  - {name: pg18, install: "18"}
workloads: [pgecons-read, pgecons-update]
scale: 1
clients: [1, 2]
duration: 1s
repetitions: 2
"""


def test_a_study_of_96_13_and_18_runs_with_one_pgbench(
        pg96: Install, pg13: Install, pg18: Install, workdir: Path) -> None:
    assert (pg96.origin, pg96.series, pg96.has("pgbench")) == ("maven", "9.6", False)
    assert (pg13.origin, pg13.series, pg13.has("pgbench")) == ("maven", "13", False)
    (workdir / "versions.yaml").write_text(STUDY)
    store, report = workdir / "versions.db", workdir / "report"
    plan = run_cli("plan", str(workdir / "versions.yaml"))
    assert plan.returncode == 0, plan.stderr
    done = run_cli("run", str(workdir / "versions.yaml"), "--store", str(store), "--report",
                   str(report))
    assert done.returncode == 0, done.stderr
    rows = json.loads(run_cli("results", "--store", str(store), "--format", "json",
                              check=True).stdout)
    assert len(rows) == 24 and {r["status"] for r in rows} == {"ok"}, \
        [(r["server"], r["error"]) for r in rows if r["status"] != "ok"]
    with sqlite3.connect(store) as conn:
        spec = json.loads(conn.execute("SELECT spec_json FROM studies").fetchone()[0])
        servers = {name: json.loads(s) for name, s in conn.execute(
            "SELECT name, spec_json FROM servers")}
        described = {name: json.loads(d) for name, d in conn.execute(
            "SELECT name, description FROM servers")}
    # The one pgbench: 18's, recorded with the study and with every server.
    assert spec["pgbench"]["version"] == pg18.version
    assert spec["pgbench"]["bindir"] == str(pg18.bindir)
    assert {d["pgbench"] for d in described.values()} == {pg18.version}
    assert {n: s["resolved"]["origin"] for n, s in servers.items()} == {
        "pg96": "maven", "pg13": "maven", "pg18": "pypi"}
    for row in rows:
        shown = json.loads(run_cli("show", row["trial_id"], "--store", str(store), "--format",
                                   "json", check=True).stdout)
        assert shown["argv"][0] == str(pg18.bindir / "pgbench"), shown["argv"]
        # The monitors read every version (9.6 has wait events but no backend_type).
        assert shown["notes"] == [], (row["server"], shown["notes"])
    with sqlite3.connect(store) as conn:
        sampled = dict(conn.execute(
            "SELECT t.server, sum(w.samples) FROM waits w JOIN trials t USING (study_id, trial_id) "
            "WHERE w.backend_type = 'client backend' GROUP BY t.server").fetchall())
    assert set(sampled) == {"pg96", "pg13", "pg18"} and min(sampled.values()) > 0, sampled
    # WAL bytes on every version (before 14 from the WAL position); records only from 14.
    for server, workload, wal, records in (
            ("pg96", "pgecons-update", True, False), ("pg13", "pgecons-update", True, False),
            ("pg18", "pgecons-update", True, True)):
        mine = [r for r in rows if (r["server"], r["workload"]) == (server, workload)]
        assert all((r["wal_bytes"] or 0) > 100_000 for r in mine) == wal, (server, mine)
        with sqlite3.connect(store) as conn:
            names = {n for (n,) in conn.execute(
                "SELECT DISTINCT m.name FROM metrics m JOIN trials t USING (study_id, trial_id) "
                "WHERE t.server = ? AND t.workload = ?", (server, workload))}
        assert ("wal_records" in names) == records, (server, names)
    # Each server ran its own version.
    assert {n: d["version"] for n, d in described.items()} == {
        "pg96": pg96.version, "pg13": pg13.version, "pg18": pg18.version}
    md = (report / "report.md").read_text()
    # The line of versions: each against the one before it, and its chart.
    for workload in ("pgecons-read", "pgecons-update"):
        assert f"### {workload}: each version against the one before it (前バージョン比)" in md
        assert ("| Clients (クライアント数) | Ratio to the previous version (前バージョン比): pg13 / "
                "pg96 | Ratio to the previous version (前バージョン比): pg18 / pg13 |") in md
        assert (report / "charts" / f"{workload}-history.svg").is_file()
    assert f"pg96 ({pg96.version}) → pg13 ({pg13.version}) → pg18 ({pg18.version})" in md
    # The builds differ, and say so: their origin and their compiler.
    assert "| origin | maven | maven | pypi | the build |" in md
    assert "| compiler | gcc (GCC) 4.4.7" in md
    ja = run_cli("report", "--store", str(store), "--out", str(workdir / "ja"), "--lang", "ja")
    assert ja.returncode == 0, ja.stderr
    ja_md = (workdir / "ja" / "report.md").read_text()
    assert "前バージョン比（各バージョンとその一つ前のバージョンの比）" in ja_md
    assert clusters_snapshot("versions") == set()
