"""``docker`` servers: the official postgres image run with the docker CLI (METHODS S5).

S5 compares four cases: the data directory in the container's own filesystem (overlayfs)
or in a host directory bind-mounted into it, times the host's network or a bridge network
with a port published on 127.0.0.1. teiten runs one container per (server, workload):

- ``PGDATA`` is ``/teiten-pgdata``, outside the image's declared VOLUME (the image would
  otherwise put the data in an anonymous volume, which is neither case). With
  ``volume: host`` a directory of teiten's own is bind-mounted there.
- ``network: host`` listens on 127.0.0.1 on a free port of this machine; ``network: bridge``
  listens inside the container on 5432, published as 127.0.0.1:<free port>.
- Clients connect over TCP to 127.0.0.1; the image's POSTGRES_HOST_AUTH_METHOD=trust lets
  them in. Settings go on the command line as ``-c name=value``.

Restoring the data before a trial that follows a data-changing trial:

- ``volume: host``: the stopped container's data directory is saved after loading with
  :mod:`teiten.servers.snapshot` and restored in place (only changed files are copied), and
  the same container is started again.
- ``volume: container``: the loaded, cleanly stopped container is committed to an image of
  teiten's own (``teiten-owned/...:loaded``); a trial after a data-changing one starts a
  fresh container from that image (the writable layer starts empty again, so each such
  trial pays the copy-up of the files it writes, as the first trial did).

Everything teiten creates carries the label ``teiten.owned=<run id>`` (the run directory's
name); :func:`remove_stale` removes containers and images with that label after a killed
run, ``docker rm -v`` removes the anonymous volume of the image's VOLUME with the container.
DOCKER_HOST, DOCKER_CONTEXT and the like are passed to the docker CLI.
"""

from __future__ import annotations

import logging
import os
import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path

import psycopg
from psycopg import conninfo as pg_conninfo

from teiten.host import client_account, paths, procs, waiting
from teiten.installs import Install
from teiten.model.errors import ProcessError, ServerError, UserError
from teiten.monitors.system import device_of
from teiten.servers import snapshot
from teiten.servers.base import DataSet, Endpoint, Server, TrialEnd, crash_verdict
from teiten.servers.cluster import free_port
from teiten.servers.docker import image as docker_image
from teiten.servers.sql import create_database, describe, housekeeping, make_extensions, settle

log = logging.getLogger(__name__)

LABEL = "teiten.owned"
PGDATA = "/teiten-pgdata"  # outside the image's VOLUME (/var/lib/postgresql[/data])
SUPERUSER = "postgres"
SHM_SIZE = "1g"  # docker's default /dev/shm (64 MB) is too small for parallel query
_DOCKER_ENV = ("DOCKER_HOST", "DOCKER_CONTEXT", "DOCKER_CONFIG", "DOCKER_TLS_VERIFY",
               "DOCKER_CERT_PATH")


# -- argument lists (pure) ----------------------------------------------------------------

@dataclass(frozen=True)
class ContainerSpec:
    """Everything ``docker run`` needs for one container."""

    name: str
    image: str
    volume: str  # "container" | "host"
    network: str  # "host" | "bridge"
    port: int  # where clients connect on 127.0.0.1
    settings: dict[str, str] = field(default_factory=dict)
    data_dir: Path | None = None  # the host directory mounted at PGDATA (volume: host)
    initdb_args: tuple[str, ...] = ("--no-locale", "--encoding=UTF8")  # as local (METHODS S1)
    own_image: bool = False  # an image teiten built (docker_image): initdb's arguments as argv
    run_id: str = ""
    server: str = ""


