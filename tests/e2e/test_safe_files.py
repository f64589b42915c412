"""Files teiten reads and writes for the user, through the real ``teiten`` command (issue 34):
a study file that is no regular file or is too large is one line (exit 2) and never hangs or
fills the memory; ``--out``/``--report`` never replaces files of the user's unless told; a
CSV export shows a trial's text as text in a spreadsheet."""

from __future__ import annotations

import csv
import io
import json
import os
import shutil
import subprocess
import threading
import time
from pathlib import Path

import pytest
from tests.conftest import run_cli
from tests.truestores import Truth, build

from teiten.host.paths import MARKER
from teiten.model.errors import SpecError
from teiten.model.results import TrialResult
from teiten.spec.load import MAX_STUDY_BYTES, load_file
from teiten.store import Store

GOLDEN = Path(__file__).resolve().parent.parent / "golden" / "report-stores" / "quick.db"
LINK = '=HYPERLINK("http://x","y")'


@pytest.fixture
def quick(tmp_path: Path) -> Path:
    """A copy of a real store (opening one of an older schema migrates it in place)."""
    return Path(shutil.copyfile(GOLDEN, tmp_path / "quick.db"))


def _one_line(done: subprocess.CompletedProcess[str]) -> str:
    """The bad-input contract: exit 2, nothing on stdout, one line on stderr, no traceback."""
    assert "Traceback" not in done.stderr, done.stderr
    assert done.returncode == 2, (done.returncode, done.stderr)
    assert done.stdout == ""
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and done.stderr == lines[0] + "\n", done.stderr
    return lines[0]


# --------------------------------------------------------------------------- study files

