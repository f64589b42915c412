"""The docker server type: its docker command lines for the four S5 cases, and what it says
where no Docker engine answers (DOCKER_HOST names a socket that does not exist, so that the
test does not depend on whether this machine runs an engine)."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from teiten.installs import Install
from teiten.model.errors import UserError
from teiten.servers.docker import server as docker
from teiten.servers.docker.server import ContainerSpec, DockerServer, run_argv

SETTINGS = {"shared_buffers": "128MB", "max_connections": "200"}
COMMON = ["docker", "run", "--detach", "--name", "teiten-run1-c1-w-1",
          "--label", "teiten.owned=run1", "--label", "teiten.server=c1",
          "--shm-size", "1g", "--stop-timeout", "60", "--stop-signal", "SIGINT",
          "--env", "POSTGRES_HOST_AUTH_METHOD=trust",
          "--env", "POSTGRES_INITDB_ARGS=--no-locale --encoding=UTF8",
          "--env", "PGDATA=/teiten-pgdata"]
USER_SETTINGS = ["-c", "shared_buffers=128MB", "-c", "max_connections=200"]


def _spec(volume: str, network: str) -> ContainerSpec:
    return ContainerSpec(name="teiten-run1-c1-w-1", image="postgres:17", volume=volume,
                         network=network, port=54321, settings=SETTINGS,
                         data_dir=Path("/srv/run1/c1--w/data") if volume == "host" else None,
                         run_id="run1", server="c1")


def test_container_filesystem_and_host_network() -> None:
    assert run_argv(_spec("container", "host")) == [
        *COMMON, "--network", "host", "--env", "PGPORT=54321", "postgres:17", "postgres",
        *USER_SETTINGS, "-c", "port=54321", "-c", "listen_addresses=127.0.0.1"]


def test_container_filesystem_and_bridge_network() -> None:
    assert run_argv(_spec("container", "bridge")) == [
        *COMMON, "--publish", "127.0.0.1:54321:5432", "postgres:17", "postgres",
        *USER_SETTINGS, "-c", "listen_addresses=*"]


def test_host_volume_and_host_network() -> None:
    assert run_argv(_spec("host", "host")) == [
        *COMMON, "--volume", "/srv/run1/c1--w/data:/teiten-pgdata",
        "--network", "host", "--env", "PGPORT=54321", "postgres:17", "postgres",
        *USER_SETTINGS, "-c", "port=54321", "-c", "listen_addresses=127.0.0.1"]


def test_host_volume_and_bridge_network() -> None:
    assert run_argv(_spec("host", "bridge")) == [
        *COMMON, "--volume", "/srv/run1/c1--w/data:/teiten-pgdata",
        "--publish", "127.0.0.1:54321:5432", "postgres:17", "postgres",
        *USER_SETTINGS, "-c", "listen_addresses=*"]


def test_teiten_owns_port_and_listen_addresses() -> None:
    spec = ContainerSpec(name="n", image="i", volume="container", network="host", port=5500,
                         settings={"port": "5432", "listen_addresses": "*"})
    argv = run_argv(spec)
    assert argv[-4:] == ["-c", "port=5500", "-c", "listen_addresses=127.0.0.1"]
    assert "port=5432" not in argv and "listen_addresses=*" not in argv


def test_commit_and_removal_argv() -> None:
    assert docker.commit_argv("c", "teiten-owned/run1-c1-w:loaded", "run1") == [
        "docker", "commit", "--change", "LABEL teiten.owned=run1", "c",
        "teiten-owned/run1-c1-w:loaded"]
    assert docker.remove_container_argv("c") == ["docker", "rm", "--force", "--volumes", "c"]
    assert docker.owned_filter("run1") == "label=teiten.owned=run1"


def test_names_are_valid_for_docker() -> None:
    assert docker.docker_name("teiten", "S5-Docker-3-20250101", "C1", "select-only@1") == \
        "teiten-s5-docker-3-20250101-c1-select-only-1"
    assert docker.docker_name("--", "__") == "teiten"


def test_engine_message_when_no_daemon_answers() -> None:
    err = ("Cannot connect to the Docker daemon at unix:///var/run/docker.sock. "
           "Is the docker daemon running?\n")
    assert docker.engine_message("c1", 1, "", err) == (
        "docker server 'c1': no Docker engine answers here (Cannot connect to the Docker "
        "daemon at unix:///var/run/docker.sock); start dockerd or remove this server")
    assert docker.engine_message("c1", 0, "27.3.1\n", "") is None


@pytest.mark.requires(None if shutil.which("docker") else "the docker CLI is not installed")
def test_engine_problem_here_names_the_missing_engine(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")
    problem = docker.engine_problem("c1")
    assert problem is not None
    assert problem.startswith("docker server 'c1': no Docker engine answers here (")
    assert "unix:///nonexistent/docker.sock" in problem
    assert problem.endswith("); start dockerd or remove this server")
    assert "\n" not in problem
    # Nothing to clean up, and asking does not fail without an engine.
    assert docker.remove_stale("no-such-run") == []


def test_the_server_defaults_to_an_image_of_its_own_install(tmp_path: Path) -> None:
    client = Install(bindir=Path("/usr/lib/postgresql/15/bin"), version="15.0", major=15,
                     origin="system")
    server = DockerServer("c1", client, None, "host", "bridge", {}, client, tmp_path)
    assert server.image is None and server.given is None  # built from the install at prepare
    assert server.kind == "docker" and server.log_mark() is None and server.server_pid() is None
    server.close()
    server.close()  # nothing was created; safe twice


@pytest.mark.parametrize(("volume", "network", "message"), [
    ("tmpfs", "host", "docker server 'c1': volume must be 'container' or 'host', not 'tmpfs'"),
    ("host", "macvlan", "docker server 'c1': network must be 'host' or 'bridge', not 'macvlan'"),
])
def test_bad_options_are_refused(tmp_path: Path, volume: str, network: str, message: str) -> None:
    client = Install(bindir=Path("/nonexistent"), version="15.0", major=15, origin="system")
    with pytest.raises(UserError) as caught:
        DockerServer("c1", client, None, volume, network, {}, client, tmp_path)
    assert str(caught.value) == message


def test_teitens_own_image_takes_initdbs_arguments_as_words_of_their_own() -> None:
    spec = ContainerSpec(name="teiten-run1-c1-w-1", image="teiten-install/pypi-17.11:0123",
                         volume="container", network="bridge", port=54321, settings=SETTINGS,
                         initdb_args=("--locale=ja_JP.UTF-8", "--encoding=UTF8"), own_image=True,
                         run_id="run1", server="c1")
    argv = run_argv(spec)
    at = argv.index("teiten-install/pypi-17.11:0123")
    assert argv[at:at + 5] == ["teiten-install/pypi-17.11:0123", "--locale=ja_JP.UTF-8",
                               "--encoding=UTF8", "--", "postgres"]


@pytest.fixture
def open_dir() -> Iterator[Path]:
    """A directory the server account can reach (pytest's tmp_path is root's alone)."""
    where = Path(tempfile.mkdtemp(prefix="teiten-entrypoint-"))
    where.chmod(0o755)
    yield where
    shutil.rmtree(where, ignore_errors=True)


def test_the_entrypoint_gives_initdb_each_argument_whole_and_runs_the_command(open_dir: Path) -> None:
    """The image's entrypoint, run by sh here as an ordinary user, with initdb a stand-in that
    prints its arguments: none is split or expanded, and the command after -- runs."""
    from teiten.servers.docker import image as docker_image

    tmp_path = open_dir
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "initdb").write_text('#!/bin/sh\nfor a do printf "initdb[%s]\\n" "$a"; done\n')
    (tmp_path / "bin" / "initdb").chmod(0o755)
    (tmp_path / "entrypoint").write_text(docker_image.ENTRYPOINT)
    data = tmp_path / "data"
    data.mkdir()
    odd = "$(touch " + str(tmp_path / "ran") + ")"
    argv = ["sh", str(tmp_path / "entrypoint"), "--locale=a b", odd, "--", "printf", "cmd[%s]\\n",
            "postgres", "-c", "x=1 2"]
    if os.geteuid() == 0:  # as the server account would run it (the entrypoint drops root)
        for path in (tmp_path, tmp_path / "bin", data):
            path.chmod(0o777 if path == data else 0o755)
        argv = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", *argv]
    done = subprocess.run(argv, env={"PGDATA": str(data), "PATH": f"{tmp_path / 'bin'}:/usr/bin:/bin"},
                          capture_output=True, text=True, timeout=30, check=True)
    assert done.stdout.splitlines() == [
        "initdb[-D]", f"initdb[{data}]", "initdb[-U]", "initdb[postgres]", "initdb[--auth=trust]",
        "initdb[--locale=a b]", f"initdb[{odd}]", "cmd[postgres]", "cmd[-c]", "cmd[x=1 2]"]
    assert not (tmp_path / "ran").exists()
    assert (data / "pg_hba.conf").read_text() == "host all all all trust\n"
