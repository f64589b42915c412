"""Servers on another host, made and controlled over OpenSSH (servers/ssh.py; a primary with
standbys and Pgpool-II there: servers/ssh_topology.py)."""

from __future__ import annotations

import shutil
from collections.abc import Mapping, Sequence
from typing import Any

from teiten.servers import ssh
from teiten.servers.base import Server
from teiten.servers.kind import Kind, Problem, Request
from teiten.servers.ssh_host import SshHost
from teiten.servers.ssh_topology import SshTopologyServer
from teiten.spec import ServerSpec


class Ssh(Kind):
    name = "ssh"
    field = "ssh"

    def build(self, request: Request) -> Server:
        spec = request.spec
        assert spec.ssh is not None
        host = SshHost(spec.name, spec.ssh, spec.ssh_config)
        if spec.replicas or spec.pgpool:
            return SshTopologyServer(spec, host, request.install, request.run_dir,
                                     request.sizing, max_clients=request.max_clients)
        return ssh.SshServer(spec, host, request.install, request.run_dir, request.sizing)

    def problem(self, spec: ServerSpec) -> Problem | None:
        if shutil.which("ssh") is None:  # Pgpool-II is looked for on the host
            return Problem("ssh", f"server {spec.name}: the ssh client is missing here: "
                           "apt-get install openssh-client")
        return None

    def remove_leftovers(self, specs: Sequence[Mapping[str, Any]], run: str) -> list[str]:
        return [note for spec in specs
                for note in ssh.remove_leftovers(
                    SshHost(spec["name"], spec["ssh"], spec.get("ssh_config")), run)]


KIND = Ssh()
