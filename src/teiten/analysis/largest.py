"""Where the servers of a study differ most (profile: {at: largest-difference}): per workload
with a TPS, the client count at which a server's median TPS is furthest from the baseline's
(on the log scale, so that 0.5x and 2x are as far), and with one server its peak. The method
(the IPA paper's, the 2021 report's flame graphs) profiles there."""

from __future__ import annotations

import math
from dataclasses import dataclass

from teiten.analysis.stats import median
from teiten.messages import tr
from teiten.model.results import StudyResults


@dataclass(frozen=True)
class Largest:
    workload: str
    clients: int
    server: str            # the server furthest from the baseline there (the baseline alone: itself)
    ratio: float | None    # its median TPS over the baseline's; None with one server

    @property
    def point(self) -> tuple[str, int]:
        return self.workload, self.clients

    def said(self) -> str:
        """The line the run prints before it profiles there."""
        return tr("profile.largest" if self.ratio is not None else "profile.peak",
                  workload=self.workload, clients=self.clients, server=self.server,
                  pct=f"{(self.ratio or 1) * 100:.1f}")


def largest_differences(study: StudyResults) -> list[Largest]:
    """One point per workload that measured TPS, in the order the workloads first appear
    among the trials; the study's own servers only (a group of tenants is not one)."""
    servers = [s.name for s in study.servers]
    if not servers:
        return []
    baseline = servers[0]
    tps: dict[tuple[str, str, int], list[float]] = {}
    for t in study.measured().trials:
        p = t.planned
        if t.status == "ok" and t.tps is not None and not p.variant and p.server in servers:
            tps.setdefault((p.workload, p.server, p.clients), []).append(float(t.tps))
    medians = {k: median(v) for k, v in tps.items()}
    out = []
    for workload in dict.fromkeys(w for w, _, _ in medians):
        best: Largest | None = None
        far = -1.0
        for (w, server, clients), value in medians.items():
            if w != workload:
                continue
            if len(servers) == 1:
                if value > far:  # the peak
                    best, far = Largest(workload, clients, server, None), value
                continue
            base = medians.get((workload, baseline, clients))
            if server == baseline or not base or value <= 0:
                continue
            distance = abs(math.log(value / base))
            if distance > far or (distance == far and best is not None and clients < best.clients):
                best, far = Largest(workload, clients, server, value / base), distance
        if best is not None:
            out.append(best)
    return out
