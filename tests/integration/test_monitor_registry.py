"""The monitors' registry on a real trial: every metric a trial stores is one a monitor
registered (with its unit, kind and label), and a monitor from outside teiten's core, registered
at start, is run over the window, stored and shown by ``teiten show`` with its unit, though no
module of teiten names it."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests import loadavg_monitor
from tests.conftest import ROOT, TEST_HOME, run_cli

from teiten.monitors import registry

STUDY = """
study: monitor-registry
servers: [{name: pg17, install: "17"}]
workloads: [tpcb-like]
scale: 1
clients: [2]
duration: 1s
repetitions: 1
"""


def _teiten_with_loadavg(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """The real CLI with the load-average monitor registered first."""
    env = dict(os.environ, TEITEN_HOME=str(TEST_HOME), PYTHONPATH=f"{ROOT / 'src'}:{ROOT}")
    return subprocess.run([sys.executable, "-m", "tests.loadavg_monitor", *args], cwd=cwd, env=env,
                          text=True, capture_output=True, timeout=600)


@pytest.fixture(scope="module")
def store(pg17, teiten_home: Path) -> Path:
    work = teiten_home / "work" / "monitor-registry"
    work.mkdir(parents=True, exist_ok=True)
    (work / "s.yaml").write_text(STUDY)
    (work / "s.db").unlink(missing_ok=True)
    done = _teiten_with_loadavg("run", "s.yaml", "--store", "s.db", "--no-report", cwd=work)
    assert done.returncode == 0, done.stderr
    return work / "s.db"


@pytest.fixture
def with_loadavg() -> Iterator[None]:
    registry.register(loadavg_monitor.KIND)
    try:
        yield
    finally:
        registry.unregister(loadavg_monitor.KIND.name)


def _metrics(store: Path) -> dict[str, float]:
    with sqlite3.connect(store) as conn:
        return dict(conn.execute("SELECT name, value FROM metrics"))


def test_every_stored_metric_is_registered(store: Path, with_loadavg: None) -> None:
    stored = _metrics(store)
    assert {"cpu_user", "wal_bytes", "xact_commit", "loadavg_1m"} <= set(stored)
    assert registry.unregistered(stored) == [], "a monitor stores a metric it did not register"


def test_an_outside_monitor_is_recorded_stored_and_shown(store: Path) -> None:
    stored = _metrics(store)
    assert 0 <= stored["loadavg_1m"] < 10_000 and stored["loadavg_runnable"] >= 1
    rows = json.loads(run_cli("results", "--store", str(store), "--format", "json", check=True).stdout)
    assert [r["status"] for r in rows] == ["ok"]
    trial = rows[0]["trial_id"]
    shown = json.loads(run_cli("show", trial, "--store", str(store), "--format", "json",
                               check=True).stdout)
    assert shown["details"]["loadavg"]["runnable"][1] == stored["loadavg_runnable"]
    # Shown by the plain CLI, which does not know the monitor: its name and value ...
    plain = _line(run_cli("show", trial, "--store", str(store), check=True).stdout, "loadavg_1m")
    assert float(plain.split(" = ")[1]) == pytest.approx(stored["loadavg_1m"], abs=0.01), plain
    # ... and with it registered, its unit too; the built-in ones with their units and labels.
    text = _teiten_with_loadavg("show", trial, "--store", str(store), cwd=store.parent).stdout
    assert _line(text, "loadavg_1m") == f"{plain} CPUs"
    assert _line(text, "cpu_user").endswith(" %  (CPU user)")
    assert _line(text, "wal_bytes").endswith(" bytes  (WAL written)")


def _line(text: str, metric: str) -> str:
    return next(line for line in text.splitlines() if line.startswith(f"  {metric} = "))
