"""Bounded input (issue 52, item 7), through the real ``teiten`` command: a study file that
would take the process down (a "billion laughs" of YAML aliases, a nesting deeper than
Python's stack, an alias in a loop), numbers no program downstream can hold (a duration of a
billion seconds), and a store whose columns hold values of the wrong type: each one line on
stderr, exit status 2, no traceback, in moments (the subprocess's timeout is the bound: the
alias bomb took 2.2 GB and more than a minute before)."""

from __future__ import annotations

import sqlite3
import subprocess
from pathlib import Path

import pytest
from tests.conftest import run_cli
from tests.truestores import Truth, build

HEAD = "study: bounded\nservers: [{name: a, install: \"17\"}]\nworkloads: [select-only]\n"


def _refused(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr[-2000:]
    [line] = done.stderr.strip().splitlines()
    assert line.startswith("teiten: error: ") and done.stdout == "", line
    return line.removeprefix("teiten: error: ")


def _bomb() -> str:
    """9 levels of 9 aliases each: 387 million values from 700 bytes of YAML."""
    lines = ['a0: &a0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]" for i in range(1, 10)]
    return HEAD + "\n".join(lines) + "\n"


@pytest.mark.parametrize("command", ["plan", "run"])
def test_an_alias_bomb_is_refused_at_once(workdir: Path, command: str) -> None:
    study = workdir / "bomb.yaml"
    study.write_text(_bomb())
    store = workdir / "store.db"
    args = [command, str(study)] + (["--store", str(store)] if command == "run" else [])
    line = _refused(run_cli(*args, cwd=workdir, timeout=60))
    assert line == (f"{study}:9: the YAML holds more than 100000 values, each alias (*name) "
                    "counted as a copy of what it names, where a study file needs a few hundred; "
                    "write fewer aliases of large parts"), line
    assert not store.exists()


@pytest.mark.parametrize(("body", "line_no"), [
    ("x: " + "[" * 500 + "]" * 500 + "\n", 4),  # flow
    # block: the mapping of line 4 + i is level i + 1 (the file's own is 1), and its key the
    # next: k63, line 67, is the 65th
    ("x:\n" + "".join(" " * i + f"k{i}:\n" for i in range(1, 500)) + " " * 500 + "v: 1\n", 67),
])
def test_a_nesting_deeper_than_the_stack_is_one_line(workdir: Path, body: str, line_no: int) -> None:
    study = workdir / "deep.yaml"
    study.write_text(HEAD + body)
    line = _refused(run_cli("plan", str(study), cwd=workdir, timeout=60))
    assert line == (f"{study}:{line_no}: the YAML nests more than 64 levels deep (aliases "
                    "followed), where a study file needs a few; check the brackets and "
                    "indentation"), line


def test_aliases_that_nest_deeper_together_and_an_alias_loop_are_refused(workdir: Path) -> None:
    # Each anchor 40 levels deep, the second inside the first: 80 levels once followed.
    deep = "[" * 40 + "1" + "]" * 40
    study = workdir / "chain.yaml"
    study.write_text(HEAD + f"a: &a {deep}\nb: {'[' * 40}*a{']' * 40}\n")
    assert "nests more than 64 levels deep" in _refused(run_cli("plan", str(study), cwd=workdir))
    study.write_text(HEAD + "x: &c [1, *c]\n")
    assert _refused(run_cli("plan", str(study), cwd=workdir)) == (
        f"{study}:4: an alias (*name) names a mapping or list it is inside of, which would "
        "never end; copy the part it means instead")


@pytest.mark.parametrize(("extra", "message"), [
    ("duration: 1000000000s",
     "4: duration: 1000000000 s is out of range; allowed: more than 0 s up to 7 days (604800 s)"),
    ("duration: 8d", "4: duration: 691200 s is out of range; allowed: more than 0 s up to 7 days "
     "(604800 s)"),
    ("threads: 1000000", "4: threads: 1000000 is out of range; allowed: half, or 1 to 10000"),
    ("seed: 99999999999999999999",
     "4: seed: 99999999999999999999 is out of range; allowed: 0 to 9223372036854775807"),
    ("repetitions: auto\nauto_repetitions: {budget: 365d}",
     "5: auto_repetitions.budget: 31536000 s is out of range; allowed: more than 0 s up to "
     "30 days (2592000 s)"),
    ("scale: 5000000", "4: scale: 5000000 is out of range; allowed: 1 to 1000000"),
    ("duration: " + "9" * 5000,
     " cannot read a value of the YAML (a number of more than 4300 digits); check the numbers "
     "and dates of the file"),
])
def test_numbers_beyond_their_bounds_are_refused_by_plan(workdir: Path, extra: str,
                                                         message: str) -> None:
    study = workdir / "study.yaml"
    study.write_text(HEAD + extra + "\n")
    assert _refused(run_cli("plan", str(study), cwd=workdir)) == f"{study}:{message}"


def test_a_workloads_numbers_are_bounded_too(workdir: Path) -> None:
    study = workdir / "study.yaml"
    study.write_text(HEAD.replace("workloads: [select-only]",
                                  "workloads: [{name: select-only, scale: 2000000}]"))
    assert _refused(run_cli("plan", str(study), cwd=workdir)) == (
        f"{study}:3: workloads[0].scale: 2000000 is out of range; allowed: 1 to 1000000")
    study.write_text(HEAD.replace("workloads: [select-only]",
                                  "workloads: [{name: bookstore, think_time: 2h}]"))
    assert _refused(run_cli("plan", str(study), cwd=workdir)) == (
        f"{study}:3: workloads[0].think_time: 7200 s is out of range; allowed: 0 s up to 1 h "
        "(3600 s)")


def test_the_longest_duration_allowed_plans(workdir: Path) -> None:
    study = workdir / "study.yaml"
    study.write_text(HEAD + "duration: 7d\n")
    done = run_cli("plan", str(study), cwd=workdir)
    assert done.returncode == 0 and "604800" in done.stdout, done.stderr


def _damaged(tmp_path: Path, sql: str) -> tuple[Path, str]:
    store = build(tmp_path / "store.db", Truth(blocks=3, cv=0.02))
    with sqlite3.connect(store) as conn:
        conn.execute(sql)
        rowid, trial = conn.execute("SELECT rowid, trial_id FROM trials "
                                    "WHERE typeof(tps) = 'text' OR typeof(clients) = 'text' "
                                    "OR typeof(finished_at) != 'text'").fetchone()
    return store, f"row {rowid} (trial {trial})"


@pytest.mark.parametrize(("sql", "what"), [
    ("UPDATE trials SET tps = 'fast' WHERE rowid = 5", "column tps, {row} holds text 'fast' "
     "where teiten writes a number"),
    ("UPDATE trials SET clients = 'four' WHERE rowid = 7", "column clients, {row} holds text "
     "'four' where teiten writes an integer"),
    ("UPDATE trials SET finished_at = x'00ff' WHERE rowid = 3", "column finished_at, {row} "
     "holds blob b'\\x00\\xff' where teiten writes text"),
])
def test_a_store_with_values_of_the_wrong_type_is_refused(tmp_path: Path, sql: str,
                                                          what: str) -> None:
    store, row = _damaged(tmp_path, sql)
    expected = (f"{store} is damaged or not a teiten store: table trials, "
                + what.format(row=row) + "; give the store 'teiten run' wrote, or a copy of it "
                "from before the damage")
    assert _refused(run_cli("report", "--store", str(store), "--out", str(tmp_path / "r"))) == expected
    assert not (tmp_path / "r").exists()
    assert _refused(run_cli("results", "--store", str(store))) == expected
    trial = row.split("trial ")[1].rstrip(")")
    assert _refused(run_cli("show", "--store", str(store), trial)) == expected
