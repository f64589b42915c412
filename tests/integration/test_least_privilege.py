"""Least privilege (issue 52): run as root, teiten runs its clients as the server account and
executes, loads, reads or writes only paths that no other account can change.

As root, with the real ``postgres`` account and another (``nobody``) as the attackers: a
workload script's ``\\shell`` runs as the server account, never as root (its witness says
uid 101, the canary in /root is untouched); every pgbench teiten starts (``pgbench -i`` and
the measured one) runs with a uid that is not 0, read from /proc during the run; a script, a
hook, a TEITEN_HOME or a store that another account could change is refused at once, in one
line that names the path and its owner, exit status 2. Real clusters, real pgbench, the real
CLI.
"""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest
from tests.conftest import TEITEN, TEST_HOME, run_cli, start_cli

pytestmark = pytest.mark.requires(
    None if os.geteuid() == 0 else "least privilege is tested as root (teiten's root path)")

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def canary() -> Iterator[Path]:
    """A root-only file in a root-only directory, that no client may change."""
    base = Path("/root") / f"teiten-canary-{uuid.uuid4().hex[:8]}"
    base.mkdir(mode=0o700)
    path = base / "canary"
    path.write_text("canary\n")
    path.chmod(0o600)
    yield path
    assert path.read_text() == "canary\n" and path.stat().st_uid == 0
    assert path.stat().st_mode & 0o777 == 0o600
    shutil.rmtree(base)


@pytest.fixture
def theirs() -> Iterator[Path]:
    """A directory in /tmp that the server account owns (and so controls)."""
    path = Path(f"/tmp/teiten-theirs-{uuid.uuid4().hex[:8]}")
    path.mkdir(mode=0o755)
    account = pwd.getpwnam("postgres")
    os.chown(path, account.pw_uid, account.pw_gid)
    yield path
    shutil.rmtree(path, ignore_errors=True)


