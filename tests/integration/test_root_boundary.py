"""The root boundary (issue 34): teiten run as root never acts for the server account.

Whoever can act as ``postgres`` (here: the workload's own SQL, through ``COPY ... TO
PROGRAM``, which pgbench runs as the superuser; and the account itself after a ``kill -9``
of the run) plants links and FIFOs at every place root reads or writes, pointing at canary
files and directories in root-only places. Real clusters, real pgbench, the real account and
the real CLI; the canaries keep their content, owner and mode, nothing outside teiten's own
directories is removed, and nothing ends in a traceback.
"""

from __future__ import annotations

import os
import pwd
import shutil
import signal
import sqlite3
import stat
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.conftest import (
    TEITEN,
    TEST_HOME,
    postgres_processes_under,
    processes_naming,
    run_cli,
    start_cli,
    wait_for_pgbench,
)
from tests.requirements import missing

pytestmark = pytest.mark.requires(
    None if os.geteuid() == 0 else "the root boundary is tested as root (teiten's root path)")

SECRET = "teiten-root-secret-" + uuid.uuid4().hex


class Canaries:
    """A root-only file, a root-only directory, a secret and a directory marked as teiten's
    (that no run of the test made), all in /root, with what they must stay."""

    def __init__(self) -> None:
        self.base = Path("/root") / f"teiten-canaries-{uuid.uuid4().hex[:8]}"
        self.base.mkdir(mode=0o700)
        self.file = self.base / "canary"
        self.file.write_text("canary\n")
        self.file.chmod(0o600)
        self.dir = self.base / "canarydir"
        self.dir.mkdir(mode=0o700)
        (self.dir / "inside").write_text("inside\n")
        self.secret = self.base / "secret"
        self.secret.write_text(SECRET + "\n")
        self.secret.chmod(0o600)
        self.marked = self.base / "marked-victim"
        self.marked.mkdir(mode=0o700)
        (self.marked / ".teiten-owned").write_text('{"purpose": "not of this run"}\n')
        self.before = self._state()

    def _state(self) -> dict[str, tuple[int, int, str]]:
        out = {}
        for path in sorted(self.base.rglob("*")):
            st = path.lstat()
            body = path.read_text() if stat.S_ISREG(st.st_mode) else ""
            out[str(path)] = (st.st_uid, stat.S_IMODE(st.st_mode), body)
        return out

    def assert_intact(self) -> None:
        assert self._state() == self.before


@pytest.fixture
def canaries() -> Iterator[Canaries]:
    found = Canaries()
    yield found
    shutil.rmtree(found.base, ignore_errors=True)


@pytest.fixture
def attack_dir() -> Iterator[Path]:
    """Where the planting script lives and leaves its witnesses (the server account writes)."""
    path = Path(f"/tmp/teiten-attack-{uuid.uuid4().hex[:8]}")
    path.mkdir(mode=0o755)
    account = pwd.getpwnam("postgres")
    os.chown(path, account.pw_uid, account.pw_gid)
    yield path
    shutil.rmtree(path, ignore_errors=True)


# Run by the workload's SQL (as postgres, in the data directory) at every transaction: a link
# to the canary at every file of the data directory root writes, a link to the secret, a FIFO
# and a hard link in the log directory root reads, and a link where the next trial's log
# directory goes (root's directory: refused by the kernel). Leaves a witness that it ran.
PLANT = r"""
set +e
logdir="$1"; canary="$2"; secret="$3"; canarydir="$4"; witness="$5"
for f in teiten-runtime.conf teiten.conf postgresql.conf pg_hba.conf standby.signal; do
  ln -sfn "$canary" "$f.planted" 2>/dev/null && mv -Tf "$f.planted" "$f" 2>/dev/null
done
ln -sfn "$secret" "$logdir/zz-secret.log" 2>/dev/null
ln "$secret" "$logdir/zz-hard.log" 2>/dev/null
[ -p "$logdir/zz-fifo.log" ] || mkfifo "$logdir/zz-fifo.log" 2>/dev/null
ln -sfn "$canarydir" "$logdir/../trial-next" 2>/dev/null
ln -sfn "$canarydir" ../snapshot-planted 2>/dev/null
echo planted >> "$witness"
exit 0
"""


