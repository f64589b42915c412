"""A snapshot hook (issue 24: a ZFS or LVM snapshot where the user has one): teiten keeps no
copy of its own and calls the hook to save the loaded cluster, to restore it before a trial
that follows one that changed the data, and to drop it at the end, always with the server
stopped; each trial's record says the hook restored it. The hook here is a real program that
keeps a copy with cp and says whether a postmaster.pid was there when it ran."""

from __future__ import annotations

import json
import sqlite3
import stat
from contextlib import closing
from pathlib import Path

from tests.conftest import clusters_snapshot, run_cli

STUDY = """
study: snapshot-hook
servers: [{{name: pg18, install: "18", snapshot_hook: "{hook}"}}]
workloads: [tpcb-like]
scale: 1
clients: [1]
duration: 1s
repetitions: 3
order: sequential
"""

HOOK = """#!/bin/sh
# HOOK save|restore|discard DATA_DIR SNAPSHOT_DIR
set -e
if [ -e "$2/postmaster.pid" ]; then state=running; else state=stopped; fi
echo "$1 $state" >> {log}
case "$1" in
  save)    cp -a "$2" "$3/data" ;;
  restore) rm -rf "$2" && cp -a "$3/data" "$2" ;;
  discard) rm -rf "$3/data" ;;
esac
"""


def _hook(workdir: Path) -> tuple[Path, Path]:
    log = workdir / "hook.log"
    hook = workdir / "hook.sh"
    hook.write_text(HOOK.format(log=log))
    hook.chmod(hook.stat().st_mode | stat.S_IXUSR)
    return hook, log


def test_the_hook_saves_restores_and_drops_and_teiten_copies_nothing(
        pg18, workdir: Path) -> None:  # noqa: ANN001
    hook, log = _hook(workdir)
    (workdir / "s.yaml").write_text(STUDY.format(hook=hook))
    store = workdir / "s.db"
    before = clusters_snapshot("snapshot-hook")
    done = run_cli("run", str(workdir / "s.yaml"), "--store", str(store), "--no-report")
    assert done.returncode == 0, done.stderr
    calls = [line.split() for line in log.read_text().splitlines()]
    assert [c[0] for c in calls] == ["save", "restore", "restore", "discard"], calls
    assert all(c[1] == "stopped" for c in calls), calls
    with closing(sqlite3.connect(store)) as conn:
        cycles = [json.loads(r[0]) for r in conn.execute(
            "SELECT d.body FROM details d JOIN trials t USING (study_id, trial_id) "
            "WHERE d.kind='cycle' ORDER BY t.order_index")]
        history = [r[0] for r in conn.execute("SELECT status FROM trials ORDER BY order_index")]
    assert history == ["ok"] * 3
    assert cycles[0]["start"]["data"] == "as loaded"
    for cycle in cycles[1:]:
        assert cycle["start"]["data"] == "restored"
        assert cycle["start"]["restore"] == "snapshot hook hook.sh"
        assert cycle["seconds"]["restore"] > 0
    assert clusters_snapshot("snapshot-hook") == before, "nothing left behind"


def test_a_hook_that_is_not_executable_is_refused_before_anything(workdir: Path) -> None:
    hook, log = _hook(workdir)
    hook.chmod(0o644)
    (workdir / "s.yaml").write_text(STUDY.format(hook=hook))
    store = workdir / "s.db"
    done = run_cli("run", str(workdir / "s.yaml"), "--store", str(store))
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip().endswith(
        f"servers[0].snapshot_hook: {hook} is not executable (chmod +x it); give the program "
        "that saves and restores the data directory"), done.stderr
    assert not store.exists() and not log.exists()
