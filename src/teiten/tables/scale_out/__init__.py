"""METHODS S7: replication scale-out. Per server (a topology of N nodes, with its
replication method) and client count: the total TPS of its pgbench processes (one per
node, all at once), the mean per node, and the replication lag seen during the trials; the
lines of the 2016 report's figure (slide 31: total TPS against the number of servers, per
method) and each method's strengths and weaknesses (slide 32, :mod:`.strengths`)."""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from teiten.analysis.stats import median_known as _median
from teiten.analysis.tables import SectionInputs
from teiten.model.metrics import LOAD_SKEW_S, REPLICATION_LAG_BYTES_MAX, REPLICATION_REPLAY_LAG_MS_MAX
from teiten.model.results import ServerRecord, TrialRecord
from teiten.model.studyrecord import ServerSetup
from teiten.tables.scale_out.strengths import Judgement, judge

# Its place among the registered tables (teiten.analysis.tables).
ORDER = 20


@dataclass(frozen=True)
class ScaleOutRow:
    server: str
    method: str           # native | async | sync | sync (remote_apply) | single
    nodes: int
    pgpool: bool
    clients: int          # per pgbench process
    total_tps: float | None
    per_node_tps: float | None
    lag_bytes_max: float | None   # median over the repetitions of each trial's maximum
    replay_lag_ms_max: float | None
    skew_ms: float | None         # median start skew of the pgbench processes


@dataclass(frozen=True)
class ScaleOut:
    rows: tuple[ScaleOutRow, ...]
    # the servers whose nodes all ran on one machine (this one, an ssh host, or ssh hosts of
    # one running kernel): their totals cannot grow with the number of nodes
    same_machine: tuple[str, ...]
    # streaming servers of a version whose pg_stat_replication has no lag times (before 10):
    # their replay lag is missing for that reason, not for want of WAL to replay
    no_lag_times: tuple[str, ...] = ()
    # the figure's lines: per method and client count, total TPS by number of nodes
    lines: tuple[ScaleOutLine, ...] = ()
    # each method's strengths and weaknesses, as sentences of data (teiten.tables.scale_out.strengths)
    judgements: tuple[Judgement, ...] = ()


@dataclass(frozen=True)
class ScaleOutLine:
    """One line of S7's figure: a method (with or without Pgpool-II) at one client count, its
    total TPS by number of nodes. A method with no one-node server of its own starts from the
    single server's (``single``, with Pgpool-II as the method has it), as the 2016 figure's
    lines all start from one server."""

    method: str
    pgpool: bool
    clients: int
    points: tuple[tuple[int, float | None, str], ...]  # (nodes, total TPS, server), fewest nodes first


def lines(rows: Sequence[ScaleOutRow]) -> tuple[ScaleOutLine, ...]:
    """The figure's lines, by method, Pgpool-II and client count: none without a method of
    two nodes or more."""
    single = {(r.pgpool, r.clients): r for r in rows if r.method == "single"}
    out = []
    for kind, pgpool in sorted({(r.method, r.pgpool) for r in rows if r.method != "single"}):
        mine = [r for r in rows if (r.method, r.pgpool) == (kind, pgpool)]
        for clients in sorted({r.clients for r in mine}):
            at: dict[int, ScaleOutRow] = {}
            for r in mine:
                if r.clients == clients:
                    at.setdefault(r.nodes, r)
            if 1 not in at and (one := single.get((pgpool, clients))) is not None:
                at[1] = one
            out.append(ScaleOutLine(kind, pgpool, clients,
                                    tuple((n, at[n].total_tps, at[n].server) for n in sorted(at))))
    return tuple(out)


def method(setup: ServerSetup) -> tuple[str, int]:
    """The replication method a server's spec names, and its number of nodes."""
    replicas, kind = setup.replicas, setup.replication
    if replicas == 0 and kind != "native":
        return "single", 1
    if kind == "sync" and setup.synchronous_commit not in (None, "on"):
        return f"sync ({setup.synchronous_commit})", replicas + 1
    return kind, replicas + 1


def scale_out(workload: str, servers: Sequence[ServerRecord], trials: Sequence[TrialRecord],
              metrics: Mapping[str, Mapping[str, float]] | None) -> ScaleOut | None:
    """The S7 table of one workload, or None when no server is a topology. ``metrics`` maps
    trial ids to what the monitors measured."""
    setups = {row.name: row.setup for row in servers}
    if not any(s.replicas or s.pgpool for s in setups.values()):
        return None
    rows = []
    for name, setup in setups.items():
        kind, nodes = method(setup)
        mine = [(t, measured) for t in trials if t.planned.server == name
                and t.planned.workload == workload and t.status == "ok"
                and (measured := t.tps) is not None]
        for clients in sorted({t.planned.clients for t, _ in mine}):
            at = [(t, v) for t, v in mine if t.planned.clients == clients]
            tps = statistics.median(float(v) for _, v in at)
            seen = [metrics[t.trial_id] for t, _ in at if metrics and t.trial_id in metrics]
            rows.append(ScaleOutRow(
                server=name, method=kind, nodes=nodes, pgpool=setup.pgpool,
                clients=clients, total_tps=tps, per_node_tps=tps / nodes,
                lag_bytes_max=_median(m.get(REPLICATION_LAG_BYTES_MAX) for m in seen),
                replay_lag_ms_max=_median(m.get(REPLICATION_REPLAY_LAG_MS_MAX) for m in seen),
                skew_ms=_median((m[LOAD_SKEW_S] * 1000 if LOAD_SKEW_S in m else None)
                                for m in seen)))
    shown = {r.server for r in rows}
    shared = tuple(row.name for row in servers if row.name in shown and method(row.setup)[1] > 1
                   and one_machine(row.description or {}))
    old = tuple(row.name for row in servers if row.name in shown
                and method(row.setup)[0] not in ("single", "native")
                and str((row.description or {}).get("version", "")).startswith("9."))
    ordered = tuple(sorted(rows, key=lambda r: (r.method, r.nodes, r.clients)))
    drawn = lines(ordered)
    return ScaleOut(ordered, same_machine=shared, no_lag_times=old, lines=drawn,
                    judgements=judge(ordered, drawn))


def one_machine(description: Mapping[str, Any]) -> bool:
    """Whether every node of a stored server ran on one machine: nodes on ssh hosts of their
    own (``nodes`` in its description) are on several only when their hosts' running kernels
    (boot ids) differ; a host that said none counts as another machine's."""
    nodes = description.get("nodes") or []
    kernels = {str(node.get("boot_id") or f"unknown {i}") for i, node in enumerate(nodes)}
    return len(kernels) <= 1


def figures(given: SectionInputs) -> ScaleOut | None:
    return scale_out(given.workload, given.servers, given.trials, given.data.metrics)
