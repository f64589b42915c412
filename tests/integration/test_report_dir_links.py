"""Report directories and the root boundary (issue 52 item 5): teiten run as root writes a
report (``report --out``, ``compare --out``, ``run``'s ``<store>-report/`` or ``--report``)
only into a directory it makes, or one that root owns and no other account can write, and
every file there through the directory's descriptor, so that a link the server account
(``postgres``) planted is replaced, never followed.

The attacks are the server account's own: it makes and owns the directory, or the one above
it, and plants links to a root-only canary at ``report.html``, ``report.md``,
``tables.json`` and ``tables/...``, before teiten looks or in a loop while the report is
written. Real files, the real account, the real CLI (and, for a run, real PostgreSQL). The
canary keeps its content, owner and mode; teiten refuses in one line (exit 2, no traceback)
or writes a complete report into a directory of its own; what the account made is left.

A user who is not root writes into their own directory as before (an account made for the
test runs the CLI).
"""

from __future__ import annotations

import ast
import grp
import os
import pwd
import re
import shutil
import sqlite3
import stat
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.conftest import ROOT, run_cli
from tests.requirements import missing

from teiten.host.paths import MARKER
from teiten.model.errors import UserError

pytestmark = pytest.mark.requires(
    None if os.geteuid() == 0 else "report directories are attacked as root (teiten's root path)")

GOLDEN = Path(__file__).resolve().parent.parent / "golden" / "report-stores" / "quick.db"
ACCOUNT = "postgres"
PLANTED = ("report.html", "report.md", "tables.json", "tables/pgecons-read-tps.csv",
           "charts/pgecons-read-tps.svg", "flamegraphs/x.svg", MARKER)


class Canary:
    """A root-only file in a root-only directory of /root, with what it must stay."""

    def __init__(self) -> None:
        self.base = Path("/root") / f"teiten-canaries-{uuid.uuid4().hex[:8]}"
        self.base.mkdir(mode=0o700)
        self.file = self.base / "canary"
        self.file.write_text("canary: root's own\n")
        self.file.chmod(0o600)
        self.before = self._state()

    def _state(self) -> tuple[int, int, int, str, list[str]]:
        st = self.file.lstat()
        return (st.st_uid, st.st_gid, stat.S_IMODE(st.st_mode) | stat.S_IFMT(st.st_mode),
                self.file.read_text(), sorted(p.name for p in self.base.iterdir()))

    def assert_intact(self) -> None:
        assert self._state() == self.before


@pytest.fixture
def canary() -> Iterator[Canary]:
    found = Canary()
    yield found
    shutil.rmtree(found.base, ignore_errors=True)


@pytest.fixture
def quick(tmp_path: Path) -> Path:
    """A copy of a real store, in a directory of root's (opening it may migrate it)."""
    return Path(shutil.copyfile(GOLDEN, tmp_path / "quick.db"))


@pytest.fixture
def attacker() -> Iterator[Path]:
    """A directory the server account made and owns (not sticky): where it makes the report
    directory, or the directory above it."""
    base = Path(f"/tmp/teiten-attacker-{uuid.uuid4().hex[:8]}")
    _as_account(f"mkdir -m 755 {base}")
    assert base.stat().st_uid == pwd.getpwnam(ACCOUNT).pw_uid
    yield base
    shutil.rmtree(base, ignore_errors=True)


def _account_kwargs() -> dict[str, object]:
    return {"user": ACCOUNT, "group": grp.getgrgid(pwd.getpwnam(ACCOUNT).pw_gid).gr_name,
            "extra_groups": [], "cwd": "/", "env": {"PATH": "/usr/bin:/bin", "LANG": "C"}}


def _as_account(script: str, *args: str) -> None:
    subprocess.run(["sh", "-ec", script, "sh", *args], check=True, timeout=30,
                   **_account_kwargs())  # type: ignore[call-overload]


def _plant(directory: Path, target: Path) -> None:
    """As the server account: ``directory`` made (its own) with a link to ``target`` at
    every name a report writes."""
    names = " ".join(PLANTED)
    _as_account('d="$1"; t="$2"; mkdir -p "$d/tables" "$d/charts" "$d/flamegraphs"\n'
                f'for f in {names}; do ln -sfn "$t" "$d/$f"; done', str(directory), str(target))


