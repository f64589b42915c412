"""Servers on another host, made and controlled over OpenSSH (servers/ssh/server.py; a primary with
standbys and Pgpool-II there: servers/ssh/topology.py)."""

from __future__ import annotations

import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Annotated

from pydantic import BeforeValidator, TypeAdapter

from teiten.servers.base import Server
from teiten.servers.kind import Kind, Problem, Request
from teiten.servers.ssh import server as ssh
from teiten.servers.ssh.host import SshHost
from teiten.servers.ssh.spec import SshPlace
from teiten.servers.ssh.topology import SshTopologyServer
from teiten.spec import ServerSpec


class Ssh(Kind):
    name = "ssh"
    field = "ssh"
    password = True  # a client carries it: run as the client account

    def build(self, request: Request) -> Server:
        spec = request.spec
        place = SshPlace.on(spec)
        host, *others = hosts(spec.name, place.hosts(), place.ssh_config)
        if spec.replicas or spec.pgpool:
            return SshTopologyServer(spec, host, request.install, request.run_dir,
                                     request.sizing, max_clients=request.max_clients,
                                     others=others)
        return ssh.SshServer(spec, host, request.install, request.run_dir, request.sizing)

    def problem(self, spec: ServerSpec) -> Problem | None:
        if shutil.which("ssh") is None:  # Pgpool-II is looked for on the host
            return Problem("ssh", f"server {spec.name}: the ssh client is missing here: "
                           "apt-get install openssh-client")
        return None

    def remove_leftovers(self, specs: Sequence[Mapping[str, object]], run: str) -> list[str]:
        return [note for spec in map(_STORED.validate_python, specs)
                for host in hosts(spec.name, [spec.ssh] if isinstance(spec.ssh, str) else spec.ssh,
                                  spec.ssh_config)
                for note in ssh.remove_leftovers(host, run)]

    def facts(self, description: Mapping[str, object]) -> list[tuple[str, str, dict[str, str]]]:
        """The host of the server, or (spread) of each node, as the run found it."""
        seen = _SEEN.validate_python(description)
        nodes = seen.nodes or ((seen.host,) if seen.host else ())
        return [("server.ssh_host.node" if n.node else "server.ssh_host", "server.ssh_host.value",
                 {"node": n.node, "target": n.ssh or "?", "cpus": str(n.cpus or "?"),
                  "memory": f"{n.ram_bytes / 2**30:.1f}" if n.ram_bytes else "?"})
                for n in nodes]


@dataclass(frozen=True)
class StoredSsh:
    """What a stored server spec of this kind says of its hosts: the study file's ``ssh``
    (one host, or one per node) and ``ssh_config``."""

    name: str
    ssh: str | list[str]
    ssh_config: str | None = None


@dataclass(frozen=True)
class NodeSeen:
    """A host as a server's description keeps it (:meth:`Host.describe`): the server's, or
    (spread) one node's, which ``node`` names."""

    node: str = ""
    ssh: str | None = None
    cpus: int | None = None
    ram_bytes: int | None = None


@dataclass(frozen=True)
class SshSeen:
    """The hosts a stored server's description keeps: its one ``host``, or each node's."""

    host: Annotated[NodeSeen | None, BeforeValidator(lambda v: v or None)] = None  # {}: none
    nodes: tuple[NodeSeen, ...] | None = None


_STORED = TypeAdapter(StoredSsh)
_SEEN = TypeAdapter(SshSeen)


def hosts(server: str, targets: Sequence[str], config: str | None) -> list[SshHost]:
    """The hosts of a server's nodes (one for all, or one each), as the study names them."""
    return [SshHost(server, target, config) for target in targets]


KIND = Ssh()
