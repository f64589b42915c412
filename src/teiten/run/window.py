"""What watches one trial's measured window: every monitor of the registry
(:mod:`teiten.monitors.registry`) that the trial wants and its server can offer.

The workload enters :meth:`Watch.around` just before what it measures and leaves it right
after; the runner then asks the watch for the trial's :class:`Evidence`, the warnings of its
window, and whether what the monitors saw fails or disturbs it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TypeVar

from teiten.host import ticker
from teiten.model.results import Evidence, PlannedTrial
from teiten.monitors import registry
from teiten.monitors.base import Ended, Monitor, Window
from teiten.servers.base import Endpoint, Server
from teiten.spec.study import NoiseGuardSpec, ProfileSpec
from teiten.workloads.base import TrialOutcome

M = TypeVar("M", bound=Monitor)


@dataclass(frozen=True)
class WindowOptions:
    """What the study asks of the watch, the same for each of its trials."""

    monitors: bool = True               # system, database and topology monitors (off: --no-monitors)
    profile: ProfileSpec | None = None  # perf profiles of chosen points
    guard: NoiseGuardSpec | None = None  # the noise guard, when on: measure the load outside the trial


class Watch:
    """The monitors of one trial's window; what they saw stays with them."""

    def __init__(self, trial: PlannedTrial, server: Server, notes: list[str],
                 options: WindowOptions, *, client_cpus: list[int] | None = None):
        self.trial, self.server, self.notes, self.options = trial, server, notes, options
        self.client_cpus = client_cpus  # where the load's clients were pinned (None: anywhere)
        self.watching: list[Monitor] = []  # in the registry's order

    @contextlib.contextmanager
    def around(self, endpoint: Endpoint) -> Iterator[None]:
        o = self.options
        window = Window(self.trial, self.server, endpoint.conninfo(), self.notes, monitors=o.monitors,
                        profile=o.profile, guard=o.guard, client_cpus=self.client_cpus)
        made = [(kind.layer, i, m) for i, kind in enumerate(registry.KINDS)
                if (m := kind.watch(window)) is not None]
        self.watching = [m for _, _, m in made]
        # From the outside in; stopped from the inside out.
        nested = [m for _, _, m in sorted(made, key=lambda x: x[:2])]
        started: list[Monitor] = []
        try:
            for monitor in nested:
                monitor.start()
                started.append(monitor)
            ticker.pause()  # the measured window: the trial's lines say it
            yield
        finally:
            ticker.resume()
            for monitor in reversed(started):
                monitor.stop()

    def evidence(self, log: str, outcome: TrialOutcome) -> Evidence:
        """What the monitors saw, each adding its part in the registry's order, then the
        workload's own details."""
        load = outcome.load
        ended = Ended(log=log, several=load.several if load is not None else None,
                      transactions=load.figures.transactions if load is not None and load.figures else 0)
        evidence = Evidence()
        for monitor in self.watching:
            monitor.contribute(evidence, ended)
        evidence.details.update(outcome.details)
        return evidence

    def warnings(self) -> list[str]:
        return [w for m in self.watching for w in m.warnings()]

    def failure(self) -> str | None:
        """Why what a monitor saw fails the trial (a process outside its CPUs), or None."""
        return next((f for m in self.watching if (f := m.failure())), None)

    def disturbance(self) -> str | None:
        """Why what a monitor saw disturbs the trial (foreign load over the guard's rule), or None."""
        return next((d for m in self.watching if (d := m.disturbance())), None)

    def monitor(self, cls: type[M]) -> M | None:
        """This window's monitor of class ``cls``, if it ran."""
        return next((m for m in self.watching if isinstance(m, cls)), None)
