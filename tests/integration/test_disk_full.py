"""The store's disk fills up in the middle of a study (issue 20): the run stops with one line
that names the store and the way on, exit status 1, no traceback; every trial it had finished
is intact (SQLite's integrity check), nothing is left running or on disk, and once there is
space 'teiten resume' finishes the study. A real tmpfs of a few MiB, real clusters, the real CLI."""

from __future__ import annotations

import errno
import os
import re
import sqlite3
import subprocess
import time
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path

import pytest
from tests.conftest import clusters_snapshot, run_cli
from tests.integration.test_failures import _start
from tests.requirements import missing

STUDY = """
study: disk-full
servers: [{name: pg17, install: "17"}]
workloads: [select-only]
scale: 1
clients: [1]
duration: 1s
repetitions: 5
order: sequential
"""


@pytest.fixture
def small_disk(workdir: Path) -> Iterator[Path]:
    """A 24 MiB tmpfs mounted for this test alone."""
    mount = workdir / "small"
    mount.mkdir()
    if os.geteuid() != 0:
        missing("mounting a tmpfs needs root")
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=24m,mode=0755", "tmpfs", str(mount)],
                   check=True, timeout=30)
    try:
        yield mount
    finally:
        done = subprocess.run(["umount", str(mount)], capture_output=True, text=True, timeout=30)
        if done.returncode != 0:  # still open somewhere: detach it all the same, then say so
            subprocess.run(["umount", "-l", str(mount)], check=True, timeout=30)
            raise AssertionError(f"the small disk was still in use: {done.stderr.strip()}")


def _ok(store: Path) -> int:
    try:
        with closing(sqlite3.connect(f"file:{store}?mode=ro", uri=True, timeout=5)) as conn:
            return int(conn.execute("SELECT count(*) FROM trials WHERE status='ok'").fetchone()[0])
    except sqlite3.Error:
        return 0


def _fill(mount: Path) -> Path:
    """Write zeros into ``mount`` until it is full. Unbuffered: a buffered file would keep
    the bytes the full disk refused and raise ENOSPC again when it is closed."""
    filler = mount / "filler"
    with filler.open("wb", buffering=0) as fh:
        try:
            while True:
                fh.write(b"\0" * 65536)
        except OSError as exc:
            assert exc.errno == errno.ENOSPC, exc
    return filler


def test_a_full_store_disk_stops_the_run_cleanly_and_resume_finishes(
        pg17, workdir: Path, small_disk: Path) -> None:  # noqa: ANN001
    (workdir / "full.yaml").write_text(STUDY)
    store = small_disk / "s.db"
    before = clusters_snapshot("disk-full")
    proc = _start("run", str(workdir / "full.yaml"), "--store", str(store), "--no-report")
    deadline = time.monotonic() + 300
    while _ok(store) < 1:
        assert proc.poll() is None, proc.communicate()[1]
        assert time.monotonic() < deadline, "no trial finished"
        time.sleep(0.1)
    filler = _fill(small_disk)
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == 1, err
    assert "Traceback" not in err, err
    last = err.strip().splitlines()[-1]
    assert re.fullmatch(
        rf"teiten: error: the disk of the store {re.escape(str(store))} is full \(\d+\.\d MiB free: "
        r"database or disk is full\); every finished trial is kept in it: free some space, then "
        rf"'teiten resume --store {re.escape(str(store))}' finishes the study", last), last
    assert clusters_snapshot("disk-full") == before  # its clusters are gone

    filler.unlink()
    with closing(sqlite3.connect(store)) as conn:  # closed: the mount must come off after
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        kept = conn.execute("SELECT count(*) FROM trials WHERE status='ok'").fetchone()[0]
    assert kept >= 1
    done = run_cli("resume", "--store", str(store), "--no-report")
    assert done.returncode == 0, done.stderr
    with closing(sqlite3.connect(store)) as conn:
        assert [r[0] for r in conn.execute("SELECT status FROM trials")] == ["ok"] * 5
        assert conn.execute("SELECT state FROM studies").fetchone()[0] == "finished"
    assert clusters_snapshot("disk-full") == before


def test_a_cluster_that_fills_its_disk_while_prepared_leaves_nothing_there(
        pg17, workdir: Path, small_disk: Path) -> None:  # noqa: ANN001
    """The server's 'directory' on the small disk: its preparation fails for space (initdb, the
    load or the snapshot, wherever the disk ends), the trials fail with one reason that says
    how to go on, and the disk is empty again: no cluster, no socket directory."""
    (workdir / "prep.yaml").write_text(STUDY.replace("disk-full", "disk-full-prep").replace(
        'install: "17"}', f'install: "17", directory: "{small_disk}"}}').replace(
        "repetitions: 5", "repetitions: 2"))
    store = workdir / "prep.db"
    before = clusters_snapshot("disk-full-prep")
    done = run_cli("run", str(workdir / "prep.yaml"), "--store", str(store), "--no-report")
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr
    with closing(sqlite3.connect(store)) as conn:
        rows = conn.execute("SELECT status, error FROM trials ORDER BY order_index").fetchall()
    assert [r[0] for r in rows] == ["failed", "skipped"], rows
    assert "No space left on device" in rows[0][1], rows[0][1]
    assert rows[0][1].endswith(f"; free space on that disk, then 'teiten resume --store {store} "
                               "--retry-failed' runs the trials it failed")
    assert list(small_disk.iterdir()) == []
    assert clusters_snapshot("disk-full-prep") == before
