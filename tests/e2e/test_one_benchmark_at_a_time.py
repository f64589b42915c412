"""One benchmark at a time on a machine (issue 18, 3a), as a user meets it: a second 'teiten
run' or 'resume' beside a running one is refused with one line and creates nothing, queues
behind it with --wait, or runs beside it with --beside-others and says so in its report; a
run killed with SIGKILL does not block the next. Real clusters, real pgbench, the real CLI,
and a machine lock of each test's own."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import time
from pathlib import Path

import pytest
from tests.conftest import ROOT, clusters_snapshot, run_cli, wait_for_pgbench
from tests.integration.test_failures import _start, _trials

STUDY = """
study: {name}
servers:
  - {{name: pg17, install: "17"}}
workloads: [pgecons-read]
scale: 1
clients: [1]
duration: {duration}s
repetitions: {reps}
order: sequential
"""
BESIDE = "run beside it with --beside-others (each then measures the other's load too)"


@pytest.fixture
def lock(workdir: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """This test's own machine lock (the suite's sessions each have theirs)."""
    path = workdir / "machine.lock"
    monkeypatch.setenv("TEITEN_MACHINE_LOCK", str(path))
    return path


def _study(workdir: Path, name: str, *, duration: int = 1, reps: int = 2) -> Path:
    path = workdir / f"{name}.yaml"
    path.write_text(STUDY.format(name=name, duration=duration, reps=reps))
    return path


def _named(lock: Path) -> str:
    held = json.loads(lock.read_text())
    return (f"study {held['study']} (store {held['store']}, pid {held['pid']}, "
            f"since {held['since']})")


def _spec(store: Path) -> dict[str, object]:
    with sqlite3.connect(store) as conn:
        return dict(json.loads(conn.execute("SELECT spec_json FROM studies").fetchone()[0]))


def test_a_second_run_or_resume_is_refused_with_one_line_and_creates_nothing(
        pg17, workdir: Path, lock: Path) -> None:  # noqa: ANN001
    first_store, second_store = workdir / "first.db", workdir / "second.db"
    # long enough that a busy machine still starts the second, and the resume, before the
    # first ends (with 3 repetitions it failed once beside stress-ng and other tests)
    first = _start("run", str(_study(workdir, "busy-first", duration=3, reps=6)), "--store",
                   str(first_store), "--no-report")
    try:
        wait_for_pgbench(first)
        held = _named(lock)
        assert held.startswith(f"study busy-first (store {first_store}, pid {first.pid}, since ")
        line = (f"teiten: error: another benchmark runs on this machine: {held}; wait for it "
                f"with --wait, or {BESIDE}")
        before = clusters_snapshot("busy-second")
        done = run_cli("run", str(_study(workdir, "busy-second")), "--store", str(second_store))
        assert done.returncode == 1, done.stderr
        assert done.stderr.splitlines() == [line]
        assert not second_store.exists()
        assert not (workdir / "second-report").exists()
        assert clusters_snapshot("busy-second") == before
        again = run_cli("resume", "--store", str(first_store))  # the same study, twice at once
        assert again.returncode == 1, again.stderr
        assert again.stderr.splitlines() == [line]
    finally:
        out, err = first.communicate(timeout=300)
    assert first.returncode == 0, err
    assert [t["status"] for t in _trials(first_store)] == ["ok"] * 6
    assert "beside_others" not in _spec(first_store)


def test_wait_queues_behind_the_running_study(pg17, workdir: Path, lock: Path) -> None:  # noqa: ANN001
    first_store, second_store = workdir / "first.db", workdir / "second.db"
    # long enough that the second, started once the first's pgbench runs, finds it running
    # on a busy machine too (with 1 s trials the first could end before the second began)
    first = _start("run", str(_study(workdir, "wait-first", duration=3, reps=3)), "--store",
                   str(first_store), "--no-report")
    try:
        wait_for_pgbench(first)
        held = _named(lock)
        second = _start("run", str(_study(workdir, "wait-second", reps=1)), "--store",
                        str(second_store), "--no-report", "--wait")
    finally:
        _, first_err = first.communicate(timeout=300)
    _, second_err = second.communicate(timeout=300)
    assert first.returncode == 0, first_err
    assert second.returncode == 0, second_err
    assert second_err.splitlines()[0] == (
        f"teiten: waiting for {held} to finish: one benchmark at a time on this machine (at most "
        "24 h; Ctrl-C gives up)")
    first_end = max(str(t["finished_at"]) for t in _trials(first_store))
    assert min(str(t["started_at"]) for t in _trials(second_store)) >= first_end
    with sqlite3.connect(second_store) as conn:  # nothing of the second existed before
        assert conn.execute("SELECT created_at FROM studies").fetchone()[0] >= first_end


def test_ctrl_c_while_waiting_gives_up_and_creates_nothing(
        pg17, workdir: Path, lock: Path) -> None:  # noqa: ANN001
    """Interrupted while queued, nothing ran: the line says so, and does not send the user to
    'teiten resume' (which an interrupted study would)."""
    first_store, second_store = workdir / "first.db", workdir / "second.db"
    first = _start("run", str(_study(workdir, "quit-first", duration=3, reps=4)), "--store",
                   str(first_store), "--no-report")
    try:
        wait_for_pgbench(first)
        second = _start("run", str(_study(workdir, "quit-second", reps=1)), "--store",
                        str(second_store), "--no-report", "--wait")
        assert second.stderr is not None
        assert second.stderr.readline().startswith("teiten: waiting for study quit-first")
        second.send_signal(signal.SIGINT)
        _, second_err = second.communicate(timeout=60)
    finally:
        first.communicate(timeout=300)
    assert second.returncode == 130
    assert second_err.splitlines() == ["teiten: interrupted; nothing half-made was kept."]
    assert not second_store.exists()


def test_make_demo_waits_for_a_running_benchmark_before_its_setup(
        pg17, workdir: Path, lock: Path) -> None:  # noqa: ANN001
    """'make demo' first runs scripts/wait-machine.py, with Debian's own python3 (no venv, no
    psutil): it names the benchmark it waits for, and ends only once that one has."""
    store = workdir / "demo-first.db"
    first = _start("run", str(_study(workdir, "demo-first", duration=2)), "--store", str(store),
                   "--no-report")
    try:
        wait_for_pgbench(first)
        held = _named(lock)
        waiter = subprocess.Popen(["/usr/bin/python3", str(ROOT / "scripts" / "wait-machine.py")],
                                  env={"PATH": os.environ["PATH"], "TEITEN_MACHINE_LOCK": str(lock)},
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        assert waiter.stderr is not None
        assert waiter.stderr.readline().rstrip("\n") == (
            f"teiten: waiting for {held} to finish: one benchmark at a time on this machine (at "
            "most 24 h; Ctrl-C gives up)")
        assert waiter.poll() is None, "it went on while the benchmark ran"
    finally:
        first.communicate(timeout=300)
    _, err = waiter.communicate(timeout=60)
    assert waiter.returncode == 0, err
    assert first.returncode == 0
    assert lock.read_text() == "", "the lock is left free, naming nobody"


def test_beside_others_runs_at_once_and_its_report_says_so(
        pg17, workdir: Path, lock: Path) -> None:  # noqa: ANN001
    first_store, second_store = workdir / "first.db", workdir / "second.db"
    # More trials than the second study can outlast, however busy the machine: once a trial
    # of the first has finished after the second's trial started, Ctrl-C ends the first.
    first = _start("run", str(_study(workdir, "beside-first", reps=100)), "--store",
                   str(first_store), "--no-report")
    try:
        wait_for_pgbench(first)
        done = run_cli("run", str(_study(workdir, "beside-second", reps=1)), "--store",
                       str(second_store), "--beside-others", "--report", str(workdir / "report"))
        assert done.returncode == 0, done.stderr
        assert first.poll() is None, "the first run ended before the second: not beside it"
        [trial] = _trials(second_store)
        deadline = time.monotonic() + 300
        while not [t for t in _trials(first_store) if t["status"] == "ok" and
                   str(t["finished_at"]) >= str(trial["started_at"])]:
            assert time.monotonic() < deadline, "the first run finished no trial after the second began"
            time.sleep(0.2)
        time.sleep(0.5)  # the next trial has begun: it reads who joined
        first.send_signal(signal.SIGINT)
    finally:
        _, err = first.communicate(timeout=300)
    assert first.returncode == 130, err
    assert str(trial["started_at"]) < max(str(t["finished_at"]) for t in _trials(first_store))
    assert _spec(second_store)["beside_others"] is True
    assert "beside_others" not in _spec(first_store)
    md = (workdir / "report" / "report.md").read_text()
    assert ("This study ran with --beside-others: other benchmarks may have run on this machine "
            "during its trials, and its figures may include their load.") in md
    # The run it joined says so too, naming the second run and the first trial it may touch.
    [joined] = _spec(first_store)["joined_by"]  # type: ignore[misc]
    assert (joined["study"], joined["store"]) == ("beside-second", str(second_store))
    touched = [t for t in _trials(first_store) if t["trial_id"] == joined["trial"]]
    assert touched and str(touched[0]["finished_at"]) >= joined["since"]  # ran after it signed
    assert "another benchmark now runs beside this one with --beside-others: study beside-second" in err
    shown = run_cli("report", "--store", str(first_store), "--out", str(workdir / "first-report"))
    assert shown.returncode == 0, shown.stderr
    first_md = (workdir / "first-report" / "report.md").read_text()
    assert (f"Another benchmark ran beside this study with --beside-others: study beside-second "
            f"(store {second_store}, pid ") in first_md
    assert f"the trials from {joined['trial']} on may include its load." in first_md


def test_a_run_killed_with_sigkill_does_not_block_the_next(
        pg17, workdir: Path, lock: Path) -> None:  # noqa: ANN001
    store = workdir / "killed.db"
    first = _start("run", str(_study(workdir, "lock-killed")), "--store", str(store),
                   "--no-report")
    wait_for_pgbench(first)
    os.kill(first.pid, signal.SIGKILL)
    first.communicate(timeout=30)
    assert json.loads(lock.read_text())["pid"] == first.pid  # its name stays; its lock does not
    done = run_cli("resume", "--store", str(store), "--no-report")  # no --wait: not refused
    assert done.returncode == 0, done.stderr
    assert [t["status"] for t in _trials(store)] == ["ok", "ok"]
    assert lock.read_text() == ""


def test_wait_and_beside_others_together_are_bad_input(workdir: Path, lock: Path) -> None:
    store = workdir / "none.db"
    done = run_cli("run", "--wait", "--beside-others", "--store", str(store))
    assert done.returncode == 2
    assert done.stderr.splitlines() == ["teiten: error: argument --beside-others: not allowed "
                                        "with argument --wait (see 'teiten run --help')"]
    assert not store.exists() and not lock.exists()
