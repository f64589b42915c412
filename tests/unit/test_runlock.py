"""One benchmark at a time on a machine (issue 18, 3a): the machine's run lock, held by real
processes on a real lock file (each test its own, through $TEITEN_MACHINE_LOCK)."""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.conftest import ROOT

from teiten.analysis.inputs import ReportOptions, StudyData
from teiten.analysis.summary import report_data
from teiten.features import FEATURES
from teiten.host.waiting import wait_until
from teiten.model.results import StudyResults
from teiten.run import runlock
from teiten.words.i18n import notice_text

HOLD = """
import sys
from teiten.run import runlock
with runlock.hold(study=sys.argv[1], store=sys.argv[2], command="run"):
    print("held", flush=True)
    sys.stdin.read()  # until the test closes stdin
"""
BESIDE = "run beside it with --beside-others (each then measures the other's load too)"


@pytest.fixture
def lock(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "machine.lock"
    monkeypatch.setenv(runlock.ENV, str(path))
    return path


@pytest.fixture
def holder(lock: Path, tmp_path: Path) -> Iterator[subprocess.Popen[str]]:
    """Another process that holds the machine for study s1 until its stdin closes."""
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
    proc = subprocess.Popen([sys.executable, "-c", HOLD, "s1", str(tmp_path / "s1.db")], env=env,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdout.readline() == "held\n"
    yield proc
    if proc.poll() is None:
        proc.kill()
    proc.wait(timeout=10)
    for stream in (proc.stdin, proc.stdout):
        if stream is not None:
            stream.close()


def _named(lock: Path) -> str:
    held = json.loads(lock.read_text())
    return (f"study {held['study']} (store {held['store']}, pid {held['pid']}, "
            f"since {held['since']})")


def _release(proc: subprocess.Popen[str]) -> None:
    assert proc.stdin is not None
    proc.stdin.close()
    assert proc.wait(timeout=10) == 0


def test_the_default_lock_is_one_file_for_the_whole_machine(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(runlock.ENV, raising=False)
    mode = os.stat("/run/lock").st_mode if os.path.isdir("/run/lock") else 0
    open_to_all = bool(mode & stat.S_IWOTH and mode & stat.S_ISVTX)
    assert runlock.lock_path() == Path("/run/lock/teiten.lock" if open_to_all
                                       else "/tmp/teiten-machine.lock")
    monkeypatch.setenv("TEITEN_HOME", "/elsewhere")  # not per account, not per session
    assert runlock.lock_path() == Path("/run/lock/teiten.lock" if open_to_all
                                       else "/tmp/teiten-machine.lock")


def test_the_holder_is_named_in_the_file_which_every_account_can_open(lock: Path) -> None:
    old = os.umask(0o077)
    try:
        with runlock.hold(study="s1", store=Path("s1.db"), command="resume"):
            held = json.loads(lock.read_text())
            assert stat.S_IMODE(lock.stat().st_mode) == 0o666
    finally:
        os.umask(old)
    assert held == {"pid": os.getpid(), "study": "s1", "store": str(Path("s1.db").absolute()),
                    "since": held["since"], "command": "resume"}
    assert lock.read_text() == ""  # released: no name is left behind


def test_a_second_run_is_refused_with_the_first_named(
        lock: Path, holder: subprocess.Popen[str]) -> None:
    with pytest.raises(runlock.MachineBusy) as caught, \
            runlock.hold(study="s2", store=Path("s2.db"), command="run"):
        raise AssertionError("ran beside the holder")
    assert str(caught.value) == (f"another benchmark runs on this machine: {_named(lock)}; wait "
                                 f"for it with --wait, or {BESIDE}")
    assert f"pid {holder.pid}," in str(caught.value)
    assert caught.value.exit_code == 1


def test_a_killed_holder_leaves_no_lock(lock: Path, holder: subprocess.Popen[str]) -> None:
    os.kill(holder.pid, signal.SIGKILL)
    holder.wait(timeout=10)
    assert json.loads(lock.read_text())["pid"] == holder.pid  # its name stays, its lock does not
    with runlock.hold(study="s2", store=Path("s2.db"), command="run"):
        assert json.loads(lock.read_text())["study"] == "s2"


def test_wait_is_bounded_and_says_what_it_waits_for(
        lock: Path, holder: subprocess.Popen[str]) -> None:
    said: list[str] = []
    with pytest.raises(runlock.MachineBusy) as caught, \
            runlock.hold(study="s2", store=Path("s2.db"), command="run", wait=0.6,
                         say=said.append):
        raise AssertionError("ran beside the holder")
    assert said == [f"teiten: waiting for {_named(lock)} to finish: one benchmark at a time on "
                    "this machine (at most 0.6 s; Ctrl-C gives up)"]
    assert str(caught.value) == (f"gave up after waiting 0.6 s for {_named(lock)} to finish; "
                                 f"run later, or {BESIDE}")


def test_wait_runs_once_the_holder_ends(lock: Path, holder: subprocess.Popen[str]) -> None:
    said: list[str] = []
    ended = False

    def release_when_waiting(line: str) -> None:
        nonlocal ended
        said.append(line)
        _release(holder)
        ended = True

    with runlock.hold(study="s2", store=Path("s2.db"), command="run", wait=30,
                      say=release_when_waiting):
        assert ended and json.loads(lock.read_text())["study"] == "s2"
    assert len(said) == 1 and said[0].startswith("teiten: waiting for study s1 (store ")


def test_beside_others_runs_at_once_and_takes_the_lock_over_when_it_is_free(
        lock: Path, holder: subprocess.Popen[str]) -> None:
    with runlock.hold(study="s2", store=Path("s2.db"), command="run", beside_others=True):
        assert json.loads(lock.read_text())["study"] == "s1"  # running beside s1
        _release(holder)
        # Once s1 ends, a later run must find s2, not a free machine.
        wait_until(lambda: lock.read_text() and json.loads(lock.read_text())["study"] == "s2",
                   timeout=10, what="s2 to take the lock over")
        with pytest.raises(runlock.MachineBusy, match=r"^another benchmark runs on this machine: "
                           r"study s2 "), runlock.hold(study="s3", store=Path("s3.db"),
                                                       command="run"):
            raise AssertionError("ran beside s2")
    with runlock.hold(study="s3", store=Path("s3.db"), command="run"):
        pass


def test_beside_others_alone_holds_the_machine_like_any_run(lock: Path) -> None:
    with runlock.hold(study="s1", store=Path("s1.db"), command="run", beside_others=True), \
            pytest.raises(runlock.MachineBusy, match="study s1 "), \
            runlock.hold(study="s2", store=Path("s2.db"), command="run"):
        raise AssertionError("ran beside s1")


def test_a_lock_file_that_is_not_a_plain_file_is_refused(lock: Path, tmp_path: Path) -> None:
    (tmp_path / "elsewhere").write_text("")
    lock.symlink_to(tmp_path / "elsewhere")
    with pytest.raises(runlock.MachineLockError) as caught, \
            runlock.hold(study="s1", store=Path("s1.db"), command="run"):
        raise AssertionError("held a symlink")
    assert str(caught.value) == (
        f"cannot open the machine lock {lock} (Too many levels of symbolic links): it must be a "
        "plain file that every account can read and write (mode 0666); remove it (teiten "
        f"creates it again) or set {runlock.ENV} to another path")


def _study(spec: dict[str, object]) -> StudyResults:
    return StudyResults(
        study_id=1, name="s", source="s.yaml", spec_yaml="", seed=1, state="finished",
        created_at="2026-01-01T00:00:00+00:00", finished_at=None, fingerprint={},
        teiten_version="0", servers=(), trials=(),
        spec={"study": {"clients": [1], "repetitions": 3, "duration": 1, "scale": 1,
                        "order": "random", "seed": 1}, "workloads": [], **spec})


@pytest.mark.parametrize("lang", ["en", "ja"])
def test_a_study_run_beside_others_says_so_first_in_its_report(lang: str) -> None:
    options = ReportOptions(store_path="s.db", generated_at="now", lang=lang)
    beside = report_data(StudyData(_study({"beside_others": True}), features=FEATURES), options)
    assert [n.key for n in beside.warnings][:1] == ["beside-others"]
    text = notice_text(beside.warnings[0], lang)
    assert "--beside-others" in text
    assert ("their load" if lang == "en" else "負荷") in text
    alone = report_data(StudyData(_study({}), features=FEATURES), options)
    assert "beside-others" not in [n.key for n in alone.warnings]
