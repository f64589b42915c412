"""pgbench's protocol, rate and latency limit (issue 21, item 4, first part): study keys that
reach pgbench's argv, and the late and skipped transactions it reports, in 'teiten results'
and 'teiten show'. Real clusters, real pgbench, the real CLI."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import run_cli

STUDY = """
study: limits
servers: [{name: pg17, install: "17"}]
workloads:
  - {name: select-only, protocol: prepared, rate: 200, latency_limit_ms: 50}
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
    # skips most transactions and makes every one that ran late.
    assert 100 < paced["tps"] < 300, paced
    assert paced["skipped"] is not None and paced["late"] is not None
    assert flooded["skipped"] > flooded["transactions"] > 0
    assert flooded["late"] == flooded["transactions"]
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
