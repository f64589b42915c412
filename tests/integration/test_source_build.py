"""PostgreSQL 15 built from source (preset lwlock-stats), listed, reused and run.

The build takes a few minutes the first time; the test cache keeps it, so later sessions
reuse it (the ``lwlock_build`` fixture of conftest.py).
"""

from __future__ import annotations

import json
import re
import sqlite3
import time
from pathlib import Path

import pytest
from tests.conftest import SourceBuild, run_cli

from teiten import installs
from teiten.host import procs
from teiten.installs import discover

pytestmark = pytest.mark.slow

STUDY = """
study: lwlock-smoke
servers:
  - {name: lw, install: pg15-lwlock}
workloads: [select-only]
scale: 1
clients: [1]
duration: 2s
repetitions: 1
"""


def _metadata(build: SourceBuild) -> dict[str, object]:
    info = discover.read_metadata(build.bindir.parent)
    assert info is not None
    return info


def test_listed_as_a_source_install_by_name(lwlock_build: SourceBuild) -> None:
    rows = json.loads(run_cli("installs", "--format", "json", check=True).stdout)
    ours = [r for r in rows if r["name"] == lwlock_build.name]
    assert len(ours) == 1, rows
    row = ours[0]
    assert row["origin"] == "source"
    assert row["major"] == 15 and re.fullmatch(r"15\.\d+", row["version"])
    assert row["bindir"] == str(lwlock_build.bindir)
    assert row["pgbench"] is True
    assert lwlock_build.bindir.parent.name == "src-pg15-lwlock"


def test_resolved_by_name_only(lwlock_build: SourceBuild) -> None:
    found = installs.resolve(lwlock_build.name)
    assert found.install is not None and found.install.bindir == lwlock_build.bindir
    assert installs._matches(found.install, lwlock_build.name)
    # A study saying "15" must not get the instrumented build.
    assert not installs._matches(found.install, "15")
    assert not installs._matches(found.install, found.install.version)


def test_metadata_records_source_flags_compiler_and_times(lwlock_build: SourceBuild) -> None:
    meta = _metadata(lwlock_build)
    assert meta["origin"] == "source" and meta["name"] == "pg15-lwlock"
    assert meta["preset"] == "lwlock-stats"
    assert meta["cppflags"] == "-DLWLOCK_STATS"
    assert meta["cflags"] is None  # configure's default -O2
    source = meta["source"]
    assert isinstance(source, dict) and source["kind"] == "directory"
    assert source["path"] == lwlock_build.argv[2]
    assert re.fullmatch(r"[0-9a-f]{64}", str(source["digest"]))
    configure = meta["configure"]
    assert isinstance(configure, dict)
    assert configure["line"].endswith(" --without-icu CPPFLAGS=-DLWLOCK_STATS")
    assert "--prefix=" + str(lwlock_build.bindir.parent) in configure["line"]
    compiler = meta["compiler"]
    assert isinstance(compiler, dict) and re.match(r"(gcc|cc|clang)\b.*\d", compiler["version"])
    pg_config = meta["pg_config"]
    assert isinstance(pg_config, dict) and "-DLWLOCK_STATS" in pg_config["cppflags"]
    assert "-O2" in pg_config["cflags"]
    assert meta["started_at"] < meta["finished_at"]
    assert Path(str(meta["build_log"])).is_file()
    assert [c["step"] for c in meta["commands"]] == [  # type: ignore[attr-defined]
        "configure", "make", "make -C contrib", "make install", "make -C contrib install"]


def test_pg_config_of_the_result_shows_the_flag(lwlock_build: SourceBuild) -> None:
    pg_config = str(lwlock_build.bindir / "pg_config")
    assert "-DLWLOCK_STATS" in procs.run([pg_config, "--cppflags"], timeout=30).stdout
    configure = procs.run([pg_config, "--configure"], timeout=30).stdout
    assert "'CPPFLAGS=-DLWLOCK_STATS'" in configure and "'--without-icu'" in configure


def test_same_arguments_reuse_the_build(lwlock_build: SourceBuild) -> None:
    started = time.monotonic()
    done = run_cli(*lwlock_build.argv, timeout=120, check=True)
    took = time.monotonic() - started
    assert took < 30, f"a reuse took {took:.0f} s"
    assert "reusing the cached build 'pg15-lwlock'" in done.stdout
    assert "configure" not in done.stdout
    last = done.stdout.strip().splitlines()[-1]
    assert re.fullmatch(rf"PostgreSQL 15\.\d+ \(source, name pg15-lwlock\): {lwlock_build.bindir}",
                        last), last


def test_a_study_runs_on_the_build(lwlock_build: SourceBuild, workdir: Path) -> None:
    study = workdir / "lwlock.yaml"
    study.write_text(STUDY)
    store = workdir / "lwlock.db"
    done = run_cli("run", str(study), "--store", str(store), "--no-report", timeout=600)
    assert done.returncode == 0, done.stderr
    assert "1 trials: 1 ok" in done.stderr
    with sqlite3.connect(str(store)) as conn:
        status, tps = conn.execute("SELECT status, tps FROM trials").fetchone()
    assert status == "ok" and tps > 0