def run_argv(spec: ContainerSpec, docker: str = "docker") -> list[str]:
    """``docker run -d ...`` for ``spec``."""
    argv = [docker, "run", "--detach", "--name", spec.name,
            "--label", f"{LABEL}={spec.run_id}", "--label", f"teiten.server={spec.server}",
            "--shm-size", SHM_SIZE, "--stop-timeout", "60", "--stop-signal", "SIGINT",
            "--env", "POSTGRES_HOST_AUTH_METHOD=trust",
            "--env", f"POSTGRES_INITDB_ARGS={' '.join(spec.initdb_args)}",
            "--env", f"PGDATA={PGDATA}"]
    if spec.volume == "host":
        if spec.data_dir is None:
            raise ValueError("volume: host needs a data directory")
        argv += ["--volume", f"{spec.data_dir}:{PGDATA}"]
    elif spec.volume != "container":
        raise ValueError(f"unknown volume {spec.volume!r}")
    ours: dict[str, str] = {}
    if spec.network == "host":
        # The image's temporary init server reads PGPORT; the final one gets -c port.
        argv += ["--network", "host", "--env", f"PGPORT={spec.port}"]
        ours = {"port": str(spec.port), "listen_addresses": "127.0.0.1"}
    elif spec.network == "bridge":
        argv += ["--publish", f"127.0.0.1:{spec.port}:5432"]
        ours = {"listen_addresses": "*"}
    else:
        raise ValueError(f"unknown network {spec.network!r}")
    # teiten's own image takes initdb's arguments as words of their own, before "--"
    argv += [spec.image, *((*spec.initdb_args, "--") if spec.own_image else ()), "postgres"]
    for name, value in {**spec.settings, **ours}.items():  # ours last: the last -c wins
        argv += ["-c", f"{name}={value}"]
    return argv


def commit_argv(container: str, image: str, run_id: str, docker: str = "docker") -> list[str]:
    """``docker commit`` of a stopped container to teiten's own, labelled, image."""
    return [docker, "commit", "--change", f"LABEL {LABEL}={run_id}", container, image]


def remove_container_argv(container: str, docker: str = "docker") -> list[str]:
    """Remove a container and its anonymous volumes, running or not."""
    return [docker, "rm", "--force", "--volumes", container]


def owned_filter(run_id: str) -> str:
    return f"label={LABEL}={run_id}"


def docker_name(*parts: str) -> str:
    """A container name or image repository from ``parts``: lowercase [a-z0-9._-]."""
    text = "-".join(parts).lower()
    text = re.sub(r"[^a-z0-9._-]+", "-", text)
    return re.sub(r"[._-]{2,}", "-", text).strip("._-") or "teiten"


def engine_message(server: str, returncode: int | None, stdout: str, stderr: str) -> str | None:
    """What ``docker version --format '{{.Server.Version}}'`` says about the engine, as one
    line naming the server, or None when an engine answered."""
    if returncode == 0 and stdout.strip():
        return None
    first = next((line.strip() for line in stderr.splitlines() if line.strip()), "")
    # "Cannot connect to the Docker daemon at unix:///var/run/docker.sock. Is the docker
    # daemon running?": keep the first sentence, which names the socket.
    first = re.sub(r"\.\s+Is the docker daemon running\?$", "", first).rstrip(".")
    why = f" ({first})" if first else ""
    return (f"docker server '{server}': no Docker engine answers here{why}; start dockerd "
            "or remove this server")


def engine_problem(server: str, *, timeout: float = 10) -> str | None:
    """Why the docker CLI cannot run containers here (one line), or None when it can."""
    docker = _docker_cli()
    if docker is None:
        return (f"docker server '{server}': the docker CLI is not installed (no 'docker' on "
                "PATH); install it or remove this server")
    try:
        done = procs.run([docker, "version", "--format", "{{.Server.Version}}"],
                         timeout=timeout, check=False, env=_env(), what="docker version")
    except ProcessError:
        return (f"docker server '{server}': no Docker engine answered within {timeout:g} s; "
                "start dockerd or remove this server")
    return engine_message(server, done.returncode, done.stdout, done.stderr)


def remove_stale(run_id: str) -> list[str]:
    """Remove the containers and images labelled as ``run_id``'s (after a killed run)."""
    docker = _docker_cli()
    if docker is None:
        return []
    removed: list[str] = []
    for kind, listing in (("container", ["ps", "--all"]), ("image", ["images"])):
        done = procs.run([docker, *listing, "--quiet", "--filter", owned_filter(run_id)],
                         timeout=30, check=False, env=_env(), what=f"docker {listing[0]}")
        for ident in sorted(set(done.stdout.split())):
            argv = (remove_container_argv(ident, docker) if kind == "container"
                    else [docker, "image", "rm", "--force", ident])
            if procs.run(argv, timeout=120, check=False, env=_env()).returncode == 0:
                removed.append(f"{kind} {ident}")
    return removed


def _docker_cli() -> str | None:
    return shutil.which("docker")


def _env() -> dict[str, str]:
    return procs.build_env({k: v for k, v in os.environ.items() if k in _DOCKER_ENV})