def _links(directory: Path) -> dict[str, str]:
    return {str(p.relative_to(directory)): os.readlink(p) for p in sorted(directory.rglob("*"))
            if p.is_symlink()}


def _one_line(done: subprocess.CompletedProcess[str]) -> str:
    assert "Traceback" not in done.stderr, done.stderr
    assert done.returncode == 2, (done.returncode, done.stderr)
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    return lines[0]


def _refused(done: subprocess.CompletedProcess[str], option: str, path: Path) -> str:
    """A refusal of ``path`` in one line: the report directory's (teiten.report.outdir), or
    the command line's check of the paths it is given, whichever comes first."""
    line = _one_line(done)
    assert line.startswith("teiten: error: ") and option in line and str(path) in line, line
    return line


def _report_in_process(store_path: Path, out: Path, **options: object) -> dict[str, Path]:
    """The writer every command uses (teiten.report.build.write_study_report), here."""
    from teiten.report.build import write_study_report
    from teiten.store import Store

    store = Store.open(str(store_path))
    try:
        sid = int(store.studies()[-1].id)
        return write_study_report(store, sid, out, **options)  # type: ignore[arg-type]
    finally:
        store.close()


def _listing(top: Path) -> list[tuple[str, int, str]]:
    return [(str(p.relative_to(top)), p.lstat().st_uid, oct(p.lstat().st_mode))
            for p in sorted(top.rglob("*"))]


def _complete(out: Path, owner: int = 0) -> None:
    """A whole report in ``out``, every file and directory a regular one of ``owner``'s,
    no other account able to write it."""
    for name in ("report.html", "report.md", "tables.json", "tables", "charts"):
        assert (out / name).exists(), (f"{out / name} missing", _listing(out.parent))
    for path in [out, *out.rglob("*")]:
        st = path.lstat()
        assert stat.S_ISREG(st.st_mode) or stat.S_ISDIR(st.st_mode), f"{path} is not a file"
        assert st.st_uid == owner, (path, st.st_uid)
        if owner == 0:
            assert not st.st_mode & 0o022, (path, oct(st.st_mode))
    assert list((out / "tables").glob("*.csv")), "no CSV tables"
    assert "teiten" in (out / "report.html").read_text()


# ----------------------------------------------------------------------------- row 6

@pytest.mark.parametrize("overwrite", [True, False])
def test_row6_a_directory_the_account_owns_is_refused(overwrite: bool, quick: Path,
                                                      attacker: Path, canary: Canary) -> None:
    """``report --out D [--overwrite]``, D the account's with links at every report file."""
    out = attacker / "out"
    _plant(out, canary.file)
    before = _links(out)
    extra = ("--overwrite",) if overwrite else ()
    _refused(run_cli("report", "--store", str(quick), "--out", str(out), *extra), "--out", out)
    mine = (f"--out {out}: the directory belongs to postgres (uid {pwd.getpwnam(ACCOUNT).pw_uid}), "
            "not to root (uid 0), so that account could change what teiten writes there; give a "
            "new directory, or one you own that no other account can write")
    from teiten.report import outdir

    with pytest.raises(UserError) as refused:
        outdir.check(out, overwrite=overwrite)
    assert str(refused.value) == mine
    with pytest.raises(UserError) as refused:
        _report_in_process(quick, out, overwrite=overwrite)
    assert str(refused.value) == mine
    canary.assert_intact()
    assert _links(out) == before, "teiten removed or changed what the account made"


