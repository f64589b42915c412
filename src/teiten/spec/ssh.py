"""The study file's ``ssh`` key of a server: run the cluster on another host over OpenSSH
(teiten.servers.ssh)."""

from __future__ import annotations

from typing import ClassVar

from pydantic import Field, model_validator

from teiten.spec.base import PathText
from teiten.spec.place import Place, PlaceModel


class SshPlace(PlaceModel):
    """A server on a host reached with OpenSSH."""

    PLACE: ClassVar[Place] = Place("ssh", ("cores", "cpus", "tablespace", "directory",
                                           "snapshot_hook", "limits", "delay", "initdb.waldir"))

    ssh: str | None = Field(
        None, description="run the cluster on this host over OpenSSH: user@host or a Host of "
        "your ssh config; 'install' is then a major or a bindir on that host")
    ssh_config: PathText | None = Field(
        None, description="an ssh_config file to use instead of ~/.ssh/config (ssh -F)")

    @model_validator(mode="after")
    def _config_of_ssh(self) -> SshPlace:
        if self.ssh_config is not None and self.ssh is None:
            raise ValueError("'ssh_config' applies to ssh servers only")
        return self