def _attack_study(workdir: Path, attack_dir: Path, canaries: Canaries, name: str) -> Path:
    plant = attack_dir / "plant.sh"
    plant.write_text(PLANT)
    plant.chmod(0o755)
    witness = attack_dir / "witness"
    program = (f"sh {plant} ' || current_setting('log_directory') || ' {canaries.file} "
               f"{canaries.secret} {canaries.dir} {witness}")
    script = workdir / "attack.pgbench"
    script.write_text(
        "DO $$BEGIN EXECUTE format('COPY (SELECT 1) TO PROGRAM %L', "
        f"'{program}'); END$$;\n")
    study = workdir / f"{name}.yaml"
    study.write_text(f"""
study: {name}
servers:
  - {{name: pg17, install: "17"}}
workloads:
  - {{name: attack, script: attack.pgbench, modifies_data: false}}
scale: 1
clients: [1]
duration: 2s
repetitions: 3
order: sequential
""")
    return study


def test_links_planted_by_the_workload_never_reach_root_files(
        pg17, workdir: Path, attack_dir: Path, canaries: Canaries) -> None:
    store = workdir / "attack.db"
    study = _attack_study(workdir, attack_dir, canaries, "attack")
    done = run_cli("run", str(study), "--store", str(store), "--no-report")
    assert "Traceback" not in done.stderr, done.stderr
    assert (attack_dir / "witness").read_text().count("planted") >= 2, \
        "the workload never planted its links: the test would prove nothing"
    canaries.assert_intact()
    with sqlite3.connect(store) as conn:
        trials = conn.execute("SELECT status FROM trials").fetchall()
    assert len(trials) == 3
    # The secret reached neither the store (any table, any column) nor `teiten show`.
    assert SECRET.encode() not in store.read_bytes()
    shown = run_cli("show", "--store", str(store))
    assert SECRET not in shown.stdout + shown.stderr
    leftover = [p for d in (TEST_HOME / "clusters").glob("attack-*") for p in postgres_processes_under(d)]
    assert not leftover


# Beside PLANT, in a replicated topology behind Pgpool-II (run in the primary's data directory,
# <slot>/node0/data, where pgpool sends the DO): links to the canary at the files root reads or
# writes in every node's data directory (<slot>/nodeN/data: a standby's markers and
# configuration too), and at the Pgpool-II files in each instance's run directory
# (<slot>/pgpoolN-<trial>/run: its pid file, status file and log directory).
PLANT_TOPOLOGY = r"""
set +e
canary="$1"; canarydir="$2"; witness="$3"
for d in ../../*/data ../../*; do
  [ -d "$d" ] || continue
  if [ -f "$d/PG_VERSION" ] && [ -w "$d" ]; then
    for f in standby.signal recovery.signal postgresql.auto.conf teiten-runtime.conf teiten.conf \
             pg_hba.conf postmaster.opts; do
      ln -sfn "$canary" "$d/$f.planted" 2>/dev/null && mv -Tf "$d/$f.planted" "$d/$f" 2>/dev/null
    done
    echo "data $d" >> "$witness"
  fi
  if [ -d "$d/run" ] && [ -w "$d/run" ]; then
    for f in pgpool.pid pgpool_status; do
      ln -sfn "$canary" "$d/run/$f.planted" 2>/dev/null && mv -Tf "$d/run/$f.planted" "$d/run/$f" 2>/dev/null
    done
    rm -rf "$d/run/log.old" 2>/dev/null; mv -T "$d/run/log" "$d/run/log.old" 2>/dev/null
    ln -sfn "$canarydir" "$d/run/log" 2>/dev/null
    echo "pgpool $d" >> "$witness"
  fi
done
exit 0
"""