@pytest.mark.parametrize("mode", [0o777, 0o775, 0o1777])
def test_row6_a_directory_of_roots_that_others_can_write_is_refused(
        mode: int, quick: Path, canary: Canary, request: pytest.FixtureRequest) -> None:
    """Root's, but the account (every account, or a group) may write it: refused, even with
    --overwrite, even sticky (the account's own links there are its to replace)."""
    base = Path(f"/tmp/teiten-open-{uuid.uuid4().hex[:8]}")  # root's, the account may enter
    base.mkdir(mode=0o755)
    request.addfinalizer(lambda: shutil.rmtree(base, ignore_errors=True))
    out = base / "out"
    out.mkdir()
    out.chmod(mode)
    os.chown(out, 0, pwd.getpwnam(ACCOUNT).pw_gid)  # a group the account is in
    _plant(out, canary.file)
    line = _refused(run_cli("report", "--store", str(quick), "--out", str(out), "--overwrite"),
                    "--out", out)
    if mode & stat.S_ISVTX:  # the command line's own check lets a sticky one by: this refuses it
        assert line.startswith(f"teiten: error: --out {out}: the directory can be written by "), line
    with pytest.raises(UserError, match=r"the directory can be written by .*\(mode "
                       f"{mode:o}\\).*chmod go-w"):
        _report_in_process(quick, out, overwrite=True)
    canary.assert_intact()
    assert len(_links(out)) == len(PLANTED)


def test_compare_and_timeline_refuse_the_accounts_directory(quick: Path, attacker: Path,
                                                           canary: Canary) -> None:
    """``compare --out`` and ``timeline --out`` take their directory as ``report`` does: the
    account's is refused; a new one is written whole."""
    out = attacker / "out"
    _plant(out, canary.file)
    before = _links(out)
    run_cli("store", "summarize", "--store", str(quick), check=True)  # the timeline's points
    commands = {"compare": ("compare", "--store", str(quick), "--studies", "1,1"),
                "timeline": ("timeline", "quick-fixed-point-small", "--store", str(quick))}
    for args in commands.values():
        _refused(run_cli(*args, "--out", str(out), "--overwrite"), "--out", out)
    canary.assert_intact()
    assert _links(out) == before
    new = quick.parent / "timeline"
    run_cli(*commands["timeline"], "--out", str(new), check=True)
    assert {p.name for p in new.iterdir()} == {MARKER, "timeline.md", "timeline.html"}
    assert all(p.lstat().st_uid == 0 and stat.S_ISREG(p.lstat().st_mode) for p in new.iterdir())


# ----------------------------------------------------------------------------- row 7

WAIT_AND_PLANT = r"""
d="$1"; t="$2"; stop="$3"
while [ ! -e "$stop" ]; do
  if [ -e "$d/.teiten-owned" ] || [ -e "$d/report.md" ]; then
    for f in report.html report.md tables.json .teiten-owned; do
      ln -sfn "$t" "$d/$f.new" 2>/dev/null && mv -Tf "$d/$f.new" "$d/$f" 2>/dev/null
    done
    mkdir "$d/tables" 2>/dev/null; ln -sfn "$t" "$d/tables/pgecons-read-tps.csv" 2>/dev/null
    echo planted >> "$stop.witness"
  fi
done
"""

# The account owns the directory above the report directory: it waits for the directory
# teiten makes, moves it away and puts its own in its place, full of links; or plants a link
# where it goes; and tries to plant into teiten's directory too (the kernel refuses).
SWAP = r"""
base="$1"; t="$2"; stop="$3"; n=0
while [ ! -e "$stop" ]; do
  n=$((n+1)); d="$base/out"
  if [ -d "$d" ] && [ ! -L "$d" ] && [ ! -O "$d" ]; then
    ln -sfn "$t" "$d/report.html" 2>/dev/null
    mv -T "$d" "$base/moved-$n" 2>/dev/null && echo "moved $n" >> "$stop.witness"
    mkdir "$d" 2>/dev/null
    for f in report.html report.md tables.json; do ln -sfn "$t" "$d/$f" 2>/dev/null; done
  elif [ $((n % 2)) = 0 ] && [ ! -e "$d" ]; then
    ln -sfn /root "$d.tmp" 2>/dev/null && mv -Tf "$d.tmp" "$d" 2>/dev/null
  elif [ -L "$d" ]; then
    rm -f "$d"
  fi
done
"""


