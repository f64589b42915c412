"""A slower network as a server setting (issue 36, item 4), through the real ``teiten run``: two
servers of one install that differ only in ``delay: {rtt_ms}`` (0 and 5 ms), pgbench -S at one
client. "How the servers differ" names the added round trip and nothing else; the round trip
recorded through each server's delay proxy is the asked time over the direct one (± 0.3 ms);
one client at 5 ms runs between 0.8 and 1.0 times the round-trip bound drawn against the round
trip pgbench itself saw through the proxy (SELECT 1); and no proxy process is left.

It runs alone: a round trip of a tenth of a millisecond is what other tests' load moves.
"""

from __future__ import annotations

import csv
import json
import sqlite3
from typing import Any

import psutil
import pytest
from tests.studyrun import run_study

pytestmark = [pytest.mark.slow, pytest.mark.alone]

STUDY = """\
study: delay-e2e
servers:
  - {name: near, install: "17", delay: {rtt_ms: 0}}
  - {name: far, install: "17", delay: {rtt_ms: 5}}
workloads: [select-only]
scale: 1
clients: [1]
duration: 2s
repetitions: 2
seed: 5
"""
ASKED = {"near": 0.0, "far": 5.0}


def _proxies() -> set[int]:
    return {p.pid for p in psutil.process_iter(["cmdline"])
            if "teiten.host.netdelay" in " ".join(p.info["cmdline"] or ())}


@pytest.fixture(scope="module")
def finished(pg17) -> dict[str, Any]:  # noqa: ANN001
    before = _proxies()
    found = run_study("delay-e2e", STUDY, work="e2e-delay",
                      key=lambda r: (r["server"], r["repetition"]), timeout=600)
    conn = sqlite3.connect(found["store"])
    found["described"] = {name: json.loads(desc) for name, desc in
                          conn.execute("SELECT name, description FROM servers")}
    conn.close()
    found["left"] = _proxies() - before
    return found


def test_the_study_runs_and_leaves_no_proxy(finished: dict[str, Any]) -> None:
    assert finished["run"].returncode == 0, finished["run"].stderr
    assert {t["status"] for t in finished["trials"].values()} == {"ok"}
    assert len(finished["trials"]) == 4
    assert not finished["left"]


def test_the_servers_differ_in_the_added_round_trip_only(finished: dict[str, Any]) -> None:
    with (finished["work"] / "report" / "tables" / "differences.csv").open() as f:
        rows = list(csv.DictReader(f))
    assert [(r["what"], r["near"], r["far"], r["cause"]) for r in rows] == [
        ("delay.rtt_ms", "0.0", "5.0", "declared")], rows


def test_the_recorded_round_trip_is_the_asked_one(finished: dict[str, Any]) -> None:
    for name, asked in ASKED.items():
        delay = finished["described"][name]["delay"]
        assert delay["rtt_ms"] == asked
        assert abs(delay["rtt_ms_median"] - delay["direct_rtt_ms"] - asked) <= 0.3, delay
        by_pgbench = finished["described"][name]["probe"]
        assert by_pgbench == {"target": "127.0.0.1 (delay proxy)", "by": "pgbench SELECT 1",
                              "rtt_ms_median": delay["pgbench_rtt_ms"]}
        assert abs(delay["pgbench_rtt_ms"] - delay["rtt_ms_median"]) <= 0.3, delay
    md = finished["md"]
    far = finished["described"]["far"]["delay"]
    assert f"5 ms asked; measured {far['rtt_ms_median']:.3f} ms through the proxy" in md


def test_one_client_at_5_ms_runs_at_the_round_trip_bound(finished: dict[str, Any]) -> None:
    rtt = finished["described"]["far"]["probe"]["rtt_ms_median"]  # pgbench's own SELECT 1
    tps = sorted(t["tps"] for (server, _), t in finished["trials"].items() if server == "far")
    # The bound is itself measured (pgbench's SELECT 1 over 2 s at prepare), so a trial may run
    # above it by what that measurement may be off: in CI one ran at 199.3 TPS against a bound
    # of 1000 / 5.09 = 196.5 (1.4% over), another at 196.8 against 1000 / 5.342 = 187.2 (5.1%
    # over). The issue takes an RTT to be measured within ±0.3 ms, so the bound is allowed
    # that much: 1000 / (rtt - 0.3) ms, 6% above it at 5 ms; a proxy that adds 4 ms fails.
    assert 0.8 * 1000 / rtt <= tps[0] and tps[-1] <= 1000 / (rtt - 0.3), (tps, rtt)
    assert f"Round-trip bound (S11): far, round trip {rtt:.3f} ms" in finished["md"]
