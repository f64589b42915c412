"""What watches one trial's measured window: the system and database monitors, the profiler,
the CPU placement of a confined server, the replication lag, a remote server's system, and
the load of processes outside the trial (the noise guard's meter).

The workload enters :meth:`Watch.around` just before what it measures and leaves it right
after; the runner then asks the watch for the trial's :class:`Evidence`.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from teiten import cpus
from teiten.messages import tr
from teiten.monitors import CPU_KEYS, MonitorResult, Monitors, limits, lwlock, replication
from teiten.monitors.foreign import ForeignLoad, ForeignMeter, Rule
from teiten.monitors.profile import Profile, Profiler, start_profile, stop_profile
from teiten.monitors.system import SystemMonitor, SystemResult
from teiten.results import Evidence, PlannedTrial
from teiten.servers.base import Endpoint, Server
from teiten.spec.study import ProfileSpec
from teiten.workloads.base import TrialOutcome


@dataclass(frozen=True)
class WindowOptions:
    """What the study asks of the watch, the same for each of its trials."""

    monitors: bool = True               # system and database monitors (off: --no-monitors)
    profile: ProfileSpec | None = None  # perf profiles of chosen points
    foreign: bool = True                # measure the load outside the trial (the noise guard)


class Watch:
    """The watches of one trial's window; what they saw stays here."""

    def __init__(self, trial: PlannedTrial, server: Server, notes: list[str],
                 options: WindowOptions, *, client_cpus: list[int] | None = None):
        self.trial, self.server, self.notes, self.options = trial, server, notes, options
        self.client_cpus = client_cpus  # where pgbench was pinned (None: anywhere)
        self.seen: MonitorResult | None = None
        self.affinity: cpus.AffinityReport | None = None
        self.profile: Profile | None = None
        self.lag: replication.LagResult | None = None
        self.host: SystemResult | None = None
        self.log_mark: int | None = None
        self.foreign: ForeignLoad | None = None
        self.limits: dict[str, float] | None = None  # the share of its limits a server used

    @contextlib.contextmanager
    def around(self, endpoint: Endpoint) -> Iterator[None]:
        server, options = self.server, self.options
        watch = Monitors(endpoint.conninfo(), devices=server.devices(),
                         server_cpus=server.confined_cpus()) if options.monitors else None
        profiler = _profiler(options.profile, self.trial, server, self.notes)
        confined = _affinity_watch(server)
        self.log_mark = server.log_mark()
        watch_lag, watch_host = _server_watches(options.monitors, server)
        # Ours: teiten (pgbench is its child) and the server's processes; the rest is foreign.
        meter = ForeignMeter(lambda: [os.getpid(), *server.server_pids()]) \
            if options.foreign else None
        group = server.limits_group()
        held = limits.LimitsWatch(group) if group is not None else None
        if held is not None:
            held.start()
        if watch is not None:
            watch.start()
        if confined is not None:
            confined.start()
        if meter is not None:
            meter.start()
        try:
            yield
        finally:
            self.foreign = meter.stop() if meter is not None else None
            self.limits = held.stop() if held is not None else None
            self.lag = watch_lag.stop() if watch_lag is not None else None
            self.host = watch_host.stop() if watch_host is not None else None
            self.seen = watch.stop() if watch is not None else None
            self.affinity = confined.stop() if confined is not None else None
            self.profile = stop_profile(profiler, self.notes)

    def evidence(self, log: str, outcome: TrialOutcome) -> Evidence | None:
        """What the watches saw, with the profile, the CPU placement, the LWLock statistics
        of the load's window of the log, each process of a load made by several, the foreign
        load, and the workload's own."""
        server = self.server
        evidence = self.seen.evidence() if self.seen else None
        if self.profile is not None:
            evidence = evidence or Evidence()
            evidence.details["profile"] = self.profile.to_json()
        if self.affinity is not None and server.placement is not None:
            evidence = evidence or Evidence()
            client = self.client_cpus
            evidence.details["placement"] = {
                **server.placement.to_json(), "watch": self.affinity.to_json(),
                "client_cpus": cpus.format_list(client) if client else "any"}
        load = outcome.load
        ran = load.figures.transactions if load is not None and load.figures is not None else 0
        if self.log_mark is not None and ran:
            locks = lwlock.window_stats(log, self.log_mark, ran)
            if locks:
                evidence = evidence or Evidence()
                evidence.details["lwlock"] = locks
        several = load.several if load is not None else None
        if several is not None or self.lag is not None or self.host is not None:
            evidence = _topology_evidence(evidence or Evidence(), several, self.lag, self.host)
        if self.foreign is not None:
            evidence = evidence or Evidence()
            evidence.details["foreign"] = self.foreign.to_json()
            evidence.metrics["foreign_cpus"] = self.foreign.cpus
        if self.limits is not None:
            group = server.limits_group()
            evidence = evidence or Evidence()
            evidence.metrics.update(self.limits)
            evidence.details["limits"] = {
                "devices": [io.device for io in group.limits.io] if group else [],
                "cgroup": f"v{group.version}" if group else None,
                "counted": limits.counted(group.version) if group else None}
        if outcome.details:
            evidence = evidence or Evidence()
            evidence.details.update(outcome.details)
        return evidence


