"""``ssh`` servers against a real sshd: the "remote" host is this machine, reached over
OpenSSH on 127.0.0.1 as the unprivileged account postgres, with PostgreSQL 15 from Debian
there and pgbench of the same install here. Nothing is mocked."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import psycopg
import pytest
from tests.sshd import Sshd, available, free_port, running_sshd

from teiten import installs
from teiten.drivers import load, pgbench
from teiten.host import paths
from teiten.host.remote import Ssh
from teiten.installs import Install
from teiten.model.errors import ServerError
from teiten.monitors.remote_system import RemoteBackend
from teiten.monitors.system import CPU_FIELDS, SystemMonitor
from teiten.servers.profiles import Sizing
from teiten.servers.ssh.host import SshHost
from teiten.servers.ssh.server import SshServer
from teiten.spec import ServerSpec
from teiten.workloads import BUILTINS, Workload

PG15 = Path("/usr/lib/postgresql/15/bin")
SIZING = Sizing(ram_bytes=1 << 40, disk_free_bytes=50 << 30, max_clients=4, data_bytes=30 << 20)
REMOTE_HOME = Path("/var/lib/postgresql")  # the postgres account's home: where the host keeps clusters


def why_not() -> str | None:
    """Why these tests cannot run here (a test sshd, the system's PostgreSQL 15), or None."""
    if (why := available()) is not None:
        return f"sshd: {why}"
    return None if (PG15 / "postgres").exists() else f"PostgreSQL 15 is not at {PG15}"


pytestmark = pytest.mark.requires(why_not())


def _workload(name: str) -> Workload:
    b = BUILTINS[name]
    return Workload(name, b.scripts, 1, b.fillfactor, b.modifies_data, b.description)


@pytest.fixture(scope="module")
def sshd() -> Iterator[Sshd]:
    with running_sshd() as server:
        yield server


@pytest.fixture(scope="module")
def pg15() -> Install:
    found = installs.resolve(str(PG15)).install
    assert found is not None
    return found


@pytest.fixture
def run_dir(teiten_home: Path) -> Iterator[Path]:
    path = paths.make_owned(paths.clusters_dir() / f"ssh-{os.getpid()}-{time.monotonic_ns()}",
                            "integration test")
    yield path
    paths.remove_owned(path)


def _spec(sshd: Sshd, install: str = "15", config: Path | None = None) -> ServerSpec:
    return ServerSpec(name="db1", install=install, ssh=sshd.alias,
                      ssh_config=str(config or sshd.config))


def _on(spec: ServerSpec) -> tuple[ServerSpec, SshHost]:
    """The server's spec and the ssh host it names (what the ssh kind builds it on)."""
    assert spec.ssh is not None
    return spec, SshHost(spec.name, spec.ssh, spec.ssh_config)


def _processes_in(path: Path) -> list[psutil.Process]:
    prefix = str(path)
    found = []
    for proc in psutil.process_iter(["pid"]):
        try:
            if proc.cwd().startswith(prefix):
                found.append(proc)
        except psutil.Error:
            continue
    return found


def _files_containing(root: Path, secret: str) -> list[Path]:
    found = []
    for path in root.rglob("*"):
        try:
            if path.is_file() and secret.encode() in path.read_bytes():
                found.append(path)
        except OSError:
            continue
    return found


def test_trials_over_ssh_restore_after_updates_and_leave_nothing(
        sshd: Sshd, pg15: Install, run_dir: Path) -> None:
    w = _workload("tpcb-like")
    server = SshServer(*_on(_spec(sshd)), pg15, run_dir, SIZING)
    remote_base = REMOTE_HOME / ".cache" / "teiten" / "clusters" / run_dir.name
    try:
        server.prepare(w)
        slot = server.slots[w.key]
        assert slot.root == f"{remote_base}/db1--tpcb-like"
        assert (Path(slot.root) / paths.MARKER).is_file()
        # The profile is sized for the host's memory, not for the sizing it was given.
        assert server.host is not None and server.host.ram_bytes == psutil.virtual_memory().total

        endpoint = server.begin_trial(w, "t1", prewarm=True)
        assert (endpoint.host, endpoint.user) == ("127.0.0.1", "postgres")
        password = endpoint.password_env["PGPASSWORD"]
        assert len(password) >= 24

        running = _processes_in(Path(slot.data))
        assert running, "the cluster runs on the host"
        owners = set()
        for proc in running:
            try:
                owners.add(proc.username())
            except psutil.NoSuchProcess:
                continue  # a backend that just ended
        assert owners == {"postgres"}
        for proc in psutil.process_iter(["cmdline"]):
            assert password not in " ".join(proc.info["cmdline"] or []), proc

        run = pgbench.run(pg15, endpoint, w, clients=2, threads=1, duration_s=2)
        assert run.returncode == 0, run.stderr
        assert run.output.transactions > 0

        def history() -> int:
            with psycopg.connect(host=endpoint.host, port=endpoint.port, user="postgres",
                                 password=password, dbname=endpoint.dbname) as conn:
                row = conn.execute("SELECT count(*) FROM pgbench_history").fetchone()
                assert row is not None
                return int(row[0])

        assert history() > 0
        with pytest.raises(psycopg.OperationalError):  # no password, no connection
            psycopg.connect(host=endpoint.host, port=endpoint.port, user="postgres",
                            dbname=endpoint.dbname, connect_timeout=5).close()
        end = server.end_trial()
        assert end.crashed is None
        assert "database system is ready to accept connections" in end.log
        assert not _processes_in(Path(slot.data)), "stopped after the trial"

        # The trial changed the data: the next one starts from the saved copy.
        endpoint = server.begin_trial(w, "t2", prewarm=False)
        assert history() == 0
        assert len(slot.restore_s) == 1
        # A backend killed on the host makes the postmaster restart the others: a crash.
        conn = psycopg.connect(host=endpoint.host, port=endpoint.port, user="postgres",
                               password=password, dbname=endpoint.dbname, autocommit=True)
        row = conn.execute("SELECT pg_backend_pid()").fetchone()
        assert row is not None
        server.ssh.run(["kill", "-KILL", str(row[0])], timeout=30)
        conn.close()
        end = server.end_trial()
        assert end.crashed is not None and "crash" in end.crashed, end.crashed
        assert end.notes == [], end.notes
        assert slot.broken, "the next trial restores the saved copy"

        described = server.describe()
        assert str(described["version"]).startswith(pg15.version)  # "15.20 (Debian 15.20-0+deb12u1)"
        assert described["origin"] == "ssh"
        settings = described["settings"]
        assert isinstance(settings, dict) and settings["autovacuum"]["setting"] == "off"

        # Only the client's address, with scram-sha-256.
        hba = server.ssh.read_text(f"{slot.data}/pg_hba.conf")
        rules = [line.split() for line in hba.splitlines() if line.strip() and not line.startswith("#")]
        assert rules == [["host", "all", "all", "127.0.0.1/32", "scram-sha-256"]]
        # The password is in no file: not here, not on the host (pg_authid holds a verifier).
        assert _files_containing(run_dir, password) == []
        assert server.ssh._control_dir is not None
        assert _files_containing(server.ssh._control_dir, password) == []
        grep = server.ssh.run(["grep", "-rlF", "--", password, slot.root], timeout=60, check=False)
        assert grep.returncode == 1, grep.stdout
    finally:
        server.close()
    assert not remote_base.exists(), "close() removes the host's directories"
    assert not _processes_in(remote_base)
    server.close()  # safe to call twice



def test_the_remote_monitor_streams_per_second_cpu_shares(sshd: Sshd) -> None:
    ssh = Ssh(sshd.alias, sshd.config, label="db1")
    backend = RemoteBackend(ssh)
    try:
        monitor = SystemMonitor(backend=backend)
        monitor.start()
        time.sleep(3)
        result = monitor.stop()
    finally:
        backend.close()
        ssh.close()
    assert len(result.series) >= 2
    for _, metrics in result.series:
        assert sum(metrics[f"cpu.{k}"] for k in CPU_FIELDS) == pytest.approx(100, abs=0.5)
        assert sum(metrics[f"cpu0.{k}"] for k in CPU_FIELDS) == pytest.approx(100, abs=0.5)
        assert metrics["mem.used"] > 0
    times = [t for t, _ in result.series]
    assert all(0.5 < b - a < 1.6 for a, b in zip(times, times[1:], strict=False)), times
    assert "net.lo.rx_bytes_s" in result.summary


def test_an_unreachable_host_fails_quickly_with_one_line(
        tmp_path: Path, pg15: Install, run_dir: Path) -> None:
    port = free_port()  # nothing listens there
    config = tmp_path / "ssh_config"
    config.write_text(f"Host nowhere\n    HostName 127.0.0.1\n    Port {port}\n    User postgres\n"
                      f"    UserKnownHostsFile {tmp_path / 'known_hosts'}\n")
    spec = ServerSpec(name="db1", install="15", ssh="nowhere", ssh_config=str(config))
    server = SshServer(*_on(spec), pg15, run_dir, SIZING)
    started = time.monotonic()
    with pytest.raises(ServerError) as caught:
        server.prepare(_workload("select-only"))
    assert time.monotonic() - started < 15
    server.close()
    message = str(caught.value)
    assert "\n" not in message
    assert message == (
        f"ssh host db1 (nowhere): cannot connect: ssh: connect to host 127.0.0.1 port {port}: "
        f"Connection refused; check that sshd runs there and that `ssh -F {config} nowhere true` "
        "works without a password")


def test_a_major_missing_on_the_host_is_named_with_how_to_install_it(
        sshd: Sshd, pg15: Install, run_dir: Path) -> None:
    server = SshServer(*_on(_spec(sshd, install="99")), pg15, run_dir, SIZING)
    try:
        with pytest.raises(ServerError) as caught:
            server.prepare(_workload("select-only"))
    finally:
        server.close()
    assert str(caught.value) == (
        f"PostgreSQL 99 is not installed on {sshd.alias} (server db1; looked in "
        f"/usr/lib/postgresql/*/bin and pg_config on the PATH there; found {pg15.version} in "
        f"{PG15}); install it there, e.g. apt-get install postgresql-99")
    assert not (REMOTE_HOME / ".cache" / "teiten" / "clusters" / run_dir.name).exists()


def test_workloads_loaded_by_sql_are_refused_over_ssh(
        sshd: Sshd, pg15: Install, run_dir: Path) -> None:
    tpcc = Workload("tpcc", (), 1, None, True, "TPC-C-like", app="tpcc")
    server = SshServer(*_on(_spec(sshd)), pg15, run_dir, SIZING)
    with pytest.raises(ServerError, match="not supported over ssh in this version"):
        server.prepare(tpcc)
    server.close()


@pytest.mark.alone  # its load clients must start within 0.1 s, and it looks at every remote pgbench
def test_load_clients_over_ssh_start_together_and_one_unreachable_stops_them_all(
        sshd: Sshd, pg15: Install, run_dir: Path, tmp_path: Path) -> None:
    w = _workload("select-only")
    server = SshServer(*_on(_spec(sshd)), pg15, run_dir, SIZING)
    remote = Ssh(sshd.alias, sshd.config, label="c2")
    try:
        server.prepare(w)
        endpoint = server.begin_trial(w, "t1", prewarm=False)
        targets = [load.Target("db1", endpoint)]
        here = load.Client("local")
        c2 = load.Client("c2", ssh=remote, pgbench=str(PG15 / "pgbench"))
        remote.check()

        together = load.run(pg15, [here, c2], targets, w, sessions=1, threads=1, duration_s=1)
        assert [(p.client, p.run.returncode) for p in together.parts] == [("local", 0), ("c2", 0)]
        assert all(p.run.output.transactions > 0 for p in together.parts)
        assert not any(p.run.stderr.startswith("teiten-") for p in together.parts)
        # The remote shell is connected and waiting before the barrier: only the word to
        # go crosses the connection after it (it was about 0.25 s when ssh was opened then).
        assert together.skew_s < 0.1, together.skew_s

        config = tmp_path / "ssh_config"
        config.write_text(f"Host nowhere\n    HostName 127.0.0.1\n    Port {free_port()}\n"
                          f"    User postgres\n    UserKnownHostsFile {tmp_path / 'known_hosts'}\n")
        gone = load.Client("gone", ssh=Ssh("nowhere", config, label="gone"))
        started = time.monotonic()
        with pytest.raises(ServerError, match=r"^ssh host gone \(nowhere\): cannot connect: "):
            load.run(pg15, [here, c2, gone], targets, w, sessions=1, threads=1, duration_s=2)
        assert time.monotonic() - started < 15, "the others stop waiting at once"
        # c2's shell, connected and waiting, was ended: no pgbench of it runs on the host.
        for proc in psutil.process_iter(["name", "username"]):
            assert not (proc.info["name"] == "pgbench" and proc.info["username"] == "postgres")
        assert server.end_trial().crashed is None
    finally:
        remote.close()
        server.close()
