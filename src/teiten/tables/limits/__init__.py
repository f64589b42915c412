"""How much of its limits a limited server used (METHODS S11: the 2020 report gave CPU, memory
and IOPS as a % of the provisioned limit), per workload and client count: the median over the
successful trials of what its cgroup counted in the measured window (its monitor, teiten.tables.limits.monitor),
against the limit the study set (``limits`` of a server)."""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from teiten.analysis.tables import SectionInputs
from teiten.model.results import ServerRecord, TrialRecord
from teiten.tables.limits.monitor import (
    LIMIT_MEMORY_PEAK_BYTES,
    LIMIT_READ_BPS,
    LIMIT_READ_IOPS,
    LIMIT_WRITE_BPS,
    LIMIT_WRITE_IOPS,
)

# Its place among the registered tables (teiten.analysis.tables).
ORDER = 50

# Each limit and the trial metric that measures its use.
METRICS = {"memory": LIMIT_MEMORY_PEAK_BYTES, "read_iops": LIMIT_READ_IOPS,
           "write_iops": LIMIT_WRITE_IOPS, "read_bps": LIMIT_READ_BPS,
           "write_bps": LIMIT_WRITE_BPS}


@dataclass(frozen=True)
class LimitUse:
    server: str
    clients: int
    limit: str             # memory | read_iops | write_iops | read_bps | write_bps
    value: int             # the limit: bytes, operations or bytes per second
    used: float | None     # the median use over the ok trials (None: none measured it)
    trials: int            # the ok trials that measured it

    @property
    def pct(self) -> float | None:
        return None if self.used is None else 100.0 * self.used / self.value


def limit_uses(workload: str, trials: Sequence[TrialRecord], metrics: Mapping[str, Mapping[str, float]],
               servers: Sequence[ServerRecord], clients: Sequence[int]) -> tuple[LimitUse, ...]:
    """Each limited server's use of each of its limits at each client count of ``workload``."""
    out = []
    for server in servers:
        limits = server.setup.limit_values()
        for c in clients if limits else ():
            ok = [metrics.get(t.trial_id, {}) for t in trials if t.status == "ok"
                  and t.planned.server == server.name and t.planned.workload == workload
                  and t.planned.clients == c]
            for limit, value in limits.items():
                seen = [m[METRICS[limit]] for m in ok if METRICS[limit] in m]
                out.append(LimitUse(server.name, c, limit, value,
                                    statistics.median(seen) if seen else None, len(seen)))
    return tuple(out)


def figures(given: SectionInputs) -> tuple[LimitUse, ...] | None:
    return limit_uses(given.workload, given.trials, given.data.metrics, given.servers,
                      given.clients) or None
