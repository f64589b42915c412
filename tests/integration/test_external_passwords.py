"""An external server's password, given the three usual ways (in the study's connection
string, in PGPASSWORD, in a passfile), reaches PostgreSQL and nothing else: not the store, the
report, 'teiten show', teiten's log or any process's argv while the study runs (issue 20).
A real server that asks for a SCRAM password, real pgbench, the real CLI."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest
from tests.conftest import ROOT, TEST_HOME, run_cli, wait_for_pgbench
from tests.integration.test_external import outside  # noqa: F401 - the fixture
from tests.integration.test_failures import _start

from teiten.servers.cluster import Cluster

PASSWORD = "Pw-7c1e-only-here"  # noqa: S105 - the secret the test hunts for
USER = "bench_pw"


@pytest.fixture
def guarded(outside: Cluster) -> Iterator[Cluster]:  # noqa: F811
    """The outside server, asking USER for a SCRAM password over TCP."""
    with outside.connect() as conn:
        conn.execute(f"CREATE ROLE {USER} LOGIN SUPERUSER PASSWORD '{PASSWORD}'")
    hba = outside.data / "pg_hba.conf"
    hba.write_text(f"host all {USER} 127.0.0.1/32 scram-sha-256\n" + hba.read_text())
    with outside.connect() as conn:
        conn.execute("SELECT pg_reload_conf()")
    yield outside


def _study(workdir: Path, cluster: Cluster, *, password: bool) -> Path:
    conninfo = f"host=127.0.0.1 port={cluster.port} user={USER} dbname=postgres"
    if password:
        conninfo += f" password={PASSWORD}"
    path = workdir / "pw.yaml"
    path.write_text(f"""
study: pw  # the password is in the connection string below, and nowhere else of this file
servers:
  - name: cloud
    external: "{conninfo}"
    allow_init: true
workloads: [pgecons-update]
scale: 1
clients: [1, 2]
duration: 1s
repetitions: 2
""")
    return path


class ArgvWatch:
    """Every process's command line, read from /proc every 20 ms while the study runs."""

    def __init__(self) -> None:
        self.seen: set[str] = set()
        self.samples = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def _loop(self) -> None:
        while not self._stop.wait(0.02):
            for proc in psutil.process_iter(["cmdline"]):
                line = " ".join(proc.info["cmdline"] or ())
                if "pgbench" in line or "teiten" in line or "postgres" in line:
                    self.seen.add(line)
            self.samples += 1

    def __enter__(self) -> ArgvWatch:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def _everything_written(store: Path, report: Path) -> str:
    with sqlite3.connect(store) as conn:
        dump = "\n".join(conn.iterdump())
    files = "\n".join(p.read_bytes().decode("utf-8", "replace") for p in report.rglob("*")
                      if p.is_file())
    return dump + files


@pytest.mark.parametrize("how", ["conninfo", "PGPASSWORD", "passfile"])
def test_the_password_reaches_postgresql_and_nothing_else(
        guarded: Cluster, workdir: Path, monkeypatch: pytest.MonkeyPatch, how: str) -> None:
    if how == "PGPASSWORD":
        monkeypatch.setenv("PGPASSWORD", PASSWORD)
    elif how == "passfile":
        passfile = workdir / "pgpass"
        passfile.write_text(f"127.0.0.1:{guarded.port}:*:{USER}:{PASSWORD}\n")
        passfile.chmod(0o600)
        monkeypatch.setenv("PGPASSFILE", str(passfile))
    store, report = workdir / "pw.db", workdir / "report"
    study = _study(workdir, guarded, password=how == "conninfo")
    env = dict(os.environ, TEITEN_HOME=str(TEST_HOME), PYTHONPATH=str(ROOT / "src"))
    with ArgvWatch() as watch:
        done = subprocess.run([sys.executable, "-m", "teiten", "-v", "run", str(study), "--store",
                               str(store), "--report", str(report)], env=env, text=True,
                              capture_output=True, timeout=600)
    assert done.returncode == 0, done.stderr
    assert watch.samples > 10 and any("pgbench" in line for line in watch.seen), \
        "the watch saw no pgbench: it sampled too rarely to prove anything"
    assert not [line for line in watch.seen if PASSWORD in line]
    assert PASSWORD not in done.stdout + done.stderr
    rows = json.loads(run_cli("results", "--store", str(store), "--format", "json",
                              check=True).stdout)
    assert {r["status"] for r in rows} == {"ok"} and len(rows) == 4
    shown = "".join(run_cli("show", r["trial_id"], "--store", str(store), *fmt, check=True).stdout
                    for r in rows for fmt in ((), ("--format", "json")))
    assert f"user={USER}" in shown  # the connection is there, its password is not
    assert PASSWORD not in shown
    written = _everything_written(store, report)
    assert PASSWORD not in written
    if how == "conninfo":  # stored as written, but for the placeholder
        with sqlite3.connect(store) as conn:
            text = conn.execute("SELECT spec_yaml FROM studies").fetchone()[0]
        assert "# the password is in the connection string below" in text
        assert "password='(not stored)'" in text


def test_a_resumed_study_whose_file_gave_the_password_asks_for_it_the_usual_ways(
        guarded: Cluster, workdir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The store has no password: resume says where to give it, and runs once it is given."""
    store = workdir / "pw.db"
    first = _start("run", str(_study(workdir, guarded, password=True)), "--store", str(store),
                   "--no-report")
    wait_for_pgbench(first)
    first.kill()  # kill -9 in its first trial: the rest is for resume
    first.communicate(timeout=60)
    again = run_cli("resume", "--store", str(store), "--no-report")
    assert again.returncode == 1, again.stderr
    with sqlite3.connect(store) as conn:
        errors = {r[0] for r in conn.execute("SELECT error FROM trials WHERE status='failed'")}
    assert errors == {"preparing cloud/pgecons-update failed: "
                      "external server cloud: the study file gave its password, which teiten "
                      "never stores; to resume, give it with PGPASSWORD, a passfile (~/.pgpass) "
                      "or a service file"}
    monkeypatch.setenv("PGPASSWORD", PASSWORD)
    last = run_cli("resume", "--store", str(store), "--retry-failed", "--no-report")
    assert last.returncode == 0, last.stderr
    with sqlite3.connect(store) as conn:
        assert {r[0] for r in conn.execute("SELECT status FROM trials")} == {"ok"}
        assert PASSWORD not in "\n".join(conn.iterdump())