def _server_watches(monitors: bool, server: Server
                    ) -> tuple[replication.LagMonitor | None, SystemMonitor | None]:
    """Started monitors of what only some servers have: the replication lag of a primary
    with standbys, and the system of a server on another host."""
    if not monitors:
        return None, None
    primary = server.lag_conninfo()
    lag = replication.LagMonitor(primary) if primary else None
    backend = server.remote_monitor()
    host = SystemMonitor(backend=backend) if backend is not None else None
    for watch in (lag, host):
        if watch is not None:
            watch.start()
    return lag, host


def _topology_evidence(evidence: Evidence, several: Mapping[str, Any] | None,
                       lag: replication.LagResult | None, host: SystemResult | None) -> Evidence:
    """The per-process detail of a load made by several processes, the replication lag
    series and the server host's system activity, added to a trial's evidence."""
    if several is not None:
        evidence.details["load"] = dict(several)
        evidence.metrics["load_skew_s"] = float(several["skew_s"])
        evidence.metrics["load_processes"] = float(len(several["parts"]))
    if lag is not None:
        evidence.series.extend(("replication", t, name, value) for t, name, value in lag.series)
        evidence.metrics.update({f"replication_{k}": v for k, v in lag.summary.items()})
        evidence.details["replication"] = lag.states
    if host is not None:
        evidence.series.extend(("server-system", t, name, value)
                               for t, sample in host.series for name, value in sample.items())
        evidence.metrics.update({f"host_{key}": host.summary[name]
                                 for key, name in CPU_KEYS.items() if name in host.summary})
        evidence.details["server_system_summary"] = host.summary
    return evidence


def _affinity_watch(server: Server) -> cpus.AffinityWatch | None:
    """A watch on the CPUs of a confined server's processes, for the measured window."""
    confined = server.confined_cpus()
    if confined is None:
        return None
    pid = server.server_pid()
    return cpus.AffinityWatch(pid, confined) if pid is not None else None


def _profiler(wanted: ProfileSpec | None, trial: PlannedTrial, server: Server,
              notes: list[str]) -> Profiler | None:
    """A started profiler when the study asks for a profile of this trial."""
    if wanted is None or not wanted.wants(trial.server, trial.workload, trial.clients,
                                          trial.repetition, trial.purpose):
        return None
    return start_profile(server.server_pid(), wanted.event, wanted.frequency, notes,
                         title=f"{trial.server} · {trial.workload} · {trial.clients} clients")


def who(found: ForeignLoad) -> str:
    """The largest foreign consumers, by process name and pid (never a command line)."""
    return ", ".join(f"{c.name} (pid {c.pid}) {c.cpu_s:.1f} s" for c in found.top[:3]) or "?"


def disturbance(found: ForeignLoad, rule: Rule) -> str | None:
    """Why a trial is disturbed, or None: processes outside it used more CPUs than ``rule``
    allows beside it, on average over its window."""
    limit = rule.limit_of(found)
    if found.cpus <= limit:
        return None
    own = found.own_cpus
    if rule.fraction <= 0 or found.capacity is None or own is None:
        return tr("reason.disturbed", "en", cpus=f"{found.cpus:.2f}",
                  window=f"{found.window_s:.0f}", limit=f"{limit:g}", who=who(found))
    return tr("reason.disturbed_spare", "en", cpus=f"{found.cpus:.2f}",
              window=f"{found.window_s:.0f}", limit=f"{limit:.2f}", own=f"{own:.2f}",
              capacity=found.capacity, fraction=f"{rule.fraction:g}",
              floor=f"{rule.limit_cpus:g}", who=who(found))
