"""``teiten install --from-git REPO --commit REF``: two neighbouring commits of a real
PostgreSQL 15 repository (the ``pg_git_repo`` fixture) built, the second through the compiler
cache, with their identity recorded; asked again, reused; bad input refused with one line and
nothing made; and a study of the two builds records each build's identity in the store.

The two builds stay in TEST_HOME for later sessions. On 2 CPUs the first takes 211 s cold and
the second 83 s through ccache (bench/git_builds.py); beside a running test suite, 17 minutes
and under 5.
"""

from __future__ import annotations

import json
import pwd
import re
import shutil
import sqlite3
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from tests.conftest import ROOT, TEST_HOME, one_worker_at_a_time, run_cli
from tests.e2e.test_first_hour import user  # noqa: F401 - the fixture: an account of its own
from tests.gitrepo import GitCommit, GitRepo
from tests.requirements import missing
from tests.studyrun import run_study

from teiten.host import paths
from teiten.installs import ccache, discover

pytestmark = pytest.mark.slow

BUILDS, INSTALLS = TEST_HOME / "builds", TEST_HOME / "installs"
FLAGS = "--configure=--without-icu"  # as the other PostgreSQL 15 builds of the suite


@dataclass(frozen=True)
class Built:
    commit: GitCommit
    ref: str  # as given to --commit
    argv: tuple[str, ...]
    output: str
    bindir: Path
    meta: dict[str, Any]


def _install(repo: GitRepo, commit: GitCommit, ref: str) -> Built:
    argv = ("install", "--from-git", str(repo.path), "--commit", ref, FLAGS)
    done = run_cli(*argv, timeout=3600, check=True)
    last = done.stdout.strip().splitlines()[-1]
    m = re.fullmatch(r"PostgreSQL 15\.\d+ \(source, name (\S+)\): (\S+)", last)
    assert m, done.stdout
    bindir = Path(m.group(2))
    meta = discover.read_metadata(bindir.parent)
    assert meta is not None and meta["name"] == m.group(1)
    return Built(commit, ref, argv, done.stdout, bindir, meta)


@pytest.fixture(scope="module")
def builds(pg_git_repo: GitRepo) -> tuple[Built, Built]:
    """The base commit (by its full hash) and the next one, a comment in int.c (by a short
    hash), built one after the other: the second finds the first's objects in the cache."""
    base, harmless = pg_git_repo.commits[0], pg_git_repo.commits[1]
    with one_worker_at_a_time("git-builds"):
        return (_install(pg_git_repo, base, base.hash),
                _install(pg_git_repo, harmless, harmless.hash[:10]))


def _git(repo: GitRepo, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo.path), *args], text=True, capture_output=True,
                          check=True, timeout=60).stdout.strip()


def test_each_build_records_its_commit(pg_git_repo: GitRepo, builds: tuple[Built, Built]) -> None:
    for n, built in enumerate(builds):
        meta, commit = built.meta, built.commit
        tree = _git(pg_git_repo, "rev-parse", f"{commit.hash}^{{tree}}")
        # The ref as given to the build that made the install, and the clone it came from: an
        # earlier session's, reused (the key is the commit's, whichever clone holds it; an
        # older history of the test repository, in another directory, has these commits too).
        ref, repo = meta["git"]["ref"], meta["git"]["repo"]
        assert _git(pg_git_repo, "rev-parse", f"{ref}^{{commit}}") == commit.hash
        assert repo == str(pg_git_repo.path) or \
            Path(repo).parent == pg_git_repo.path.parent and Path(repo).is_dir()
        assert meta["git"] == {
            "repo": repo, "ref": ref, "commit": commit.hash,
            "subject": commit.subject, "committed_at": f"2026-01-{n + 1:02d}T12:00:00+09:00",
            "position": n + 1, "tree": tree}
        assert meta["source"] == {"path": repo, "kind": "git", "digest": tree,
                                  "digest_method": "git tree hash of the commit"}
        assert re.fullmatch(r"[0-9a-f]{64}", meta["key"])
        # The default name shows the commit; --configure adds the key (two flag sets of one commit).
        assert meta["name"] == f"{meta['version']}-g{commit.hash[:12]}-{meta['key'][:8]}"
        assert built.bindir.parent == INSTALLS / f"src-{meta['name']}"
        # Built out of tree, from the export at the place a source build uses.
        configure = meta["configure"]["argv"][0]
        assert configure == str(BUILDS / meta["key"] / "src" / f"postgresql-{meta['version']}"
                                / "configure")
    assert builds[0].meta["key"] != builds[1].meta["key"]
    assert _git(pg_git_repo, "status", "--porcelain") == ""  # the repository was only read


