"""A commit leaves a git repository for a build (installs/source_git.py): resolved and exported
with real git, whatever the user's git configuration says, never writing into the repository,
and, as root, from a repository another account owns (git runs as that account). The whole
build of real PostgreSQL commits: tests/e2e/test_git_install.py."""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import tarfile
from pathlib import Path

import pytest

from teiten.installs import source_git
from teiten.model.errors import UserError

CONFIGURE = "#!/bin/sh\nPACKAGE_VERSION='99.1'\n"
FILES = {"configure": CONFIGURE, "src/backend/main.c": "int main(void) { return 0; }\n",
         ".gitattributes": "* filter=evil\n", "README": "one\ntwo\n"}


def _git(repo: Path, *args: str, home: Path | None = None) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(GIT_CONFIG_NOSYSTEM="1", GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@t.invalid",
               GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@t.invalid")
    if home is not None:
        env["HOME"] = str(home)
    else:
        env["GIT_CONFIG_GLOBAL"] = "/dev/null"
    return subprocess.run(["git", "-C", str(repo), "-c", "gc.auto=0", *args], env=env, text=True,
                          capture_output=True, check=True, timeout=60).stdout.strip()


@pytest.fixture
def repo(workdir: Path) -> Path:
    """A tiny tree that passes for PostgreSQL: two commits, the second a README change."""
    path = workdir / "pg"
    for name, text in FILES.items():
        (path / name).parent.mkdir(parents=True, exist_ok=True)
        (path / name).write_text(text)
    _git(path, "init", "-q", "--initial-branch=main")
    _git(path, "add", "-A")
    _git(path, "commit", "-qm", "Import")
    (path / "README").write_text("one\ntwo\nthree\n")
    _git(path, "commit", "-qam", "README: three")
    return path


def _exported(commit: source_git.Commit, where: Path) -> dict[str, bytes]:
    tarball = where / "commit.tar"
    source_git.export(commit, tarball)
    with tarfile.open(tarball) as tar:
        return {m.name: tar.extractfile(m).read() for m in tar if m.isfile()}  # type: ignore[union-attr]


def test_a_commit_is_resolved_and_exported_as_committed(
        repo: Path, workdir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The user's own configuration would turn LF into CRLF and run a filter on every file.
    home = workdir / "home"
    home.mkdir()
    witness = workdir / "filter-ran"
    (home / ".gitconfig").write_text(f"[core]\n\tautocrlf = true\n[filter \"evil\"]\n\tsmudge = "
                                     f"sh -c 'touch {witness}; cat'\n")
    monkeypatch.setenv("HOME", str(home))
    commit = source_git.resolve(str(repo), "main~1")
    assert commit.repo == repo and commit.ref == "main~1" and commit.position == 1
    assert commit.commit == _git(repo, "rev-parse", "main~1")
    assert commit.tree == _git(repo, "rev-parse", "main~1^{tree}")
    assert commit.subject == "Import" and commit.version == "99.1"
    files = _exported(commit, workdir)
    assert files == {f"postgresql-99.1/{name}": text.encode() for name, text in FILES.items()}
    assert not witness.exists()  # no filter of the user's ran
    assert source_git.resolve(str(repo), "HEAD").position == 2


def test_a_replacement_object_does_not_change_what_a_hash_names(repo: Path) -> None:
    head, parent = _git(repo, "rev-parse", "HEAD"), _git(repo, "rev-parse", "HEAD~1")
    _git(repo, "replace", head, parent)  # git log HEAD now shows the parent's tree
    assert _git(repo, "log", "-1", "--format=%s", head) == "Import"
    commit = source_git.resolve(str(repo), head)
    assert commit.tree == _git(repo, "--no-replace-objects", "rev-parse", f"{head}^{{tree}}")
    assert commit.tree != _git(repo, "rev-parse", f"{head}^{{tree}}")
    assert commit.subject == "README: three"


def test_the_repository_is_only_read(repo: Path, workdir: Path) -> None:
    def snapshot() -> dict[str, tuple[int, int]]:
        return {str(p.relative_to(repo)): (p.stat().st_mtime_ns, p.stat().st_size)
                for p in sorted(repo.rglob("*")) if p.is_file()}
    before = snapshot()
    _exported(source_git.resolve(str(repo), "HEAD"), workdir)
    assert snapshot() == before


def test_a_shallow_clone_is_refused(repo: Path, workdir: Path) -> None:
    shallow = workdir / "shallow"
    subprocess.run(["git", "clone", "-q", "--depth", "1", f"file://{repo}", str(shallow)],
                   check=True, timeout=60, env={**os.environ, "GIT_CONFIG_GLOBAL": "/dev/null"})
    with pytest.raises(UserError) as refused:
        source_git.resolve(str(shallow), "HEAD")
    assert str(refused.value) == (
        f"--from-git {shallow} is a shallow clone, whose commits' positions on their branch "
        f"cannot be counted; run 'git -C {shallow} fetch --unshallow'")


@pytest.mark.skipif(os.geteuid() != 0, reason="as root only: a repository of another account")
def test_as_root_a_repository_of_another_account_is_read_as_that_account(
        repo: Path, workdir: Path) -> None:
    account = pwd.getpwnam("postgres")
    for p in [repo, *repo.rglob("*")]:
        os.chown(p, account.pw_uid, account.pw_gid, follow_symlinks=False)
    # git itself refuses it to root ...
    refused = subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], text=True,
                             capture_output=True, env={"PATH": os.environ["PATH"],
                                                       "GIT_CONFIG_NOSYSTEM": "1",
                                                       "GIT_CONFIG_GLOBAL": "/dev/null"})
    assert refused.returncode != 0 and "dubious ownership" in refused.stderr
    # ... teiten runs it as the owner, and writes the archive itself.
    commit = source_git.resolve(str(repo), "HEAD")
    assert commit.owner is not None and commit.owner.uid == account.pw_uid
    out = workdir / "out"
    out.mkdir()
    files = _exported(commit, out)
    assert files["postgresql-99.1/README"] == b"one\ntwo\nthree\n"
    assert (out / "commit.tar").stat().st_uid == 0
    shutil.rmtree(repo)
