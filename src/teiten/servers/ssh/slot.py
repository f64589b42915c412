"""A cluster that an ``ssh`` server (servers/ssh/server.py, servers/ssh/topology.py) keeps on its
host: its directory, port and in-memory password, its state between trials, and its standbys.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from teiten.servers.replication import node_name
from teiten.servers.ssh.host import Host


@dataclass
class Slot:
    """One cluster of an ssh server on the host (a workload's), with its standbys if any: where
    it lives, how it is reached, and whether its data must be restored before the next trial."""

    root: str
    database: str
    password: str = field(repr=False)
    port: int | None = None
    log_dir: str | None = None
    dirty: bool = False
    broken: bool = False
    restore_s: list[float] = field(default_factory=list)
    trials: int = 0  # begun since the data was loaded
    device: str | None = None
    wal: str | None = None  # its WAL directory when not in the data directory (initdb --waldir)
    wal_device: str | None = None
    socket_dir: str | None = None  # only for standbys' replication connections (mode 0700)
    standbys: list[Slot] = field(default_factory=list)
    on: Host | None = field(default=None, repr=False)  # its host when not the server's own

    @property
    def data(self) -> str:
        return f"{self.root}/data"

    @property
    def nodes(self) -> list[Slot]:
        """The clusters a trial runs: this one, then its standbys (if any)."""
        return [self, *self.standbys]

    @property
    def names(self) -> list[str]:
        """How logs and notes name each node: "" for a single cluster."""
        return [node_name(i) for i in range(len(self.nodes))] if self.standbys else [""]

    @property
    def snapshot(self) -> str:
        return f"{self.root}/snapshot"
