"""A fleet on Buildbot (issue 35, item 7): the master of docs/buildbot/ polls a local repository
of a real PostgreSQL 15 tree with a GitPoller; two workers, named as two testbeds (a
TEITEN_HOME each, one compiler cache), build each new commit with 'teiten install --from-git',
run a study into a PostgreSQL store on 127.0.0.1 (waiting for the machine's lock in turn), and
gate it. The test commits twice: the first build on each worker has no previous build (its gate
step is skipped and says why), the second compares the two builds and gates them.

Buildbot and buildbot-worker come from PyPI into a venv of their own in the test cache (made on
first use; without PyPI the test skips, or fails under TEITEN_REQUIRE_ALL=1).

The two commits change only the README, which leaves the compiled output unchanged; each is
still an install of its own (the key names the commit). Their hashes are the same on every run
(fixed author, committer and dates over pg_git_repo's base commit) and each worker keeps its
TEITEN_HOME in the test cache, as a fleet's worker keeps it, so a later run reuses the four
builds. Measured on 2 CPUs: warm (the four builds reused) 62 s, and 108 s beside other work
(load 8); cold (no worker home yet: four builds, two at a time with one make job each, 1422
ccache hits and 1 miss, 38-60 s a build) 192 s, and 15 minutes at load 8 (330-380 s a build).
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from tests import sharedstore
from tests.conftest import ROOT, TEST_CACHE, TEST_HOME, one_worker_at_a_time, start_cli
from tests.gitrepo import GitRepo, commit, git
from tests.requirements import missing

from teiten.servers.cluster import Cluster

pytestmark = pytest.mark.slow

VERSION = "4.3.0"  # buildbot and buildbot-worker
VENV = TEST_CACHE / "venvs" / f"buildbot-{VERSION}"
WORKERS = ("fleet-a", "fleet-b")
SUCCESS, WARNINGS, SKIPPED = 0, 1, 3  # Buildbot's results
SETTINGS = """\
repository: {repo}
branch: main
poll_interval: 2
port: "tcp:{port}:interface=127.0.0.1"
workers: [{workers}]
store: {store}
teiten: [{python}, -m, teiten]
install: {{name_prefix: fleet, configure: --without-icu, jobs: 1}}
study: {{name: fleet, workloads: [select-only], scale: 1, clients: [1], duration: 1s, repetitions: 1}}
"""


@pytest.fixture(scope="module")
def buildbot() -> Path:
    """The venv's bin directory with buildbot and buildbot-worker, installed once."""
    with one_worker_at_a_time("buildbot-venv"):
        done = VENV / ".installed"
        if not done.exists():
            shutil.rmtree(VENV, ignore_errors=True)
            subprocess.run([sys.executable, "-m", "venv", str(VENV)], check=True, timeout=300)
            pip = subprocess.run([str(VENV / "bin" / "pip"), "install", "--quiet",
                                  f"buildbot=={VERSION}", f"buildbot-worker=={VERSION}"],
                                 text=True, capture_output=True, timeout=900)
            if pip.returncode != 0:
                missing(f"buildbot {VERSION} from PyPI: {pip.stderr.strip()[-300:]}")
            done.touch()
    return VENV / "bin"


@pytest.fixture
def store(pg18, teiten_home: Path) -> Iterator[Cluster]:  # noqa: ANN001
    with sharedstore.serve(pg18) as cluster:
        yield cluster


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _twistd(bindir: Path, basedir: Path, env: dict[str, str]) -> subprocess.Popen[bytes]:
    log = (basedir / "twistd.out").open("wb")
    return subprocess.Popen([str(bindir / "twistd"), "--nodaemon", "--no_save", "--pidfile=",
                             "-y", "buildbot.tac"], cwd=basedir, env=env, stdout=log,
                            stderr=subprocess.STDOUT)


def _wait(what: str, until, timeout: float, procs: list[subprocess.Popen[bytes]]):  # noqa: ANN001, ANN202
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = until()
        if found:
            return found
        for proc in procs:
            assert proc.poll() is None, f"{proc.args} exited {proc.returncode} while waiting {what}"
        time.sleep(1)
    raise AssertionError(f"gave up waiting {what} after {timeout:.0f} s")


def _rows(db: Path, sql: str) -> list[sqlite3.Row]:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=30)
    conn.row_factory = sqlite3.Row
    try:
        return conn.execute(sql).fetchall()
    except sqlite3.OperationalError:  # the master has not made its tables yet
        return []
    finally:
        conn.close()


def _repo(base: GitRepo, path: Path) -> str:
    """A repository whose branch main is pg_git_repo's base commit (checked out)."""
    git(path, "init", "--quiet", "--initial-branch=main")
    first = base.commits[0].hash
    git(path, "fetch", "--quiet", str(base.path), first)
    git(path, "checkout", "--quiet", "-B", "main", first)
    return first


def _readme_commit(repo: Path, line: str, n: int) -> str:
    with (repo / "README").open("a") as f:
        f.write(f"{line}\n")
    return commit(repo, f"README: {line}", n)


def test_two_workers_build_study_and_gate_each_commit(
        buildbot: Path, pg_git_repo: GitRepo, store: Cluster) -> None:
    work = TEST_HOME / "work" / f"buildbot-{uuid.uuid4().hex[:8]}"
    procs: list[subprocess.Popen[bytes]] = []
    try:
        _fleet(buildbot, pg_git_repo, store, work, procs)
    except BaseException:
        for log in sorted(work.glob("*/twistd.log")):  # what the master and workers said
            print(f"--- {log}", *log.read_text().splitlines()[-40:], sep="\n")
        raise
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for proc in procs:
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        shutil.rmtree(work, ignore_errors=True)


