"""restart: after-changes (issue 24): a read-only trial goes on with the server the read-only
trial before it left running, when it is the same server and workload; a data-changing trial,
another workload or another server restarts (and restores) as always, and never more than one
server runs at a time. Every trial records what it started from. Real clusters, real pgbench,
the real CLI."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import threading
import time
from contextlib import closing
from pathlib import Path

import psutil
from tests.conftest import ROOT, TEITEN, TEST_HOME, clusters_snapshot, run_cli

STUDY = """
study: restart-policy
servers: [{{name: pg17, install: "17"}}{more}]
workloads: [select-only, tpcb-like]
scale: 1
clients: [1, 2]
duration: 1s
repetitions: 2
order: {order}
restart: after-changes
"""


def _starts(workdir: Path, store: str) -> list[tuple[str, int, dict]]:
    rows = json.loads(run_cli("results", "--store", store, "--format", "json", cwd=workdir,
                              check=True).stdout)
    out = []
    for r in sorted(rows, key=lambda r: r["order_index"]):
        assert r["status"] == "ok", r
        shown = json.loads(run_cli("show", r["trial_id"], "--store", store, "--format", "json",
                                   cwd=workdir, check=True).stdout)
        out.append((r["workload"], r["clients"], shown["details"]["cycle"]))
    return out


def _stored_starts(store: Path) -> list[str]:
    """How each trial that ended ok started its server, in the run's order, read from the store
    (the 'teiten show' of each is the other test's)."""
    with closing(sqlite3.connect(store)) as conn:
        return [json.loads(body)["start"]["server"] for (body,) in conn.execute(
            "SELECT d.body FROM trials t JOIN details d ON d.trial_id = t.trial_id "
            "AND d.kind = 'cycle' WHERE t.status = 'ok' ORDER BY t.order_index")]


def test_read_only_trials_go_on_with_the_running_server(pg17, workdir: Path) -> None:
    (workdir / "s.yaml").write_text(STUDY.format(more="", order="sequential"))
    done = run_cli("run", "s.yaml", "--store", "s.db", "--lang", "en", cwd=workdir)
    assert done.returncode == 0, done.stderr
    starts = _starts(workdir, "s.db")
    got = [(w, c, cyc["start"]["server"], cyc["start"]["data"]) for w, c, cyc in starts]
    assert got == [
        ("select-only", 1, "restarted", "as loaded"),
        ("select-only", 2, "kept running from the trial before", "as the last trial left it"),
        ("tpcb-like", 1, "restarted", "as loaded"),
        ("tpcb-like", 2, "restarted", "restored"),
        ("select-only", 1, "restarted", "as the last trial left it"),
        ("select-only", 2, "kept running from the trial before", "as the last trial left it"),
        ("tpcb-like", 1, "restarted", "restored"),
        ("tpcb-like", 2, "restarted", "restored")]
    cycles = [cyc for _, _, cyc in starts]
    assert "start" not in cycles[1]["seconds"] and "stop" not in cycles[0]["seconds"]
    # Every start first drops the server's programs from the page cache; a kept server has none.
    for cyc in cycles:
        evicted = cyc["start"].get("programs_evicted")
        if cyc["start"]["server"] == "restarted":
            assert evicted["names"] > 0 and evicted["not_evicted_files"] == 0, cyc
        else:
            assert evicted is None, cyc
    assert cycles[2]["seconds"]["stop_leftover"] > 0, "the select-only server was stopped first"
    report = (workdir / "s-report" / "report.md").read_text()
    assert "The server was started afresh before 6 of the 8 trials." in report
    assert clusters_snapshot("restart-policy") == set()


def test_never_two_servers_at_once(pg17, pg18, workdir: Path) -> None:
    (workdir / "s.yaml").write_text(STUDY.format(more=', {name: pg18, install: "18"}',
                                                 order="random"))
    env = dict(os.environ, TEITEN_HOME=str(TEST_HOME), PYTHONPATH=str(ROOT / "src"))
    run = subprocess.Popen([*TEITEN, "run", "s.yaml", "--store", "s.db", "--no-report"],
                           cwd=workdir, env=env, stdout=subprocess.DEVNULL,
                           stderr=subprocess.PIPE, text=True)
    most, stop = 0, threading.Event()

    def watch() -> None:  # postmasters of this study's clusters, 20 times a second
        nonlocal most
        clusters = str(TEST_HOME / "clusters" / "restart-policy-")
        while not stop.is_set():
            found = 0  # (a backend just forked still shows its postmaster's command line)
            for proc in psutil.process_iter(["name", "cmdline", "ppid"]):
                cmd = proc.info["cmdline"] or []
                try:
                    child = psutil.Process(proc.info["ppid"]).name() == "postgres"
                except psutil.Error:
                    child = False
                if proc.info["name"] == "postgres" and "-D" in cmd and not child and \
                        cmd[cmd.index("-D") + 1].startswith(clusters):
                    found += 1
            most = max(most, found)
            time.sleep(0.05)

    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        _, err = run.communicate(timeout=600)
    finally:
        stop.set()
        watcher.join()
    assert run.returncode == 0, err
    starts = _stored_starts(workdir / "s.db")  # 16 trials, every one ok
    assert len(starts) == 16 and "restarted" in starts
    assert most == 1, f"{most} servers ran at once"