def _start(script: str, *args: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(["sh", "-c", script, "sh", *args], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, **_account_kwargs())  # type: ignore[call-overload]


def _stop(proc: subprocess.Popen[bytes], stop: Path) -> None:
    stop.touch()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def test_row7_links_raced_into_an_empty_directory_of_the_accounts(quick: Path, attacker: Path,
                                                                   canary: Canary) -> None:
    """D empty and the account's, the account planting links the moment teiten writes its
    marker or a report file there: teiten refuses D before writing anything."""
    out = attacker / "out"
    _as_account(f"mkdir -m 777 {out}")
    stop = attacker / "stop"
    proc = _start(WAIT_AND_PLANT, str(out), str(canary.file), str(stop))
    try:
        _refused(run_cli("report", "--store", str(quick), "--out", str(out)), "--out", out)
        with pytest.raises(UserError, match=f"^--out {out}: the directory belongs to postgres"):
            _report_in_process(quick, out)
    finally:
        _stop(proc, stop)
    assert not os.path.lexists(out / MARKER), "teiten wrote into the account's directory"
    assert not list(out.iterdir())
    canary.assert_intact()


def _clear(attacker: Path) -> None:
    """What the last attempt left in the account's directory (root's own directories too,
    which the account cannot empty)."""
    for left in [*attacker.glob("moved-*"), attacker / "out", attacker / "out.tmp"]:
        if left.is_dir() and not left.is_symlink():
            shutil.rmtree(left)
        elif os.path.lexists(left):
            left.unlink()


def _ours(attacker: Path) -> list[Path]:
    return [d for d in attacker.iterdir() if d.is_dir() and not d.is_symlink()
            and d.stat().st_uid == 0]


def test_row7_a_directory_teiten_makes_below_the_accounts_is_never_followed(
        quick: Path, attacker: Path, canary: Canary) -> None:
    """D new, in the account's directory: the account swaps teiten's directory for its own
    full of links (or puts a link at D) while the report is written. Each time, teiten
    refuses in one line or writes the whole report into the directory it made, wherever the
    account moved it; the canary is untouched."""
    stop = attacker / "stop"
    out = attacker / "out"
    moved = refused = 0
    for _attempt in range(8):
        _clear(attacker)
        proc = _start(SWAP, str(attacker), str(canary.file), str(stop))
        try:
            _report_in_process(quick, out)
        except UserError as exc:
            assert str(exc).startswith(f"--out {out}: "), exc
            refused += 1
            continue
        finally:
            _stop(proc, stop)
            stop.unlink()
            canary.assert_intact()
        [made] = _ours(attacker)
        _complete(made)
        moved += made.name != "out"
    assert moved or refused, "the account never got between teiten's steps: the test proved nothing"
    # The same through the command
    _clear(attacker)
    proc = _start(SWAP, str(attacker), str(canary.file), str(stop))
    try:
        done = run_cli("report", "--store", str(quick), "--out", str(out))
    finally:
        _stop(proc, stop)
    canary.assert_intact()
    if done.returncode == 0:
        [made] = _ours(attacker)
        _complete(made)
    else:
        _refused(done, "--out", out)


def test_a_directory_the_account_makes_after_the_check_is_refused_when_written(
        quick: Path, attacker: Path, canary: Canary) -> None:
    """Between a run's check (before its trials) and its report (after them), the account
    makes the report directory: the report refuses it then."""
    from teiten.report import outdir

    out = attacker / "late"
    outdir.check(out, overwrite=False, option="--report")  # missing: fine
    _plant(out, canary.file)
    with pytest.raises(UserError, match=f"^--report {out}: the directory belongs to postgres"):
        _report_in_process(quick, out, option="--report")
    canary.assert_intact()
    assert len(_links(out)) == len(PLANTED)


# ----------------------------------------------------------------------------- row 8

def _study(where: Path) -> Path:
    study = where / "tiny.yaml"
    study.write_text("""
study: reportdir
servers:
  - {name: pg17, install: "17"}
workloads: [select-only]
scale: 1
clients: [1]
duration: 1s
repetitions: 1
""")
    return study


@pytest.fixture
def tmp_store() -> Iterator[Path]:
    """A store path in /tmp, as in ``run --store /tmp/x.db``: its report directory
    ``/tmp/x-report`` is a name any account may take first."""
    store = Path(f"/tmp/teiten-row8-{uuid.uuid4().hex[:8]}.db")
    yield store
    report = store.with_name(store.stem + "-report")
    for path in (store, report, *(Path(f"{store}-{end}") for end in ("journal", "wal", "shm"))):
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path, ignore_errors=True)
        elif os.path.lexists(path):
            path.unlink()