def test_a_replicated_topology_behind_pgpool_refuses_what_the_account_planted(
        pg17, workdir: Path, attack_dir: Path, canaries: Canaries) -> None:  # noqa: ANN001
    """A primary, a streaming standby and a Pgpool-II in front of each: the workload, run on
    every node, plants links at the standby's markers and configuration and at each Pgpool-II
    instance's pid file, status file and log directory. Root follows none of them; what the
    run made is removed and the canaries stay as they were."""
    from teiten.servers import pgpool

    why = pgpool.available()
    if why:
        missing(f"Pgpool-II: {why}")
    began = time.time()
    plant = attack_dir / "plant-topology.sh"
    plant.write_text(PLANT_TOPOLOGY)
    plant.chmod(0o755)
    witness = attack_dir / "witness"
    program = f"sh {plant} {canaries.file} {canaries.dir} {witness}"
    (workdir / "attack.pgbench").write_text(
        "DO $$BEGIN EXECUTE format('COPY (SELECT 1) TO PROGRAM %L', "
        f"'{program}'); END$$;\n")
    study = workdir / "topology.yaml"
    study.write_text("""
study: topologyattack
servers:
  - {name: pg17r, install: "17", replicas: 1, replication: async, pgpool: true}
workloads:
  - {name: attack, script: attack.pgbench, modifies_data: false}
scale: 1
clients: [2]
duration: 2s
repetitions: 2
order: sequential
""")
    store = workdir / "topology.db"
    done = run_cli("run", str(study), "--store", str(store), "--no-report")
    assert "Traceback" not in done.stderr, done.stderr
    planted = witness.read_text() if witness.exists() else ""
    assert planted.count("data ") >= 2 and "pgpool " in planted, \
        f"the workload did not reach a standby and a Pgpool-II: the test would prove nothing\n{planted}"
    canaries.assert_intact()
    assert not [p for d in (TEST_HOME / "clusters").glob("topologyattack-*")
                for p in postgres_processes_under(d)]
    # The planted pid file named no process: the Pgpool-II instances were found and stopped
    # by their command line all the same (none outlives the run, none is left to clean).
    assert not [p for p in processes_naming(TEST_HOME / "clusters" / "topologyattack-")
                if p.create_time() >= began - 1]
    cleaned = run_cli("clean", "--store", str(store))
    assert cleaned.returncode == 0 and "Traceback" not in cleaned.stderr, cleaned.stderr
    canaries.assert_intact()
    assert not list((TEST_HOME / "clusters").glob("topologyattack-*"))



def _study(workdir: Path, name: str, workload: str, *, duration: int, repetitions: int,
           install: str = "17") -> Path:
    study = workdir / f"{name}.yaml"
    study.write_text(f"""
study: {name}
servers:
  - {{name: pg17, install: "{install}"}}
workloads: [{workload}]
scale: 1
clients: [1]
duration: {duration}s
repetitions: {repetitions}
order: sequential
""")
    return study


def _as_postgres(script: str, *args: str) -> None:
    subprocess.run(["runuser", "-u", "postgres", "--", "sh", "-c", script, "sh", *args],
                   check=True, timeout=60)


