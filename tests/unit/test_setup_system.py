"""'teiten system setup' and 'teiten system check' (issues 22 and 38): as an ordinary user,
setup installs nothing and says what is missing and the one command that installs it; check
says what each missing thing costs, and exits 1 only when the purpose cannot work without it.
The real command, run by a real unprivileged account (nobody, when the tests run as root) on a
PATH that lacks the tools."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from tests.requirements import missing

from teiten.host import system

ROOT = Path(__file__).resolve().parents[2]


def test_as_an_ordinary_user_setup_names_what_is_missing_and_the_sudo_command() -> None:
    done = _as_user("setup", "--for", "test")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    said = lines[0].removeprefix("teiten system: not root, so nothing was installed; missing: ")
    assert said != lines[0], done.stdout
    # what each one costs, where it matters to the demo
    assert "linux-perf (no profiles or flame graphs)" in said
    assert "chromium (no browser check of the report)" in said
    command = "teiten system: to install them, run: sudo apt-get install -y "
    assert lines[1].startswith(command), done.stdout
    packages = lines[1].removeprefix(command).split()
    assert "linux-perf" in packages and "procps" in packages and "gcc" in packages
    assert "acl" not in packages  # setfacl is for root only
    assert len(packages) == len(set(packages))  # each package once
    assert all(p in said for p in packages)


def test_check_for_a_study_lists_only_what_a_study_needs_and_fails_only_without_ps() -> None:
    done = _as_user("check")
    assert done.returncode == 1, done.stdout + done.stderr  # ps is missing: a study needs it
    rows = {line.split()[1]: line.split()[0] for line in done.stdout.splitlines()[1:]
            if line.split() and line.split()[0] in ("ok", "missing", "optional")}
    assert rows["procps"] == "missing" and rows["linux-perf"] == "optional"
    assert "gcc" not in rows and "chromium" not in rows and "acl" not in rows
    assert "sudo apt-get install -y procps linux-perf" in done.stdout


def test_every_purpose_wants_what_it_requires_and_test_wants_everything() -> None:
    for need in system.NEEDS:
        assert need.required <= need.wanted, need.package
        assert "test" in need.wanted, need.package
    assert {f.need.package for f in system.check(["test"])} == \
        {n.package for n in system.NEEDS if system.applies(n)}


def test_check_for_build_requires_bison_and_flex_and_says_which_builds_fail_without() -> None:
    """Issue 54, item 11: every tree from git and every release from PostgreSQL 17 on needs
    bison and flex, so a machine with everything else of a build but them fails the check."""
    linked = ("ps", "gcc", "make", "pkg-config")
    if any(shutil.which(p) is None for p in linked):
        missing(f"the build tools ({', '.join(linked)}) are not all installed")
    lacking = [n.package for n in system.NEEDS if "build" in n.wanted and not n.present()
               and n.package not in ("bison", "flex")]
    if lacking:
        missing(f"{', '.join(lacking)} not installed ('teiten system setup --for build')")
    done = _as_user("check", "--for", "build", linked=linked)
    assert done.returncode == 1, done.stdout + done.stderr
    rows = {line.split()[1]: line for line in done.stdout.splitlines()[1:]
            if line.split() and line.split()[0] in ("ok", "missing", "optional")}
    assert {name for name, row in rows.items() if not row.startswith("ok")} == {"bison", "flex"}
    for tool, made in (("bison", "parsers"), ("flex", "scanners")):
        assert rows[tool].split()[0] == "missing", rows[tool]
        assert rows[tool].rstrip().endswith(
            f"no builds from git, nor of PostgreSQL 17 or later (only tarballs of 16 and older "
            f"carry the {made})"), rows[tool]
    assert "sudo apt-get install -y bison flex" in done.stdout, done.stdout


def _as_user(*args: str, linked: tuple[str, ...] = ()) -> subprocess.CompletedProcess[str]:
    # Only the interpreter is on PATH (and links to the ``linked`` programs): every other tool
    # teiten looks for there is missing. In /tmp, where the unprivileged account can reach it
    # (pytest's temporary directories are root's).
    with tempfile.TemporaryDirectory(prefix="teiten-bare-bin-") as tmp:
        bare = Path(tmp)
        bare.chmod(0o755)
        for name in linked:
            (bare / name).symlink_to(shutil.which(name) or name)
        env = {"PATH": str(bare), "PYTHONPATH": str(ROOT / "src"), "TEITEN_HOME": str(bare / "home"),
               "HOME": str(bare)}
        argv = [sys.executable, "-m", "teiten", "system", *args]
        if os.geteuid() == 0:
            argv = ["/usr/bin/setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", *argv]
        return subprocess.run(argv, capture_output=True, text=True, timeout=60, env=env)


def _check_as_root_without(variable: str, account: str) -> subprocess.CompletedProcess[str]:
    """`teiten system check` as root, with ``variable`` naming an account that does not exist."""
    if os.geteuid() != 0:
        import pytest

        pytest.skip("the accounts matter only to root")
    env = {**os.environ, variable: account, "PYTHONPATH": str(ROOT / "src")}
    return subprocess.run([sys.executable, "-m", "teiten", "system", "check"], capture_output=True,
                          text=True, timeout=60, env=env)


def test_as_root_without_the_server_account_check_says_it_is_missing_and_setup_would_make_it() -> None:
    done = _check_as_root_without("TEITEN_SERVER_USER", "teitennoaccount")
    assert done.returncode == 1, done.stdout + done.stderr  # not 2: the account is what it checks
    assert any(line.split()[:3] == ["missing", "account", "teitennoaccount"]
               for line in done.stdout.splitlines()), done.stdout
    assert "'teiten system setup' installs it (as root)" in done.stdout, done.stdout


def test_as_root_without_the_client_account_check_names_it_and_what_is_lost() -> None:
    done = _check_as_root_without("TEITEN_CLIENT_USER", "teitennoclient")
    assert done.returncode == 1, done.stdout + done.stderr
    row = next(line for line in done.stdout.splitlines() if "teitennoclient" in line)
    assert row.split()[:3] == ["missing", "account", "teitennoclient"], row
    assert "whose password the server account must not read" in row, row
    assert row.rstrip().endswith("no external or ssh server as root"), row
    assert "'teiten system setup' installs it (as root)" in done.stdout, done.stdout
