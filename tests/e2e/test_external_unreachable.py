"""An `external:` server that does not answer (issue 54, item 15): `teiten run` made its store,
failed the trial, exited 1 and left a report of nothing. teiten now asks every external server
before anything is stored: one line naming the server (and its line in the study file) with
libpq's own reason, exit 2, no store file, no report directory, no traceback. Nothing listens
on 127.0.0.1 port 1, so libpq's answer is a real "Connection refused". `teiten plan`, which
makes every check `teiten run` makes before its first trial, refuses it the same way.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.e2e.test_bad_input import BadInput, run_bad, write_study  # noqa: F401

STUDY = """\
study: bad
servers:
  - {name: here-too, external: "host=127.0.0.1 port=1 connect_timeout=2"}
workloads: [pgecons-read]
scale: 1
clients: [1]
duration: 1s
repetitions: 1
"""

REFUSED = ('cannot connect to external server here-too: connection failed: connection to server '
           'at "127.0.0.1", port 1 failed: Connection refused; Is the server running on that '
           'host and accepting TCP/IP connections?')


@pytest.mark.parametrize("command", ["run", "plan"])
def test_an_external_server_that_does_not_answer_is_refused_before_anything_is_stored(
        command: str, workdir: Path, run_bad: BadInput) -> None:  # noqa: F811
    study = write_study(workdir, STUDY)
    store = workdir / "s.db"
    args = ("run", str(study), "--store", str(store)) if command == "run" else ("plan", str(study))
    line = run_bad(*args, stores=[store])  # exit 2, one line, no traceback, nothing made
    assert line == f"teiten: error: {study}:3: {REFUSED}"
    assert not store.exists() and not (workdir / "s-report").exists()
