"""The CPU placement monitor: the allowed CPUs of a confined server's processes, read through
the window (teiten.host.cpus.AffinityWatch). A process that ran outside the server's CPUs fails the
trial: its figures are not the confined server's."""

from __future__ import annotations

from teiten.host import cpus
from teiten.model.details import PLACEMENT
from teiten.model.results import Evidence
from teiten.monitors.base import Ended, MonitorKind, Sampling, Window


class PlacementWatch(Sampling[cpus.AffinityReport]):
    """Its details ``placement``: the server's placement, what the watch saw, and where the
    load's clients ran."""

    def __init__(self, window: Window, pid: int, confined: list[int]):
        super().__init__(cpus.AffinityWatch(pid, confined))
        self.window = window

    def contribute(self, evidence: Evidence, ended: Ended) -> None:
        placement, client = self.window.server.placement, self.window.client_cpus
        if self.seen is not None and placement is not None:
            PLACEMENT.put(evidence.details, PLACEMENT.read({
                **placement.to_json(), "watch": self.seen.to_json(),
                "client_cpus": cpus.format_list(client) if client else "any"}))

    def failure(self) -> str | None:
        return self.seen.failure() if self.seen is not None else None


def _placement(window: Window) -> PlacementWatch | None:
    confined = window.server.confined_cpus()
    pid = window.server.server_pid() if confined is not None else None
    return PlacementWatch(window, pid, confined) if pid is not None and confined is not None else None


KIND = MonitorKind("placement", _placement, layer=4)
