"""How a trial's starting state is made, and what its cycle cost (issue 24): on a filesystem
with reflinks (a loop-mounted XFS made with reflink=1 that the test creates) the files a
trial changed are cloned back from the snapshot, giving the very same bytes; elsewhere they
are copied. Every trial records how its data was made and where its time went, and
'teiten show' and the report say so. Real clusters, real pgbench, the real CLI."""

from __future__ import annotations

import filecmp
import json
import os
import re
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from bench.loopfs import reflink_xfs, why_not
from tests.conftest import run_cli
from tests.integration.test_cluster import SIZING, _workload, run_dir  # noqa: F401 - fixture

from teiten.servers import snapshot
from teiten.servers.local.server import LocalServer
from teiten.spec import ServerSpec

pytestmark = pytest.mark.requires(why_not())


@pytest.fixture
def xfs(workdir: Path) -> Iterator[Path]:
    with reflink_xfs(workdir, 600) as mount:
        yield mount


def _same_tree(a: Path, b: Path) -> None:
    """Every file of ``a`` and ``b`` has the same bytes, mode and type; nothing more or less."""
    for dirpath, dirs, files in os.walk(a):
        rel = Path(dirpath).relative_to(a)
        other = b / rel
        assert sorted(dirs + files) == sorted(os.listdir(other)), f"{rel} differs"
        for name in files:
            x, y = Path(dirpath) / name, other / name
            assert x.lstat().st_mode == y.lstat().st_mode, f"{rel / name}: mode differs"
            if not x.is_symlink():
                assert filecmp.cmp(x, y, shallow=False), f"{rel / name}: bytes differ"


def test_a_reflink_clone_restores_the_same_bytes(pg17, run_dir: Path, xfs: Path) -> None:  # noqa: F811
    w = _workload("pgecons-update")
    server = LocalServer(ServerSpec(name="pg17", install="17", directory=str(xfs)), pg17,
                         run_dir, SIZING)
    try:
        server.prepare(w)
        slot = server.slots[w.key]
        cluster = slot.cluster
        method, clone_s = cluster.restore_method()
        assert method == "reflink clone" and clone_s is not None and clone_s > 0

        server.new_cycle()
        server.begin_trial(w, "t1", prewarm=False)
        start = server.cycle.start.to_json()
        assert start.pop("programs_evicted")["not_evicted_files"] == 0
        assert start == {"data": "as loaded", "server": "restarted"}
        with cluster.connect(w.database) as conn:
            before = conn.execute("SELECT sum(abalance), count(*) FROM pgbench_accounts").fetchone()
            conn.execute("UPDATE pgbench_accounts SET abalance = abalance + 7 WHERE aid <= 5000")
        server.end_trial()

        server.new_cycle()
        server.begin_trial(w, "t2", prewarm=False)
        start = server.cycle.start.to_json()
        assert start["data"] == "restored" and start["restore"] == "reflink clone", start
        assert server.cycle.seconds["restore"] > 0
        with cluster.connect(w.database) as conn:
            assert conn.execute("SELECT sum(abalance), count(*) FROM pgbench_accounts"
                                ).fetchone() == before
            conn.execute("UPDATE pgbench_accounts SET abalance = 1 WHERE aid <= 100")
        server.end_trial()

        # Byte for byte: the stopped, restored data directory is the snapshot.
        cluster.restore(slot.snapshot)
        _same_tree(slot.snapshot / "data", cluster.data)
        left = {p.name for p in cluster.data.parent.iterdir()}
        assert ".data.clone-probe" not in left, "the probe clone is gone"
    finally:
        server.close()
    assert not list(xfs.iterdir()), "everything made on the XFS is removed"


def test_changed_files_are_cloned_not_copied(xfs: Path) -> None:
    tree, target = xfs / "snap", xfs / "data"
    tree.mkdir()
    (tree / "big").write_bytes(os.urandom(4 << 20))
    (tree / "small").write_bytes(b"y" * 100)
    known = snapshot.take(tree, target)
    known = snapshot.manifest(target)
    (target / "big").write_bytes(b"changed")
    (target / "extra").write_bytes(b"new")
    assert snapshot.clone_seconds(tree, target) is not None
    known, copied = snapshot.restore(tree, target, known, clone=True)
    assert copied == 0, "nothing copied: the changed file was cloned"
    _same_tree(tree, target)
    (target / "big").write_bytes(b"changed again")
    _, copied = snapshot.restore(tree, target, known)
    assert copied == 4 << 20, "without clone, the changed file is copied"
    _same_tree(tree, target)


def test_the_probe_agrees_with_cp(tmp_path: Path) -> None:
    """Where cp --reflink=always fails (ext4 here), no clone is offered, and the restore
    copies what changed (test_cluster's snapshot test)."""
    tree = tmp_path / "snap"
    tree.mkdir()
    (tree / "f").write_bytes(b"x" * 4096)
    target = tmp_path / "data"
    clones = snapshot.clone_seconds(tree, target)
    done = os.system(f"cp --reflink=always {tree / 'f'} {tmp_path / 'g'} 2>/dev/null")
    assert (clones is not None) == (done == 0), "teiten's probe agrees with cp"
    assert not target.exists() and not (tmp_path / ".data.clone-probe").exists()


