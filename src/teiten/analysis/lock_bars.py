"""What the 2014 LWLock figures stack (001 figs 3.6.6-3.6.8, METHODS S2): per build, a bar per
core count (or per client count where the cores did not vary) of the locks' requests per
transaction, shared and exclusive apart, and of their contentions per transaction; the builds
side by side. And the 2014 view of a split lock: 9.4 split the WAL insertion lock into 8 (one
process at a time could copy into the WAL buffers before, up to 8 after), so the report divided
the split lock's contentions by its 8 parts to compare them with the single lock of 9.3
(fig 3.6.8). The figures are those of the lock tables (teiten.analysis.locks); the report draws
these decisions (teiten.report.lock_charts)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from teiten.analysis.locks import LockCores, LockFigures, LockTable

# NUM_XLOGINSERT_LOCKS (src/backend/access/transam/xlog.c), 8 from 9.4 on.
SPLIT_PARTS = 8
# The split WAL insertion lock's tranche, as LWLOCK_STATS names it: 9.4 and 9.5, 9.6 to 12, 13 on.
# The single lock of 9.3 and before prints as a number ("main 7"), never as one of these.
SPLIT_LOCKS = ("WALInsertLocks", "wal_insert", "WALInsert")

MEASURES = ("requests", "contentions", "contentions-split")
SHARED, EXCLUSIVE, ALL = "shared", "exclusive", "all"


@dataclass(frozen=True)
class Segment:
    """One part of a bar: a lock's requests in one mode (``all`` where the store did not record
    the split, and for contentions), per transaction, divided by ``divisor``."""

    lock: str
    mode: str
    value: float
    divisor: int = 1


@dataclass(frozen=True)
class Bar:
    x: int  # cores or clients
    server: str
    segments: tuple[Segment, ...] | None  # None: the server counted no locks there


@dataclass(frozen=True)
class Panel:
    """One build's bars, fewest cores (clients) first."""

    build: str  # the family, or the server where the cores did not vary
    axis: str  # "cores" | "clients"
    clients: int | None  # the client count of a panel by cores
    bars: tuple[Bar, ...]


@dataclass(frozen=True)
class LockFigure:
    measure: str  # one of MEASURES
    keys: tuple[tuple[str, str], ...]  # (lock, mode) stacked, bottom first: the legend
    panels: tuple[Panel, ...]


def _modes(v: LockFigures, measure: str) -> list[tuple[str, float]]:
    if measure != "requests":
        return [(ALL, v.contentions)]
    if v.shared is None or v.exclusive is None:
        return [(ALL, v.requests)]
    return [(SHARED, v.shared), (EXCLUSIVE, v.exclusive)]


Rows = tuple[tuple[str, tuple[LockFigures | None, ...]], ...]  # lock, per bar


def _panels(locks: Sequence[LockTable], cores: Sequence[LockCores]) -> list[
        tuple[str, str, int | None, list[tuple[int, str]], Rows]]:
    """(build, axis, clients, [(x, server)], rows) of each build: its family by core count when
    some family's cores varied, else each server by client count."""
    if cores:
        return [(lc.family, "cores", lc.clients, list(zip(lc.cores, lc.servers, strict=True)), lc.rows)
                for lc in cores]
    return [(lt.server, "clients", None, [(c, lt.server) for c in lt.clients], lt.rows) for lt in locks]


def lock_figures(locks: Sequence[LockTable], cores: Sequence[LockCores]) -> tuple[LockFigure, ...]:
    """The requests and contentions figures of a section's lock tables, and the contentions
    with the split lock divided by its parts where a build has a split lock that contended.
    A segment of 0 is left out; a lock is stacked in the order the tables rank it."""
    found = _panels(locks, cores)
    if not found:
        return ()
    order = list(dict.fromkeys(name for *_, rows in found for name, _ in rows))
    split = any(name in SPLIT_LOCKS and any(v is not None and v.contentions > 0 for v in values)
                for *_, rows in found for name, values in rows)
    out = []
    for measure in MEASURES[:3 if split else 2]:
        keys: dict[tuple[str, str], None] = {}
        panels = []
        for build, axis, clients, members, rows in found:
            by = dict(rows)
            bars = []
            for i, (x, server) in enumerate(members):
                segs: list[Segment] = []
                for name in order:
                    v = by[name][i] if name in by else None
                    if v is None:
                        continue
                    divisor = SPLIT_PARTS if measure == "contentions-split" and name in SPLIT_LOCKS else 1
                    for mode, value in _modes(v, measure):
                        if value > 0:
                            segs.append(Segment(name, mode, value / divisor, divisor))
                counted = any(values[i] is not None for values in by.values())
                bars.append(Bar(x, server, tuple(segs) if counted else None))
            panels.append(Panel(build, axis, clients, tuple(bars)))
            for bar in bars:
                keys.update({(s.lock, s.mode): None for s in bar.segments or ()})
        ranked = sorted(keys, key=lambda k: (order.index(k[0]), (SHARED, ALL, EXCLUSIVE).index(k[1])))
        out.append(LockFigure(measure, tuple(ranked), tuple(panels)))
    return tuple(out)