def test_row8_a_report_directory_the_account_made_first_stops_the_run_before_it_begins(
        tmp_store: Path, tmp_path: Path, canary: Canary) -> None:
    report = tmp_store.with_name(tmp_store.stem + "-report")
    _plant(report, canary.file)
    line = _refused(run_cli("run", str(_study(tmp_path)), "--store", str(tmp_store), timeout=120),
                    "--report", report)
    assert line.startswith(f"teiten: error: --report {report}: the directory belongs to "
                           "postgres"), line
    assert not tmp_store.exists(), "the run began"
    canary.assert_intact()
    assert len(_links(report)) == len(PLANTED)


RACE_REPORT_DIR = r"""
d="$1"; t="$2"; stop="$3"
while [ ! -e "$stop" ]; do
  mkdir "$d" 2>/dev/null
  for f in report.html report.md tables.json .teiten-owned; do
    ln -sfn "$t" "$d/$f" 2>/dev/null
  done
  mkdir "$d/tables" 2>/dev/null; ln -sfn "$t" "$d/tables/select-only-tps.csv" 2>/dev/null
  sleep 0.05
done
"""


def test_row8_a_report_directory_the_account_takes_during_the_run_is_refused(
        pg17, tmp_store: Path, tmp_path: Path, canary: Canary) -> None:  # noqa: ANN001
    """The real run: once it has begun (the store exists: its check passed), the account
    makes ``<store>-report`` and races links into it. The run's report refuses the directory
    in one line (exit 2); the study is in the store, and its report is written elsewhere."""
    report = tmp_store.with_name(tmp_store.stem + "-report")
    stop = tmp_path / "stop"
    tmp_path.chmod(0o755)
    env = dict(os.environ, TEITEN_HOME=str(os.environ["TEITEN_HOME"]), PYTHONPATH=str(ROOT / "src"))
    run = subprocess.Popen([sys.executable, "-m", "teiten", "run", str(_study(tmp_path)),
                            "--store", str(tmp_store)], env=env, text=True,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    attack = None
    try:
        deadline = time.monotonic() + 120
        while not tmp_store.exists() and run.poll() is None and time.monotonic() < deadline:
            time.sleep(0.01)
        attack = _start(RACE_REPORT_DIR, str(report), str(canary.file), str(stop))
        out, err = run.communicate(timeout=600)
    finally:
        if run.poll() is None:
            run.terminate()
            run.wait()
        if attack is not None:
            _stop(attack, stop)
    assert "Traceback" not in err, err
    assert run.returncode == 2, (run.returncode, err)
    last = err.splitlines()[-1]
    assert last.startswith(f"teiten: error: --report {report}: the directory belongs to postgres"), err
    assert re.search(r"teiten: \d+ trials: [1-9]\d* ok", err), err
    canary.assert_intact()
    assert report.stat().st_uid == pwd.getpwnam(ACCOUNT).pw_uid
    assert not (report / "report.html").exists() or (report / "report.html").is_symlink()
    with sqlite3.connect(tmp_store) as conn:
        assert conn.execute("SELECT count(*) FROM trials WHERE status = 'ok'").fetchone()[0] >= 1
    elsewhere = tmp_path / "elsewhere"
    run_cli("report", "--store", str(tmp_store), "--out", str(elsewhere), check=True)
    _complete(elsewhere)
    canary.assert_intact()


# ----------------------------------------------------------------------------- as it should be

def test_root_writes_a_whole_report_into_a_new_directory_and_one_it_owns(quick: Path,
                                                                         tmp_path: Path) -> None:
    new = tmp_path / "a" / "b" / "new"
    done = run_cli("report", "--store", str(quick), "--out", str(new), check=True)
    assert done.stdout.splitlines() == [str(new / "report.html"), str(new / "report.md")]
    _complete(new)
    assert stat.S_IMODE(new.stat().st_mode) == 0o755
    assert stat.S_IMODE((new / "report.html").stat().st_mode) == 0o644
    assert (new / MARKER).is_file()
    owned = tmp_path / "owned"
    owned.mkdir(mode=0o700)
    run_cli("report", "--store", str(quick), "--out", str(owned), check=True)
    _complete(owned)
    run_cli("report", "--store", str(quick), "--out", str(owned), check=True)  # again: teiten's
    assert not [p for p in owned.iterdir() if p.name.startswith(".teiten-") and p.name != MARKER]


def test_a_link_root_made_to_its_own_directory_is_followed(quick: Path, tmp_path: Path) -> None:
    """Root's own link (in root's directory) to root's directory: a report goes there, as
    before; only a link another account could have made is refused."""
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "latest").symlink_to(real)
    run_cli("report", "--store", str(quick), "--out", str(tmp_path / "latest"), check=True)
    _complete(real)


