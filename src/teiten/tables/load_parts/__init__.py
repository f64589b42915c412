"""Several pgbench processes in one trial (load clients, or one per replication node): what
each of them did. The trial's own figures are their sum; this keeps the parts apart, so a
client or node that lagged behind the others shows."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from teiten.analysis.stats import median_known as _median
from teiten.analysis.tables import SectionInputs
from teiten.model.details import LoadDetails, LoadPart
from teiten.model.results import TrialRecord

# Its place among the registered tables (teiten.analysis.tables).
ORDER = 30

Loads = Mapping[str, LoadDetails]  # trial id -> its details 'load'


@dataclass(frozen=True)
class LoadPartRow:
    server: str
    clients: int            # per pgbench process
    client: str             # the load client that ran it
    node: str               # where it connected
    tps: float | None       # median over the ok repetitions
    latency_ms: float | None
    share: float | None     # of the trial's total TPS (median over repetitions), 0..1
    skew_ms: float | None   # median start skew of all the trial's processes


def load_parts(workload: str, trials: Sequence[TrialRecord],
               loads: Loads) -> tuple[LoadPartRow, ...]:
    """Per server, client count and (load client, node): the median of each process's
    figures over the ok repetitions. Empty when no trial of ``workload`` ran more than one
    pgbench at once."""
    mine = [(t, loads[t.trial_id]) for t in trials
            if t.planned.workload == workload and t.status == "ok" and t.trial_id in loads]
    if not any(len(load.parts) > 1 for _, load in mine):
        return ()
    groups: dict[tuple[str, int], list[LoadDetails]] = {}
    for t, load in mine:
        groups.setdefault((t.planned.server, t.planned.clients), []).append(load)
    rows = []
    for (server, clients), found in groups.items():
        skew = _median(load.skew_s * 1000 for load in found)
        parts: dict[tuple[str, str], list[tuple[LoadPart, float]]] = {}
        for load in found:
            total = sum(p.tps or 0.0 for p in load.parts)
            for p in load.parts:
                parts.setdefault((p.client, p.node), []).append((p, total))
        for (client, node), seen in parts.items():
            rows.append(LoadPartRow(
                server=server, clients=clients, client=client, node=node,
                tps=_median(p.tps for p, _ in seen),
                latency_ms=_median(p.latency_ms_avg for p, _ in seen),
                share=_median((p.tps or 0.0) / total if total else None for p, total in seen),
                skew_ms=skew))
    order = {name: i for i, name in enumerate(dict.fromkeys(t.planned.server for t in trials))}
    return tuple(sorted(rows, key=lambda r: (order.get(r.server, 0), r.clients, r.client, r.node)))


def figures(given: SectionInputs) -> tuple[LoadPartRow, ...] | None:
    return load_parts(given.workload, given.trials, given.data.loads) or None