engine_env = _env  # what the docker CLI is run with (DOCKER_HOST and the like)


# -- the server ---------------------------------------------------------------------------

@dataclass
class _Slot:
    root: Path  # a directory of teiten's own for this workload
    database: str
    container: str | None = None  # the current container (None: start one from the image)
    port: int = 0
    image: str | None = None  # volume: container: the committed image of the loaded data
    saved: Path | None = None  # volume: host: the saved data directory
    manifest: snapshot.Manifest = field(default_factory=dict)
    trials: int = 0  # begun since the data was loaded
    serial: int = 0
    dirty: bool = False
    broken: bool = False
    log_offset: int = 0


class DockerServer(Server):
    kind = "docker"

    def __init__(self, name: str, install: Install, image: str | None, volume: str,
                 network: str, settings: dict[str, str], client: Install, run_dir: Path,
                 initdb_args: tuple[str, ...] = ("--no-locale", "--encoding=UTF8")):
        if volume not in ("container", "host"):
            raise UserError(f"docker server '{name}': volume must be 'container' or 'host', "
                            f"not '{volume}'")
        if network not in ("host", "bridge"):
            raise UserError(f"docker server '{name}': network must be 'host' or 'bridge', "
                            f"not '{network}'")
        self.name = name
        self.install = install  # the study's own, which the image holds when none is given
        self.given = image  # an image the study names (pulled when the engine lacks it)
        self.image = image  # None until the image of the install is built (prepare)
        self.built: docker_image.Built | None = None
        self.volume = volume
        self.network = network
        self.settings = dict(settings)
        self.initdb_args = initdb_args
        self.client = client  # whose pgbench loads and drives the load
        self.run_dir = run_dir
        self.run_id = run_dir.name
        self.slots: dict[str, _Slot] = {}
        self.containers: set[str] = set()  # every container this server created
        self.images: set[str] = set()  # every image this server committed
        self.roots: set[Path] = set()  # every directory this server created
        self.current: _Slot | None = None
        self.description: dict[str, object] | None = None

    def engine_problem(self) -> str | None:
        return engine_problem(self.name)

    # -- docker and connections --------------------------------------------------------

    def _docker(self, *args: str, timeout: float, what: str, check: bool = True) -> procs.Completed:
        docker = _docker_cli()
        if docker is None:
            raise UserError(f"docker server '{self.name}': the docker CLI is not installed")
        try:
            return procs.run([docker, *args], timeout=timeout, check=check, env=_env(), what=what)
        except ProcessError as exc:
            raise ServerError(f"docker server '{self.name}': {exc}") from None

    def _conninfo(self, slot: _Slot, dbname: str = "postgres") -> str:
        return pg_conninfo.make_conninfo(host="127.0.0.1", port=slot.port, user=SUPERUSER,
                                         dbname=dbname,
                                         options=housekeeping(self.install.release))

    def _connect(self, slot: _Slot, dbname: str = "postgres") -> psycopg.Connection:
        try:
            return psycopg.connect(self._conninfo(slot, dbname), autocommit=True,
                                   connect_timeout=10)
        except psycopg.Error as exc:
            raise ServerError(f"docker server '{self.name}': cannot connect to {dbname} on "
                              f"127.0.0.1:{slot.port}: {exc}") from exc

    def _wait_ready(self, slot: _Slot, *, timeout: float = 180) -> None:
        """Until the final server accepts TCP (the image's init server listens on no TCP)."""
        def ready() -> bool:
            try:
                self._connect(slot).close()
                return True
            except ServerError:
                if not self._running(slot):
                    raise ServerError(f"docker server '{self.name}': container {slot.container} "
                                      f"stopped while starting: {procs.tail(self._logs(slot))}"
                                      ) from None
                return False
        waiting.wait_until(ready, timeout=timeout, interval=0.5, error=ServerError,
                           what=f"PostgreSQL in container {slot.container} on 127.0.0.1:{slot.port}")

    def _running(self, slot: _Slot) -> bool:
        if slot.container is None:
            return False
        done = self._docker("inspect", "--format", "{{.State.Running}}", slot.container,
                            timeout=30, check=False, what="docker inspect")
        return done.stdout.strip() == "true"

    def _logs(self, slot: _Slot) -> str:
        if slot.container is None:
            return ""
        done = self._docker("logs", slot.container, timeout=60, check=False, what="docker logs")
        return done.stdout + done.stderr  # PostgreSQL logs to stderr

    def _run_container(self, slot: _Slot, image: str) -> None:
        slot.serial += 1
        slot.container = docker_name("teiten", self.run_id, self.name, slot.root.name,
                                     str(slot.serial))
        slot.port = free_port()
        spec = ContainerSpec(name=slot.container, image=image, volume=self.volume,
                             network=self.network, port=slot.port, settings=self.settings,
                             data_dir=slot.root / "data" if self.volume == "host" else None,
                             initdb_args=self.initdb_args, own_image=self.given is None,
                             run_id=self.run_id, server=self.name)
        self.containers.add(slot.container)
        self._docker(*run_argv(spec)[1:], timeout=120, what="docker run")
        slot.log_offset = 0
        self._wait_ready(slot)

    def _start(self, slot: _Slot) -> None:
        assert slot.container is not None
        slot.log_offset = len(self._logs(slot))
        self._docker("start", slot.container, timeout=120, what="docker start")
        self._wait_ready(slot)

    def _stop(self, slot: _Slot) -> None:
        if slot.container is not None:
            self._docker("stop", "--time", "60", slot.container, timeout=120, what="docker stop")

    def _remove(self, container: str) -> None:
        self._docker(*remove_container_argv(container)[1:], timeout=120, check=False,
                     what="docker rm")
        self.containers.discard(container)

    # -- the Server protocol -----------------------------------------------------------------

    def prepare(self, workload: DataSet) -> None:
        if workload.key in self.slots:
            return
        root = paths.make_owned(self.run_dir / f"{self.name}--{workload.key}",
                                f"docker server {self.name}/{workload.key}")
        self.roots.add(root)
        slot = _Slot(root=root, database=workload.database)
        if self.volume == "host":
            # The container's entrypoint (root) chowns it to the image's postgres account.
            # safe: in the cluster's root, teiten's (the container's entrypoint takes it over)
            (root / "data").mkdir(mode=0o700)
        image = self._image()
        self._run_container(slot, image)
        try:
            self._load(slot, workload)
        finally:
            self._stop(slot)
        if self.volume == "host":
            slot.saved = root / "snapshot"
            slot.manifest = snapshot.take(root / "data", slot.saved)
        else:
            assert slot.container is not None
            slot.image = docker_name("teiten-owned", self.run_id, self.name, workload.key) + ":loaded"
            self._docker(*commit_argv(slot.container, slot.image, self.run_id)[1:], timeout=1800,
                         what="docker commit")
            self.images.add(slot.image)
            self._remove(slot.container)
            slot.container = None
        self.slots[workload.key] = slot

    def _image(self) -> str:
        """The image to run: the one the study names (pulled when the engine lacks it), else
        that of the study's own install, built once (:mod:`teiten.servers.docker.image`)."""
        if self.image is None:
            docker = _docker_cli()
            if docker is None:
                raise UserError(f"docker server '{self.name}': the docker CLI is not installed")
            self.built = docker_image.build(self.install, [docker], _env())
            self.image = self.built.tag
        elif self._docker("image", "inspect", self.image, timeout=60, check=False,
                          what="docker image inspect").returncode != 0:
            self._docker("pull", self.image, timeout=1800, what=f"docker pull {self.image}")
        return self.image

    def _load(self, slot: _Slot, workload: DataSet) -> None:
        with self._connect(slot) as conn:
            create_database(conn, workload.database)
        with self._connect(slot, workload.database) as conn:
            make_extensions(conn, self.settings.get("shared_preload_libraries", ""))
        conninfo = self._conninfo(slot, workload.database)
        jobs = os.cpu_count() or 1
        if workload.sql_loaded:
            workload.load_sql(conninfo, jobs=jobs)
        else:
            client_account.run([str(self.client.binary("pgbench")), *workload.init_args(), "-h",
                        "127.0.0.1", "-p", str(slot.port), "-U", SUPERUSER, workload.database],
                       timeout=7200, what="pgbench -i",
                       extra_env={"PGOPTIONS": housekeeping(self.install.release)})
        with self._connect(slot, workload.database) as conn:
            conn.execute("CHECKPOINT")
            if self.description is None:
                self.description = describe(conn, None if self.given else self.install)

    def begin_trial(self, workload: DataSet, trial_id: str, *, prewarm: bool) -> Endpoint:
        slot = self.slots[workload.key]
        self.current = slot
        cycle = self.cycle
        if self._running(slot):  # left over from an interrupted trial
            with cycle.phase("stop_leftover"):
                self._stop(slot)
        if slot.dirty and self.keep_data and not slot.broken:  # trials: {restore: first}
            cycle.start.kept(self.keep_data)
        elif slot.dirty or slot.broken:
            with cycle.phase("restore"):
                if self.volume == "host":
                    assert slot.saved is not None
                    slot.manifest, copied = snapshot.restore(slot.saved, slot.root / "data",
                                                             slot.manifest)
                    log.info("%s: restored %d MB", self.name, copied >> 20)
                elif slot.container is not None:
                    self._remove(slot.container)
                    slot.container = None
            cycle.start.restored(snapshot.INCREMENTAL if self.volume == "host"
                                 else "container made again from the loaded image", crashed=slot.broken)
            slot.dirty = slot.broken = False
        else:
            cycle.start.unrestored(slot.trials > 0)
        with cycle.phase("start"):
            if slot.container is None:
                assert slot.image is not None
                self._run_container(slot, slot.image)
            else:
                self._start(slot)
        cycle.start.server = "restarted"
        with self._connect(slot, workload.database) as conn:
            settle(conn, cycle, prewarm=prewarm)
        slot.dirty = workload.modifies_data
        slot.trials += 1
        return Endpoint(host="127.0.0.1", port=slot.port, user=SUPERUSER,
                        dbname=workload.database)

    def end_trial(self) -> TrialEnd:
        slot = self.current
        if slot is None:
            return TrialEnd()
        self.current = None
        alive = self._running(slot)
        text = self._logs(slot)[slot.log_offset:]
        notes: list[str] = []
        try:
            with self.cycle.phase("stop"):
                self._stop(slot)
        except ServerError as exc:
            notes.append(str(exc))
        crashed = crash_verdict({f"container {slot.container}": alive}, {"": text})
        if crashed:
            slot.broken = True
        return TrialEnd(log=text, crashed=crashed, notes=notes)

    def describe(self) -> dict[str, object]:
        found = dict(self.description or {})
        image = self.image or docker_image.tag_of(self.install)
        image_id = self._docker("image", "inspect", "--format", "{{.Id}}", image,
                                timeout=30, check=False, what="docker image inspect").stdout.strip()
        engine = self._docker("info", "--format", "{{.Driver}} {{.ServerVersion}}", timeout=30,
                              check=False, what="docker info").stdout.split()
        found["docker"] = {"image": image, "image_id": image_id or None,
                           "built_from": None if self.given else str(self.install.bindir),
                           "volume": self.volume, "network": self.network,
                           "storage_driver": engine[0] if engine else None,
                           "engine": engine[1] if len(engine) > 1 else None}
        # what teiten sets so because the server runs in a container (run_argv, settings)
        found["placed"] = ["logging_collector", *(["listen_addresses"] if self.network == "bridge" else [])]
        return found

    def devices(self) -> dict[str, str]:
        if self.current is None:
            return {}
        if self.volume == "host":
            where = self.current.root / "data"
        else:
            root = self._docker("info", "--format", "{{.DockerRootDir}}", timeout=30,
                                check=False, what="docker info").stdout.strip()
            if not root:
                return {}
            where = Path(root)
        dev = device_of(where)
        return {"data": dev, "wal": dev} if dev else {}

    def server_pid(self) -> int | None:
        """The postmaster's pid on this machine (the image execs postgres as the container's
        first process)."""
        slot = self.current
        if slot is None or slot.container is None:
            return None
        done = self._docker("inspect", "--format", "{{.State.Pid}}", slot.container,
                            timeout=30, check=False, what="docker inspect")
        pid = done.stdout.strip()
        return int(pid) if pid.isdigit() and int(pid) > 0 else None

    def close(self) -> None:
        """Remove the containers and images this server created, and its directories."""
        self.current = None
        for container in sorted(self.containers):
            self._remove(container)
        for image in sorted(self.images):
            self._docker("image", "rm", "--force", image, timeout=120, check=False,
                         what="docker image rm")
        self.images.clear()
        self.slots.clear()
        for root in sorted(self.roots):
            paths.remove_owned(root)
        self.roots.clear()
