"""A thinner network as a server setting (issue 36, item 4: "optionally bandwidth"), through the
real ``teiten run``: two servers of one install behind teiten's delay proxy, one with
``bandwidth_mbps: 20``, pgbench at two clients fetching 100 kB answers. "How the servers
differ" names the bandwidth and nothing else; the rate recorded through the proxy (a 4 MB
answer timed) is the asked one; the Servers table says so in en and ja; and the thin server's
TPS is what the link carries (20 Mbit/s over 100 kB a transaction, two clients sharing it)
while the other's is far above it. The transfer is paced by the clock, so other tests' load
can slow it but not speed it past the link: the test does not run alone."""

from __future__ import annotations

import csv
import json
import sqlite3
from typing import Any

import pytest
from tests.conftest import TEST_HOME, run_cli
from tests.studyrun import run_study

pytestmark = [pytest.mark.slow]

RATE = 20.0  # Mbit/s each way
ANSWER = 100_000  # bytes of each transaction's answer
SCRIPT = TEST_HOME / "work" / "e2e-bandwidth-script" / "answer.pgbench"
STUDY = f"""\
study: bandwidth-e2e
servers:
  - {{name: wide, install: "17", delay: {{rtt_ms: 0}}}}
  - {{name: thin, install: "17", delay: {{rtt_ms: 0, bandwidth_mbps: {RATE:g}}}}}
workloads:
  - {{name: answers, scripts: [{{script: {SCRIPT}}}]}}
scale: 1
clients: [2]
duration: 2s
repetitions: 2
seed: 7
"""


@pytest.fixture(scope="module")
def finished(pg17) -> dict[str, Any]:  # noqa: ANN001
    SCRIPT.parent.mkdir(parents=True, exist_ok=True)
    SCRIPT.write_text(f"SELECT repeat('x', {ANSWER});\n")
    found = run_study("bandwidth-e2e", STUDY, work="e2e-bandwidth",
                      key=lambda r: (r["server"], r["repetition"]), timeout=600)
    with sqlite3.connect(found["store"]) as conn:
        found["described"] = {name: json.loads(desc) for name, desc in
                              conn.execute("SELECT name, description FROM servers")}
    found["ja"] = run_cli("report", "--store", str(found["store"]), "--out",
                          str(found["work"] / "report-ja"), "--lang", "ja")
    return found


def test_the_servers_differ_in_the_bandwidth_only(finished: dict[str, Any]) -> None:
    assert finished["run"].returncode == 0, finished["run"].stderr
    assert {t["status"] for t in finished["trials"].values()} == {"ok"}
    with (finished["work"] / "report" / "tables" / "differences.csv").open() as f:
        rows = list(csv.DictReader(f))
    assert [(r["what"], r["wide"], r["thin"], r["cause"]) for r in rows] == [
        ("delay.bandwidth_mbps", "—", "20.0", "declared")], rows


def test_the_recorded_rate_is_the_asked_one_and_the_report_says_so(finished: dict[str, Any]) -> None:
    delay = finished["described"]["thin"]["delay"]
    assert delay["bandwidth_mbps"] == RATE
    assert 0.85 * RATE <= delay["measured_mbps"] <= 1.03 * RATE, delay
    assert "bandwidth_mbps" not in finished["described"]["wide"]["delay"]
    measured = f"{delay['measured_mbps']:.1f}"
    assert (f"| Bandwidth (delay proxy) | 20 Mbit/s each way, shared by its connections; measured "
            f"{measured} Mbit/s (a 4 MB answer through the proxy) |") in finished["md"]
    ja = (finished["work"] / "report-ja" / "report.md").read_text()
    assert (f"| 帯域（遅延プロキシ） | 各方向 20 Mbit/s（接続で共有）、計測値 {measured} Mbit/s"
            "（プロキシ経由の 4 MB の応答） |") in ja


def test_the_thin_server_runs_at_what_the_link_carries(finished: dict[str, Any]) -> None:
    trials = finished["trials"]
    # each transaction's answer is ANSWER bytes and a little of the protocol's
    bound = RATE * 1e6 / 8 / ANSWER
    thin = [trials[("thin", rep)]["tps"] for rep in (1, 2)]
    wide = [trials[("wide", rep)]["tps"] for rep in (1, 2)]
    assert all(0.7 * bound <= tps <= 1.02 * bound for tps in thin), (thin, bound)
    assert min(wide) > 2 * max(thin), (wide, thin)
