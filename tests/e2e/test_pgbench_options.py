"""pgbench's protocol, rate and latency limit (issue 21, item 4): study keys that reach
pgbench's argv, the late and skipped transactions it reports, and the latency percentiles of
its transaction log, in 'teiten results' (JSON and CSV) and 'teiten show'. Real clusters,
real pgbench, the real CLI."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

from tests.conftest import clusters_snapshot, run_cli

STUDY = """
study: limits
servers: [{name: pg17, install: "17"}]
workloads:
  - {name: select-only, protocol: prepared, rate: 200, latency_limit_ms: 50, percentiles: true}
  - {name: tpcb-like, protocol: extended, rate: 100000, latency_limit_ms: 0.1}
scale: 1
clients: [2]
duration: 2s
repetitions: 1
order: sequential
"""


def test_protocol_rate_and_latency_limit_reach_pgbench_and_the_results(pg17, workdir: Path) -> None:
    (workdir / "s.yaml").write_text(STUDY)
    done = run_cli("run", "s.yaml", "--store", "s.db", "--no-report", cwd=workdir)
    assert done.returncode == 0, done.stderr
    rows = {r["workload"]: r for r in json.loads(run_cli(
        "results", "--store", "s.db", "--format", "json", cwd=workdir, check=True).stdout)}
    paced, flooded = rows["select-only"], rows["tpcb-like"]
    assert paced["status"] == flooded["status"] == "ok"
    # -R 200 holds the paced run near 200 TPS; a rate it cannot reach with a 0.1 ms limit
    # skips most transactions and makes nearly every one that ran late (a full suite saw 2,071
    # of 2,072: one, at its start, within 0.1 ms of its schedule).
    assert 100 < paced["tps"] < 300, paced
    assert paced["skipped"] is not None and paced["late"] is not None
    assert flooded["skipped"] > flooded["transactions"] > 0
    ran = flooded["transactions"]
    assert ran - ran // 100 <= flooded["late"] <= ran, flooded
    shown = {w: json.loads(run_cli("show", r["trial_id"], "--store", "s.db", "--format", "json",
                                   cwd=workdir, check=True).stdout) for w, r in rows.items()}
    argv = " ".join(shown["select-only"]["argv"])
    assert " -M prepared -R 200 -L 50 -b select-only@1 " in argv, argv
    assert " -M extended -R 100000 -L 0.1 -b tpcb-like@1 " in " ".join(shown["tpcb-like"]["argv"])
    limits = shown["tpcb-like"]["details"]["pgbench"]
    assert limits["latency_limit_ms"] == 0.1 and limits["lag_ms_avg"] >= 0
    text = run_cli("show", flooded["trial_id"], "--store", "s.db", cwd=workdir, check=True).stdout
    assert (f"limits: {flooded['late']} of {flooded['transactions']} transactions above the 0.1 ms "
            f"latency limit; {flooded['skipped']} skipped") in text

    # percentiles where asked for (select-only), in order; none where not (tpcb-like)
    found = [paced[k] for k in ("p50_ms", "p90_ms", "p95_ms", "p99_ms", "p999_ms", "max_ms")]
    assert all(v is not None for v in found) and found == sorted(found), found
    assert flooded["p99_ms"] is None
    counted = shown["select-only"]["details"]["pgbench"]["percentiles"]
    assert counted["count"] == paced["transactions"] and counted["skipped"] == paced["skipped"]
    assert " -l --log-prefix " in argv and clusters_snapshot("limits") == set()
    text = run_cli("show", paced["trial_id"], "--store", "s.db", cwd=workdir, check=True).stdout
    assert f"latency percentiles (ms): p50 {paced['p50_ms']:.3f} · " in text
    table = run_cli("results", "--store", "s.db", "--format", "csv", cwd=workdir, check=True).stdout
    by_workload = {r["workload"]: r for r in csv.DictReader(io.StringIO(table))}
    assert float(by_workload["select-only"]["p95_ms"]) == paced["p95_ms"]


def test_bad_limits_are_refused_before_anything_runs(workdir: Path) -> None:
    for bad, says in (("rate: 0", "rate"), ("protocol: binary", "protocol"),
                      ("latency_limit_ms: -1", "latency_limit_ms")):
        text = STUDY.replace("rate: 200", bad)
        if bad.startswith("protocol"):
            text = text.replace("protocol: prepared, ", "")
        (workdir / "bad.yaml").write_text(text)
        done = run_cli("plan", "bad.yaml", cwd=workdir)
        assert done.returncode == 2, done.stderr
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1 and says in lines[0] and "Traceback" not in done.stderr, lines
    assert not (workdir / "s.db").exists()


def test_percentiles_with_several_pgbench_at_once_are_refused(workdir: Path) -> None:
    (workdir / "several.yaml").write_text(STUDY + "load_clients: [{name: here}, {name: again}]\n")
    done = run_cli("plan", "several.yaml", cwd=workdir)
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip().splitlines() == [
        "teiten: error: several.yaml:5: percentiles come from one "
        "pgbench's transaction log, and 'load_clients' (server pg17) runs several at once; "
        "remove 'percentiles' (or the several pgbench) in this version of teiten"]


CONFLICT = """\\set delta random(1, :most)
BEGIN ISOLATION LEVEL REPEATABLE READ;
UPDATE pgbench_branches SET bbalance = bbalance + :delta WHERE bid = 1;
END;
"""
RETRYING = """
study: retrying
servers: [{name: pg17, install: "17"}]
workloads:
  - {script: conflict.pgbench, max_tries: 50, random_seed: 42, defines: {most: 5, unused: a b}}
