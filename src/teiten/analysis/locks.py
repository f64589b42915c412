"""The LWLOCK_STATS tables of builds that count their locks (METHODS S2, 2014 bottleneck
analysis): per server, each lock's requests and contentions per transaction at each client
count; and per family of servers alike but for their cores, the same at one client count
by core count, with the requests split into shared and exclusive, as the 2014 figures drew
them. The figures come from teiten.monitors.lwlock (stored as details of kind "lwlock");
stores made before the split was recorded give no shared and exclusive figures."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from teiten.analysis import stats
from teiten.analysis.lock_names import lock_name
from teiten.model import results

Locks = Mapping[results.Point, Sequence[Sequence[Mapping[str, Any]]]]  # point -> runs -> rows
TOP = 8  # the most requested locks each table shows


@dataclass(frozen=True)
class LockFigures:
    """One lock at one point, per transaction: medians over the repetitions."""

    requests: float
    contentions: float
    shared: float | None  # None: the store did not record the split
    exclusive: float | None


@dataclass(frozen=True)
class LockTable:
    """LWLOCK_STATS of a -DLWLOCK_STATS build: per lock and client count."""

    server: str
    clients: tuple[int, ...]
    rows: tuple[tuple[str, tuple[LockFigures | None, ...]], ...]  # lock, per clients


@dataclass(frozen=True)
class LockCores:
    """A family's LWLOCK_STATS by core count (the 2014 figures 3.6.6 and 3.6.7), at the largest
    client count where every member that counted its locks has them."""

    family: str
    clients: int
    cores: tuple[int, ...]
    servers: tuple[str, ...]  # the member at each core count
    rows: tuple[tuple[str, tuple[LockFigures | None, ...]], ...]  # lock, per core count


def named(run: Sequence[Mapping[str, Any]], version: str) -> list[Mapping[str, Any]]:
    """One run's rows under the names the report shows (teiten.analysis.lock_names: 9.4-9.6's
    numbered locks), the partitions of a table summed into one row."""
    out: dict[str, dict[str, Any]] = {}
    for row in run:
        name = lock_name(str(row["lock"]), version)
        if name not in out:
            out[name] = {**row, "lock": name}
            continue
        for key, value in row.items():
            if key != "lock" and key in out[name]:
                out[name][key] += value
    return list(out.values())


def figures(runs: Sequence[Sequence[Mapping[str, Any]]], version: str = "") -> dict[str, LockFigures]:
    """Each lock's medians over the runs of one point (a lock absent from a run counts 0 there),
    named for a server of ``version``."""
    runs = [named(run, version) for run in runs]
    out = {}
    for name in sorted({row["lock"] for run in runs for row in run}):
        found = [next((r for r in run if r["lock"] == name), None) for run in runs]

        def median(key: str, found: list[Mapping[str, Any] | None] = found) -> float | None:
            if any(r is not None and key not in r for r in found):
                return None
            return stats.median_known([r[key] if r else 0.0 for r in found])

        out[name] = LockFigures(median("requests_per_tx") or 0.0, median("contentions_per_tx") or 0.0,
                                median("shared_per_tx"), median("exclusive_per_tx"))
    return out


def _ranked(figs: Sequence[Mapping[str, LockFigures]], top: int) -> list[str]:
    """The ``top`` locks by requests in the last of ``figs``, then in those before it."""
    names = {n for f in figs for n in f}
    return sorted(names, key=lambda n: (*(-f[n].requests if n in f else 0.0 for f in reversed(figs)),
                                        n))[:top]


def lock_tables(workload: str, servers: Mapping[str, str], clients: Sequence[int], locks: Locks, *,
                top: int = TOP) -> tuple[LockTable, ...]:
    """Per server with LWLOCK_STATS (``servers``: name -> version), the ``top`` locks by
    requests per transaction at its largest client count."""
    out = []
    for server, version in servers.items():
        counts = [c for c in clients if locks.get(results.Point(server, workload, c))]
        if not counts:
            continue
        med = {c: figures(locks[results.Point(server, workload, c)], version) for c in counts}
        out.append(LockTable(server, tuple(counts), tuple(
            (name, tuple(med[c].get(name) for c in counts)) for name in _ranked([med[counts[-1]]], top))))
    return tuple(out)


def lock_cores(workload: str, family: str, members: Sequence[tuple[int, str]],
               clients: Sequence[int], locks: Locks, *, version: str = "",
               top: int = TOP) -> LockCores | None:
    """The family's table by core count (``members``: (cores, server), fewest first; one
    ``version``, the family's), or None when fewer than two members counted their locks at a
    common client count."""
    counted = [(cores, server) for cores, server in members
               if any(locks.get(results.Point(server, workload, c)) for c in clients)]
    common = [c for c in clients
              if all(locks.get(results.Point(server, workload, c)) for _, server in counted)]
    if len(counted) < 2 or not common:
        return None
    at = common[-1]
    med = [figures(locks[results.Point(server, workload, at)], version) for _, server in counted]
    return LockCores(family, at, tuple(c for c, _ in counted), tuple(s for _, s in counted), tuple(
        (name, tuple(m.get(name) for m in med)) for name in _ranked(med, top)))
