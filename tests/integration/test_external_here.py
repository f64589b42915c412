"""An external server that runs on this machine, and the noise guard (issue 54, item 9): its
postmaster's processes (the backends of teiten's own connections, the checkpointer and the like)
are the trial's; the backend of another program's client of the same server stays foreign, and
the guard names that load. Real clusters, real pgbench, the real CLI with the guard on."""

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

from teiten.monitors.foreign import ForeignMeter
from teiten.servers.cluster import Cluster
from teiten.servers.external.here import other_clients, postmaster_here


def _tcp(cluster: Cluster) -> str:
    return f"host=127.0.0.1 port={cluster.port} user=postgres dbname=postgres"


def _backend_of(conn: psycopg.Connection) -> int:
    row = conn.execute("SELECT pg_backend_pid()").fetchone()
    assert row is not None
    return int(row[0])


def test_another_programs_client_of_the_server_stays_foreign(
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
            assert foreign, "the other pgbench did not connect"
            postmaster = postmaster_here(conn)
            assert postmaster is not None and postmaster.pid == outside.postmaster_pid()
            others = set(other_clients(postmaster))
            theirs = {r[0] for r in conn.execute(
                "SELECT pid FROM pg_stat_activity WHERE application_name = 'pgbench'").fetchall()}
            assert others == theirs and mine not in others, (others, theirs, mine)
            assert mine in {c.pid for c in postmaster.children()}
            # The meter with the server's tree as ours but the other client's backend: the load
            # it sees is that backend's (the other pgbench and it), not the server's.
            meter = ForeignMeter(lambda: [os.getpid(), postmaster.pid],
                                 lambda: other_clients(postmaster))
            meter.start()
            time.sleep(2)
            load = meter.stop()
        top = {c.pid for c in load.top}
        assert top & others, load.top  # the other client's backend, named as foreign load
        assert not top & ({postmaster.pid} | {c.pid for c in postmaster.children()} - others), load.top
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
        assert other_clients(found) == []  # '[local]': counted as the trial's


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
