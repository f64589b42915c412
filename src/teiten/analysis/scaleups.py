"""The scale-up side of a report (METHODS S2/S4): servers alike but for their cores grouped
into families, each family's scale-up table (peak, gain, CPU idle, waits and hot functions at
the peak), and the LWLock tables of builds that count them (teiten.analysis.locks)."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import replace

from teiten.analysis import compare, judging, stats, verdicts
from teiten.analysis.callers import Callers
from teiten.analysis.inputs import Hot
from teiten.analysis.locks import Locks, lock_cores, lock_tables
from teiten.analysis.model import CoreScaling, Finding, Point, Scaleup, ScaleupRow, WorkloadSection
from teiten.model import results
from teiten.model.results import ServerRecord

_CORE_SUFFIX = re.compile(r"-\d+cores?$")


def with_builds_and_cores(sec: WorkloadSection, families: Sequence[CoreScaling], hot: Hot,
                          locks: Locks, *, margin_pct: float = verdicts.MARGIN_PCT,
                          callers: Callers | None = None) -> WorkloadSection:
    """The section with its core families, the scale-up analysis of each, and the LWLock
    tables of servers built with LWLOCK_STATS."""
    versions = {s.server: s.version for s in sec.servers}
    return replace(sec, core_scaling=tuple(families),
                   scaleups=tuple(scaleup(sec, fam, hot, margin_pct=margin_pct, callers=callers)
                                  for fam in families),
                   locks=lock_tables(sec.workload, versions, sec.clients, locks),
                   lock_cores=tuple(t for fam in families if (t := lock_cores(
                       sec.workload, fam.family, fam.servers, sec.clients, locks,
                       version=versions.get(fam.servers[0][1], ""))) is not None))


def scaleup(sec: WorkloadSection, family: CoreScaling, hot: Hot, *,
            margin_pct: float = verdicts.MARGIN_PCT, callers: Callers | None = None) -> Scaleup:
    """Peak TPS per core count, the gain over the previous count, and the evidence at the
    peak: CPU idle, the top wait events, and the hottest functions where a profile exists
    (at the largest profiled client count) and who calls the hottest of them there
    (:mod:`teiten.analysis.callers`). The gains and the largest count's peak against
    the best one's are one family, judged as the TPS ratios are
    (:mod:`teiten.analysis.judging`)."""
    by_name = {s.server: s for s in sec.servers}
    m = len(family.servers)  # a gain per core count after the first, and the largest against the best

    def ratio(peak: Point, other: Point) -> verdicts.Judged:
        return judging.ratio(peak.tps_values, other.tps_values, comparisons=m, margin_pct=margin_pct,
                             blocks=peak.tps_blocks, baseline_blocks=other.tps_blocks)

    rows: list[ScaleupRow] = []
    before: Point | None = None  # the previous core count's peak
    peaks: dict[int, Point] = {}
    for cores, name in family.servers:
        series = by_name.get(name)
        measured = [p for p in (series.points if series else ()) if p.tps_median is not None]
        peak = max(measured, key=lambda p: p.tps_median or 0.0, default=None)
        act = next((a for a in (series.activity if series else ()) if peak and a.clients == peak.clients),
                   None)
        profiled = sorted(at.clients for at in hot if at.server == name and at.workload == sec.workload)
        tps = peak.tps_median if peak else None
        if peak:
            peaks[cores] = peak
        gain = ratio(peak, before) if peak and before else None
        rows.append(ScaleupRow(
            cores=cores, server=name, peak_clients=peak.clients if peak else None, peak_tps=tps,
            gain_pct=(gain.estimate - 1) * 100 if gain and gain.estimate is not None else None,
            cpu_idle=act.idle if act else None,
            waits=tuple(list(act.waits.items())[:3]) if act else (),
            hot=tuple(hot[results.Point(name, sec.workload, profiled[-1])][:5]) if profiled else (),
            hot_clients=profiled[-1] if profiled else None,
            callers=_callers_at(callers, results.Point(name, sec.workload, profiled[-1])) if profiled else (),
            peak_ci=peak.tps_ci if peak else None, peak_level=peak.tps_ci_level if peak else None,
            gain_ci=((gain.ci[0] - 1) * 100, (gain.ci[1] - 1) * 100) if gain and gain.ci else None,
            gain_level=gain.level if gain else None, gain_judged=gain))
        before = peak or before
    measured_rows = [(r.cores, r.peak_tps) for r in rows if r.peak_tps is not None]
    best = max(measured_rows, key=lambda r: r[1])[0] if measured_rows else None
    sat = stats.saturation(measured_rows)
    last = rows[-1].cores if rows else None
    beyond = ratio(peaks[last], peaks[best]) if best is not None and last in peaks \
        and last != best else None
    return Scaleup(family.family, tuple(rows), best, sat.knee_clients if sat else None,
                   beyond_ci=((beyond.ci[0] - 1) * 100, (beyond.ci[1] - 1) * 100)
                   if beyond and beyond.ci else None,
                   beyond_level=beyond.level if beyond else None, beyond_judged=beyond,
                   placed=_placed(family.family, rows, peaks, best, sat.knee_clients if sat else None))


def _callers_at(callers: Callers | None, at: results.Point) -> tuple[tuple[tuple[str, ...], float], ...]:
    found = (callers or {}).get(at)
    return found[1] if found else ()


def _placed(family: str, rows: Sequence[ScaleupRow], peaks: dict[int, Point], best: int | None,
            knee: int | None) -> Finding | None:
    """Which core count the family peaks at, by the client-count findings' rule
    (:func:`teiten.analysis.compare.placed_peak`) over the core counts' peaks: "peak" (clients:
    the best core count, and the knee where it scales until it), "peak-overlap" or
    "peak-unsure" (needed: the fewest ok trials of a core count's peak)."""
    if best is None or knee is None:
        return None
    order = [r.cores for r in rows]
    kind, fewest, scales = compare.placed_peak([peaks.get(c) for c in order], order.index(best),
                                               order.index(knee))
    if kind == "peak-unsure":
        return Finding(kind, family, "", (), needed=fewest)
    return Finding(kind, family, "", (best, knee) if scales else (best,), pct=peaks[best].tps_median)


def core_families(servers: Sequence[ServerRecord]) -> tuple[CoreScaling, ...]:
    """Groups of confined servers of one study whose specs differ only in name and CPUs, when a
    group has two core counts or more (in a compare, each study's servers are a group of their
    own: the same study run twice is two families, not one of repeated core counts). A group is
    named after its servers without the -Ncores suffix."""
    groups: dict[str, list[tuple[int, str]]] = {}
    for row in servers:
        placement = row.setup.placement
        if placement is None:
            continue
        rest = {k: v for k, v in row.setup.fields.items()
                if k not in ("name", "cores", "cpus", "placement", "written")}
        key = json.dumps([row.part, rest], sort_keys=True)
        groups.setdefault(key, []).append((placement.cores, row.name))
    out = []
    for members in groups.values():
        if len({cores for cores, _ in members}) < 2:
            continue
        members.sort()
        family = _CORE_SUFFIX.sub("", members[0][1])
        out.append(CoreScaling(family=family, servers=tuple(members)))
    return tuple(out)
