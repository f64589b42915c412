"""A monitor that is no part of teiten, for tests/integration/test_monitor_registry.py: the
kernel's load average, read from /proc/loadavg at the start and the end of the window. It is
registered from outside (``teiten.monitors.registry.register``), and nothing of teiten's core
names it.

``python -m tests.loadavg_monitor ARGS...`` is ``teiten ARGS...`` with it registered.
"""

from __future__ import annotations

import sys
from pathlib import Path

from teiten.model.results import Evidence
from teiten.monitors import registry
from teiten.monitors.base import Ended, Metric, Monitor, MonitorKind, Window

LOADAVG = Path("/proc/loadavg")


def _read() -> tuple[float, int]:
    """The 1-minute load average and the runnable tasks now."""
    fields = LOADAVG.read_text().split()
    return float(fields[0]), int(fields[3].split("/")[0])


class LoadAvg(Monitor):
    def __init__(self) -> None:
        self.readings: list[tuple[float, int]] = []

    def start(self) -> None:
        self.readings.append(_read())

    def stop(self) -> None:
        self.readings.append(_read())

    def contribute(self, evidence: Evidence, ended: Ended) -> None:
        (_, first), (last, running) = self.readings
        evidence.metrics["loadavg_1m"] = last
        evidence.metrics["loadavg_runnable"] = float(running)
        evidence.details["loadavg"] = {"runnable": [first, running]}


def _watch(window: Window) -> LoadAvg:
    return LoadAvg()


KIND = MonitorKind("loadavg", _watch, metrics=(
    Metric("loadavg_1m", "CPUs", "gauge", "metric.loadavg_1m"),
    Metric("loadavg_runnable", "count", "gauge", "metric.loadavg_runnable")))


def main(argv: list[str]) -> int:
    from teiten.cli.main import main as teiten  # late: the CLI after the registration

    registry.register(KIND)
    return teiten(argv)


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
