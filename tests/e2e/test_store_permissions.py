"""A store this user cannot make or open says why (issue 54, item 14): not "is not a teiten
store: unable to open database file", but the directory it cannot write, the directory that is
missing, the file it cannot read or write. The real command, run by a real unprivileged
account (nobody, when the tests run as root; root bypasses file permissions) on real
directories: exit status 2, one line, before anything runs, and nothing made (no store, no
report directory, nothing in the account's TEITEN_HOME).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from tests.conftest import ROOT

from teiten.host import trust
from teiten.store import Store

NOBODY = ("/usr/bin/setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups")


@dataclass(frozen=True)
class Place:
    top: Path  # root's, 755: the account can enter it, not write it
    locked: Path  # 555: nobody writes here, not even its owner
    home: Path  # the account's own: its TEITEN_HOME, and a directory it can write
    study: Path


@pytest.fixture
def place(pg17) -> Iterator[Place]:  # noqa: ANN001 - the session's install (tests.conftest)
    # In /tmp, where the unprivileged account can reach it (pytest's directories are root's).
    with tempfile.TemporaryDirectory(prefix="teiten-store-perm-") as tmp:
        top = Path(tmp)
        top.chmod(0o755)
        home, locked = top / "home", top / "locked"
        home.mkdir()
        locked.mkdir(mode=0o555)
        locked.chmod(0o555)
        if os.geteuid() == 0:
            import pwd  # late: the unprivileged account's ids, for root only

            account = pwd.getpwnam("nobody")
            os.chown(home, account.pw_uid, account.pw_gid)
        study = top / "tiny.yaml"
        study.write_text(f"study: tiny\nservers:\n  - {{name: a, install: {pg17.bindir}}}\n"
                         "workloads: [pgecons-read]\nscale: 1\nclients: [1]\nduration: 1s\n"
                         "repetitions: 1\n")
        study.chmod(0o644)
        try:
            yield Place(top, locked, home, study)
        finally:
            locked.chmod(0o755)  # so that the temporary directory can be removed


def _teiten(place: Place, *args: str) -> str:
    """``teiten ARGS`` as the unprivileged account: the bad-input contract checked, and nothing
    made anywhere in ``place``; the error line."""
    before = sorted(place.top.rglob("*"))
    env = {"PATH": "/usr/bin:/bin", "HOME": str(place.home), "TEITEN_HOME": str(place.home),
           "PYTHONPATH": str(ROOT / "src"), "TEITEN_NOISE_GUARD": "off",
           "TEITEN_MACHINE_LOCK": str(place.home / "machine.lock")}
    argv = [*(NOBODY if os.geteuid() == 0 else ()), sys.executable, "-m", "teiten", *args]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120, env=env,
                          cwd=place.home)
    assert "Traceback" not in done.stderr, done.stderr
    assert done.returncode == 2, (done.returncode, done.stderr)
    assert done.stdout == "", done.stdout
    assert done.stderr.count("\n") == 1 and done.stderr.startswith("teiten: error: "), done.stderr
    assert sorted(place.top.rglob("*")) == before  # no store, no report, no lock, no cluster
    return done.stderr.removeprefix("teiten: error: ").rstrip("\n")


def test_a_run_into_a_directory_it_cannot_write_names_that_directory(place: Place) -> None:
    store = place.locked / "a.db"
    line = _teiten(place, "run", str(place.study), "--store", str(store))
    assert line == (f"cannot create the store {store}: {place.locked} is not writable by you "
                    "(Permission denied); choose a store in a directory you can write")


def test_a_run_into_a_missing_directory_it_cannot_make_names_both(place: Place) -> None:
    for parent in (place.locked, place.top):
        store = parent / "nodir" / "a.db"
        line = _teiten(place, "run", str(place.study), "--store", str(store))
        assert line == (f"cannot create the store {store}: there is no directory {parent / 'nodir'}, "
                        f"and {parent}, where it would be made, is not writable by you (Permission "
                        "denied); choose a store in a directory you can write")


def test_results_of_a_store_that_is_not_there_says_so_and_names_a_missing_directory(
        place: Place) -> None:
    store = place.locked / "a.db"
    assert _teiten(place, "results", "--store", str(store)) == (
        f"no store at {store}; give the --store that 'teiten run' wrote")
    store = place.locked / "nodir" / "a.db"
    assert _teiten(place, "results", "--store", str(store)) == (
        f"no store at {store} (there is no directory {place.locked / 'nodir'}); give the "
        "--store that 'teiten run' wrote")


def test_a_store_of_another_account_in_its_directory_is_refused_for_what_it_is(
        place: Place) -> None:
    """A real store, made before the directory was locked: readable, but neither it nor its
    directory writable by the account, while teiten (and SQLite's -wal and -shm files beside
    it) write even to read."""
    store = place.locked / "a.db"
    place.locked.chmod(0o755)
    Store.open(store, create=True).close()
    store.chmod(0o444)
    place.locked.chmod(0o555)
    owner = trust.owner_name(store.stat().st_uid)
    said = (f"cannot open the store {store}: {store} (its owner is {owner}) and its directory "
            f"{place.locked} are not writable by you (Permission denied), and teiten opens a "
            "store for writing, even to read it (SQLite keeps its -wal and -shm files beside "
            "it); run teiten as an account that can write there, or copy the store where you can")
    assert _teiten(place, "results", "--store", str(store)) == said
    assert _teiten(place, "run", str(place.study), "--store", str(store)) == said
    store.chmod(0o000 if os.geteuid() == 0 else 0o200)  # root's alone (root reads it anyway)
    assert _teiten(place, "results", "--store", str(store)) == (
        f"cannot read the store {store}: it is not readable by you (Permission denied; its owner "
        f"is {owner}); run teiten as that account, or copy the store where you can read it")


def test_a_report_directory_it_cannot_make_is_refused_before_the_store_is_made(
        place: Place) -> None:
    store = place.home / "a.db"
    report = place.locked / "report"
    line = _teiten(place, "run", str(place.study), "--store", str(store), "--report", str(report))
    assert line == (f"--report {report}: cannot make the directory: {place.locked} is not "
                    "writable by you (Permission denied); give a directory you can write")
    line = _teiten(place, "run", str(place.study), "--store", str(store), "--report",
                   str(place.locked))
    assert line == (f"--report {place.locked}: the directory is not writable by you (Permission "
                    "denied); give a directory you can write")
