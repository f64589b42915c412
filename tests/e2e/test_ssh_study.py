"""Servers and load clients over OpenSSH through ``teiten run``: a real sshd the test starts
on loopback (tests/sshd.py), a cluster teiten runs "there" with the system's PostgreSQL 15,
a host that cannot be reached (its trials fail with one clear line, the study goes on), and
pgbench from two load clients at once, one of them over ssh."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import closing
from typing import Any

import pytest
from tests.sshd import Sshd, available, free_port, running_sshd
from tests.studyrun import run_study

WHY_NOT = available()
# alone: its load clients must start within 0.1 s of each other.
pytestmark = [pytest.mark.requires(WHY_NOT and f"sshd: {WHY_NOT}"), pytest.mark.alone]

STUDY = """\
study: ssh-e2e
connect: tcp
servers:
  - {{name: here, install: "15"}}
  - {{name: db1, ssh: teiten-db1, ssh_config: {config}, install: "15"}}
  - {{name: gone, ssh: teiten-gone, ssh_config: {config}, install: "15"}}
load_clients:
  - {{name: local}}
  - {{name: c2, ssh: teiten-db1, ssh_config: {config}, pgbench: /usr/lib/postgresql/15/bin/pgbench}}
workloads: [pgecons-read]
scale: 1
clients: [2]
duration: 2s
repetitions: 1
seed: 11
"""


@pytest.fixture(scope="module")
def sshd() -> Iterator[Sshd]:
    with running_sshd() as found:
        closed = free_port()  # nothing listens there
        with found.config.open("a") as f:
            f.write(f"Host teiten-gone\n    HostName 127.0.0.1\n    Port {closed}\n"
                    "    User postgres\n    BatchMode yes\n")
        yield found


@pytest.fixture(scope="module")
def finished(sshd: Sshd) -> dict[str, Any]:
    found = run_study("ssh-e2e", STUDY.format(config=sshd.config), work="e2e-ssh", timeout=600)
    with closing(sqlite3.connect(found["store"])) as conn:
        found["sources"] = set(conn.execute("SELECT DISTINCT trial_id, source FROM series"))
        found["kinds"] = dict(conn.execute("SELECT name, kind FROM servers"))
    return {**found, "remote_dir": "/var/lib/postgresql/.cache/teiten/clusters"}


def test_an_unreachable_host_fails_its_trials_and_the_study_goes_on(
        finished: dict[str, Any]) -> None:
    done = finished["run"]
    assert done.returncode == 0, done.stderr
    assert "3 trials: 2 ok, 1 failed" in done.stderr, done.stderr
    gone = finished["trials"]["gone"]
    assert gone["status"] == "failed"
    error = gone["error"]
    assert "\n" not in error and "teiten-gone" in error and "cannot connect" in error, error
    assert "Traceback" not in done.stderr
    assert finished["after"] == finished["before"]


def test_the_ssh_server_runs_with_both_load_clients_and_its_host_is_monitored(
        finished: dict[str, Any]) -> None:
    for server in ("here", "db1"):
        t = finished["trials"][server]
        assert t["status"] == "ok", t["error"]
        load = finished["details"][(t["trial_id"], "load")]
        assert load["clients"] == ["c2", "local"]
        assert len(load["parts"]) == 2 and all(p["transactions"] > 0 for p in load["parts"])
        assert load["skew_s"] < 0.1, load["skew_s"]  # the remote one waits, connected
        assert t["transactions"] == sum(p["transactions"] for p in load["parts"])
    db1 = finished["trials"]["db1"]["trial_id"]
    assert (db1, "server-system") in finished["sources"]
    assert (db1, "system") in finished["sources"]
    assert "cpu.user" in finished["details"][(db1, "server_system_summary")]
    # the database monitor logs in with the cluster's password, which only teiten holds
    warnings = finished["details"].get((db1, "warnings"), [])
    assert not [w for w in warnings if "database monitor unavailable" in w], warnings
    assert (db1, "stats") in finished["details"]


def test_nothing_is_left_on_the_remote_host(finished: dict[str, Any]) -> None:
    from pathlib import Path

    left = Path(finished["remote_dir"])
    runs = [p for p in left.glob("ssh-e2e-*")] if left.exists() else []
    assert runs == []


def test_the_report_shows_the_server_host_and_each_load_client(
        finished: dict[str, Any]) -> None:
    import csv

    report = finished["work"] / "report"
    md = (report / "report.md").read_text()
    cpu = (report / "charts" / "pgecons-read-cpu.svg").read_text()
    # A bar of each, read from the host over ssh and from this machine; which parts each bar
    # has (idle among them) depends on how busy the machines were.
    assert "db1 · server host · 2 clients · " in cpu
    assert "db1 · client · 2 clients · " in cpu
    assert "here · 2 clients · " in cpu  # a local server: one bar, this machine
    assert "### Each pgbench of the trials that ran several at once" in md
    with (report / "tables" / "pgecons-read-load.csv").open(newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert {(r["server"], r["load_client"]) for r in rows} == {
        ("here", "local"), ("here", "c2"), ("db1", "local"), ("db1", "c2")}
    for server in ("here", "db1"):
        mine = [float(r["tps"]) for r in rows if r["server"] == server]
        assert sum(mine) == pytest.approx(finished["trials"][server]["tps"], abs=0.2)
        shares = [float(r["share_pct"]) for r in rows if r["server"] == server]
        assert sum(shares) == pytest.approx(100, abs=0.2)
    html = (report / "report.html").read_text()
    assert "db1 · server host" in html and "tables/pgecons-read-load.csv" in html


def test_the_store_and_the_servers_table_name_each_servers_real_kind(
        finished: dict[str, Any]) -> None:
    assert finished["kinds"] == {"here": "local", "db1": "ssh", "gone": "ssh"}
    md = (finished["work"] / "report" / "report.md").read_text()
    kinds = [line for line in md.splitlines() if line.startswith("| Kind |")]
    assert kinds == ["| Kind | local (a cluster teiten makes on this machine) |",
                     *["| Kind | ssh (a cluster teiten makes on another host, over OpenSSH) |"] * 2]
