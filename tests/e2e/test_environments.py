"""METHODS S5 with what runs here, through ``teiten run``: the same PostgreSQL on loopback
TCP (the reference), inside a network namespace reached through a veth pair, and with its
data on tmpfs; a Docker server that cannot run here is left out with the reason, or
refused when it is not optional. The report gives each environment's degradation against
the first, and the CPU breakdown."""

from __future__ import annotations

import json
import shutil
import sqlite3
import subprocess
from pathlib import Path
from typing import Any

import pytest
from tests.conftest import TEST_HOME, clusters_snapshot, run_cli

from teiten.host import netns

WHY_NOT = netns.available()
# No engine answers there, whether or not this machine runs one (DESIGN, "Docker in tests").
NO_ENGINE = {"DOCKER_HOST": "unix:///nonexistent/docker.sock"}
pytestmark = pytest.mark.requires(WHY_NOT and f"network namespaces: {WHY_NOT}")

STUDY = """\
study: env-e2e
environments: true
connect: tcp
servers:
  - {name: loopback, install: "15"}
  - {name: netns-veth, install: "15", network: netns}
  - {name: tmpfs, install: "15", directory: /dev/shm}
  - {name: docker-fs, install: "15", docker: {volume: container}, optional: true}
workloads:
  - pgecons-read
  - {name: pgecons-update, fillfactor: 80}
scale: 1
clients: [1, 2]
duration: 1s
repetitions: 2
seed: 3
"""


# Only this study's: its runs' names begin with it, and other tests run beside this one.
def _namespaces() -> set[str]:
    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=True)
    return {line.split()[0] for line in out.stdout.splitlines()
            if line.strip().startswith("teiten-env-e2e-")}


def _shm() -> set[str]:
    return {p.name for p in Path("/dev/shm").glob("teiten-env-e2e-*")}


@pytest.fixture(scope="module")
def finished() -> dict[str, Any]:
    work = TEST_HOME / "work" / "e2e-environments"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    (work / "s.yaml").write_text(STUDY)
    before = (clusters_snapshot("env-e2e"), _namespaces(), _shm())
    done = run_cli("run", str(work / "s.yaml"), "--store", str(work / "r.db"),
                   "--report", str(work / "report"), timeout=900, env=NO_ENGINE)
    conn = sqlite3.connect(work / "r.db")
    conn.row_factory = sqlite3.Row
    trials = [dict(r) for r in conn.execute("SELECT * FROM trials")]
    return {"work": work, "run": done, "trials": trials, "before": before,
            "after": (clusters_snapshot("env-e2e"), _namespaces(), _shm()),
            "md": (work / "report" / "report.md").read_text() if done.returncode == 0 else ""}


def test_every_environment_runs_and_leaves_nothing(finished: dict[str, Any]) -> None:
    done = finished["run"]
    assert done.returncode == 0, done.stderr
    assert "24 trials: 24 ok" in done.stderr
    assert finished["after"] == finished["before"]


def test_the_namespaced_server_is_reached_through_the_veth_pair(finished: dict[str, Any]) -> None:
    for t in finished["trials"]:
        argv = json.loads(t["argv"])
        host = argv[argv.index("-h") + 1]
        if t["server"] == "netns-veth":
            assert host.startswith(("10.", "172.", "192.168.")) and host != "127.0.0.1", argv
        else:
            assert host == "127.0.0.1", argv


def test_the_report_has_each_environments_degradation(finished: dict[str, Any]) -> None:
    md = finished["md"]
    for other in ("netns-veth", "tmpfs"):
        assert f"Degradation rate: {other} against loopback" in md
    # both workloads, both pairs
    assert md.count("Degradation rate: ") == 4
    assert md.count("CPU breakdown: loopback and ") == 4
    assert "netns-veth %steal" in md and "loopback %idle" in md


def test_a_docker_server_without_an_engine_is_left_out_with_the_reason(
        finished: dict[str, Any]) -> None:
    assert "The optional server docker-fs was left out: docker server 'docker-fs': no Docker " \
           "engine answers here" in finished["md"]


def test_a_required_docker_server_without_an_engine_is_refused(tmp_path: Path) -> None:
    study = tmp_path / "d.yaml"
    study.write_text(STUDY.replace(", optional: true", ""))
    before = clusters_snapshot("env-e2e")
    done = run_cli("run", str(study), "--store", str(tmp_path / "r.db"), env=NO_ENGINE)
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert "no Docker engine answers here" in lines[0] and "optional: true" in lines[0]
    assert "Traceback" not in done.stderr
    assert not (tmp_path / "r.db").exists()
    assert clusters_snapshot("env-e2e") == before