def test_links_in_a_directory_of_roots_are_replaced_never_followed(
        quick: Path, tmp_path: Path, canary: Canary) -> None:
    """Links left in a directory of root's (by root, say an older tool) are replaced by the
    report's files, never followed."""
    out = tmp_path / "old"
    out.mkdir()
    (out / "tables").mkdir()
    for name in ("report.html", "report.md", "tables.json", "tables/pgecons-read-tps.csv"):
        (out / name).symlink_to(canary.file)
    run_cli("report", "--store", str(quick), "--out", str(out), "--overwrite", check=True)
    _complete(out)
    canary.assert_intact()


# ----------------------------------------------------------------------------- not root

def _python_for(user: str, home: Path) -> tuple[list[str], dict[str, str]] | None:
    """A Python with teiten that ``user`` may run: the venv's, else the system's of the same
    version with the venv's packages; None when neither."""
    venv = ROOT / ".venv"
    site = venv / "lib" / f"python{sys.version_info.major}.{sys.version_info.minor}" / "site-packages"
    base = {"HOME": str(home), "PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "USER": user,
            "LOGNAME": user}
    candidates = [
        ([str(venv / "bin" / "python")], {**base, "PYTHONPATH": str(ROOT / "src")}),
        ([f"/usr/bin/python{sys.version_info.major}.{sys.version_info.minor}"],
         {**base, "PYTHONPATH": f"{ROOT / 'src'}:{site}"}),
    ]
    for argv, env in candidates:
        try:
            done = subprocess.run([*argv, "-c", "import teiten.cli.main, teiten.report.build"],
                                  user=user, group=user, extra_groups=[], env=env, cwd=home,
                                  capture_output=True, text=True, timeout=60, check=False)
        except OSError:  # not executable by the account (the venv's, below /root)
            continue
        if done.returncode == 0:
            return argv, env
    return None


@pytest.fixture
def account() -> Iterator[str]:
    """An account made for the test, with a clean home, removed with it afterwards."""
    if shutil.which("useradd") is None:
        missing("no useradd to make an account that is not root")
    name = f"trpt{uuid.uuid4().hex[:8]}"
    subprocess.run(["useradd", "-m", "-U", "-s", "/bin/sh", name], check=True, timeout=60)
    try:
        yield name
    finally:
        subprocess.run(["userdel", "-r", name], check=False, timeout=60, capture_output=True)


