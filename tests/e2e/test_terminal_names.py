"""Names teiten does not control reach the terminal shown, never obeyed (issue 34): a study
file whose name holds an escape sequence (which would clear the screen) and a newline (which
would split the error's line and a table's rows)."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import run_cli

STUDY = """study: esc
servers:
  - {name: pg17, install: "17"}
workloads: [pgecons-read]
scale: 1
clients: [1]
duration: 1s
repetitions: 1
"""


def test_an_escape_sequence_in_a_file_name_is_shown_not_obeyed(pg17, workdir: Path) -> None:
    study = workdir / "x\x1b[2Jy.yaml"
    study.write_text(STUDY)
    done = run_cli("plan", study.name, cwd=workdir)
    assert done.returncode == 0, done.stderr
    assert "\x1b" not in done.stdout + done.stderr
    bad = workdir / "b\x1b[2J\nz.yaml"
    bad.write_text("study: bad\nservers: 3\n")
    done = run_cli("plan", bad.name, cwd=workdir)
    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        "teiten: error: b\\x1b[2J\\nz.yaml:1: workloads is missing: it is required (and 1 more)"]
