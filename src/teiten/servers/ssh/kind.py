"""Servers on another host, made and controlled over OpenSSH (servers/ssh/server.py; a primary with
standbys and Pgpool-II there: servers/ssh/topology.py)."""

from __future__ import annotations

import shutil
from collections.abc import Mapping, Sequence
from typing import Any

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

    def remove_leftovers(self, specs: Sequence[Mapping[str, Any]], run: str) -> list[str]:
        return [note for spec in specs
                for host in hosts(spec["name"], [spec["ssh"]] if isinstance(spec["ssh"], str)
                                  else spec["ssh"], spec.get("ssh_config"))
                for note in ssh.remove_leftovers(host, run)]

    def facts(self, description: Mapping[str, Any]) -> list[tuple[str, str, dict[str, str]]]:
        """The host of the server, or (spread) of each node, as the run found it."""
        nodes = description.get("nodes") or ([{"node": "", **description["host"]}]
                                             if description.get("host") else [])
        return [("server.ssh_host.node" if n["node"] else "server.ssh_host", "server.ssh_host.value",
                 {"node": str(n["node"]), "target": str(n.get("ssh") or "?"),
                  "cpus": str(n.get("cpus") or "?"),
                  "memory": f"{n['ram_bytes'] / 2**30:.1f}" if n.get("ram_bytes") else "?"})
                for n in nodes]


def hosts(server: str, targets: Sequence[str], config: str | None) -> list[SshHost]:
    """The hosts of a server's nodes (one for all, or one each), as the study names them."""
    return [SshHost(server, target, config) for target in targets]


KIND = Ssh()