def test_the_neighbouring_commit_came_from_the_compiler_cache(builds: tuple[Built, Built]) -> None:
    if ccache.links() is None:
        missing("ccache is not installed (make system installs it)")
    base, harmless = (b.meta for b in builds)
    assert base["ccache"] is True and harmless["ccache"] is True
    counts = harmless["ccache_counts"]
    # Only int.c changed (and configure's own probes); the rest is the base commit's objects.
    assert counts["hits"] > 1000 and counts["misses"] <= 20, counts
    if "built in" in builds[1].output:  # built by this session (else an earlier one did)
        assert f"{counts['hits']} hits, {counts['misses']} misses" in builds[1].output


def test_asked_again_it_is_reused(builds: tuple[Built, Built]) -> None:
    built = builds[1]
    started = time.monotonic()
    done = run_cli(*built.argv, timeout=300, check=True)
    assert time.monotonic() - started < 60
    assert f"reusing the cached build '{built.meta['name']}'" in done.stdout, done.stdout
    assert "configure" not in done.stdout and "exporting" not in done.stdout
    assert done.stdout.strip().splitlines()[-1].endswith(f": {built.bindir}")


def test_installs_shows_the_commit(builds: tuple[Built, Built]) -> None:
    table = run_cli("installs", check=True).stdout
    for n, built in enumerate(builds):
        row = next(ln for ln in table.splitlines() if f" {built.meta['name']} " in ln)
        assert row.rstrip().endswith(f"{built.commit.hash[:12]} (#{n + 1})"), row
    rows = json.loads(run_cli("installs", "--format", "json", check=True).stdout)
    ours = {r["name"]: r for r in rows if r["origin"] == "source"}
    assert ours[builds[1].meta["name"]]["commit"] == builds[1].commit.hash
    assert ours[builds[1].meta["name"]]["position"] == 2


# --------------------------------------------------------------------------- bad input


def _entries(root: Path) -> set[str]:
    return {p.name for p in root.iterdir()} if root.is_dir() else set()


def _refused(*args: str, mentions: Path) -> str:
    """Run ``teiten ARGS``: exit 2, one line, no traceback, and nothing made: no install and
    no build workspace for ``mentions`` (other sessions may add their own meanwhile)."""
    builds, installs = _entries(BUILDS), _entries(INSTALLS)
    done = run_cli(*args, timeout=120)
    assert done.returncode == 2, (done.returncode, done.stderr)
    assert "Traceback" not in done.stderr
    assert done.stderr.count("\n") == 1 and done.stderr.startswith("teiten: error: "), done.stderr
    assert done.stdout == ""
    for name in _entries(BUILDS) - builds:
        assert str(mentions) not in (BUILDS / name / paths.MARKER).read_text(), name
    for name in _entries(INSTALLS) - installs:
        assert str(mentions) not in (discover.read_metadata(INSTALLS / name) or {}).get(
            "source", {}).get("path", ""), name
    return done.stderr.rstrip("\n").removeprefix("teiten: error: ")


def test_bad_input_is_refused_with_one_line(pg_git_repo: GitRepo, workdir: Path) -> None:
    repo = pg_git_repo.path
    assert _refused("install", "--from-git", str(repo), "--commit", "no-such-ref",
                    mentions=repo) == (f"--commit no-such-ref: no such commit in {repo} (see "
                                       f"'git -C {repo} log')")
    line = _refused("install", "--from-git", str(workdir), "--commit", "HEAD", mentions=workdir)
    assert line.startswith(f"--from-git {workdir} is not a git repository (fatal: not a git "
                           "repository"), line
    other = workdir / "other"  # a git repository, but not of PostgreSQL
    other.mkdir()
    (other / "README").write_text("not PostgreSQL\n")
    for args in (["init", "-q"], ["add", "README"],
                 ["-c", "user.name=t", "-c", "user.email=t@t.invalid", "commit", "-qm", "x"]):
        subprocess.run(["git", "-C", str(other), *args], check=True, timeout=60)
    head = subprocess.run(["git", "-C", str(other), "rev-parse", "HEAD"], text=True,
                          capture_output=True, check=True).stdout.strip()
    assert _refused("install", "--from-git", str(other), mentions=other) == (
        f"commit {head[:12]} (HEAD) of {other} is not a PostgreSQL source tree (it has no "
        "configure and src/backend); give a commit of PostgreSQL")
    assert _refused("install", "--from-git", str(repo), "--from-source", str(repo),
                    mentions=repo) == ("give either --from-source or --from-git, not both (see "
                                       "'teiten install --help')")
    assert _refused("install", "15", "--from-git", str(repo), mentions=repo) == (
        "give either versions or --from-git, not both (see 'teiten install --help')")
    assert _refused("install", "15", "--commit", pg_git_repo.commits[0].hash, mentions=repo) == (
        "--commit names a commit of --from-git REPO; give --from-git too (see 'teiten install "
        "--help')")
    assert _refused("install", "--from-git", str(repo), "--commit=--output=/tmp/x",
                    mentions=repo) == f"--commit '--output=/tmp/x': give a commit, branch or tag of {repo}"


# --------------------------------------------------------------------------- an ordinary user