def test_clean_after_kill_trusts_nothing_the_server_account_left(
        pg17, workdir: Path, canaries: Canaries) -> None:
    store = workdir / "killed.db"
    study = _study(workdir, "killedattack", "pgecons-read", duration=3, repetitions=2)
    proc = start_cli("run", str(study), "--store", str(store), "--no-report")
    wait_for_pgbench(proc)
    made = list((TEST_HOME / "clusters").glob("killedattack-*"))
    os.kill(proc.pid, signal.SIGKILL)
    proc.communicate(timeout=30)
    # the clusters of the run, seen while it ran and still there after the kill
    assert len(made) == 1 and made[0].is_dir(), (
        made, sorted(p.name for p in (TEST_HOME / "clusters").iterdir()))
    run_dir = made[0]
    [data] = run_dir.glob("*/data")
    conf = (data / "teiten-runtime.conf").read_text()
    sock = conf.split("unix_socket_directories = '", 1)[1].split("'", 1)[0]
    # As the server account: name a marked directory of root's as a socket directory, link a
    # tablespace to it and the WAL to the canary directory, and put a link where the socket
    # directory was.
    _as_postgres(
        'set -e; d="$1"; printf "%s\\n" "unix_socket_directories = \'$2\'" >> "$d/teiten-runtime.conf"; '
        'ln -s "$2/sub" "$d/pg_tblspc/99999"; mv "$d/pg_wal" "$d/pg_wal.moved"; '
        'ln -s "$3/sub" "$d/pg_wal"; mv "$4" "$4.moved"; ln -s "$3" "$4"',
        str(data), str(canaries.marked), str(canaries.dir), sock)
    try:
        done = run_cli("clean", "--store", str(store))
        assert done.returncode == 0, done.stderr
        assert "Traceback" not in done.stderr
        assert "killed leftover server process" in done.stderr
        canaries.assert_intact()
        assert not run_dir.exists()
        assert os.path.islink(sock)  # the planted link was not followed, nor removed as ours
    finally:
        for path in (sock, sock + ".moved"):
            if os.path.islink(path):
                os.unlink(path)
            elif os.path.isdir(path):
                shutil.rmtree(path)


@pytest.mark.parametrize("entry", [
    "- {name: attack, script: 'x$(id>PWNED).pgbench'}",
    "- pgecons-read\n",
])
def test_names_that_would_reach_a_shell_are_refused_at_plan(workdir: Path, entry: str) -> None:
    (workdir / "x$(id>PWNED).pgbench").write_text("SELECT 1;\n")
    directory = "" if "script" in entry else ", directory: '/tmp/a$(id>PWNED)'"
    study = workdir / "names.yaml"
    study.write_text(f"""
study: names
servers:
  - {{name: pg17, install: "17"{directory}}}
workloads:
  {entry}
scale: 1
clients: [1]
duration: 1s
""")
    done = run_cli("plan", str(study), cwd=workdir)
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "'$'" in lines[0] and "shell" in lines[0], done.stderr
    assert not list(workdir.rglob("PWNED")) and not Path("PWNED").exists()


@pytest.mark.parametrize("before", [None, "r--"])
def test_the_traversal_grant_is_taken_back_when_teiten_exits(
        pg17, workdir: Path, before: str | None) -> None:
    """TEITEN_HOME below a directory the account cannot traverse: teiten grants traversal
    (ACL u:postgres:x) for the run, and afterwards the directory's ACL is as it was."""
    blocked = Path("/root") / f"teiten-acl-{uuid.uuid4().hex[:8]}"
    blocked.mkdir(mode=0o700)
    try:
        if before is not None:
            subprocess.run(["setfacl", "-m", f"u:postgres:{before}", str(blocked)], check=True)
        acl = subprocess.run(["getfacl", "-cp", str(blocked)], check=True, text=True,
                             capture_output=True).stdout
        study = _study(workdir, "acl", "pgecons-read", duration=1, repetitions=1,
                       install=str(pg17.bindir))
        env = dict(os.environ, TEITEN_HOME=str(blocked / "home"),
                   PYTHONPATH=str(Path(__file__).resolve().parents[2] / "src"))
        done = subprocess.run([*TEITEN, "run", str(study), "--store", str(workdir / "acl.db"),
                               "--no-report", "-v"], env=env, text=True, capture_output=True,
                              timeout=600)
        assert done.returncode == 0, done.stderr
        assert f"granting postgres traversal of {blocked}" in done.stderr
        assert subprocess.run(["getfacl", "-cp", str(blocked)], check=True, text=True,
                              capture_output=True).stdout == acl
    finally:
        shutil.rmtree(blocked, ignore_errors=True)


