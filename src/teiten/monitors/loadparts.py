"""The parts of a load made by several processes (one pgbench per node or per load client,
started together): each one's figures as the details ``load``, and how far apart they started
(``load_skew_s``) and how many there were (``load_processes``). Nothing to sample: the load
reports its parts when it ends."""

from __future__ import annotations

from teiten.model.details import LOAD
from teiten.model.metrics import LOAD_SKEW_S
from teiten.model.results import Evidence
from teiten.monitors.base import Ended, Metric, Monitor, MonitorKind, Window


class LoadParts(Monitor):
    def contribute(self, evidence: Evidence, ended: Ended) -> None:
        several = ended.several
        if several is not None:
            LOAD.put(evidence.details, several)
            evidence.metrics[LOAD_SKEW_S] = float(several.skew_s)
            evidence.metrics["load_processes"] = float(len(several.parts))


def _parts(window: Window) -> LoadParts:
    return LoadParts()


KIND = MonitorKind("load", _parts, metrics=(
    Metric(LOAD_SKEW_S, "s", "gauge", "metric.load_skew_s"),
    Metric("load_processes", "count", "gauge", "metric.load_processes")))
