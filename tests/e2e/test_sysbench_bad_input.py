"""What the sysbench workload cannot be given, through the real command: exit 2, one line
naming the file, line and key, and nothing left behind (tests.e2e.test_bad_input's contract)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from tests.e2e.test_bad_input import STUDY_HEAD, BadInput, run_bad, write_study  # noqa: F401

SERVERS = 'study: bad\nservers:\n  - {name: a, install: "17"%s}\n%sworkloads:\n  - %s\n'

CASES = {
    "no tables": (
        SERVERS % ("", "", "{name: sysbench, tables: 0}"),
        "study.yaml:5: workloads[0].tables: input should be greater than or equal to 1 (got 0)"),
    "a test sysbench's tables do not serve": (
        SERVERS % ("", "", "{name: sysbench, test: bulk_insert}"),
        "study.yaml:5: workloads[0].test: got 'bulk_insert'; input should be 'oltp_read_only', "
        "'oltp_point_select', 'oltp_read_write', 'oltp_write_only', 'oltp_update_index', "
        "'oltp_update_non_index', 'oltp_insert' or 'oltp_delete'"),
    "pgbench's scale": (
        SERVERS % ("", "", "{name: sysbench, scale: 5}"),
        "study.yaml:5: 'scale' is pgbench's -s; the sysbench workload sizes its data with its own "
        "options (see its README); remove it"),
    "a sysbench option on a pgbench workload": (
        SERVERS % ("", "", "{name: select-only, tables: 2}"),
        "study.yaml:5: 'tables' is an option of the sysbench workload, not of 'select-only'; "
        "remove it"),
    "standbys": (
        SERVERS % (", replicas: 1", "", "sysbench"),
        "study.yaml:3: the sysbench workload drives one server directly; 'replicas' (server a) "
        "works with pgbench workloads only in this version of teiten"),
    "several load clients": (
        SERVERS % ("", "load_clients: [{name: here}, {name: b, ssh: u@b.example}]\n", "sysbench"),
        "study.yaml:4: the sysbench workload drives one server directly; 'load_clients' (server "
        "a) works with pgbench workloads only in this version of teiten"),
    "an ssh server": (
        'study: bad\nservers:\n  - {name: a, ssh: u@b.example, install: "17"}\nworkloads:\n  - sysbench\n',
        "study.yaml:3: the sysbench workload drives one server directly; 'ssh' (server a) works "
        "with pgbench workloads only in this version of teiten"),
    "an external server": (
        'study: bad\nservers:\n  - {name: a, external: "host=127.0.0.1 port=1 dbname=x"}\n'
        "workloads:\n  - sysbench\n",
        "study.yaml:3: servers[0] (a): the sysbench workload runs against servers teiten makes on "
        "this machine, not 'external' ones; compare a with pgbench workloads in a study of its own"),
}


@pytest.mark.parametrize("case", list(CASES))
def test_bad_sysbench_study(case: str, workdir: Path, run_bad: BadInput) -> None:  # noqa: F811
    text, expected = CASES[case]
    study = write_study(workdir, text)
    store = workdir / "s.db"
    line = run_bad("run", str(study), "--store", str(store), stores=[store])
    assert line == f"teiten: error: {study}:" + expected.removeprefix("study.yaml:")


def test_a_machine_without_sysbench_is_told_how_to_install_it(workdir: Path, run_bad: BadInput,  # noqa: F811
                                                               monkeypatch: pytest.MonkeyPatch,
                                                               tmp_path: Path) -> None:
    """sysbench really absent: teiten runs with a PATH of the programs it needs here but
    sysbench (no stand-in: where sysbench is installed, it is only left out of the PATH)."""
    bare = tmp_path / "bin"
    bare.mkdir()
    for name in ("ps", "setfacl", "taskset"):
        if (found := shutil.which(name)) is not None:
            (bare / name).symlink_to(found)
    monkeypatch.setenv("PATH", str(bare))
    study = write_study(workdir, STUDY_HEAD + "  - {name: sysbench, tables: 2}\n")
    store = workdir / "s.db"
    line = run_bad("run", str(study), "--store", str(store), stores=[store])
    assert line == (f"teiten: error: {study}:5: workloads[0]: the sysbench workload runs sysbench, "
                    "which is not installed here: apt-get install sysbench")
