"""The one place that turns a server of the study file into a :class:`Server` object."""

from __future__ import annotations

from pathlib import Path

from teiten.installs import Install
from teiten.servers import profiles
from teiten.servers.base import Server
from teiten.servers.docker import DockerServer
from teiten.servers.external import ExternalServer
from teiten.servers.local import LocalServer
from teiten.servers.ssh import SshServer
from teiten.servers.ssh_topology import SshTopologyServer
from teiten.servers.topology import TopologyServer
from teiten.spec import ServerSpec


def runs_here(spec: ServerSpec) -> bool:
    """Whether teiten runs the server's own binaries on this machine (a local cluster or
    topology); the others are reached with a client install's pgbench and psql."""
    return spec.external is None and spec.ssh is None and spec.docker is None


def build(spec: ServerSpec, install: Install, run_dir: Path, sizing: profiles.Sizing, *,
          connect: str = "socket", cpus: list[int] | None = None, max_clients: int = 1,
          password: str | None = None, client: Install | None = None) -> Server:
    """The server ``spec`` describes. ``install`` is its own binaries when it runs here, else
    the client's; ``cpus`` confines a local server; ``max_clients`` sizes a Pgpool-II;
    ``password`` is an external server's, from the study file (kept in memory only);
    ``client`` is the install whose pgbench loads a local server (default: its own)."""
    topology = bool(spec.replicas or spec.pgpool)
    if spec.external is not None:
        return ExternalServer(spec, install, password=password)
    if spec.docker is not None:
        assert spec.install is not None
        major = int(spec.install.split(".")[0]) if spec.install.split(".")[0].isdigit() else 0
        return DockerServer(spec.name, spec.install, spec.docker.image, spec.docker.volume,
                            spec.docker.network, docker_settings(spec, sizing), install, run_dir,
                            " ".join(spec.initdb_options().args(major)))
    if spec.ssh is not None:
        if topology:
            return SshTopologyServer(spec, install, run_dir, sizing, max_clients=max_clients)
        return SshServer(spec, install, run_dir, sizing)
    if topology:
        return TopologyServer(spec, install, run_dir, sizing, connect=connect, cpus=cpus,
                              max_clients=max_clients, client=client)
    return LocalServer(spec, install, run_dir, sizing, connect=connect, cpus=cpus, client=client)


def docker_settings(spec: ServerSpec, sizing: profiles.Sizing) -> dict[str, str]:
    """The same settings as a local cluster's, so that environments compare like with like;
    the server logs to stderr, where 'docker logs' reads it."""
    found = profiles.merged(spec.profile, spec.settings, sizing)
    found.pop("logging_collector", None)
    return found
