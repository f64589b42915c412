"""METHODS S7 across machines through ``teiten run``: a primary and a streaming standby, each
with a Pgpool-II beside it, on two "hosts" that the test makes: two network namespaces, each
with its own sshd (tests/sshd.py) and address, joined to this one and to each other by veth
pairs (tests/nethosts.py). The standby is made by host B's pg_basebackup over TCP from host
A's address and streams from there; each Pgpool-II reaches both nodes over TCP; pgbench runs
here. The report names each node's host, and says, truly, that the two hosts are one machine
(one running kernel). Nothing is mocked."""

from __future__ import annotations

import json
import shutil
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest
from tests.conftest import (
    TEST_HOME,
    pgpools_under,
    postgres_processes_under,
    run_cli,
    start_cli,
    wait_for_pgbench,
)
from tests.nethosts import Hosts, two_hosts, why_not

pytestmark = pytest.mark.requires(why_not())

STUDY = """\
study: ssh-spread-e2e
servers:
  - {{name: s7, ssh: [teiten-s7a, teiten-s7b], ssh_config: {config}, install: "15",
      replicas: 1, pgpool: true}}
workloads: [pgecons-read, pgecons-update]
scale: 1
clients: [2]
duration: 2s
repetitions: 1
seed: 7
"""
REMOTE = Path("/var/lib/postgresql/.cache/teiten/clusters")


@pytest.fixture(scope="module")
def hosts() -> Iterator[Hosts]:
    with two_hosts(("teiten-s7a", "teiten-s7b")) as made:
        yield made


@pytest.fixture(scope="module")
def finished(hosts: Hosts) -> dict[str, Any]:
    work = TEST_HOME / "work" / "e2e-ssh-spread"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    (work / "s.yaml").write_text(STUDY.format(config=hosts.config))
    done = run_cli("run", str(work / "s.yaml"), "--store", str(work / "r.db"),
                   "--report", str(work / "report"), timeout=600)
    ja = run_cli("report", "--store", str(work / "r.db"), "--out", str(work / "report-ja"),
                 "--lang", "ja")
    conn = sqlite3.connect(work / "r.db")
    conn.row_factory = sqlite3.Row
    trials = {(r["server"], r["workload"]): dict(r) for r in conn.execute("SELECT * FROM trials")}
    details = {(r["trial_id"], r["kind"]): json.loads(r["body"])
               for r in conn.execute("SELECT * FROM details")}
    (server,) = conn.execute("SELECT kind, description FROM servers").fetchall()
    md = (work / "report" / "report.md").read_text() if done.returncode == 0 else ""
    md_ja = (work / "report-ja" / "report.md").read_text() if ja.returncode == 0 else ""
    return {"run": done, "ja": ja, "trials": trials, "details": details, "md": md,
            "md_ja": md_ja, "kind": server["kind"],
            "description": json.loads(server["description"])}


def test_each_node_runs_on_its_own_host_with_its_pgpool(finished: dict[str, Any],
                                                         hosts: Hosts) -> None:
    done = finished["run"]
    assert done.returncode == 0, done.stderr
    assert "2 trials: 2 ok" in done.stderr, done.stderr
    for (_, workload), t in finished["trials"].items():
        load = finished["details"][(t["trial_id"], "load")]
        assert load["nodes"] == ["pgpool0", "pgpool1"], (workload, load)
        assert all(p["transactions"] > 0 for p in load["parts"]), load
    update = finished["trials"][("s7", "pgecons-update")]["trial_id"]
    replication = finished["details"][(update, "replication")]
    # node1 streams from the primary over TCP, from host B's own address.
    assert {name: s["client_addr"] for name, s in replication.items()} == {"node1": hosts.b.address}
    assert finished["kind"] == "ssh"
    nodes = finished["description"]["nodes"]
    assert [(n["node"], n["ssh"]) for n in nodes] == [("node0", "teiten-s7a"),
                                                     ("node1", "teiten-s7b")]
    assert nodes[0]["boot_id"] == nodes[1]["boot_id"] != ""


def test_the_report_names_each_nodes_host_in_en_and_ja(finished: dict[str, Any]) -> None:
    md, ja = finished["md"], finished["md_ja"]
    assert finished["ja"].returncode == 0, finished["ja"].stderr
    for node, alias in (("node0", "teiten-s7a"), ("node1", "teiten-s7b")):
        assert f"| Host of {node} | {alias} (" in md, md
        assert f"| {node} のホスト | {alias}（CPU " in ja, ja
    # The namespaces are one machine: the S7 note says so (one running kernel), not that
    # the total could grow with the nodes.
    assert "or ssh hosts of one running kernel) and shares its CPUs" in md
    assert "同じカーネルで動く複数の ssh ホスト" in ja


def test_nothing_is_left_on_either_host(finished: dict[str, Any]) -> None:
    assert finished["run"].returncode == 0
    runs = list(REMOTE.glob("ssh-spread-e2e-*")) if REMOTE.exists() else []
    assert runs == []
    assert postgres_processes_under(REMOTE / "ssh-spread-e2e-") == []
    assert pgpools_under(REMOTE / "ssh-spread-e2e-") == set()
    sockets = [p for p in Path("/tmp").glob("teiten-*") if (p / ".teiten-owned").exists()
               and "sockets of s7" in (p / ".teiten-owned").read_text()]
    assert sockets == []


KILLED = """\
study: ssh-spread-killed
servers:
  - {{name: s7k, ssh: [teiten-s7a, teiten-s7b], ssh_config: {config}, install: "15",
      replicas: 1, pgpool: true}}
workloads: [pgecons-update]
scale: 1
clients: [1]
duration: 3s
repetitions: 2
order: sequential
"""


def test_a_killed_run_leaves_both_hosts_running_and_resume_clears_both(hosts: Hosts) -> None:
    """A teiten killed mid-trial leaves the primary on host A, the standby on host B and a
    Pgpool-II beside each; ``teiten resume`` stops and removes them on every host the stored
    server lists, then finishes the study."""
    work = TEST_HOME / "work" / "e2e-ssh-spread-killed"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    (work / "s.yaml").write_text(KILLED.format(config=hosts.config))
    store = work / "r.db"
    proc = start_cli("run", str(work / "s.yaml"), "--store", str(store), "--no-report")
    wait_for_pgbench(proc, timeout=180)
    proc.kill()
    proc.communicate(timeout=30)
    (run,) = REMOTE.glob("ssh-spread-killed-*")
    nodes = sorted(d.name for d in run.iterdir() if d.is_dir())
    assert nodes == ["s7k--pgecons-update", "s7k--pgecons-update--node1"]
    left = postgres_processes_under(run)
    pools = pgpools_under(run)
    assert left and pools, "the killed teiten leaves both nodes and their Pgpool-IIs running"

    done = run_cli("resume", "--store", str(store), "--no-report", timeout=600)
    assert done.returncode == 0, done.stderr
    assert "s7k: killed leftover server processes" in done.stderr, done.stderr
    assert not any(p.is_running() for p in left)
    assert not [pid for pid in pools if psutil.pid_exists(pid)]
    assert list(REMOTE.glob("ssh-spread-killed-*")) == []
    with sqlite3.connect(store) as conn:
        assert [s for (s,) in conn.execute("SELECT status FROM trials")] == ["ok", "ok"]
