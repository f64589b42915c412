"""A release before 9.6 built from a local source tree and run (issue 57, item 7).

No source of a release before 9.6 can be fetched on this machine (the PostgreSQL ftp site and
git are out of its reach, and Maven Central's oldest build is 9.6), so this test runs only where
``TEITEN_TEST_OLD_SOURCE`` names an unpacked source tree (or tarball) of 9.3, 9.4 or 9.5, and is
skipped here saying so. It builds it (server and contrib, as every source install), runs a study
of one short trial on it, and checks what the version facts decided (teiten.installs.releases):
checkpoint_segments in place of max_wal_size before 9.5, no pg_prewarm before 9.4 (the trial read
the relations), and the report's note that no wait event was sampled."""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path

import pytest
from tests.conftest import run_cli

from teiten.installs.releases import Release

pytestmark = [pytest.mark.slow, pytest.mark.skipif(
    not os.environ.get("TEITEN_TEST_OLD_SOURCE"),
    reason="TEITEN_TEST_OLD_SOURCE is not set: no source of PostgreSQL before 9.6 is reachable from "
           "this machine; set it to a 9.3, 9.4 or 9.5 source tree to build and run one")]

STUDY = """
study: old-release
servers:
  - {name: old, install: pg-old-source}
workloads: [select-only]
scale: 1
clients: [1]
duration: 2s
repetitions: 1
"""


def test_a_release_before_96_builds_and_runs_a_study(workdir: Path) -> None:
    source = os.environ["TEITEN_TEST_OLD_SOURCE"]
    built = run_cli("install", "--from-source", source, "--name", "pg-old-source", timeout=3600,
                    check=True)
    last = built.stdout.strip().splitlines()[-1]
    version = last.split()[1]
    release = Release.of(version)
    assert release < Release(90600), f"{source} holds PostgreSQL {version}; give one before 9.6"
    study = workdir / "old.yaml"
    study.write_text(STUDY)
    store, out = workdir / "old.db", workdir / "report"
    done = run_cli("run", str(study), "--store", str(store), "--report", str(out), timeout=900)
    assert done.returncode == 0, done.stderr
    with sqlite3.connect(str(store)) as conn:
        status, tps = conn.execute("SELECT status, tps FROM trials").fetchone()
        described = json.loads(conn.execute("SELECT description FROM servers").fetchone()[0])
    assert status == "ok" and tps > 0
    # the settings as the server read them back: the WAL between checkpoints by its release's name
    assert ("checkpoint_segments" in described["settings"]) == (release < Release(90500))
    assert ("max_wal_size" in described["settings"]) == (release >= Release(90500))
    assert "which has no wait events (they came in 9.6)" in (out / "report.md").read_text()
