"""The monitors on real servers of three majors: wait events under lock contention, a
checkpoint forced into the window, CPU shares, and --no-monitors."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from tests.conftest import run_cli
from tests.requirements import missing

STUDY = """
study: monitors
servers:
  - {name: pg15, install: "15"}
  - {name: pg17, install: "17"}
  - {name: pg18, install: "18"}
workloads:
  - {script: contention.pgbench}
  - {script: checkpoint.pgbench}
scale: 1
clients: [6]
threads: 2
duration: 2s
repetitions: 1
order: sequential
"""


@pytest.fixture(scope="module")
def store(pg17, pg18, teiten_home: Path) -> Path:
    import shutil

    from teiten.installs import find_all

    if not any(i.major == 15 for i in find_all()):
        missing("PostgreSQL 15 from the system is not installed")
    work = teiten_home / "work" / "monitors"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    # Every client updates the same row: they queue on its lock.
    (work / "contention.pgbench").write_text(
        "UPDATE pgbench_branches SET bbalance = bbalance + 1 WHERE bid = 1;\n")
    # A checkpoint inside the measured window, which METHODS forbids: it must be flagged.
    (work / "checkpoint.pgbench").write_text(
        "\\set aid random(1, 100000)\nSELECT abalance FROM pgbench_accounts WHERE aid = :aid;\n"
        "\\if :client_id = 0\nCHECKPOINT;\n\\sleep 500 ms\n\\endif\n")
    (work / "study.yaml").write_text(STUDY)
    done = run_cli("run", str(work / "study.yaml"), "--store", str(work / "m.db"), "--no-report")
    assert done.returncode == 0, done.stderr
    return work / "m.db"


def _results(store: Path) -> list[dict[str, object]]:
    rows = json.loads(run_cli("results", "--store", str(store), "--format", "json",
                              check=True).stdout)
    assert all(r["status"] == "ok" for r in rows), [r["error"] for r in rows]
    return rows


def test_lock_contention_shows_in_the_top_waits(store: Path) -> None:
    for row in _results(store):
        if row["workload"] != "contention":
            continue
        types = {w["wait_event_type"] for w in row["top_waits"]}  # type: ignore[union-attr]
        assert types & {"Lock", "LWLock"}, (row["server"], row["top_waits"])
        shares = [w["share"] for w in row["top_waits"]]  # type: ignore[union-attr]
        # Each share is rounded to 4 decimals: their sum may pass 1 by half a unit of each.
        assert shares == sorted(shares, reverse=True) and 0 < sum(shares) <= 1 + 0.00005 * len(shares)


def test_a_checkpoint_in_the_window_is_flagged(store: Path) -> None:
    rows = _results(store)
    for row in rows:
        flagged = row["checkpoints_in_window"]
        assert flagged is not None
        assert (flagged >= 1) == (row["workload"] == "checkpoint"), (row["server"], flagged)
    with sqlite3.connect(store) as conn:
        notes = [json.loads(n) for (n,) in conn.execute(
            "SELECT notes FROM trials WHERE workload = 'checkpoint'")]
    assert all(any("checkpoint(s) inside the measured window" in n for n in ns) for ns in notes)


def test_statistics_deltas_on_three_majors(store: Path) -> None:
    for row in _results(store):
        assert row["blks_hit"] and row["blks_hit"] > 0, row["server"]
        assert row["wal_bytes"] and row["wal_bytes"] > 0, row["server"]
    with sqlite3.connect(store) as conn:
        kinds = {server: json.loads(body) for server, body in conn.execute(
            "SELECT t.server, d.body FROM details d JOIN trials t USING (study_id, trial_id) "
            "WHERE d.kind = 'stats' AND t.workload = 'contention'")}
    assert "io" not in kinds["pg15"] and "io" in kinds["pg17"]      # pg_stat_io from 16
    assert "checkpointer" in kinds["pg17"] and "checkpointer" not in kinds["pg15"]


def test_cpu_shares_add_up_and_the_series_is_per_second(store: Path) -> None:
    rows = _results(store)
    for row in rows:
        total = sum(float(row[k]) for k in ("cpu_user", "cpu_sys", "cpu_iowait", "cpu_idle",
                                            "cpu_steal"))  # type: ignore[arg-type]
        with sqlite3.connect(store) as conn:
            irq = conn.execute("SELECT value FROM metrics WHERE trial_id = ? AND name = 'cpu_irq'",
                               (row["trial_id"],)).fetchone()[0]
        # irq and softirq are the rest (they reached 6% in one trial on this VM); nice and
        # guest time are not counted, hence the slack below 100
        assert 97 <= total + irq <= 100.5, (total, irq)
    with sqlite3.connect(store) as conn:
        seconds = [t for (t,) in conn.execute(
            "SELECT DISTINCT t FROM series WHERE name = 'cpu.idle' AND trial_id = ? ORDER BY t",
            (rows[0]["trial_id"],))]
        per_core = conn.execute("SELECT count(DISTINCT name) FROM series WHERE name LIKE "
                                "'cpu_.idle' AND trial_id = ?", (rows[0]["trial_id"],)).fetchone()[0]
        devices = conn.execute("SELECT body FROM details WHERE kind = 'devices' AND trial_id = ?",
                               (rows[0]["trial_id"],)).fetchone()[0]
    assert len(seconds) >= 1 and all(b - a == pytest.approx(1, abs=0.2)
                                     for a, b in zip(seconds, seconds[1:], strict=False))
    assert per_core >= 1
    assert set(json.loads(devices)) == {"data", "wal"}


def test_no_monitors_records_none(pg17, workdir: Path) -> None:
    study = workdir / "plain.yaml"
    study.write_text("study: plain-monitors\nservers: [{name: pg17, install: '17'}]\n"
                     "workloads: [select-only]\nscale: 1\nclients: [1]\nduration: 1s\n"
                     "repetitions: 1\n")
    done = run_cli("run", str(study), "--store", str(workdir / "p.db"), "--no-report",
                   "--no-monitors")
    assert done.returncode == 0, done.stderr
    [row] = json.loads(run_cli("results", "--store", str(workdir / "p.db"), "--format",
                               "json").stdout)
    assert row["status"] == "ok" and row["cpu_user"] is None and row["top_waits"] == []


def test_show_prints_everything_about_a_trial(store: Path) -> None:
    row = next(r for r in _results(store) if r["workload"] == "contention")
    text = run_cli("show", str(row["trial_id"]), "--store", str(store), check=True).stdout
    for part in ("status: ok", "top waits:", "monitors (window):", "cpu_user = ",
                 "statement latencies (ms):", "UPDATE pgbench_branches", "server log:",
                 "pgbench stdout:"):
        assert part in text, part
    record = json.loads(run_cli("show", str(row["trial_id"]), "--store", str(store), "--format",
                                "json", check=True).stdout)
    assert record["metrics"]["wal_bytes"] == row["wal_bytes"]
    assert "cpu.user" in record["series"] and record["details"]["stats"]["database"]
    missing = run_cli("show", "nope", "--store", str(store))
    assert missing.returncode == 2 and missing.stderr.startswith("teiten: error: no trial nope")


def test_pg_wait_sampling_and_pg_stat_statements_when_preloaded(workdir: Path) -> None:
    from teiten.installs import find_all

    pg15 = next((i for i in find_all() if i.major == 15 and i.origin == "system"), None)
    if pg15 is None or not (pg15.bindir.parent / "lib" / "pg_wait_sampling.so").is_file():
        missing("pg_wait_sampling for the system's PostgreSQL 15 is not installed")
    study = workdir / "ws.yaml"
    study.write_text("study: ws\nservers:\n  - name: pg15\n    install: '15'\n    settings: "
                     "{shared_preload_libraries: 'pg_wait_sampling,pg_stat_statements'}\n"
                     "workloads: [tpcb-like]\nscale: 1\nclients: [4]\nduration: 2s\n"
                     "repetitions: 1\n")
    store = workdir / "ws.db"
    done = run_cli("run", str(study), "--store", str(store), "--no-report")
    assert done.returncode == 0, done.stderr
    [row] = _results(store)
    with sqlite3.connect(store) as conn:
        details = {k: json.loads(b) for k, b in conn.execute(
            "SELECT kind, body FROM details WHERE trial_id = ?", (row["trial_id"],))}
    assert details["waits_source"]["source"] == "pg_wait_sampling"
    assert row["top_waits"] and sum(w["samples"] for w in row["top_waits"]) > 50
    statements = details["stats"]["statements"]
    assert any("pgbench_accounts" in str(s.get("query")) for s in statements.values())
