"""The study file's ``docker`` key of a server: run its install in a container of an image
teiten builds from it (METHODS S5; teiten.servers.docker.server)."""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field

from teiten.spec.base import Model
from teiten.spec.place import Place, PlaceModel


class DockerOptions(Model):
    """A server in a Docker container (METHODS S5): where its data lives, which network."""

    image: str | None = Field(
        None, description="an image to run instead of the one teiten builds from the server's "
        "install (then listed among the differences)")
    volume: Literal["container", "host"] = Field(
        "host", description="data in the container's filesystem, or in a host directory")
    network: Literal["host", "bridge"] = Field(
        "bridge", description="the host's network, or a bridge with a published port")


class DockerPlace(PlaceModel):
    """A server in a container on this machine's Docker engine."""

    PLACE: ClassVar[Place] = Place("docker", ("cores", "cpus", "tablespace", "directory", "replicas",
                                              "pgpool", "snapshot_hook", "limits", "delay"))

    docker: DockerOptions | None = Field(
        None, description="run the server's install in a container of an image teiten builds "
        "from it (or 'image')")
