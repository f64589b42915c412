"""A commit of a git repository as the source of a build (``teiten install --from-git REPO
--commit REF``): which commit REF names, what identifies it, and its tree exported for the build.

Every git command runs through teiten.host.procs as ``git -C REPO ...`` (argv only), in an
environment that ignores the system's and the user's git configuration (``GIT_CONFIG_NOSYSTEM``,
``GIT_CONFIG_GLOBAL=/dev/null``, no global attributes file), replacement objects
(``GIT_NO_REPLACE_OBJECTS``: a hash names the commit it names) and line-ending conversion, so
that one commit exports the same bytes for everyone. Nothing is ever written into the
repository: no checkout, no worktree, no index refresh (``GIT_OPTIONAL_LOCKS=0``); the tree
leaves it through ``git archive`` on a pipe into a file of the build's workspace.

A repository owned by another user, as root: git refuses such a repository by default
(``safe.directory``) because its configuration and hooks, which its owner writes, would run as
root. teiten does not mark it safe: it runs git as the repository's owner (its uid and gid), so
the owner's configuration runs as the owner, and root only reads what git writes to a pipe.
"""

from __future__ import annotations

import os
import pwd
import re
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from teiten.host import procs
from teiten.model.errors import ProcessError, UserError

GIT_TIMEOUT = 120
ARCHIVE_TIMEOUT = 600
_VERSION = re.compile(r"^PACKAGE_VERSION='([^']+)'", re.MULTILINE)
_HEX = re.compile(r"[0-9a-f]{40}([0-9a-f]{24})?")  # sha1, or sha256 repositories
# Command-line settings that outrank the repository's own: bytes as committed, UTF-8 subjects.
_SETTINGS = ("core.autocrlf=false", "core.eol=lf", "core.attributesFile=/dev/null",
             "i18n.logOutputEncoding=UTF-8", "log.showSignature=false")


@dataclass(frozen=True)
class Commit:
    """One commit to build, and what identifies it."""

    repo: Path  # absolute
    ref: str  # as given
    commit: str  # the full hash
    tree: str  # the hash of its tree: the build's source digest
    subject: str
    committed_at: str  # ISO 8601 with the committer's offset
    position: int  # commits on the first-parent line up to it (1 for a root commit)
    version: str  # PACKAGE_VERSION of its configure
    owner: procs.RunAs | None  # whom git runs as (root and a repository of another user)

    def to_json(self) -> dict[str, object]:
        return {"repo": str(self.repo), "ref": self.ref, "commit": self.commit,
                "subject": self.subject, "committed_at": self.committed_at,
                "position": self.position, "tree": self.tree}


def resolve(repo: str, ref: str, *, options: tuple[str, str] = ("--from-git", "--commit")) -> Commit:
    """The commit ``ref`` names in the repository ``repo``; :class:`UserError` when ``repo`` is
    no git repository, ``ref`` names no commit there, or the commit holds no PostgreSQL tree.
    ``options`` are the command's names for the two, as its messages say them."""
    repo_option, ref_option = options
    path = Path(repo).expanduser().absolute()
    if not path.is_dir():
        raise UserError(f"{repo_option} {path}: no such directory; give a local clone of PostgreSQL")
    path = Path(os.path.realpath(path))
    owner = _owner(path)
    try:
        _git(path, owner, "rev-parse", "--git-dir", what="git rev-parse --git-dir")
    except ProcessError as exc:
        if "dubious ownership" in exc.stderr_tail:
            raise UserError(f"{repo_option} {path}: git refuses a repository of another user "
                            "(safe.directory); run teiten as its owner, or clone it") from None
        raise UserError(f"{repo_option} {path} is not a git repository ({_first(exc)})") from None
    if _git(path, owner, "rev-parse", "--is-shallow-repository").strip() == "true":
        raise UserError(f"{repo_option} {path} is a shallow clone, whose commits' positions on "
                        f"their branch cannot be counted; run 'git -C {path} fetch --unshallow'")
    if not ref or ref.startswith("-"):
        raise UserError(f"{ref_option} {ref!r}: give a commit, branch or tag of {path}")
    try:
        commit = _git(path, owner, "rev-parse", "--verify", "--quiet", "--end-of-options",
                      f"{ref}^{{commit}}").strip()
    except ProcessError:
        raise UserError(f"{ref_option} {ref}: no such commit in {path} (see 'git -C {path} log')") \
            from None
    if not _HEX.fullmatch(commit):
        raise UserError(f"{ref_option} {ref}: git answered {commit!r}, not a commit hash")
    listed = _git(path, owner, "ls-tree", "-z", commit, "--", "configure", "src/backend")
    kinds = {name: kind for kind, name in (_entry(e) for e in listed.split("\0") if e)}
    if kinds.get("configure") != "blob" or kinds.get("src/backend") != "tree":
        raise UserError(f"commit {commit[:12]} ({ref}) of {path} is not a PostgreSQL source tree "
                        "(it has no configure and src/backend); give a commit of PostgreSQL")
    m = _VERSION.search(_git(path, owner, "cat-file", "blob", f"{commit}:configure"))
    if not m:
        raise UserError(f"commit {commit[:12]} ({ref}) of {path} is not a PostgreSQL source tree "
                        "(its configure names no PACKAGE_VERSION)")
    tree, committed_at, subject = _git(path, owner, "log", "-1", "--format=%T%x00%cI%x00%s",
                                       commit, "--").rstrip("\n").split("\0", 2)
    position = int(_git(path, owner, "rev-list", "--first-parent", "--count", commit, "--"))
    return Commit(repo=path, ref=ref, commit=commit, tree=tree, subject=subject,
                  committed_at=committed_at, position=position, version=m.group(1), owner=owner)


