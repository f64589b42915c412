"""An external server's password, given the three usual ways (in the study's connection
string, in PGPASSWORD, in a passfile), reaches PostgreSQL and nothing else: not the store, the
report, 'teiten show', teiten's log or any process's argv while the study runs (issue 20).
As root, pgbench carries the password in its environment as the client account
(teiten-client), whose processes the server account cannot read (issue 52): the password of a
server on another machine is not the local servers' account's to read. A real server that asks
for a SCRAM password, real pgbench, the real CLI."""

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

from teiten.host import privileges
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
    """Every process's command line, read from /proc every 20 ms while the study runs; as
    root, the account of each pgbench, and what the server account reads of its environment."""

    def __init__(self) -> None:
        self.seen: set[str] = set()
        self.uids: set[int] = set()  # of every pgbench seen
        self.who: set[tuple[int, str]] = set()
        self.teiten: int | None = None  # the pid of the teiten whose pgbench is watched
        self.tried: list[tuple[bool, bool]] = []  # (root read the password, the server account did)
        self.samples = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def _loop(self) -> None:
        while not self._stop.wait(0.02):
            for proc in psutil.process_iter(["cmdline", "uids", "name"]):
                line = " ".join(proc.info["cmdline"] or ())
                if "pgbench" in line or "teiten" in line or "postgres" in line:
                    self.seen.add(line)
                if proc.info["name"] == "pgbench" and proc.info["uids"] is not None \
                        and self._ours(proc):
                    self.uids.add(proc.info["uids"].real)
                    self.who.add((proc.info["uids"].real, line))
                    if os.geteuid() == 0 and len(self.tried) < 3:
                        self._read_as_the_server_account(proc.pid)
            self.samples += 1

    def _ours(self, proc: psutil.Process) -> bool:
        """Started by the teiten this test runs (another test's may run beside it), and still
        the process whose name and account were read: on a loaded machine another test's
        pgbench (run as the server account) ended and its pid went to a child of this teiten
        between the two reads, and the watch took that pgbench for this teiten's (is_running
        compares the pid's start time with the one psutil read first)."""
        try:
            return self.teiten is not None and self.teiten in {p.pid for p in proc.parents()} \
                and proc.is_running()
        except psutil.Error:
            return False

    def _read_as_the_server_account(self, pid: int) -> None:
        """Read pgbench's environment as root (it holds the password) and as the server
        account, one after the other, while the same pgbench runs."""
        server = privileges.server_account()
        assert server is not None
        try:
            mine = Path(f"/proc/{pid}/environ").read_bytes()
        except OSError:
            return  # gone already
        theirs = subprocess.run(["cat", f"/proc/{pid}/environ"], user=server.uid,
                                group=server.gid, extra_groups=[], capture_output=True,
                                timeout=30)
        if psutil.pid_exists(pid):
            self.tried.append((PASSWORD.encode() in mine, PASSWORD.encode() in theirs.stdout))

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
    with ArgvWatch() as watch, subprocess.Popen(
            [sys.executable, "-m", "teiten", "-v", "run", str(study), "--store", str(store),
             "--report", str(report)], env=env, text=True, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE) as proc:
        watch.teiten = proc.pid
        stdout, stderr = proc.communicate(timeout=600)
        done = subprocess.CompletedProcess(proc.args, proc.returncode, stdout, stderr)
    assert done.returncode == 0, done.stderr
    assert watch.samples > 10 and any("pgbench" in line for line in watch.seen), \
        "the watch saw no pgbench: it sampled too rarely to prove anything"
    assert not [line for line in watch.seen if PASSWORD in line]
    assert PASSWORD not in done.stdout + done.stderr
    if os.geteuid() == 0:  # every pgbench ran as the client account, never as root or postgres
        client, server = privileges.client_account(), privileges.server_account()
        assert client is not None and server is not None
        assert watch.uids == {client.uid}, watch.who
        assert watch.tried and (True, False) in watch.tried, watch.tried  # root read it; they did not
        assert all(not theirs for _, theirs in watch.tried), watch.tried
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


def test_as_root_a_study_with_a_password_server_needs_the_client_account(workdir: Path) -> None:
    """Without the client account, root refuses the study at plan in one line, before it asks
    the server anything (port 1 answers nothing) and before a store is made."""
    if os.geteuid() != 0:
        pytest.skip("the client account matters only to root")
    study = workdir / "nobody.yaml"
    study.write_text("study: pw\nservers: [{name: cloud, external: 'host=127.0.0.1 port=1 "
                     "user=x dbname=postgres'}]\nworkloads: [pgecons-read]\nscale: 1\n"
                     "clients: [1]\nduration: 1s\nrepetitions: 2\n")
    for command in (("plan",), ("run", "--store", str(workdir / "n.db"))):
        done = run_cli(*command, str(study), env={"TEITEN_CLIENT_USER": "teitennoclient"})
        assert done.returncode == 2, done.stderr
        assert done.stderr.strip().splitlines() == [
            "teiten: error: as root, teiten gives a server's password only to a client account of "
            "its own, but there is no account 'teitennoclient'; create it ('teiten system setup' "
            "does) or set TEITEN_CLIENT_USER to an existing unprivileged account"], done.stderr
    assert not (workdir / "n.db").exists()
    named = run_cli("plan", str(study), env={"TEITEN_CLIENT_USER": "postgres"})
    assert named.returncode == 2 and "is the server account" in named.stderr, named.stderr
