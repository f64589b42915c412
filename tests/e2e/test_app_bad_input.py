"""Bad options of the application workloads (tpcc, bookstore) through the real command:
exit 2, one line naming the file, line and key, and nothing left behind."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.e2e.test_bad_input import STUDY_HEAD, BadInput, run_bad, write_study  # noqa: F401

CASES = {
    "option of the other app": (
        "  - {name: tpcc, think_time: 1s}\n",
        "study.yaml:5: 'think_time' is an option of the bookstore workload, not of 'tpcc'; remove it"),
    "app option on a pgbench workload": (
        "  - {name: pgecons-read, warehouses: 2}\n",
        "study.yaml:5: 'warehouses' is an option of the tpcc workload, not of 'pgecons-read'; "
        "remove it"),
    "rampup on a script": (
        "  - {script: x.pgbench, rampup: 5}\n",
        "study.yaml:5: 'rampup' is an option of the tpcc and bookstore workloads, not of 'x'; "
        "remove it"),
    "fillfactor on tpcc": (
        "  - {name: tpcc, fillfactor: 80}\n",
        "study.yaml:5: 'fillfactor' is pgbench's -F; the tpcc workload sets its own fillfactors "
        "(see its README); remove it"),
    "no warehouses": (
        "  - {name: tpcc, warehouses: 0}\n",
        "study.yaml:5: workloads[0].warehouses: input should be greater than or equal to 1 (got 0)"),
    "unknown mix": (
        "  - {name: bookstore, mix: buying}\n",
        "study.yaml:5: workloads[0].mix: got 'buying'; input should be 'browsing', 'shopping' or "
        "'ordering'"),
    "rampup that is not a duration": (
        "  - {name: tpcc, rampup: soon}\n",
        "study.yaml:5: workloads[0].rampup: cannot read 'soon' as a duration; write e.g. 5s, 300s "
        "or 5min"),
    "think time pgbench cannot sleep": (
        "  - {name: bookstore, think_time: 0.0001}\n",
        "study.yaml:5: workloads[0].think_time: 0.0001 s is below 1 ms; write 0 (no think time) or "
        "1ms or more"),
    "endless ramp-up": (
        "  - {name: tpcc, rampup: .inf}\n",
        "study.yaml:5: workloads[0].rampup: input should be a finite number (got inf)"),
}


@pytest.mark.parametrize("case", list(CASES))
def test_bad_app_option(case: str, workdir: Path, run_bad: BadInput) -> None:  # noqa: F811
    text, expected = CASES[case]
    (workdir / "x.pgbench").write_text("SELECT 1;\n")
    study = write_study(workdir, STUDY_HEAD + text)
    store = workdir / "s.db"
    line = run_bad("run", str(study), "--store", str(store), stores=[store])
    assert line == f"teiten: error: {study}:5: " + expected.removeprefix("study.yaml:5: ")
