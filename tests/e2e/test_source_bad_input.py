"""Bad input to ``teiten install --from-source``, through the real command.

Every case: exit status 2, exactly one line on stderr starting with ``teiten: error: ``, no
traceback, and nothing left behind: no new install, and in builds/ at most the kept
build.log of a build that ran and failed.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tarfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.conftest import OTHER_INSTALLS, TEST_HOME, run_cli
from tests.gitrepo import git
from tests.requirements import missing

from teiten.host import paths
from teiten.installs import manifest

BUILDS = TEST_HOME / "builds"
INSTALLS = TEST_HOME / "installs"


def _listing(path: Path) -> set[str]:
    return {p.name for p in path.iterdir()} if path.is_dir() else set()


def run_bad(*args: str, progress: bool = False, env: dict[str, str] | None = None) -> str:
    """Run ``teiten ARGS`` (with ``env`` added to the environment), check the bad-input
    contract, and return the error line."""
    installs = _listing(INSTALLS)
    done = run_cli(*args, timeout=300, env=env)
    assert "Traceback" not in done.stderr, done.stderr
    assert done.returncode == 2, (done.returncode, done.stderr)
    assert done.stderr.count("\n") == 1 and done.stderr.startswith("teiten: error: "), done.stderr
    if not progress:
        assert done.stdout == "", done.stdout
    new_installs = _listing(INSTALLS) - installs
    assert all(OTHER_INSTALLS.match(n) for n in new_installs), new_installs
    for build in BUILDS.glob("*"):
        # Only a failed build's log (and teiten's marker) stays; builds running in another
        # session have build/ and stage/ too, but never under a key of these tests.
        left = _listing(build)
        assert left <= {"build.log", paths.MARKER, "build", "stage", "src"}, (build, left)
    return done.stderr.rstrip("\n")


@pytest.fixture
def fake_source(workdir: Path) -> Path:
    """A directory that passes for a PostgreSQL source tree until configure runs."""
    tree = workdir / "postgresql-99.1"
    (tree / "src" / "backend").mkdir(parents=True)
    (tree / "configure").write_text("#!/bin/sh\nPACKAGE_VERSION='99.1'\nexit 1\n")
    (tree / "configure").chmod(0o755)
    return tree


def test_nonexistent_source() -> None:
    line = run_bad("install", "--from-source", "/nonexistent/postgresql-15.18")
    assert line == ("teiten: error: no such PostgreSQL source: /nonexistent/postgresql-15.18; "
                    "give a source directory or a tarball (.tar.gz, .tgz, .tar.bz2, .tar.xz)")


def test_directory_that_is_not_a_source_tree(workdir: Path) -> None:
    line = run_bad("install", "--from-source", str(workdir))
    assert line == (f"teiten: error: {workdir} is not a PostgreSQL source tree (it has no "
                    "configure and src/backend); give the top directory of the source, or a "
                    "tarball")


def test_file_that_is_not_a_tarball(workdir: Path) -> None:
    notes = workdir / "notes.txt"
    notes.write_text("hello\n")
    line = run_bad("install", "--from-source", str(notes))
    assert line == (f"teiten: error: {notes} is neither a PostgreSQL source directory nor a "
                    "tarball (.tar.gz, .tgz, .tar.bz2, .tar.xz)")


def test_tarball_without_a_source_tree_leaves_no_build_dir(workdir: Path) -> None:
    tarball = workdir / f"empty-{uuid.uuid4().hex[:8]}.tar.gz"
    (workdir / "README").write_text("not PostgreSQL\n")
    with tarfile.open(tarball, "w:gz") as tar:
        tar.add(workdir / "README", arcname="something/README")
    builds = _listing(BUILDS)
    line = run_bad("install", "--from-source", str(tarball), progress=True)
    assert line == (f"teiten: error: {tarball} does not hold a PostgreSQL source tree (one top "
                    "directory with configure and src/backend)")
    assert _listing(BUILDS) == builds  # nothing ran, so not even a log is kept


def test_source_configured_in_place(fake_source: Path) -> None:
    (fake_source / "config.status").write_text("")
    line = run_bad("install", "--from-source", str(fake_source))
    assert line == (f"teiten: error: {fake_source} was configured in place (it has "
                    "config.status), so it cannot be built in a separate directory; run 'make "
                    "distclean' there, or give a release tarball")
    assert (fake_source / "config.status").exists()


def test_unknown_preset(fake_source: Path) -> None:
    line = run_bad("install", "--from-source", str(fake_source), "--preset", "fast")
    assert line == ("teiten: error: unknown preset 'fast'; presets are lwlock-stats (per-LWLock "
                    "contention counts, written at backend exit), no-vector-checksums "
                    "(data-checksum code (checksum.o) compiled without -ftree-vectorize)")


def test_versions_and_from_source_together(fake_source: Path) -> None:
    line = run_bad("install", "17", "--from-source", str(fake_source))
    assert line == ("teiten: error: give either versions or --from-source, not both (see "
                    "'teiten install --help')")


def test_neither_versions_nor_from_source() -> None:
    line = run_bad("install")
    assert line == ("teiten: error: give the versions to install (17, 18.6), --from-source "
                    "PATH or --from-git REPO (see 'teiten install --help')")


def test_source_options_without_from_source() -> None:
    line = run_bad("install", "17", "--preset", "lwlock-stats")
    assert line == ("teiten: error: --preset only work with --from-source or --from-git (see "
                    "'teiten install --help')")


def test_name_that_looks_like_a_version(fake_source: Path) -> None:
    line = run_bad("install", "--from-source", str(fake_source), "--name", "15")
    assert line == ("teiten: error: --name '15' looks like a version, which studies use to mean "
                    "any install of that version; choose a name such as pg15-lwlock")


def test_prefix_is_teitens_to_choose(fake_source: Path) -> None:
    line = run_bad("install", "--from-source", str(fake_source), "--configure=--prefix=/opt/pg")
    assert line == ("teiten: error: --configure: teiten chooses --prefix itself (the install "
                    "goes to $TEITEN_HOME/installs/src-NAME); leave it out")


@pytest.fixture
def taken_name() -> Iterator[tuple[str, Path]]:
    """An install in the cache under a name, built (as far as its metadata says) from other
    source or flags."""
    name = f"taken-{uuid.uuid4().hex[:8]}"
    target = INSTALLS / f"src-{name}"
    paths.make_owned(target, "a test's stand-in for a source build")
    (target / "teiten-install.json").write_text(json.dumps(
        {"origin": "source", "name": name, "key": "0" * 64}))
    # Its manifest too, as every install teiten makes has: else the first teiten of another
    # test to look at the cache writes one (as for an install made before manifests).
    manifest.write(target)
    yield name, target
    paths.remove_owned(target)


def test_name_taken_by_another_build(fake_source: Path, taken_name: tuple[str, Path]) -> None:
    name, target = taken_name
    before = sorted(p.name for p in target.iterdir())
    installs = _listing(INSTALLS)
    line = run_bad("install", "--from-source", str(fake_source), "--name", name)
    assert line == (f"teiten: error: the name '{name}' is taken by a build of other source or "
                    f"flags ({target}); choose another --name")
    assert sorted(p.name for p in target.iterdir()) == before  # untouched
    # nothing of this build was added to the cache (other tests may add theirs meanwhile)
    new = _listing(INSTALLS) - installs
    assert all(OTHER_INSTALLS.match(n) for n in new) and not any(name in n for n in new), new


def test_failed_configure_says_so_with_the_log(pg_source: Path) -> None:
    line = run_bad("install", "--from-source", str(pg_source), "--configure", "CC=/nonexistent/cc",
                   progress=True)
    m = re.fullmatch(r"teiten: error: configure failed \(exit status \d+\): (.*); full log: (\S+)",
                     line)
    assert m, line
    tail, log = m.group(1), Path(m.group(2))
    assert "C compiler cannot create executables" in tail
    assert " | " in tail  # several lines of the log, on one line
    assert log.parent.parent == BUILDS and log.name == "build.log"
    assert _listing(log.parent) == {"build.log", paths.MARKER}
    text = log.read_text()
    assert "CC=/nonexistent/cc" in text and "config.log" in text  # config.log kept in it
    assert not (pg_source / "config.status").exists()  # never configured in the source tree


# bison and flex, and the names configure also takes them by
GENERATORS = re.compile(r"^(bison|flex|yacc|lex)($|[.+])")


@pytest.fixture
def without_generators(workdir: Path) -> dict[str, str]:
    """A PATH of links to every program of this machine's PATH but bison and flex (in the
    scratch directory, which the build account can reach, for it runs the compiler)."""
    bare = workdir / "bin"
    bare.mkdir()
    for directory in os.environ.get("PATH", "/usr/bin:/bin").split(":"):
        if not os.path.isdir(directory):
            continue
        for name in os.listdir(directory):
            if not GENERATORS.match(name) and not (bare / name).exists():
                (bare / name).symlink_to(Path(directory) / name)
    assert shutil.which("bison", path=str(bare)) is None
    return {"PATH": str(bare)}


def _tree(root: Path, version: str, *, generated: bool) -> Path:
    """A tree that passes for PostgreSQL ``version`` until configure runs (which fails), with
    or without the generated parser and scanner a release tarball of 16 and older carries."""
    (root / "src" / "backend" / "parser").mkdir(parents=True)
    (root / "src" / "backend" / "parser" / "gram.y").write_text("%%\n")
    if generated:
        (root / "src" / "backend" / "parser" / "gram.c").write_text("/* bison's output */\n")
        (root / "src" / "backend" / "parser" / "scan.c").write_text("/* flex's output */\n")
    (root / "configure").write_text(f"#!/bin/sh\nPACKAGE_VERSION='{version}'\n"
                                    "echo 'configure of a test tree: it fails here' >&2\nexit 1\n")
    (root / "configure").chmod(0o755)
    return root


def _commit(repo: Path) -> str:
    git(repo, "init", "--quiet", "--initial-branch=main")
    git(repo, "add", "--all")
    git(repo, "commit", "--quiet", "--no-verify", "-m", "a test tree",
        date="2026-01-01T12:00:00+09:00")
    return git(repo, "rev-parse", "HEAD")


def test_a_git_tree_without_bison_and_flex_is_refused_before_configure(
        workdir: Path, without_generators: dict[str, str]) -> None:
    """Issue 54, item 11: a tree from git has no gram.c nor scan.c; without bison and flex,
    one line says so before configure runs (which, before 17, would only warn, and make fail
    minutes later), and no workspace is left."""
    repo = _tree(workdir / f"repo-{uuid.uuid4().hex[:8]}", "15.99", generated=False)
    commit = _commit(repo)
    builds = _listing(BUILDS)
    line = run_bad("install", "--from-git", str(repo), "--commit", "HEAD",
                   progress=True, env=without_generators)
    assert line == (f"teiten: error: cannot build commit {commit[:12]} of {repo}: its tree has no "
                    "generated parser or scanner (src/backend/parser/gram.c, "
                    "src/backend/parser/scan.c: a tree from git has none), which bison and flex "
                    "generate, and bison and flex are not installed; install bison and flex (as "
                    "root: 'teiten system setup --for build', or apt-get install bison flex)")
    assert _listing(BUILDS) == builds  # configure never ran: not even a log is kept


def test_a_source_of_17_without_bison_and_flex_is_refused_though_it_carries_their_output(
        workdir: Path, without_generators: dict[str, str]) -> None:
    """From 17 on, configure requires bison and flex whatever the tree holds."""
    tree = _tree(workdir / "postgresql-17.99", "17.99", generated=True)
    line = run_bad("install", "--from-source", str(tree), progress=True, env=without_generators)
    assert line == (f"teiten: error: cannot build {tree}: PostgreSQL 17.99 generates its parser "
                    "and scanner with bison and flex, and bison and flex are not installed; "
                    "install bison and flex (as root: 'teiten system setup --for build', or "
                    "apt-get install bison flex)")


def test_an_older_tree_that_carries_the_generated_files_builds_without_them(
        workdir: Path, without_generators: dict[str, str]) -> None:
    """A release tarball of 16 or older, unpacked: no bison or flex needed, so configure runs."""
    tree = _tree(workdir / "postgresql-16.99", "16.99", generated=True)
    line = run_bad("install", "--from-source", str(tree), progress=True, env=without_generators)
    assert line.startswith("teiten: error: configure failed (exit status 1): "), line
    assert "configure of a test tree: it fails here" in line
    _forget_build(line)


def test_with_bison_and_flex_a_git_tree_goes_on_to_configure(workdir: Path) -> None:
    if shutil.which("bison") is None or shutil.which("flex") is None:
        missing("bison and flex are not installed ('teiten system setup --for build')")
    repo = _tree(workdir / f"repo-{uuid.uuid4().hex[:8]}", "15.99", generated=False)
    _commit(repo)
    line = run_bad("install", "--from-git", str(repo), "--commit", "HEAD", progress=True)
    assert line.startswith("teiten: error: configure failed (exit status 1): "), line
    _forget_build(line)


def _forget_build(line: str) -> None:
    """The workspace a failed build keeps (its log), removed: these trees are the test's."""
    m = re.search(r"; full log: (\S+)$", line)
    assert m, line
    assert Path(m.group(1)).parent.parent == BUILDS
    paths.remove_owned(Path(m.group(1)).parent)