STUDY = """
study: restore-methods
servers: [{{name: pg17, install: "17", directory: "{directory}"}}]
workloads: [select-only, tpcb-like]
scale: 1
clients: [1]
duration: 1s
repetitions: 2
order: sequential
"""


def test_every_trial_says_how_it_started_and_where_its_time_went(xfs: Path, workdir: Path) -> None:
    (workdir / "s.yaml").write_text(STUDY.format(directory=xfs))
    t0 = time.monotonic()
    done = run_cli("run", "s.yaml", "--store", "s.db", "--lang", "en", cwd=workdir, timeout=600)
    wall = time.monotonic() - t0
    assert done.returncode == 0, done.stderr
    listed = json.loads(run_cli("results", "--store", "s.db", "--format", "json", cwd=workdir,
                                check=True).stdout)
    by_order = sorted(listed, key=lambda r: r["order_index"])
    assert [(r["workload"], r["status"]) for r in by_order] == [
        ("select-only", "ok"), ("tpcb-like", "ok"), ("select-only", "ok"), ("tpcb-like", "ok")]
    shown = [run_cli("show", r["trial_id"], "--store", "s.db", "--format", "json", cwd=workdir,
                     check=True).stdout for r in by_order]
    starts = [json.loads(s)["details"]["cycle"]["start"] for s in shown]
    assert [s["data"] for s in starts] == ["as loaded", "as loaded", "as the last trial left it",
                                           "restored"]
    assert starts[3]["restore"] == "reflink clone" and starts[3]["after"] == "changed"
    for text in shown:
        seconds = json.loads(text)["details"]["cycle"]["seconds"]
        assert {"begin", "load", "end", "collect", "start", "stop"} <= set(seconds)
        assert 1.0 <= seconds["load"] < 60, seconds
        assert seconds["start"] <= seconds["begin"] and seconds["stop"] <= seconds["end"]

    text = run_cli("show", by_order[3]["trial_id"], "--store", "s.db", cwd=workdir,
                   check=True).stdout
    assert "started from: data restored from the snapshot by reflink clone; server restarted" in text
    # How it was run, kept with the trial (teiten.run.plan.trial_design): its block, the order, ...
    assert "design: block 2, order sequential, 1 s, restart every-trial, prewarm on, pgbench on CPUs any" \
        in text, text
    assert [json.loads(s)["details"]["design"]["block"] for s in shown] == [1, 1, 2, 2]
    cycle = re.search(r"^cycle: (.*); ([\d.]+) s in all, ([\d.]+)x the measured window$", text, re.M)
    assert cycle and "restore " in cycle.group(1), text
    # The measured window is pgbench's -T 1 as pgbench timed it (0.99 s happens).
    window = re.search(r"\bwindow ([\d.]+) s\b", cycle.group(1))
    assert window and 0.9 <= float(window.group(1)) < 2, text
    assert 1.0 < float(cycle.group(3)) < 30

    report = (workdir / "s-report" / "report.md").read_text()
    part = report.split("## Machine time", 1)[1].split("## Machine fingerprint", 1)[0]
    assert "Where the 4 trials' time went" in part
    # four windows of about 1 s each (each within the bounds above: a busy machine stretches them)
    summed = re.search(r"\| measured window \| ([\d.]+) \|", part)
    assert summed and 3.6 <= float(summed.group(1)) < 8, part
    assert "1 restored from the snapshot by reflink clones of the files that changed" in part
    assert "2 as loaded" in part and "before 4 of the 4 trials" in part
    # The run's own wall time, from teiten's start to its end, and its parts: they add up to
    # it, and it is what the test measured around the CLI (less the report, written after).
    said = re.search(r"The study's 1 run\(s\) took ([\d.]+) s from teiten's start to its end, "
                     r"([\d.]+)× its 4\.\d s of measured windows", part)
    assert said, part
    assert 4.0 < float(said.group(1)) <= wall + 0.1, (said.group(1), wall)
    rows = dict(re.findall(r"^\| (.+?) \| ([\d.]+) \| [\d.]+% \|$", part.split(said.group(0))[1], re.M))
    assert list(rows) == [
        "the trials' cycles (the table above)",
        "between the trials (the store, the monitors' rows, the progress line)",
        "loading the data of 2 cluster(s) (initdb, pgbench -i, the snapshot)",
        "the noise guard's quiet check before the first trial",
        "starting (Python, reading the study, waiting for the machine when asked to, "
        "installing PostgreSQL, the servers)",
        "finishing (removing the clusters, keeping the rates for teiten plan)"], rows
    assert abs(sum(float(v) for v in rows.values()) - float(said.group(1))) < 0.4, rows
    assert float(rows["loading the data of 2 cluster(s) (initdb, pgbench -i, the snapshot)"]) > 0.5