def first_parent_range(good: Commit, bad: Commit) -> list[str]:
    """The commits after ``good`` up to ``bad`` on ``bad``'s first-parent line, oldest first
    (what ``teiten bisect`` searches: a merge counts as one commit, as the branch took it);
    :class:`UserError` when ``good`` is not on that line before ``bad``."""
    line = _git(bad.repo, bad.owner, "rev-list", "--first-parent", "--reverse",
                f"{good.commit}..{bad.commit}", "--").split()
    try:  # the first one's first parent is good, unless good is elsewhere (or none: a root)
        parent = _git(bad.repo, bad.owner, "rev-parse", "--verify", "--quiet",
                      "--end-of-options", f"{line[0]}^1").strip() if line else ""
    except ProcessError:
        parent = ""
    if parent != good.commit:
        raise UserError(f"--good {good.ref} ({good.commit[:12]}) is not an earlier commit of "
                        f"--bad {bad.ref} ({bad.commit[:12]})'s first-parent line in {bad.repo}; "
                        f"give a good commit from 'git -C {bad.repo} log --first-parent {bad.ref}'")
    return line


def export(commit: Commit, tarball: Path) -> None:
    """The commit's tree as a tar file at ``tarball`` (created here; its one top directory is
    ``postgresql-<version>``, where a source build unpacks, so the compiler cache hits)."""
    with tarball.open("xb") as out:
        try:
            _git(commit.repo, commit.owner, "archive", "--format=tar",
                 f"--prefix=postgresql-{commit.version}/", commit.commit, stdout=out,
                 timeout=ARCHIVE_TIMEOUT, what="git archive")
        except ProcessError as exc:
            raise UserError(f"cannot export commit {commit.commit[:12]} of {commit.repo}: "
                            f"{_first(exc)}") from None


def _git(repo: Path, owner: procs.RunAs | None, *args: str, stdout: IO[bytes] | None = None,
         timeout: float = GIT_TIMEOUT, what: str | None = None) -> str:
    argv = ["git", "-C", str(repo)]
    for setting in _SETTINGS:
        argv += ["-c", setting]
    env = procs.build_env({"LC_ALL": "C", "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL":
                           "/dev/null", "GIT_ATTR_NOSYSTEM": "1", "GIT_NO_REPLACE_OBJECTS": "1",
                           "GIT_OPTIONAL_LOCKS": "0", "GIT_TERMINAL_PROMPT": "0"}, run_as=owner)
    done = procs.run([*argv, *args], timeout=timeout, env=env, run_as=owner, cwd="/",
                     stdout=stdout, what=what or f"git {args[0]}")
    return done.stdout


def _owner(repo: Path) -> procs.RunAs | None:
    """The account git runs as: the repository's owner when teiten runs as root and the
    repository is another user's; otherwise teiten's own (None)."""
    if os.geteuid() != 0:
        return None
    st = os.stat(repo)
    if st.st_uid == 0:
        return None
    try:
        pw = pwd.getpwuid(st.st_uid)
    except KeyError:
        return procs.RunAs(name=str(st.st_uid), uid=st.st_uid, gid=st.st_gid, home="/")
    return procs.RunAs(name=pw.pw_name, uid=pw.pw_uid, gid=pw.pw_gid, home=pw.pw_dir)


def _entry(line: str) -> tuple[str, str]:
    """('blob', 'configure') from ls-tree's '100755 blob <hash>\\tconfigure'."""
    meta, _, name = line.partition("\t")
    parts = meta.split()
    return (parts[1] if len(parts) > 1 else "", name)


def _first(exc: ProcessError) -> str:
    """git's own first line of complaint (its 'fatal: ...')."""
    lines = [ln.strip() for ln in (exc.stderr_tail or str(exc)).replace(" | ", "\n").splitlines()
             if ln.strip()]
    return lines[0] if lines else str(exc)