def test_a_user_who_is_not_root_writes_into_their_own_directories_as_before(
        account: str, request: pytest.FixtureRequest) -> None:
    pw = pwd.getpwnam(account)
    home = Path(pw.pw_dir)
    found = _python_for(account, home)
    if found is None:
        missing(f"no Python with teiten that the account {account} may run (the venv's "
                    f"interpreter is below /root, mode 700, and /usr/bin has no Python "
                    f"{sys.version_info.major}.{sys.version_info.minor})")
    argv, env = found
    store = home / "quick.db"
    shutil.copyfile(GOLDEN, store)
    os.chown(store, pw.pw_uid, pw.pw_gid)
    shared = Path(f"/tmp/teiten-shared-{uuid.uuid4().hex[:8]}")  # root's, that all may write
    shared.mkdir()
    shared.chmod(0o777)
    request.addfinalizer(lambda: shutil.rmtree(shared, ignore_errors=True))

    def report(out: Path) -> subprocess.CompletedProcess[str]:
        return subprocess.run([*argv, "-m", "teiten", "report", "--store", str(store), "--out",
                               str(out)], user=account, group=account, extra_groups=[], env=env,
                              cwd=home, capture_output=True, text=True, timeout=300, check=False)

    for out in (home / "r", home / "r"):  # new, then teiten's own again
        done = report(out)
        assert done.returncode == 0, done.stderr
        _complete(out, owner=pw.pw_uid)
    group_writable = home / "g"  # a umask of 002 (private groups): still the user's own
    subprocess.run(["mkdir", "-m", "775", str(group_writable)], user=account, check=True)
    done = report(group_writable)
    assert done.returncode == 0, done.stderr
    _complete(group_writable, owner=pw.pw_uid)
    _refused(report(shared), "--out", shared)  # not theirs, and others may write it
    assert not list(shared.iterdir())


# ----------------------------------------------------------------------------- the code

def test_no_report_code_writes_by_path() -> None:
    """Every write into a report directory goes through teiten.report.outdir.Writer: no
    mkdir, open, write_text or write_bytes by path in teiten.report and the commands that
    write reports."""
    src = ROOT / "src" / "teiten"
    files = [p for p in (src / "report").glob("*.py") if p.name != "outdir.py"]
    files += [src / "cli" / name for name in ("commands.py", "running.py", "timeline.py")]
    found = []
    for path in files:
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.Call):
                continue
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if name in ("mkdir", "makedirs", "write_bytes", "touch", "symlink_to", "copyfile"):
                found.append(f"{path.name}:{node.lineno} {name}")
            elif name == "open" and not (isinstance(func, ast.Attribute)
                                         and getattr(func.value, "id", "") == "Store"):
                found.append(f"{path.name}:{node.lineno} open")
            elif name == "write_text" and not (isinstance(func, ast.Attribute)
                                               and getattr(func.value, "id", "") == "out"):
                found.append(f"{path.name}:{node.lineno} write_text")
    assert not found, found


# ----------------------------------------------------------------------------- --markdown

def test_markdown_is_appended_only_where_no_other_account_can_point_it(quick: Path, attacker: Path,
                                                                       canary: Canary) -> None:
    """``gate --markdown`` (and bisect's) appends to a file by its path, as root: in a directory
    the server account owns (a link it planted there to a root-only file, or a name it could
    plant one at) it is refused in one line before anything runs; in root's own directory the
    summary is appended in place (the same file, its inode kept, as a CI's step summary is
    read), through root's own link too."""
    gate = ("gate", "--store", str(quick), "--baseline", "pg17", "--candidate", "pg18")
    _as_account('ln -s "$1" "$2"', str(canary.file), str(attacker / "summary.md"))
    for target in (attacker / "summary.md", attacker / "new.md"):
        _refused(run_cli(*gate, "--markdown", str(target)), "--markdown", target)
    canary.assert_intact()
    assert not (attacker / "new.md").exists()
    own = quick.parent / "summary.md"
    own.write_text("# before\n")
    inode = own.stat().st_ino
    first = run_cli(*gate, "--markdown", str(own))
    assert first.returncode in (0, 1, 3) and "Traceback" not in first.stderr, first.stderr
    once = own.read_text()
    assert once.startswith("# before\n") and len(once) > len("# before\n")
    (quick.parent / "link.md").symlink_to(own)  # root's own link, in root's own directory
    again = run_cli(*gate, "--markdown", str(quick.parent / "link.md"))
    assert again.returncode == first.returncode, again.stderr
    assert own.stat().st_ino == inode and own.read_text() == once + once[len("# before\n"):]
