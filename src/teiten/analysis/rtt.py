"""The round-trip bound of METHODS S11: a statement costs at least one network round trip,
so C connections running S statements per transaction do at most C x 1000 / RTT(ms) / S
transactions a second, whatever the server. Beside the measured TPS this says how much of
each transaction's time the network takes. Pure functions."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass


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
