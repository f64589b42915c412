"""teiten's version is its release and the commit it was made from (issue 56, item 1): read from a
checkout's .git files (git is not run), loose, packed, detached or in a worktree; from the
installed wheel's metadata outside a checkout; and what ``teiten --version`` prints."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

from tests.conftest import ROOT, run_cli

import teiten
from teiten import checkout_commit, sdist_version


def _git(repo: Path, *args: str) -> str:
    done = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=True,
                          env={**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t",
                               "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"})
    return done.stdout.strip()


def _checkout(tmp: Path) -> Path:
    repo = tmp / "repo"
    (repo / "src" / "teiten").mkdir(parents=True)
    _git(repo, "init", "-q", "-b", "main")
    (repo / "src" / "teiten" / "__init__.py").write_text("")
    _git(repo, "add", ".")
    _git(repo, "commit", "-q", "-m", "one")
    return repo


def test_a_checkouts_commit_loose_packed_detached_and_in_a_worktree(tmp_path: Path) -> None:
    repo = _checkout(tmp_path)
    package = str(repo / "src" / "teiten")
    first = _git(repo, "rev-parse", "HEAD")
    assert checkout_commit(package) == first  # refs/heads/main, a loose ref
    _git(repo, "pack-refs", "--all")
    assert not (repo / ".git" / "refs" / "heads" / "main").exists()
    assert checkout_commit(package) == first  # from packed-refs
    (repo / "src" / "teiten" / "x.py").write_text("")
    _git(repo, "add", ".")
    _git(repo, "commit", "-q", "-m", "two")
    second = _git(repo, "rev-parse", "HEAD")
    assert second != first and checkout_commit(package) == second  # a loose ref over a packed one
    _git(repo, "checkout", "-q", "--detach", first)
    assert checkout_commit(package) == first  # HEAD holds the hash
    _git(repo, "checkout", "-q", "main")
    _git(repo, "worktree", "add", "-q", "-b", "side", str(tmp_path / "wt"), first)
    assert (tmp_path / "wt" / ".git").is_file()
    assert checkout_commit(str(tmp_path / "wt" / "src" / "teiten")) == first  # via commondir
    assert checkout_commit(package) == second


def test_no_checkout_no_commit_and_no_link_followed(tmp_path: Path) -> None:
    repo = _checkout(tmp_path)
    outside = tmp_path / "lib" / "teiten"
    outside.mkdir(parents=True)
    assert checkout_commit(str(outside)) is None  # an installed package: not under src/
    head = repo / ".git" / "HEAD"
    real = head.read_text()
    head.unlink()
    (tmp_path / "elsewhere").write_text(real)
    head.symlink_to(tmp_path / "elsewhere")
    assert checkout_commit(str(repo / "src" / "teiten")) is None, "HEAD through a link is not read"
    head.unlink()
    head.write_text("ref: refs/heads/nowhere\n")
    assert checkout_commit(str(repo / "src" / "teiten")) is None


def test_an_unpacked_sdist_gives_the_version_its_pkg_info_recorded(tmp_path: Path) -> None:
    """A wheel built from an sdist (``python -m build``'s default) has no .git to read: the
    version is the one the sdist's PKG-INFO recorded in the checkout, not an installed teiten's."""
    package = tmp_path / "teiten-x" / "src" / "teiten"
    package.mkdir(parents=True)
    assert sdist_version(str(package)) is None  # no PKG-INFO
    recorded = f"{teiten.RELEASE}+gabcdef012345"
    pkg_info = tmp_path / "teiten-x" / "PKG-INFO"
    pkg_info.write_text(f"Metadata-Version: 2.4\nName: teiten\nVersion: {recorded}\n\nVersion: 9.9.9\n")
    assert sdist_version(str(package)) == recorded
    pkg_info.write_text("Metadata-Version: 2.4\nName: teiten\nVersion: 0.0.1\n")
    assert sdist_version(str(package)) is None, "another release's sdist is not this one"
    pkg_info.write_text(f"Metadata-Version: 2.4\n\nVersion: {recorded}\n")
    assert sdist_version(str(package)) is None, "a Version: line in the body is not the header"
    assert sdist_version(str(tmp_path / "lib" / "teiten")) is None  # not under src/


def test_teiten_version_prints_the_release_and_this_checkouts_commit() -> None:
    done = run_cli("--version")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"teiten {teiten.__version__}"
    assert re.fullmatch(r"\d+\.\d+\.\d+(\+g[0-9a-f]{12})?", teiten.__version__)
    assert teiten.__version__.startswith(teiten.RELEASE)
    if (ROOT / ".git").exists():
        head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True,
                              text=True, check=True).stdout.strip()
        assert teiten.__version__ == f"{teiten.RELEASE}+g{head[:12]}"
