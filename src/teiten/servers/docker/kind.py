"""Servers in a Docker container on this machine's engine (servers/docker/server.py, METHODS S5)."""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from pydantic import TypeAdapter

from teiten.installs import Install
from teiten.servers import profiles
from teiten.servers.base import Server
from teiten.servers.docker import image as docker_image
from teiten.servers.docker import server as docker
from teiten.servers.docker.spec import DockerOptions, DockerPlace
from teiten.servers.kind import Kind, Problem, Request
from teiten.spec import ServerSpec


class Docker(Kind):
    name = "docker"
    field = "docker"

    install_here = True  # its 'install' is PostgreSQL on this machine, which the image holds

    def build(self, request: Request) -> Server:
        spec, options = request.spec, _options(request.spec)
        return docker.DockerServer(spec.name, request.install, options.image, options.volume,
                                   options.network, settings(spec, request.sizing, request.install),
                                   request.client or request.install, request.run_dir,
                                   tuple(spec.initdb_options().args(request.install.major)))

    def problem(self, spec: ServerSpec) -> Problem | None:
        if _options(spec).image is not None:
            return None
        if os.geteuid() != 0:
            return Problem("docker", f"server {spec.name}: teiten builds the container's image from "
                           "its install as root (mmdebstrap); run as root, or name an image in "
                           "docker: {image: ...}")
        missing = sorted({p for p in ("mmdebstrap", "tar", "useradd") if shutil.which(p) is None})
        if missing:
            return Problem("docker", f"server {spec.name}: building the container's image needs "
                           f"{', '.join(missing)}: apt-get install mmdebstrap")
        return None

    def unavailable(self, spec: ServerSpec) -> str | None:
        return docker.engine_problem(spec.name)

    def image_to_build(self, spec: ServerSpec, install: Install | None) -> tuple[str, float] | None:
        cli = shutil.which("docker")
        if _options(spec).image is not None or install is None or cli is None:
            return None  # an image the study names is pulled, not built
        if docker_image.in_engine(install, [cli], docker.engine_env()):
            return None
        return f"the Docker image of {install.bindir}", docker_image.BUILD_S

    def facts(self, description: Mapping[str, object]) -> list[tuple[str, str, dict[str, str]]]:
        container = ContainerSeen.of(description)
        if container is None or not container.image:
            return []
        fields = {"image": container.image,
                  "image_id": (container.image_id or "?").removeprefix("sha256:")[:12],
                  "driver": container.storage_driver or "?", "engine": container.engine or "?"}
        return [("server.container", f"server.container.{container.image_from()}", fields)]

    def remove_leftovers(self, specs: Sequence[Mapping[str, object]], run: str) -> list[str]:
        return [f"removed {d}" for d in docker.remove_stale(run)] if specs else []


@dataclass(frozen=True)
class ContainerSeen:
    """The container as a server's description keeps it (``docker``, written by
    :meth:`DockerServer.describe`): its image, what teiten built it from, and the engine."""

    image: str | None = None
    image_id: str | None = None
    built_from: str | None = None  # None: the study named the image
    storage_driver: str | None = None
    engine: str | None = None
    pulled: bool = False  # a store from before teiten built images: every image was pulled

    @classmethod
    def of(cls, description: Mapping[str, object]) -> ContainerSeen | None:
        """The container of a stored server's description, if it keeps one."""
        found = description.get("docker")
        if not isinstance(found, Mapping):
            return None
        return replace(_CONTAINER.validate_python(found), pulled="built_from" not in found)

    def image_from(self) -> str:
        """Where its image came from, as the Servers table's text keys name it."""
        return "built" if self.built_from else "pulled" if self.pulled else "given"


_CONTAINER = TypeAdapter(ContainerSeen)


def settings(spec: ServerSpec, sizing: profiles.Sizing, install: Install) -> dict[str, str]:
    """The same settings as a local cluster's, so that environments compare like with like;
    the server logs to stderr, where 'docker logs' reads it."""
    found = profiles.merged(spec.profile, spec.settings, sizing, install.release)
    found.pop("logging_collector", None)
    return found


def _options(spec: ServerSpec) -> DockerOptions:
    """The study file's ``docker`` key of the server."""
    options = DockerPlace.on(spec).docker
    assert options is not None
    return options


KIND = Docker()
