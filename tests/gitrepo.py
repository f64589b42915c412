"""A local git repository of a real PostgreSQL tree, whose commits are the same on every run
(the ``pg_git_repo`` fixture of conftest.py; builds from git, bisect and timeline tests).

Its history, oldest first: the whole upstream tree of the ``pg_source`` fixture, two harmless
commits (a comment in a .c file, a README change), ONE commit that adds a busy loop of
:data:`SPIN_US` microseconds before every simple query (exec_simple_query, which pgbench's
default protocol uses: at 1 client, pgecons-read's 1.5 ms transactions at scale 1 slow by
about 40%, select-only's by far more), then two more harmless commits. Author, committer
and dates are fixed and git's configuration is ignored, so the hashes depend only on the
tree: builds of them stay cached in TEST_HOME across runs, and the repository itself is made
again only when its record is missing or stale.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

SPIN_US = 1000
# Part of the repository's directory name: a history with other changes is another repository
# (its hashes differ), and the suite of an older checkout keeps its own beside it.
HISTORY = 2
_SPIN = f"""\t/* teiten test: a busy loop of {SPIN_US} microseconds before every simple query */
\t{{
\t\tTimestampTz spin_until = GetCurrentTimestamp() + {SPIN_US};

\t\twhile (GetCurrentTimestamp() < spin_until)
\t\t\t;
\t}}

"""


@dataclass(frozen=True)
class GitCommit:
    hash: str
    subject: str
    bad: bool  # the one that slows every simple query


@dataclass(frozen=True)
class GitRepo:
    path: Path
    commits: tuple[GitCommit, ...]  # oldest first

    @property
    def bad(self) -> GitCommit:
        return next(c for c in self.commits if c.bad)

    def index(self, commit: GitCommit) -> int:
        return self.commits.index(commit)


def _insert_before(anchor: str, text: str, after: str = "") -> Callable[[str], str]:
    """An edit that puts ``text`` before the first ``anchor`` that follows ``after``."""
    def edit(content: str) -> str:
        start = content.index(after) if after else 0
        at = content.index(anchor, start)
        return content[:at] + text + content[at:]
    return edit


def _append(text: str) -> Callable[[str], str]:
    return lambda content: content + text


# (subject, file, edit, bad), after the base commit of the whole tree.
CHANGES: tuple[tuple[str, str, Callable[[str], str], bool], ...] = (
    ("Say in int.c that it holds the integer types' functions",
     "src/backend/utils/adt/int.c",
     _insert_before('#include "postgres.h"', "/* teiten test: the integer types' functions */\n"),
     False),
    ("README: a line from the test suite",
     "README", _append("\nteiten test: a harmless change to the README.\n"), False),
    (f"Spin {SPIN_US} microseconds before every simple query",
     "src/backend/tcop/postgres.c",
     _insert_before("\tTRACE_POSTGRESQL_QUERY_START(query_string);\n", _SPIN,
                    after="exec_simple_query(const char *query_string)\n{"),
     True),
    ("Say in float.c that it holds the float types' functions",
     "src/backend/utils/adt/float.c",
     _insert_before('#include "postgres.h"', "/* teiten test: the float types' functions */\n"),
     False),
    ("README: another line from the test suite",
     "README", _append("teiten test: another harmless change to the README.\n"), False),
)


def git(repo: Path, *args: str, date: str | None = None) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(GIT_CONFIG_NOSYSTEM="1", GIT_CONFIG_GLOBAL="/dev/null", LC_ALL="C",
               GIT_AUTHOR_NAME="teiten tests", GIT_AUTHOR_EMAIL="tests@teiten.invalid",
               GIT_COMMITTER_NAME="teiten tests", GIT_COMMITTER_EMAIL="tests@teiten.invalid")
    if date is not None:
        env.update(GIT_AUTHOR_DATE=date, GIT_COMMITTER_DATE=date)
    done = subprocess.run(["git", "-C", str(repo), "-c", "gc.auto=0", *args], env=env, text=True,
                          capture_output=True, timeout=600)
    if done.returncode != 0:
        raise AssertionError(f"git {' '.join(args)} failed: {done.stderr}")
    return done.stdout.strip()


def commit(repo: Path, subject: str, n: int) -> str:
    git(repo, "add", "--force", "--all")  # a release tree's generated files too (gram.c ...)
    git(repo, "commit", "--quiet", "--no-verify", "-m", subject,
        date=f"2026-01-{n + 1:02d}T12:00:00+09:00")
    return git(repo, "rev-parse", "HEAD")


def make(source: Path, repo: Path) -> GitRepo:
    """The repository at ``repo`` with the history above over ``source`` (a release tree),
    reused when its record (``repo``.json) matches what is there."""
    record = repo.with_suffix(".json")
    if record.is_file() and (repo / ".git").is_dir():
        kept = json.loads(record.read_text())
        commits = tuple(GitCommit(**c) for c in kept["commits"])
        if kept.get("source") == str(source) and \
                git(repo, "rev-parse", "HEAD") == commits[-1].hash:
            return GitRepo(repo, commits)
    record.unlink(missing_ok=True)
    shutil.rmtree(repo, ignore_errors=True)
    shutil.copytree(source, repo, symlinks=True)
    git(repo, "init", "--quiet", "--initial-branch=main")
    version = source.name.removeprefix("postgresql-")
    made = [GitCommit(commit(repo, f"Import PostgreSQL {version}", 0),
                      f"Import PostgreSQL {version}", False)]
    for n, (subject, file, edit, bad) in enumerate(CHANGES, start=1):
        path = repo / file
        path.write_text(edit(path.read_text()))
        made.append(GitCommit(commit(repo, subject, n), subject, bad))
    record.write_text(json.dumps({"source": str(source),
                                  "commits": [c.__dict__ for c in made]}, indent=2))
    return GitRepo(repo, tuple(made))