# Run as postgres beside a whole run: over and over, links to the canaries in every data
# directory (which every restore walks and removes) and to the secret in every log directory
# (which root reads after every trial). Links at the files the server itself reads would only
# stop the server: the account may sabotage its own server.
RACE = r"""
base="$1"; canary="$2"; secret="$3"; canarydir="$4"
while :; do
  for d in "$base"/raced-*/*/data; do
    [ -f "$d/teiten.conf" ] || continue
    ln -sfn "$canarydir" "$d/zz-canarydir" 2>/dev/null
    ln -sfn "$canary" "$d/base/zz-canary" 2>/dev/null
  done
  for l in "$base"/raced-*/*/logs/*/; do
    ln -sfn "$secret" "$l/zz-secret.log" 2>/dev/null
  done
  sleep 0.01
done
"""


def test_a_racing_loop_of_the_server_account_changes_no_root_file(
        pg17, workdir: Path, canaries: Canaries) -> None:
    store = workdir / "raced.db"
    study = _study(workdir, "raced", "pgecons-update", duration=1, repetitions=3)
    loop = subprocess.Popen(
        ["runuser", "-u", "postgres", "--", "sh", "-c", RACE, "sh", str(TEST_HOME / "clusters"),
         str(canaries.file), str(canaries.secret), str(canaries.dir)], start_new_session=True)
    try:
        done = run_cli("run", str(study), "--store", str(store), "--no-report")
    finally:
        os.killpg(loop.pid, signal.SIGKILL)
        loop.wait(timeout=30)
    with sqlite3.connect(store) as conn:
        statuses = [s for (s,) in conn.execute("SELECT status FROM trials")]
    assert "ok" in statuses, done.stderr  # the race ran beside trials, not only a failed start
    assert "Traceback" not in done.stderr, done.stderr
    canaries.assert_intact()
    assert SECRET.encode() not in store.read_bytes()
    leftover = [p for d in (TEST_HOME / "clusters").glob("raced-*") for p in postgres_processes_under(d)]
    assert not leftover
    assert not list((TEST_HOME / "clusters").glob("raced-*"))


def test_cache_eviction_and_lock_statistics_refuse_what_the_account_planted(
        canaries: Canaries, attack_dir: Path) -> None:
    """The files of a stopped cluster, as the account could leave them: a FIFO (which would
    block an open), a link to a root-only file, a hard link attempt; the eviction finishes
    at once and opens none of them, and reading lock statistics refuses a planted link."""
    from teiten.host import oscache, safefs
    from teiten.monitors import lwlock

    data = attack_dir / "data"
    _as_postgres('set -e; mkdir "$1"; echo x > "$1/16384"; mkfifo "$1/fifo"; '
                 'ln -s "$2" "$1/link"; ln -s "$2" "$1/server.log"',
                 str(data), str(canaries.secret))
    started = time.monotonic()
    done = oscache.evict([data])
    assert time.monotonic() - started < 30
    assert done["files"] == 1 and done["not_evicted_files"] == 0
    with pytest.raises(safefs.UnsafePath):
        lwlock.read_window(data / "server.log")
    canaries.assert_intact()


