"""Tenants: several servers of a study loaded at once (METHODS S5, the 2014 report's two KVM
guests running the update benchmark at the same time; the noisy-neighbour question of
containers and cloud instances).

A group is a server as the runner sees it: its trial brings every member to the state of its
own trials (restored, started, prewarmed, checkpointed, one after the other, before the window
opens), then the load is one pgbench per member with the trial's clients, all released by one
barrier (teiten.drivers.load), and every member is stopped after it. The members are the
study's own servers, prepared once for their own trials and the group's alike, so a tenant
runs on the very data and settings it runs alone on. The trial's figures are the sum; each
member's own are kept as the load's parts (node: the member), from which the report takes each
tenant's degradation against its own trials alone.
"""

from __future__ import annotations

from collections.abc import Sequence

from teiten.servers.base import DataSet, Endpoint, Server, Target, TrialEnd


class TenantsServer(Server):
    kind = "tenants"

    def __init__(self, name: str, members: Sequence[Server]):
        self.name = name
        self.group = list(members)
        self.endpoints: list[Endpoint] = []
        self.begun: list[Server] = []

    def prepare(self, workload: DataSet) -> None:
        for m in self.group:
            m.prepare(workload)

    def begin_trial(self, workload: DataSet, trial_id: str, *, prewarm: bool) -> Endpoint:
        self.endpoints = []
        self.begun = []  # each member from the moment its begin_trial is called
        starts: dict[str, dict[str, object]] = {}
        self.cycle.start.tenants = starts  # how each server's data and server were made
        try:
            for m in self.group:
                cycle = m.new_cycle()
                self.begun.append(m)  # a member that fails halfway may have started its server
                self.endpoints.append(m.begin_trial(workload, trial_id, prewarm=prewarm))
                for phase, seconds in cycle.seconds.items():
                    self.cycle.seconds[phase] = self.cycle.seconds.get(phase, 0.0) + seconds
                starts[m.name] = cycle.start.to_json()
        except BaseException:
            self.end_trial()
            raise
        return self.endpoints[0]

    def end_trial(self) -> TrialEnd:
        """Every member that began is ended, even when ending one of them fails (the first
        failure is raised once all were ended)."""
        ends: list[tuple[str, TrialEnd]] = []
        failure: BaseException | None = None
        for m in self.begun:
            try:
                ends.append((m.name, m.end_trial()))
            except BaseException as exc:  # noqa: BLE001 - raised below, after the others
                failure = failure or exc
        self.begun, self.endpoints = [], []
        if failure is not None:
            raise failure
        crashed = next((f"{name}: {end.crashed}" for name, end in ends if end.crashed), None)
        return TrialEnd(log="\n".join(f"## {name}\n{end.log}" for name, end in ends),
                        crashed=crashed,
                        notes=[f"{name}: {n}" for name, end in ends for n in end.notes])

    def members(self) -> list[Server]:
        return list(self.group)

    def describe(self) -> dict[str, object]:
        return {"tenants": [m.name for m in self.group]}

    def close(self) -> None:
        """The members are the study's own servers, which the runner closes."""

    def targets(self) -> list[Target]:
        return [Target(m.name, e) for m, e in zip(self.group, self.endpoints, strict=False)]

    def devices(self) -> dict[str, str]:
        found: dict[str, str] = {}
        for m in self.group:
            found.update({f"{m.name} {k}": v for k, v in m.devices().items()})
        return found

    def server_pids(self) -> list[int]:
        return [pid for m in self.group for pid in m.server_pids()]

    def foreign_pids(self) -> list[int]:
        return [pid for m in self.group for pid in m.foreign_pids()]