def test_an_ordinary_user_builds_a_commit_into_its_own_cache(
        pg_git_repo: GitRepo, builds: tuple[Built, Built], user: tuple[str, Path]) -> None:  # noqa: F811
    """Not root (issue 52): an account of this test's own, with a clean home, builds the base
    commit from its own clone, as itself, into its own TEITEN_HOME (~/.cache/teiten), through
    a copy of the suite's compiler cache (so that the build is quick); the install verifies,
    and its pgbench runs."""
    name, home = user
    clone = home / "postgresql"
    subprocess.run(["git", "clone", "--quiet", "--no-hardlinks", "--no-checkout",
                    str(pg_git_repo.path), str(clone)], check=True, timeout=600)
    cache = home / "ccache"
    if ccache.links() is not None and (TEST_HOME / "ccache").is_dir():
        shutil.copytree(TEST_HOME / "ccache", cache, symlinks=True)
    subprocess.run(["chown", "-R", f"{name}:{name}", str(clone), *([str(cache)] * cache.is_dir())],
                   check=True, timeout=300)
    base = builds[0].commit
    env = {"HOME": str(home), "USER": name, "LOGNAME": name, "PATH": "/usr/bin:/bin",
           "LANG": "C.UTF-8", "PYTHONPATH": str(ROOT / "src"), "CCACHE_DIR": str(cache),
           "TEITEN_MACHINE_LOCK": str(home / "machine.lock")}

    def teiten(*args: str, timeout: float) -> subprocess.CompletedProcess[str]:
        return subprocess.run(["setpriv", f"--reuid={name}", f"--regid={name}", "--init-groups",
                               "--", sys.executable, "-m", "teiten", *args], env=env, cwd=home,
                              text=True, capture_output=True, timeout=timeout)

    done = teiten("install", "--from-git", str(clone), "--commit", base.hash, FLAGS, timeout=3600)
    assert done.returncode == 0, done.stdout + done.stderr
    m = re.fullmatch(r"PostgreSQL 15\.\d+ \(source, name (\S+)\): (\S+)",
                     done.stdout.strip().splitlines()[-1])
    assert m, done.stdout
    bindir = Path(m.group(2))
    assert bindir.parent == home / ".cache" / "teiten" / "installs" / f"src-{m.group(1)}"
    assert bindir.stat().st_uid == pwd.getpwnam(name).pw_uid  # its own, not root's
    meta = discover.read_metadata(bindir.parent)
    assert meta is not None and meta["git"]["commit"] == base.hash
    assert meta["key"] == builds[0].meta["key"]  # the same build as root's
    if cache.is_dir():
        assert meta["ccache_counts"]["hits"] > 1000, meta["ccache_counts"]
    verify = teiten("installs", "--verify", timeout=600)
    assert verify.returncode == 0, verify.stdout + verify.stderr
    assert m.group(1) in verify.stdout
    version = subprocess.run(["setpriv", f"--reuid={name}", f"--regid={name}", "--init-groups",
                              "--", str(bindir / "pgbench"), "--version"], env=env, text=True,
                             capture_output=True, timeout=60)
    assert version.stdout.startswith("pgbench (PostgreSQL) 15."), version


# --------------------------------------------------------------------------- into the store


STUDY = """
study: git-builds
servers:
  - {{name: base, install: {base}}}
  - {{name: next, install: {next}}}
workloads: [select-only]
scale: 1
clients: [1]
duration: 1s
repetitions: 1
"""


def test_a_study_of_two_commits_stores_each_build(builds: tuple[Built, Built]) -> None:
    base, following = builds
    found = run_study("git-builds", STUDY.format(base=base.meta["name"],
                                                 next=following.meta["name"]), work="git-builds")
    assert found["run"].returncode == 0, found["run"].stderr
    assert {t["status"] for t in found["trials"].values()} == {"ok"}
    with sqlite3.connect(found["store"]) as conn:
        specs = {name: json.loads(spec) for name, spec in
                 conn.execute("SELECT name, spec_json FROM servers")}
    for server, built in (("base", base), ("next", following)):
        resolved = specs[server]["resolved"]
        assert resolved["bindir"] == str(built.bindir)
        assert resolved["build"] == {"key": built.meta["key"], "git": built.meta["git"]}
    # The study kept its points with each build's commit, and the timeline orders the two
    # builds by their first-parent position on the branch.
    with sqlite3.connect(found["store"]) as conn:
        kept = dict(conn.execute("SELECT server, build FROM teiten_points"))
    assert kept == {"base": base.meta["git"]["commit"], "next": following.meta["git"]["commit"]}
    shown = run_cli("timeline", "git-builds", "--store", str(found["store"]), check=True).stdout
    assert "2 builds in first-parent order on the branch, from 1 studies." in shown
    table = shown.split("select-only\n", 1)[1].split("\n\n", 1)[0].splitlines()[1:]
    assert [(row.split()[0], row.split()[1]) for row in table] == [
        (built.meta["git"]["commit"][:12], built.meta["git"]["subject"].split()[0])
        for built in (base, following)]
