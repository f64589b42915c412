"""The study file's ``ssh`` key of a server: run the cluster on another host over OpenSSH
(teiten.servers.ssh.server), or the nodes of a replicated server on several hosts, one each
(teiten.servers.ssh.topology: METHODS S7 across machines)."""

from __future__ import annotations

from typing import ClassVar

from pydantic import Field, model_validator

from teiten.spec.base import PathText
from teiten.spec.place import Place, PlaceModel


class SshPlace(PlaceModel):
    """A server on a host reached with OpenSSH, or its nodes on one host each."""

    PLACE: ClassVar[Place] = Place("ssh", ("cores", "cpus", "tablespace", "directory",
                                           "snapshot_hook", "limits", "delay", "initdb.waldir"))

    ssh: str | list[str] | None = Field(
        None, description="run the cluster on this host over OpenSSH: user@host or a Host of "
        "your ssh config; 'install' is then a major or a bindir on that host. With 'replicas' "
        "or 'pgpool', a list of hosts puts each node on its own: the primary on the first, "
        "standby N (or copy N) on the N+1th, each with its Pgpool-II beside it")
    ssh_config: PathText | None = Field(
        None, description="an ssh_config file to use instead of ~/.ssh/config (ssh -F)")

    @model_validator(mode="after")
    def _config_of_ssh(self) -> SshPlace:
        if self.ssh_config is not None and self.ssh is None:
            raise ValueError("'ssh_config' applies to ssh servers only")
        if isinstance(self.ssh, list):
            # ServerSpec's own keys: SshPlace is one of its bases.
            replicas, pgpool = getattr(self, "replicas", 0), getattr(self, "pgpool", False)
            if not all(host.strip() for host in self.ssh):
                raise ValueError("'ssh' lists an empty host: name each node's host (user@host "
                                 "or a Host of your ssh config)")
            if not replicas:
                raise ValueError(
                    "'ssh' lists hosts, one per node of a replicated server, and this server has "
                    "one node: give one host (ssh: db1), or add 'replicas'" +
                    (" (with pgpool: its copies)" if pgpool else ""))
            if len(self.ssh) != replicas + 1:
                one, many = (("copy", "copies") if getattr(self, "replication", "") == "native"
                             else ("standby", "standbys"))
                raise ValueError(
                    f"'ssh' lists {len(self.ssh)} hosts and the server has {replicas + 1} nodes "
                    f"(the primary and {replicas} {one if replicas == 1 else many}): "
                    "list one host per node, primary first, or give one host for all")
        return self

    def hosts(self) -> list[str]:
        """The hosts of the server's nodes, primary first: one for every node when the study
        names one host, none for a server of another place."""
        if self.ssh is None:
            return []
        return list(self.ssh) if isinstance(self.ssh, list) else [self.ssh]
