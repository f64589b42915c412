"""Apache Otava for the tests that read a store's view with it (tests/integration/
test_otava_grafana.py, tests/e2e/test_bisect.py): a virtual environment of its own, made on
first use from PyPI, and ``otava analyze`` with docs/otava/otava.yaml on one series."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from tests.conftest import ROOT, TEST_CACHE, one_worker_at_a_time
from tests.requirements import missing

CONFIG = ROOT / "docs" / "otava" / "otava.yaml"
OTAVA = "apache-otava==0.8.0"
OTAVA_VENV = TEST_CACHE / "venvs" / "apache-otava-0.8.0"
# What pip says when it cannot reach the index (no network, no DNS, a proxy refusing).
UNREACHABLE = re.compile(r"NewConnectionError|Failed to establish a new connection|Temporary failure in "
                         r"name resolution|Network is unreachable|ConnectTimeout|ProxyError|"
                         r"No matching distribution found for apache-otava")


def python() -> Path:
    """The Python of a virtual environment that holds only Apache Otava (0.8.0 pins numpy 2.2.0,
    older than teiten's), made on first use by pip from PyPI; without PyPI the test is skipped
    (a failure under TEITEN_REQUIRE_ALL=1)."""
    python = OTAVA_VENV / "bin" / "python"
    stamp = OTAVA_VENV / ".installed"
    with one_worker_at_a_time("otava-venv"):
        if stamp.is_file() and stamp.read_text() == OTAVA:
            return python
        shutil.rmtree(OTAVA_VENV, ignore_errors=True)
        subprocess.run([sys.executable, "-m", "venv", str(OTAVA_VENV)], check=True, timeout=300)
        done = subprocess.run([str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
                               OTAVA], text=True, capture_output=True, timeout=1200)
        if done.returncode != 0:
            shutil.rmtree(OTAVA_VENV, ignore_errors=True)
            if UNREACHABLE.search(done.stderr):
                missing(f"no network to reach PyPI for {OTAVA}: {done.stderr.strip().splitlines()[-1]}")
            pytest.fail(f"pip install {OTAVA} failed ({done.returncode}):\n{done.stderr}")
        stamp.write_text(OTAVA)
    return python


def analyze(keywords: dict[str, Any], password: str, branch: str, home: Path,
            *options: str) -> list[dict[str, Any]]:
    """``otava analyze`` of the series ``branch`` (TESTBED/STUDY/WORKLOAD/clients=N) of the store
    that libpq ``keywords`` name, with Otava's ``options``: its groups, as its JSON output gives
    them. Otava's connection
    is its environment alone: no password on its command line, no config of the user's (HOME),
    nothing else of this session's environment but PATH."""
    env = {"PATH": os.environ["PATH"], "HOME": str(home), "LANG": "C.UTF-8",
           "POSTGRES_HOSTNAME": keywords["host"], "POSTGRES_PORT": str(keywords["port"]),
           "POSTGRES_USERNAME": keywords["user"], "POSTGRES_DATABASE": keywords["dbname"],
           "POSTGRES_PASSWORD": password}
    argv = [str(python()), "-m", "otava.main", "analyze", "--config-file", str(CONFIG), "teiten",
            "--branch", branch, "--since", "2000-01-01", "--output", "json", *options]
    done = subprocess.run(argv, env=env, text=True, capture_output=True, timeout=300)
    assert done.returncode == 0 and "ERROR" not in done.stderr, done.stderr
    assert password not in done.stdout + done.stderr
    [groups] = json.loads(done.stdout.strip().splitlines()[-1]).values()
    return list(groups)
