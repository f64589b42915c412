"""An external server that runs on this machine, and the noise guard (issue 54, item 9): the
backends that serve teiten's own connections, and the server's own processes, are the trial's;
another program's client of the same server stays foreign. Real clusters, real pgbench, the
real CLI with the guard on."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import psutil
import psycopg
import pytest
from tests.burners import skip_when_busy
from tests.conftest import ROOT, TEST_HOME
from tests.integration.test_external import outside  # noqa: F401 - the fixture

from teiten.servers.cluster import Cluster
from teiten.servers.external_here import postmaster_here, trial_processes


def _tcp(cluster: Cluster) -> str:
    return f"host=127.0.0.1 port={cluster.port} user=postgres dbname=postgres"


def _backend_of(conn: psycopg.Connection) -> int:
    row = conn.execute("SELECT pg_backend_pid()").fetchone()
    assert row is not None
    return int(row[0])


def test_the_trials_processes_are_its_backends_and_the_servers_own(
        outside: Cluster, pg18) -> None:  # noqa: ANN001, F811
    pgbench = str(pg18.binary("pgbench"))
    subprocess.run([pgbench, "-i", "-q", "-s", "1", "-h", "127.0.0.1", "-p", str(outside.port),
                    "-U", "postgres", "postgres"], check=True, capture_output=True, timeout=300)
    # Another program's client: a pgbench this process starts and leaves (setsid, then its
    # shell exits), so that it is no descendant of ours, as another user's benchmark is not.
    subprocess.run(["setsid", "sh", "-c", f'"$0" -n -S -T 30 -h 127.0.0.1 -p {outside.port} '
                    "-U postgres postgres >/dev/null 2>&1 &", pgbench], check=True, timeout=30)
    try:
        deadline = time.monotonic() + 30
        with psycopg.connect(_tcp(outside), autocommit=True) as conn:
            mine = _backend_of(conn)
            while True:
                foreign = conn.execute(
                    "SELECT pid FROM pg_stat_activity WHERE application_name = 'pgbench'"
                ).fetchall()
                if foreign or time.monotonic() > deadline:
                    break
                time.sleep(0.2)
            assert len(foreign) == 1, "the other pgbench did not connect"
            postmaster = postmaster_here(conn)
            assert postmaster is not None and postmaster.pid == outside.postmaster_pid()
            ours = set(trial_processes(postmaster))
            children = {c.pid for c in postmaster.children()}
        assert mine in ours  # the backend of teiten's connection
        assert foreign[0][0] not in ours  # the other pgbench's backend
        assert ours == children - {foreign[0][0]}  # the checkpointer, WAL writer and the like
        assert len(ours) >= 4
    finally:
        for proc in psutil.process_iter(["name", "cmdline"]):
            if proc.info["name"] == "pgbench" and str(outside.port) in " ".join(proc.info["cmdline"] or ()):
                proc.kill()


def test_a_server_over_a_unix_socket_here_is_found_and_one_in_a_name_only_is_not(
        outside: Cluster) -> None:  # noqa: F811
    assert outside.socket_dir is not None
    with psycopg.connect(f"host={outside.socket_dir} port={outside.port} user=postgres "
                         "dbname=postgres", autocommit=True) as conn:
        found = postmaster_here(conn)
        assert found is not None and found.pid == outside.postmaster_pid()
        assert _backend_of(conn) in trial_processes(found)  # '[local]': counted as the trial's


@pytest.mark.alone  # the noise guard measures the whole machine
def test_a_study_of_an_external_server_here_is_not_busy_with_its_own_backends(
        outside: Cluster, workdir: Path) -> None:  # noqa: F811
    skip_when_busy(0.25)
    study = workdir / "here.yaml"
    study.write_text(f"""
study: external-here
servers:
  - {{name: here, external: "{_tcp(outside)}", allow_init: true}}
workloads: [select-only]
scale: 1
clients: [1, 2]
duration: 2s
repetitions: 2
""")
    store = workdir / "here.db"
    env = dict(os.environ, TEITEN_HOME=str(TEST_HOME), PYTHONPATH=str(ROOT / "src"),
               TEITEN_NOISE_GUARD="on")
    done = subprocess.run([sys.executable, "-m", "teiten", "run", str(study), "--store", str(store),
                           "--no-report", "--wait-quiet", "0"], env=env, text=True,
                          capture_output=True, timeout=600)
    assert done.returncode == 0, done.stderr
    with sqlite3.connect(store) as conn:
        statuses = [r[0] for r in conn.execute("SELECT status FROM trials")]
    assert statuses == ["ok"] * 4, (statuses, done.stderr)  # none disturbed, none repeated