def test_snapshots_copy_the_accounts_tree_by_descriptor(
        canaries: Canaries, attack_dir: Path, tmp_path: Path) -> None:
    """A snapshot of a data directory holding a FIFO, a link to a root-only directory and a
    subdirectory the account swaps for such a link before the restore: the snapshot and the
    restore finish at once, copy links as links, make the FIFO anew without opening it, and
    leave nothing of root's in the data directory."""
    from teiten.servers import snapshot

    data = attack_dir / "data"
    _as_postgres('set -e; mkdir -m 700 "$1" "$1/base"; echo one > "$1/base/1"; '
                 'mkfifo "$1/fifo"; ln -s "$2" "$1/link"', str(data), str(canaries.dir))
    saved = tmp_path / "snap"
    saved.mkdir(mode=0o700)
    started = time.monotonic()
    known = snapshot.take(data, saved / "data")
    assert (saved / "data" / "link").is_symlink() and os.readlink(saved / "data" / "link") == str(canaries.dir)
    assert stat.S_ISFIFO((saved / "data" / "fifo").lstat().st_mode)
    _as_postgres('set -e; mv "$1/base" "$1/base.moved"; ln -s "$2" "$1/base"; '
                 'echo two > "$1/extra"; ln -s "$3" "$1/secret"',
                 str(data), str(canaries.dir), str(canaries.secret))
    snapshot.restore(saved / "data", data, known)
    assert time.monotonic() - started < 30
    assert (data / "base").is_dir() and not (data / "base").is_symlink()
    assert (data / "base" / "1").read_text() == "one\n"
    assert not (data / "extra").exists() and not os.path.lexists(data / "secret")
    account = pwd.getpwnam("postgres").pw_uid
    assert {p.lstat().st_uid for p in data.rglob("*")} == {account}
    canaries.assert_intact()


def test_a_base_directory_the_account_can_replace_is_refused(pg17, workdir: Path,
                                                              attack_dir: Path) -> None:
    """`directory:` in a directory of the server account's (it could swap what teiten makes
    there for its own), and TEITEN_HOME below one: refused with one line, exit 2."""
    study = workdir / "base.yaml"
    study.write_text(f"""
study: base
servers:
  - {{name: pg17, install: "17", directory: "{attack_dir}"}}
workloads: [pgecons-read]
scale: 1
clients: [1]
duration: 1s
""")
    done = run_cli("plan", str(study))
    assert done.returncode == 2
    [line] = done.stderr.strip().splitlines()
    assert f"{attack_dir} is owned by postgres (uid " in line and "only root can write" in line
    env = dict(os.environ, TEITEN_HOME=str(attack_dir / "home"),
               PYTHONPATH=str(Path(__file__).resolve().parents[2] / "src"))
    done = subprocess.run([*TEITEN, "installs"], env=env, text=True, capture_output=True,
                          timeout=120)
    assert done.returncode == 2
    [line] = done.stderr.strip().splitlines()
    assert line.startswith(f"teiten: error: TEITEN_HOME {attack_dir / 'home'}: ")


def test_a_directory_swapped_in_as_teiten_makes_it_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    """safefs.Dir.make_dir in a directory the server account can write: the account moves the
    directory root just made away and puts its own at that name before root opens it (the
    race is made certain here: the real mkdir, then the account's real mv and mkdir, at the
    moment between them). Root refuses it in one line and neither chmods nor gives it."""
    from teiten.host import safefs  # the module under test, imported where the race is staged

    base = Path(f"/tmp/teiten-swap-{uuid.uuid4().hex[:8]}")
    account = pwd.getpwnam("postgres")
    subprocess.run(["mkdir", "-m", "755", str(base)], check=True, user=account.pw_uid,
                   group=account.pw_gid, timeout=30)
    made = os.mkdir

    def racing(path: str, mode: int = 0o777, *, dir_fd: int | None = None) -> None:
        made(path, mode, dir_fd=dir_fd)
        subprocess.run(["sh", "-ec", 'mv "$1/x" "$1/x.moved"; mkdir -m 750 "$1/x"', "sh", str(base)],
                       check=True, user=account.pw_uid, group=account.pw_gid, timeout=30)

    try:
        with safefs.Dir.open(base) as directory:
            monkeypatch.setattr(os, "mkdir", racing)
            with pytest.raises(safefs.UnsafePath, match="replaced by another account's directory"):
                directory.make_dir("x", mode=0o700)
            monkeypatch.undo()
        theirs = (base / "x").stat()
        assert (theirs.st_uid, stat.S_IMODE(theirs.st_mode)) == (account.pw_uid, 0o750)
        ours = (base / "x.moved").stat()  # root's, as it was made: never given
        assert ours.st_uid == 0
    finally:
        shutil.rmtree(base, ignore_errors=True)
