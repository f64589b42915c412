"""Strengths and weaknesses of each replication method, from the measured scale-out (METHODS
S7; the 2016 report's summary, slide 32, 長所/短所), written as S9's table of full-text methods
is (teiten.workloads.fulltext.strengths): a pure function, figures in, sentences out, each
sentence data (``{"key": ..., figures}``) that the table words in the report's language from
the catalogue's ``scaleout.judge.*`` texts (this folder's texts.yaml).

The rules, over one workload's rows (one section: read or update), at the largest client
count a method ran:

* scaling: the total TPS at the most nodes against the one-node server's (the first point of
  the method's line in the figure): at least GROWS times is a strength ("grows"), at least
  KEPT times a strength too ("holds": more nodes cost it nothing, the 2016 report's "update
  throughput does not fall as servers are added"), below KEPT a weakness ("falls");
* speed: at the largest number of nodes two methods or more ran, the fastest total is a
  strength, the slowest a weakness when the fastest is at least SPREAD times it (the 2016
  report's "native < synchronous < asynchronous" for updates);
* lag: a streaming method whose standbys were seen behind the primary (the largest lag in
  bytes over its trials, and its replay lag where PostgreSQL 10 and later give one) has that
  as a weakness; one whose standbys were never seen behind, a strength;
* by design, as the 2016 report says them and no measurement here can: Pgpool-II's native
  replication works across nodes of different PostgreSQL versions and restricts the SQL it
  can replicate (a statement must give the same result on every node); synchronous
  streaming replication with ``remote_apply`` makes a commit visible on every standby before
  it returns, and needs PostgreSQL 9.6 or later.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from teiten.tables.scale_out import ScaleOutLine, ScaleOutRow

GROWS = 1.2
KEPT = 0.9
SPREAD = 1.1

Sentence = dict[str, object]  # {"key": a scaleout.judge.* text, its fields}
Judgement = dict[str, object]  # {"method", "strengths": [Sentence], "weaknesses": [Sentence]}


def label(method: str, pgpool: bool) -> str:
    """A method as the table names it: ``native + Pgpool-II``."""
    return method + (" + Pgpool-II" if pgpool else "")


def judge(rows: Sequence[ScaleOutRow], lines: Sequence[ScaleOutLine]) -> tuple[Judgement, ...]:
    """One judgement per method of ``lines`` (the figure's), in their order."""
    found: dict[str, tuple[list[Sentence], list[Sentence]]] = {}
    for line in lines:
        found.setdefault(label(line.method, line.pgpool), ([], []))
    last = {}  # per method: its line at the largest client count
    for line in lines:
        last[label(line.method, line.pgpool)] = line
    for name, line in last.items():
        good, bad = found[name]
        _scaling(line, good, bad)
    _speed(last, found)
    for name, line in last.items():
        good, bad = found[name]
        _lag([r for r in rows if label(r.method, r.pgpool) == name and r.nodes > 1], line.method, good, bad)
        _design(line.method, good, bad)
    return tuple({"method": name, "strengths": good, "weaknesses": bad} for name, (good, bad) in found.items())


def _scaling(line: ScaleOutLine, good: list[Sentence], bad: list[Sentence]) -> None:
    measured = [(n, tps) for n, tps, _ in line.points if tps is not None]
    if len(measured) < 2 or measured[0][0] != 1 or measured[0][1] <= 0:
        return
    (_, one), (nodes, most) = measured[0], measured[-1]
    ratio = most / one
    said = {"nodes": nodes, "clients": line.clients, "times": _times(ratio), "tps": _tps(most),
            "one": _tps(one)}
    if ratio >= GROWS:
        good.append({"key": "grows", **said})
    elif ratio >= KEPT:
        good.append({"key": "holds", **said})
    else:
        bad.append({"key": "falls", **said})


def _speed(last: dict[str, ScaleOutLine], found: dict[str, tuple[list[Sentence], list[Sentence]]]) -> None:
    at_nodes: dict[int, dict[str, float]] = {}
    for name, line in last.items():
        for n, tps, _ in line.points:
            if tps is not None and n > 1:
                at_nodes.setdefault(n, {})[name] = tps
    shared = [n for n, by in at_nodes.items() if len(by) >= 2]
    if not shared:
        return
    nodes = max(shared)
    ranked = sorted(((tps, name) for name, tps in at_nodes[nodes].items()), reverse=True)
    (fast, fastest), (then, next_method) = ranked[0], ranked[1]
    found[fastest][0].append({"key": "fastest", "n": len(ranked), "nodes": nodes, "tps": _tps(fast),
                              "next": _tps(then), "next_method": next_method})
    slow, slowest = ranked[-1]
    if slow > 0 and fast >= SPREAD * slow:
        found[slowest][1].append({"key": "slowest", "n": len(ranked), "nodes": nodes, "tps": _tps(slow),
                                  "times": _times(fast / slow), "fastest": fastest})


def _lag(rows: Sequence[ScaleOutRow], method: str, good: list[Sentence], bad: list[Sentence]) -> None:
    if method == "native":
        return  # statements sent to every node: no standby to lag
    lags = [r.lag_bytes_max for r in rows if r.lag_bytes_max is not None]
    if not lags:
        return
    replay = [r.replay_lag_ms_max for r in rows if r.replay_lag_ms_max is not None]
    if max(lags) > 0:
        key = "lag_replay" if replay else "lag"
        bad.append({"key": key, "bytes": _bytes(max(lags)), "ms": f"{max(replay, default=0.0):.1f}"})
    else:
        good.append({"key": "no_lag", "points": len(lags)})


def _design(method: str, good: list[Sentence], bad: list[Sentence]) -> None:
    if method == "native":
        good.append({"key": "design.versions"})
        bad.append({"key": "design.sql"})
    elif method == "sync (remote_apply)":
        good.append({"key": "design.apply"})
        bad.append({"key": "design.since96"})


def _times(ratio: float) -> str:
    return f"{ratio:.2f}×"


def _tps(value: float) -> str:
    return f"{value:,.0f}"


def _bytes(n: float) -> str:
    """1024-based, with pg_size_pretty's unit names."""
    for unit in ("bytes", "kB", "MB"):
        if n < 1024:
            return f"{n:.0f} {unit}" if unit == "bytes" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} GB"
