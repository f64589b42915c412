"""Bad input of the measured-statement workloads through the real command: exit 2, one line
naming the file, line and key, and nothing left behind."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.e2e.test_bad_input import STUDY_HEAD, BadInput, run_bad, write_study  # noqa: F401

EXTERNAL_HEAD = """\
study: bad
servers:
  - {name: cloud, external: "host=127.0.0.1 port=1 dbname=x", allow_init: true}
workloads:
"""

CASES = {
    "suite option on a pgbench workload": (
        STUDY_HEAD, "  - {name: pgecons-read, frozen: [0, 50]}\n",
        "study.yaml:5: 'frozen' is an option of the freeze workload, not of 'pgecons-read'; remove it"),
    "option of another suite": (
        STUDY_HEAD, "  - {name: freeze, workers: [0, 2]}\n",
        "study.yaml:5: 'workers' is an option of the accesslog workload, not of 'freeze'; remove it"),
    "a value listed twice": (
        STUDY_HEAD, "  - {name: accesslog, workers: [0, 2, 2]}\n",
        "study.yaml:5: workloads[0].workers: 2 is listed twice"),
    "an unknown cache state": (
        STUDY_HEAD, "  - {name: freeze, cache: [hot]}\n",
        "study.yaml:5: workloads[0].cache[0]: got 'hot'; input should be 'warm' or 'cold'"),
    "a ratio over 100%": (
        STUDY_HEAD, "  - {name: freeze, frozen: [0, 120]}\n",
        "study.yaml:5: workloads[0].frozen[1]: input should be less than or equal to 100 (got 120)"),
    "fillfactor on a suite": (
        STUDY_HEAD, "  - {name: freeze, fillfactor: 80}\n",
        "study.yaml:5: 'fillfactor' is pgbench's -F; the freeze workload sets its own fillfactors "
        "(see its README); remove it"),
    "a cold cache on an external server": (
        EXTERNAL_HEAD, "  - {name: freeze, cache: [warm, cold]}\n",
        "study.yaml:5: cache: cold needs a server that teiten restarts, and cloud is external; use "
        "cache: [warm] there"),
}


@pytest.mark.parametrize("case", list(CASES))
def test_bad_suite_option(case: str, workdir: Path, run_bad: BadInput) -> None:  # noqa: F811
    head, text, expected = CASES[case]
    study = write_study(workdir, head + text)
    store = workdir / "s.db"
    line = run_bad("run", str(study), "--store", str(store), stores=[store])
    assert line == f"teiten: error: {study}:5: " + expected.removeprefix("study.yaml:5: ")


def test_a_suite_on_an_external_server_needs_allow_init(workdir: Path, run_bad: BadInput) -> None:  # noqa: F811
    study = write_study(workdir, EXTERNAL_HEAD.replace(", allow_init: true", "")
                        + "  - {name: freeze}\n")
    store = workdir / "s.db"
    line = run_bad("run", str(study), "--store", str(store), stores=[store])
    assert line == (f"teiten: error: {study}:3: the freeze workload creates its own tables and "
                    "indexes; on the external server cloud it needs allow_init: true (teiten then "
                    "works in a database of its own)")