scale: 1
clients: [4]
duration: 2s
repetitions: 1
"""


def test_max_tries_defines_and_random_seed_reach_pgbench_and_the_results(
        pg17, workdir: Path) -> None:  # noqa: ANN001
    """Four clients updating one row under repeatable read fail on serialization: with
    --max-tries pgbench retries them, counts them, and teiten keeps the counts; -D gives the
    script its variable; --random-seed is on the argv."""
    (workdir / "conflict.pgbench").write_text(CONFLICT)
    (workdir / "s.yaml").write_text(RETRYING)
    done = run_cli("run", "s.yaml", "--store", "s.db", "--no-report", cwd=workdir)
    assert done.returncode == 0, done.stderr
    [row] = json.loads(run_cli("results", "--store", "s.db", "--format", "json", cwd=workdir,
                               check=True).stdout)
    assert row["status"] == "ok" and row["transactions"] > 0, row
    assert row["retried"] > 0 and row["retries"] >= row["retried"], row
    shown = json.loads(run_cli("show", row["trial_id"], "--store", "s.db", "--format", "json",
                               cwd=workdir, check=True).stdout)
    argv = shown["argv"]
    assert "--max-tries=50" in argv and "--random-seed=42" in argv, argv
    at = argv.index("-D")
    assert argv[at:at + 4] == ["-D", "most=5", "-D", "unused=a b"], argv
    text = run_cli("show", row["trial_id"], "--store", "s.db", cwd=workdir, check=True).stdout
    assert (f"{row['retried']} retried after a serialization or deadlock failure "
            f"({row['retries']} retries)") in text
    table = run_cli("results", "--store", "s.db", "--format", "csv", cwd=workdir, check=True).stdout
    [line] = csv.DictReader(io.StringIO(table))
    assert int(line["retried"]) == row["retried"] and int(line["retries"]) == row["retries"]


def test_options_the_studys_pgbench_lacks_are_refused_in_one_line(pg14, workdir: Path) -> None:  # noqa: ANN001
    """--max-tries came with pgbench 15 (--random-seed with 11, older than any pgbench here)."""
    (workdir / "conflict.pgbench").write_text(CONFLICT)
    (workdir / "old.yaml").write_text(RETRYING + 'pgbench: "14"\n')
    done = run_cli("plan", "old.yaml", cwd=workdir)
    assert done.returncode == 2, done.stderr
    [line] = done.stderr.strip().splitlines()
    assert line.startswith("teiten: error: old.yaml:5: workloads[0].max_tries: pgbench 15 or "
                           "later has it, and the study's pgbench is 14."), line
    assert line.endswith("; name a newer install in 'pgbench:', or remove it"), line
    for bad, says in (("defines: {1st: 2}", "1st"), ("max_tries: -1", "max_tries"),
                      ("random_seed: never", "random_seed")):
        (workdir / "bad.yaml").write_text(RETRYING.replace(
            "max_tries: 50, random_seed: 42, defines: {most: 5, unused: a b}", bad))
        done = run_cli("plan", "bad.yaml", cwd=workdir)
        assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
        [line] = done.stderr.strip().splitlines()
        assert says in line, line
    assert not (workdir / "s.db").exists()