def _one_line(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 2, (done.returncode, done.stderr)
    assert "Traceback" not in done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, lines
    return lines[0]


def _study(workdir: Path, script: Path, extra: str = "") -> Path:
    study = workdir / "s.yaml"
    study.write_text(f"""
study: leastpriv
servers:
  - {{name: pg17, install: "17"{extra}}}
workloads:
  - {{name: shelled, scripts: [{{script: {script}}}]}}
scale: 1
clients: [1]
duration: 2s
repetitions: 1
order: sequential
""")
    return study


def test_clients_run_as_the_server_account(pg17, workdir: Path, theirs: Path, canary: Path) -> None:
    """A script's \\shell runs as postgres: its witness holds uid 101 and root's canary is
    untouched; every pgbench of the run (-i and the measured one) has a uid that is not 0."""
    witness = theirs / "witness"
    script = workdir / "shelled.sql"
    script.write_text(f"\\shell id -u >> {witness}\n"
                      f"\\shell sh -c 'echo owned > {canary}' 2>/dev/null || true\n"
                      "SELECT 1;\n\\sleep 50 ms\n")
    proc = start_cli("run", str(_study(workdir, script)), "--store", "s.db", "--no-report",
                     cwd=workdir)
    seen: dict[int, tuple[int, str]] = {}  # pid -> (real uid, the command line)
    while proc.poll() is None:
        try:
            below = psutil.Process(proc.pid).children(recursive=True)
        except psutil.NoSuchProcess:
            break
        for child in below:
            try:  # a process seen first as it ends has no command line yet: read it again
                if child.name() == "pgbench" and not (child.pid in seen and seen[child.pid][1]):
                    seen[child.pid] = (child.uids().real, " ".join(child.cmdline()))
            except (psutil.NoSuchProcess, psutil.ZombieProcess):
                continue
        time.sleep(0.02)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    account = pwd.getpwnam("postgres").pw_uid
    # pgbench -i and the measured pgbench (and the check of the scripts, if caught) in /proc
    # (a busy machine may show one only as it ends, without its command line), every one the
    # server account's; the witness below is the measured one's own word.
    assert len(seen) >= 2, seen
    assert {uid for uid, _ in seen.values()} == {account}, seen
    said = set(witness.read_text().split())
    assert said == {str(account)}, said
    assert witness.stat().st_uid == account
    # the run is recorded with the script's own path, not the client's copy
    shown = run_cli("results", "--store", "s.db", "--format", "json", cwd=workdir, check=True)
    assert "shelled" in shown.stdout
    assert not list((TEST_HOME / "clients").glob(f"{proc.pid}-*"))  # the copies are gone


def test_a_script_another_account_can_change_is_refused(workdir: Path, theirs: Path) -> None:
    """A script the server account owns, or one in a directory it owns, or one a group may
    write: refused at plan, naming the path that could be changed and who owns it."""
    owned = theirs / "owned.sql"
    owned.write_text("SELECT 1;\n")
    account = pwd.getpwnam("postgres")
    os.chown(owned, account.pw_uid, account.pw_gid)
    line = _one_line(run_cli("plan", str(_study(workdir, owned)), cwd=workdir))
    assert f"{theirs} is owned by postgres (uid {account.pw_uid})" in line, line
    assert "only root can write" in line

    inside = workdir / "inside.sql"
    inside.write_text("SELECT 1;\n")
    os.chown(inside, account.pw_uid, account.pw_gid)
    line = _one_line(run_cli("plan", str(_study(workdir, inside)), cwd=workdir))
    assert f"{inside} is owned by postgres" in line, line

    writable = workdir / "writable.sql"
    writable.write_text("SELECT 1;\n")
    writable.chmod(0o666)
    line = _one_line(run_cli("plan", str(_study(workdir, writable)), cwd=workdir))
    assert f"{writable} can be written by every account (mode 666)" in line, line


def test_a_hook_another_account_can_change_is_refused(workdir: Path, theirs: Path) -> None:
    """A snapshot hook runs as root: one the server account owns is refused at plan."""
    hook = theirs / "hook.sh"
    hook.write_text("#!/bin/sh\nexit 0\n")
    hook.chmod(0o755)
    account = pwd.getpwnam("postgres")
    os.chown(hook, account.pw_uid, account.pw_gid)
    script = workdir / "fine.sql"
    script.write_text("SELECT 1;\n")
    study = _study(workdir, script, f", snapshot_hook: {hook}")
    line = _one_line(run_cli("plan", str(study), cwd=workdir))
    assert "snapshot_hook" in line and f"{theirs} is owned by postgres" in line, line


def _teiten(home: Path, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, TEITEN_HOME=str(home), PYTHONPATH=str(ROOT / "src"))
    return subprocess.run([*TEITEN, *args], env=env, cwd=cwd, text=True, capture_output=True,
                          timeout=120)


def test_a_home_another_account_made_or_could_make_is_refused(theirs: Path) -> None:
    """TEITEN_HOME made by nobody in /tmp (issue 52, row 1), and one not made yet below a
    directory the postgres group may write (row 12): refused by the first command, install
    included, before anything is downloaded or made."""
    made = Path(f"/tmp/teiten-home-{uuid.uuid4().hex[:8]}")
    made.mkdir(mode=0o755)
    nobody = pwd.getpwnam("nobody")
    os.chown(made, nobody.pw_uid, nobody.pw_gid)
    group_writable = Path(f"/tmp/teiten-group-{uuid.uuid4().hex[:8]}")
    group_writable.mkdir()
    postgres = pwd.getpwnam("postgres")
    os.chown(group_writable, 0, postgres.pw_gid)
    group_writable.chmod(0o775)
    try:
        for command in (["installs"], ["install", "17"]):
            line = _one_line(_teiten(made, *command))
            assert line.startswith(f"teiten: error: TEITEN_HOME {made}: {made} is owned by "
                                   f"nobody (uid {nobody.pw_uid})"), line
            assert not (made / "installs").exists()
            line = _one_line(_teiten(group_writable / "home", *command))
            assert f"{group_writable} can be written by the group " in line, line
            assert not (group_writable / "home").exists()
    finally:
        shutil.rmtree(made)
        shutil.rmtree(group_writable)


def test_a_store_link_another_account_planted_is_refused(workdir: Path, canary: Path) -> None:
    """The store named in /tmp is a link the server account planted there (row 9): refused;
    nothing is made where it points."""
    name = Path(f"/tmp/teiten-store-{uuid.uuid4().hex[:8]}.db")
    target = canary.parent / "made.db"
    account = pwd.getpwnam("postgres")
    subprocess.run(["ln", "-s", str(target), str(name)], check=True, user=account.pw_uid,
                   group=account.pw_gid)
    try:
        line = _one_line(run_cli("results", "--store", str(name), cwd=workdir))
        assert f"{name} is owned by postgres" in line, line
        assert not target.exists()
    finally:
        name.unlink()


def test_an_install_another_account_can_change_is_refused(pg17, workdir: Path) -> None:
    """An install given by its path whose pgbench the server account owns, or one of whose
    libraries every account may write: refused at plan, naming the file (teiten would run it
    as root, or load it into a server)."""
    copy = workdir / "pg17"
    shutil.copytree(pg17.bindir.parent, copy, symlinks=True)
    for own in copy.glob("*.json"):  # not teiten's install any more: an install of the user's
        own.unlink()
    for own in copy.glob(".teiten-*"):
        own.unlink()
    script = workdir / "fine.sql"
    script.write_text("SELECT 1;\n")
    study = _study(workdir, script).read_text().replace('install: "17"', f'install: "{copy / "bin"}"')
    (workdir / "s.yaml").write_text(study)
    assert run_cli("plan", "s.yaml", cwd=workdir).returncode == 0  # the copy as it is: fine
    account = pwd.getpwnam("postgres")
    os.chown(copy / "bin" / "pgbench", account.pw_uid, account.pw_gid)
    line = _one_line(run_cli("plan", "s.yaml", cwd=workdir))
    assert f"{copy / 'bin' / 'pgbench'} is owned by postgres" in line, line
    os.chown(copy / "bin" / "pgbench", 0, 0)
    # postgres is run to learn the install's version: refused before it is run
    os.chown(copy / "bin" / "postgres", account.pw_uid, account.pw_gid)
    line = _one_line(run_cli("plan", "s.yaml", cwd=workdir))
    assert f"install '{copy / 'bin'}': {copy / 'bin' / 'postgres'} is owned by postgres" in line, line
    os.chown(copy / "bin" / "postgres", 0, 0)
    library = next(p for p in sorted((copy / "lib").iterdir()) if p.is_file() and not p.is_symlink())
    library.chmod(0o666)
    line = _one_line(run_cli("plan", "s.yaml", cwd=workdir))
    assert f"{library} can be written by every account" in line, line


def _as(account: pwd.struct_passwd, *argv: str, cwd: Path) -> None:
    subprocess.run(argv, cwd=cwd, check=True, user=account.pw_uid, group=account.pw_gid,
                   extra_groups=[], capture_output=True, timeout=60,
                   env={"HOME": str(cwd), "PATH": os.environ["PATH"], "GIT_CONFIG_NOSYSTEM": "1"})


def test_a_build_runs_as_the_build_account(theirs: Path, canary: Path) -> None:
    """install --from-git of a repository nobody owns, whose configure writes into /root (row
    4): configure runs as the server account (its witness says uid 101), the file is not
    written, and the failed build ends in one line, exit 2. The same tree given with
    --from-source, where nobody owns it: refused before anything runs (root would read it)."""
    nobody = pwd.getpwnam("nobody")
    repo = Path(f"/tmp/teiten-repo-{uuid.uuid4().hex[:8]}")
    repo.mkdir(mode=0o755)
    os.chown(repo, nobody.pw_uid, nobody.pw_gid)
    pwned = canary.parent / "PWNED"
    try:
        _as(nobody, "mkdir", "-p", "src/backend", cwd=repo)
        (repo / "src" / "backend" / "README").write_text("a backend\n")
        (repo / "configure").write_text(
            "#!/bin/sh\nPACKAGE_VERSION='99.1'\n"
            f"id -u > {theirs}/configure-uid\n"
            f"echo pwned > {pwned}\n"
            "exit 1\n")
        (repo / "configure").chmod(0o755)
        for path in (repo / "configure", repo / "src" / "backend" / "README"):
            os.chown(path, nobody.pw_uid, nobody.pw_gid)
        _as(nobody, "git", "init", "-q", cwd=repo)
        _as(nobody, "git", "add", "-A", cwd=repo)
        _as(nobody, "git", "-c", "user.email=n@example.org", "-c", "user.name=n", "commit", "-qm",
            "a source that writes into /root", cwd=repo)
        done = run_cli("install", "--from-git", str(repo), "--commit", "HEAD", timeout=300)
        line = _one_line(done)
        assert line.startswith("teiten: error: configure failed"), line
        account = pwd.getpwnam("postgres").pw_uid
        assert (theirs / "configure-uid").read_text().split() == [str(account)]
        assert not pwned.exists()

        line = _one_line(run_cli("install", "--from-source", str(repo), timeout=120))
        assert f"{repo} is owned by nobody (uid {nobody.pw_uid})" in line, line
    finally:
        shutil.rmtree(repo)