def _fleet(bindir: Path, pg_git_repo: GitRepo, store: Cluster, work: Path,
           procs: list[subprocess.Popen[bytes]]) -> None:
    started = time.monotonic()
    (work / "repo").mkdir(parents=True)
    base = _repo(pg_git_repo, work / "repo")
    port, url = _free_port(), sharedstore.url(store)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PG", "GIT_"))}
    env["PYTHONPATH"] = str(ROOT / "src")

    master = work / "master"
    subprocess.run([str(bindir / "buildbot"), "create-master", "-r", "-q", str(master)],
                   check=True, timeout=120, env=env)
    for name in ("master.cfg", "fleet.py"):
        shutil.copy(ROOT / "docs" / "buildbot" / name, master / name)
    (master / "fleet.yaml").write_text(SETTINGS.format(
        repo=work / "repo", port=port, workers=", ".join(WORKERS), store=url,
        python=sys.executable))
    (master / "worker-passwords").write_text("".join(f"{w} pw-{w}\n" for w in WORKERS))
    assert sharedstore.SECRET not in (master / "fleet.yaml").read_text()
    checked = subprocess.run([str(bindir / "buildbot"), "checkconfig", str(master)], text=True,
                             capture_output=True, timeout=120, env=env)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    procs.append(_twistd(bindir, master, env))
    db = master / "state.sqlite"

    # The poller's first poll records the branch's head (Buildbot builds nothing for it).
    _wait("for the GitPoller's first poll", lambda: any(
        base in r["value_json"] for r in _rows(db, "SELECT * FROM object_state "
                                                   "WHERE name = 'lastRev'")), 120, procs)

    passfile = sharedstore.passfile(store, work / "pgpass")
    for name in WORKERS:
        basedir = work / name
        subprocess.run([str(bindir / "buildbot-worker"), "create-worker", "-r", "-q",
                        str(basedir), f"127.0.0.1:{port}", name, f"pw-{name}"],
                       check=True, timeout=120, env=env)
        home = TEST_CACHE / "buildbot" / name  # kept, as a fleet's worker keeps its TEITEN_HOME
        home.mkdir(parents=True, exist_ok=True)
        procs.append(_twistd(bindir, basedir, {**env, "TEITEN_HOME": str(home),
                                               "PGPASSFILE": str(passfile)}))
    _wait("for both workers to connect", lambda: len(_rows(
        db, "SELECT * FROM connected_workers")) == 2, 120, procs)

    first = _readme_commit(work / "repo", "the first commit the fleet builds", 10)
    second = _readme_commit(work / "repo", "the second commit the fleet builds", 11)
    builds = _wait("for four builds", lambda: (lambda rows: rows if len(rows) == 4 else None)(
        _rows(db, "SELECT b.id, b.results, w.name AS worker FROM builds b JOIN workers w ON "
                  "w.id = b.workerid WHERE b.complete_at IS NOT NULL ORDER BY b.id")),
        1800, procs)
    took = time.monotonic() - started

    def steps(build: int) -> dict[str, sqlite3.Row]:
        return {r["name"]: r for r in _rows(db, f"SELECT * FROM steps WHERE buildid = {build}")}

    def revision(build: int) -> str:
        return next(r["value"] for r in _rows(db, "SELECT name, value FROM build_properties "
                                                  f"WHERE buildid = {build}")
                    if r["name"] == "got_revision").strip('"')

    with psycopg.connect(url, password=sharedstore.SECRET) as conn:
        points = set(conn.execute("SELECT testbed, build FROM teiten.teiten_points"))
        studies = dict(conn.execute(
            "SELECT t.testbed, max(t.study_id) FROM teiten.teiten_points t GROUP BY t.testbed"))
    for name in WORKERS:
        ours = [b for b in builds if b["worker"] == name]
        assert [revision(b["id"]) for b in ours] == [first, second], (name, took)
        one, two = (steps(b["id"]) for b in ours)
        # The first commit: its parent was never built here, so one server, and no gate.
        assert one["study"]["results"] == SUCCESS
        assert one["study"]["state_string"] == (
            "study of the new build alone (no previous build: its parent "
            f"{base[:12]} was not built on this worker)")
        assert one["gate"]["results"] == SKIPPED
        assert one["gate"]["state_string"] == (
            f"no previous build: its parent {base[:12]} was not built on this worker (skipped)")
        assert ours[0]["results"] == SUCCESS
        # The second: the previous build and the new one, paired; one 1-s repetition cannot
        # decide, so teiten gate exits 3 and the step (and the build) has warnings.
        assert two["study"]["state_string"] == "study of the previous build and the new one"
        assert two["gate"]["results"] == WARNINGS, two["gate"]["state_string"]
        assert ours[1]["results"] == WARNINGS
        gated = start_cli("gate", "--store", url, "--study", str(studies[name]), "--baseline",
                          "previous", "--candidate", "new", env={"PGPASSWORD": sharedstore.SECRET})
        out, err = gated.communicate(timeout=300)
        assert gated.returncode == 3, out + err
    assert points == {(w, c) for w in WORKERS for c in (first, second)}, took
    print(f"the fleet built, studied and gated two commits on two workers in {took:.0f} s")
