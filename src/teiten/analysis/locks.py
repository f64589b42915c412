"""The LWLOCK_STATS tables of builds that count their locks (METHODS S2, 2014 bottleneck
analysis): per server, each lock's requests and contentions per transaction at each client
count; and per family of servers alike but for their cores, the same at one client count
by core count, with the requests split into shared and exclusive, as the 2014 figures drew
them. The figures come from teiten.monitors.lwlock (stored as details of kind "lwlock");
stores made before the split was recorded give no shared and exclusive figures."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace

from teiten.analysis import stats
from teiten.analysis.lock_names import lock_name
from teiten.model import results

TOP = 8  # the most requested locks each table shows


@dataclass(frozen=True)
class LockRow:
    """One lock's row of a trial's stored LWLOCK_STATS (details ``lwlock``, written by
    teiten.monitors.lwlock), per transaction; a figure the stored row lacks is None (the
    shared and exclusive split of stores made before it was recorded)."""

    lock: str
    requests_per_tx: float | None
    contentions_per_tx: float | None
    shared_per_tx: float | None
    exclusive_per_tx: float | None

    @classmethod
    def from_json(cls, row: Mapping[str, object]) -> LockRow:
        return cls(str(row["lock"]), _figure(row, "requests_per_tx"), _figure(row, "contentions_per_tx"),
                   _figure(row, "shared_per_tx"), _figure(row, "exclusive_per_tx"))

    def plus(self, other: LockRow) -> LockRow:
        """The figures of two rows of one lock summed (a figure this row lacks stays unknown;
        one the other lacks stays this row's)."""
        return replace(self, requests_per_tx=_plus(self.requests_per_tx, other.requests_per_tx),
                       contentions_per_tx=_plus(self.contentions_per_tx, other.contentions_per_tx),
                       shared_per_tx=_plus(self.shared_per_tx, other.shared_per_tx),
                       exclusive_per_tx=_plus(self.exclusive_per_tx, other.exclusive_per_tx))


Locks = Mapping[results.Point, Sequence[Sequence[LockRow]]]  # point -> runs -> rows


def lock_rows(body: Mapping[str, object]) -> tuple[LockRow, ...]:
    """The rows of one trial's stored details ``lwlock`` (``{"locks": [row, ...]}``)."""
    rows = body.get("locks")
    if not isinstance(rows, list) or not all(isinstance(r, Mapping) for r in rows):
        raise ValueError(f"stored lwlock details hold no list of lock rows: {body!r:.200}")
    return tuple(LockRow.from_json(r) for r in rows)


def _plus(a: float | None, b: float | None) -> float | None:
    return a if a is None or b is None else a + b


def _figure(row: Mapping[str, object], key: str) -> float | None:
    value = row.get(key)
    if value is None or isinstance(value, int | float) and not isinstance(value, bool):
        return value
    raise ValueError(f"a stored lwlock row's {key} is not a number: {value!r}")


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


def named(run: Sequence[LockRow], version: str) -> list[LockRow]:
    """One run's rows under the names the report shows (teiten.analysis.lock_names: 9.4-9.6's
    numbered locks), the partitions of a table summed into one row."""
    out: dict[str, LockRow] = {}
    for row in run:
        name = lock_name(row.lock, version)
        out[name] = out[name].plus(row) if name in out else replace(row, lock=name)
    return list(out.values())


def figures(runs: Sequence[Sequence[LockRow]], version: str = "") -> dict[str, LockFigures]:
    """Each lock's medians over the runs of one point (a lock absent from a run counts 0 there),
    named for a server of ``version``."""
    runs = [named(run, version) for run in runs]
    out = {}
    for name in sorted({row.lock for run in runs for row in run}):
        found = [next((r for r in run if r.lock == name), None) for run in runs]

        def median(figure: Callable[[LockRow], float | None],
                   found: list[LockRow | None] = found) -> float | None:
            values = [figure(r) if r else 0.0 for r in found]
            if any(v is None for v in values):
                return None
            return stats.median_known(values)

        out[name] = LockFigures(median(lambda r: r.requests_per_tx) or 0.0,
                                median(lambda r: r.contentions_per_tx) or 0.0,
                                median(lambda r: r.shared_per_tx), median(lambda r: r.exclusive_per_tx))
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
