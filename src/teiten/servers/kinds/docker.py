"""Servers in a Docker container on this machine's engine (servers/docker.py, METHODS S5)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from teiten.servers import docker, profiles
from teiten.servers.base import Server
from teiten.servers.kind import Kind, Request
from teiten.spec import ServerSpec


class Docker(Kind):
    name = "docker"
    field = "docker"

    def build(self, request: Request) -> Server:
        spec = request.spec
        assert spec.docker is not None and spec.install is not None
        major = int(spec.install.split(".")[0]) if spec.install.split(".")[0].isdigit() else 0
        return docker.DockerServer(spec.name, spec.install, spec.docker.image, spec.docker.volume,
                                   spec.docker.network, settings(spec, request.sizing),
                                   request.install, request.run_dir,
                                   " ".join(spec.initdb_options().args(major)))

    def unavailable(self, spec: ServerSpec) -> str | None:
        return docker.engine_problem(spec.name)

    def remove_leftovers(self, specs: Sequence[Mapping[str, Any]], run: str) -> list[str]:
        return [f"removed {d}" for d in docker.remove_stale(run)] if specs else []


def settings(spec: ServerSpec, sizing: profiles.Sizing) -> dict[str, str]:
    """The same settings as a local cluster's, so that environments compare like with like;
    the server logs to stderr, where 'docker logs' reads it."""
    found = profiles.merged(spec.profile, spec.settings, sizing)
    found.pop("logging_collector", None)
    return found


KIND = Docker()