def _study_file(kind: str, tmp_path: Path) -> tuple[Path, str]:
    """A study file of ``kind`` and what the error line says of it."""
    path = tmp_path / "study.yaml"
    if kind == "/dev/zero":  # read whole, it would fill the memory
        return Path("/dev/zero"), "is a character device, not a regular file; give the path of a YAML file"
    if kind == "fifo":  # no writer: opening it to read would wait forever
        os.mkfifo(path)
        return path, "is a named pipe (FIFO), not a regular file; give the path of a YAML file"
    if kind == "directory":
        path.mkdir()
        return path, "is a directory; give the path of a YAML file"
    path.write_text("study: big\n" + "# padding\n" * (MAX_STUDY_BYTES // 10))
    return path, (f"is {path.stat().st_size} bytes, more than the 4194304 bytes (4 MiB) a study "
                  "file may have; give the path of the study's YAML file")


@pytest.mark.parametrize("kind", ["/dev/zero", "fifo", "directory", "oversized"])
def test_a_study_file_that_is_no_regular_file_or_too_large_is_one_line(kind: str,
                                                                      tmp_path: Path) -> None:
    path, said = _study_file(kind, tmp_path)
    line = _one_line(run_cli("plan", str(path), timeout=30))
    assert line == f"teiten: error: study file {path} {said}"


@pytest.mark.parametrize("kind", ["/dev/zero", "fifo"])
def test_reading_a_device_or_a_fifo_is_refused_at_once(kind: str, tmp_path: Path) -> None:
    """In this process, timed: the refusal comes before anything is read or waited for."""
    path, said = _study_file(kind, tmp_path)
    found: list[SpecError] = []

    def read() -> None:
        try:
            load_file(path)
        except SpecError as exc:
            found.append(exc)

    reader = threading.Thread(target=read, daemon=True)  # hung, it would not keep pytest running
    started = time.monotonic()
    reader.start()
    reader.join(timeout=5)
    assert not reader.is_alive(), f"reading {path} hangs"
    assert time.monotonic() - started < 0.5
    assert [str(e) for e in found] == [f"study file {path} {said}"]


# --------------------------------------------------------------------------- report directories

def _refusal(option: str, out: Path) -> str:
    return (f"teiten: error: {option} {out}: the directory holds files teiten did not write, "
            "which a report's files of the same names would replace; give a new or empty "
            "directory, or add --overwrite to write the report there anyway")


@pytest.mark.parametrize("command", ["report", "compare", "run"])
def test_a_directory_of_the_users_files_is_refused_and_left_alone(command: str, quick: Path,
                                                                  tmp_path: Path) -> None:
    out = tmp_path / "mine"
    out.mkdir()
    (out / "report.md").write_text("the user's own notes\n")
    store = tmp_path / "s.db"
    args = {"report": ("report", "--store", str(quick), "--out", str(out)),
            "compare": ("compare", "--store", str(quick), "--store", str(quick), "--out", str(out)),
            "run": ("run", "--store", str(store), "--report", str(out))}[command]
    line = _one_line(run_cli(*args, cwd=tmp_path, timeout=120))
    assert line == _refusal("--report" if command == "run" else "--out", out)
    assert [p.name for p in out.iterdir()] == ["report.md"]
    assert (out / "report.md").read_text() == "the user's own notes\n"
    assert not store.exists(), "the run began"


def test_the_default_report_directory_of_a_run_is_checked_before_it_begins(tmp_path: Path) -> None:
    beside = tmp_path / "s-report"
    beside.mkdir()
    (beside / "notes.txt").write_text("mine\n")
    line = _one_line(run_cli("run", "--store", str(tmp_path / "s.db"), cwd=tmp_path, timeout=120))
    assert line == _refusal("--report", beside)
    assert not (tmp_path / "s.db").exists()


def test_overwrite_writes_into_the_users_directory_and_keeps_their_other_files(
        quick: Path, tmp_path: Path) -> None:
    out = tmp_path / "mine"
    out.mkdir()
    (out / "report.md").write_text("the user's own notes\n")
    (out / "notes.txt").write_text("kept\n")
    run_cli("report", "--store", str(quick), "--out", str(out), "--overwrite", check=True)
    assert (out / "report.md").read_text().startswith("# teiten report")
    assert (out / "notes.txt").read_text() == "kept\n"
    assert not (out / MARKER).exists(), "the user's directory was marked as teiten's own"
    again = run_cli("report", "--store", str(quick), "--out", str(out))
    assert _one_line(again) == _refusal("--out", out)


def test_a_directory_teiten_wrote_is_written_again(quick: Path, tmp_path: Path) -> None:
    """A new directory is marked as teiten's report directory, and the next report (or run)
    writes into it without --overwrite; so does a report of a teiten from before the marker."""
    out = tmp_path / "report"
    run_cli("report", "--store", str(quick), "--out", str(out), check=True)
    assert json.loads((out / MARKER).read_text())["purpose"] == "report"
    run_cli("report", "--store", str(quick), "--out", str(out), check=True)
    (out / MARKER).unlink()  # as a teiten before the marker left it
    run_cli("report", "--store", str(quick), "--out", str(out), check=True)
    assert (out / MARKER).exists()
    empty = tmp_path / "empty"
    empty.mkdir()
    run_cli("report", "--store", str(quick), "--out", str(empty), check=True)
    assert (empty / "report.html").exists() and (empty / MARKER).exists()


# --------------------------------------------------------------------------- CSV exports

def test_a_trials_text_reaches_the_csv_as_text(tmp_path: Path) -> None:
    """A failed trial's reason (pgbench's stderr, which can carry a file name) that begins
    with '=' is shown as text by a spreadsheet; the figures stay numbers; JSON keeps it raw."""
    store = build(tmp_path / "t.db", Truth(blocks=2, cv=0.01, clients=(1,),
                                           workloads=("pgecons-read",)))
    opened = Store.open(store)
    try:
        study_id = int(opened.studies()[-1].id)
        trial = opened.study_results(study_id).trials[0].trial_id
        opened.finish_trial(study_id, TrialResult(trial, "failed", "2026-11-26T00:01:30+00:00",
                                                  error=LINK))
    finally:
        opened.close()
    text = run_cli("results", "--store", str(store), "--format", "csv", check=True).stdout
    rows = {r["trial_id"]: r for r in csv.DictReader(io.StringIO(text))}
    assert rows[trial]["error"] == "'" + LINK
    ok = [r for r in rows.values() if r["status"] == "ok"]
    assert ok and all(float(r["tps"]) > 0 and r["error"] == "" for r in ok)
    raw = json.loads(run_cli("results", "--store", str(store), "--format", "json",
                             check=True).stdout)
    assert [r["error"] for r in raw if r["trial_id"] == trial] == [LINK]
