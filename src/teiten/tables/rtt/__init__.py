"""The round-trip bound of METHODS S11: a statement costs at least one network round trip,
so C connections running S statements per transaction do at most C x 1000 / RTT(ms) / S
transactions a second, whatever the server. Beside the measured TPS this says how much of
each transaction's time the network takes, for each server probed from this client (an
external one: ``teiten probe`` before the study, or teiten's delay proxy).

Its stored data is its own to read (:func:`gathered`): the SQL statements per transaction, from
the pgbench -r lines of the first ok trial of each probed server and workload."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from teiten.analysis.tables import SectionInputs
from teiten.model.results import ServerRecord, StudyResults
from teiten.store import Store

# Its place among the registered tables (teiten.analysis.tables): before S7's scale-out.
ORDER = 10
KEY = "rtt"  # its folder's name: the key of what it gathered (StudyData.gathered)


@dataclass(frozen=True)
class RttRow:
    clients: int
    tps: float | None              # measured (median)
    ceiling_tps: float             # clients x 1000 / rtt / statements per transaction
    of_ceiling_pct: float | None   # tps / ceiling
    network_pct: float | None      # statements x rtt / mean latency: the network's share


@dataclass(frozen=True)
class RttBound:
    server: str
    rtt_ms: float                  # median SELECT 1 round trip, probed from this client
    statements: float              # SQL statements per transaction (a round trip each)
    rows: tuple[RttRow, ...]


def statements_per_transaction(commands: Iterable[tuple[int, str]],
                               weights: Sequence[int]) -> float | None:
    """SQL commands per transaction from pgbench -r's per-statement lines ``(script index,
    command)``, weighted by the scripts' weights. Meta commands (``\\set``, ``\\sleep``)
    cost no round trip."""
    per_script = [0] * len(weights)
    for index, command in commands:
        if 0 <= index < len(weights) and not command.lstrip().startswith("\\"):
            per_script[index] += 1
    total = sum(weights)
    if not total or not any(per_script):
        return None
    return sum(n * w for n, w in zip(per_script, weights, strict=True)) / total


def bound(server: str, rtt_ms: float, statements: float,
          points: Iterable[tuple[int, float | None, float | None]]) -> RttBound:
    """``points`` are (clients, median TPS, median latency in ms) of one server."""
    rows = []
    for clients, tps, latency in points:
        ceiling = clients * 1000 / rtt_ms / statements
        rows.append(RttRow(
            clients=clients, tps=tps, ceiling_tps=ceiling,
            of_ceiling_pct=tps / ceiling * 100 if tps is not None else None,
            network_pct=min(100.0, statements * rtt_ms / latency * 100) if latency else None))
    return RttBound(server, rtt_ms, statements, tuple(rows))


def _probed(servers: Iterable[ServerRecord]) -> dict[str, float]:
    """The median SELECT 1 round trip (ms) of each server probed from this client."""
    out = {}
    for row in servers:
        probe = (row.description or {}).get("probe")
        if isinstance(probe, Mapping) and probe.get("rtt_ms_median"):
            out[row.name] = float(probe["rtt_ms_median"])
    return out


def gathered(store: Store, study: StudyResults) -> dict[str, float]:
    """Trial id -> SQL statements per transaction, from pgbench -r's lines of the first ok trial
    of each probed server and workload."""
    probed = {s.name for s in study.servers if "probe" in (s.description or {})}
    weights = {w.key: [n for _, n in w.scripts] for w in study.record.workloads}
    seen: set[tuple[str, str]] = set()
    out: dict[str, float] = {}
    for t in study.trials:
        p = t.planned
        key = (p.server, p.workload)
        if t.status != "ok" or p.server not in probed or key in seen or not weights.get(p.workload):
            continue
        found = statements_per_transaction(
            ((r["script_index"], r["command"]) for r in store.statements(study.study_id, t.trial_id)),
            weights[p.workload])
        if found:
            seen.add(key)
            out[t.trial_id] = found
    return out


def figures(given: SectionInputs) -> tuple[RttBound, ...] | None:
    """The bound of each probed server of the section that has its statements per transaction."""
    found = given.data.gathered.get(KEY, {})
    statements: dict[str, float] = {}
    for t in given.trials:
        if t.planned.workload == given.workload and isinstance(n := found.get(t.trial_id), float):
            statements.setdefault(t.planned.server, n)
    rtt = _probed(given.servers)
    out = []
    for row in given.servers:
        mine = next((s for s in given.section.servers if s.server == row.name), None)
        if row.name not in rtt or row.name not in statements or mine is None:
            continue
        out.append(bound(row.name, rtt[row.name], statements[row.name],
                         [(p.clients, p.tps_median, p.latency_ms_median) for p in mine.points]))
    return tuple(out) or None
