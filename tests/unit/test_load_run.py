"""A trial's load in the model's own terms (teiten.model.results.LoadRun): pgbench's producer reads
its run into figures and its own reason not to count, in the words the runner stored before
the outcome was driver-neutral; the runner weighs that reason against a crash of the server
without knowing which driver ran."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from teiten.drivers.pgbench import PgbenchRun
from teiten.drivers.pgbench_output import parse
from teiten.model.results import LoadRun
from teiten.run.runner import _verdict

GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "pgbench" / "17"
CRASH = "the server restarted after a crash during the trial (terminated by signal)"


def _run(case: str, returncode: int | None, *, timed_out: bool = False) -> PgbenchRun:
    stdout = (GOLDEN / f"{case}.stdout").read_text()
    stderr = (GOLDEN / f"{case}.stderr").read_text()
    if timed_out:
        stdout = ""
    return PgbenchRun(["pgbench", "-T", "3"], returncode, stdout, stderr, parse(stdout, stderr),
                      timed_out=timed_out)


def test_a_good_run_counts_with_its_own_figures() -> None:
    run = _run("read", 0)
    load = run.load_run()
    assert load.driver == "pgbench" and load.failure is None and not load.timed_out
    assert load.figures == run.output.figures()
    assert (load.argv, load.stdout, load.stderr) == (tuple(run.argv), run.stdout, run.stderr)
    assert _verdict(load, None) is None
    assert _verdict(load, CRASH) == CRASH


def test_an_aborted_run_says_pgbench_s_first_error() -> None:
    run = _run("aborted", 2)
    load = run.load_run()
    assert load.failure == f"pgbench exited with status 2: {run.output.errors[0]}"
    assert load.failure.startswith("pgbench exited with status 2: pgbench: error: client 1 script 0 "
                                   'aborted in command 1 query 0: ERROR:  relation "no_such_table"')
    assert load.figures is not None and load.figures.pgbench_version == "17.11"
    assert _verdict(load, None) == load.failure
    assert _verdict(load, CRASH) == CRASH  # the crash explains the abort


def test_a_run_killed_for_its_time_says_so_before_a_crash() -> None:
    load = _run("read", None, timed_out=True).load_run()
    assert load.timed_out and load.failure == "pgbench did not finish in time and was killed"
    assert _verdict(load, CRASH) == "pgbench did not finish in time and was killed"


def test_a_run_that_measured_nothing_does_not_count() -> None:
    stdout = (GOLDEN / "read.stdout").read_text().replace(
        "number of transactions actually processed: ", "number of transactions actually processed: 0 # ")
    run = PgbenchRun(["pgbench"], 0, stdout, "", parse(stdout, ""))
    assert run.load_run().failure == "pgbench reported no transactions"


def test_a_window_s_figures_stand_for_the_run_judged_whole() -> None:
    run = _run("read", 0)
    window = dataclasses.replace(run.output.figures(), tps=1.0, transactions=3)
    load = run.load_run(figures=window)
    assert load.figures is window and load.failure is None


def test_a_load_killed_for_its_time_carries_the_reason() -> None:
    with pytest.raises(ValueError, match="killed for its time"):
        LoadRun("sysbench", (), "", "", None, timed_out=True)
