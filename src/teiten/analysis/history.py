"""The line of versions (定点観測 over time): each version against the one before it.

A study whose servers differ only in their install (the declared factor is the version) is a
line of versions. The TPS table compares every server with the study's first (基準比); this
view orders the servers by version and gives each version's ratio to the one before it (the
real 前バージョン比), per client count, judged as the TPS table's ratios are
(:mod:`teiten.analysis.judging`: the steps are one family, each interval at 1 − α/m), and the
medians along the line for its chart.

It is shown where it says more than the TPS table: three versions or more, or two whose
baseline is the newer one.
A step, or a change point, across which the build changes in what can change its speed
(compiler, optimisation flags, origin) carries that change, so that the report can say the
ratio is the build's as much as the version's.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Sequence
from dataclasses import replace

from teiten.analysis import changepoints, differences, intervals, judging, verdicts
from teiten.analysis.inputs import DiffDrawer
from teiten.analysis.model import (
    ChangePoint,
    History,
    HistoryCell,
    HistoryStep,
    Point,
    ServerSeries,
    WorkloadSection,
)
from teiten.installs.model import version_key
from teiten.model.results import Point as At
from teiten.model.results import ServerRecord


def is_line_of_versions(servers: Sequence[ServerRecord], versions: Sequence[str]) -> bool:
    """The servers differ in their install alone, and each runs another release."""
    return (len(servers) >= 2 and differences.declared(servers) <= {"install"}
            and len(set(versions)) == len(versions) and "?" not in versions)


def history(section: WorkloadSection, servers: Sequence[ServerRecord], *,
            margin_pct: float = verdicts.MARGIN_PCT, draw: DiffDrawer | None = None) -> History | None:
    """The line of versions of one workload, or None where it would say nothing more than
    the TPS table (see the module's docstring) or the study is no line of versions; each
    change point with its differential flame graph where ``draw`` can draw one
    (:func:`graphed`)."""
    series = list(section.servers)
    versions = [s.version for s in series]
    if section.suite is not None or not is_line_of_versions(servers, versions):
        return None
    ordered = sorted(series, key=lambda s: version_key(s.version))
    if len(ordered) == 2 and ordered[0].server == section.baseline:
        return None  # the TPS table's ratio is already the ratio to the previous version
    records = {s.name: s for s in servers}

    def build(before: ServerSeries, after: ServerSeries) -> tuple[tuple[str, str, str], ...]:
        a, z = records.get(before.server), records.get(after.server)
        return differences.build_changes(a, z) if a is not None and z is not None else ()

    steps = []
    m = (len(ordered) - 1) * len(section.clients)  # the table's ratios: one family
    for before, after in zip(ordered, ordered[1:], strict=False):
        cells = tuple(_cell(a, b, m, margin_pct)
                      for a, b in zip(after.points, before.points, strict=True))
        known = [(set(a.tps_blocks), set(b.tps_blocks))
                 for a, b in zip(after.points, before.points, strict=True)
                 if a.tps_blocks and b.tps_blocks]
        apart = bool(known) and not any(x & y for x, y in known)
        steps.append(HistoryStep(after.server, after.version, before.server, before.version, cells,
                                 build(before, after), apart))
    line = tuple((s.server, s.version, tuple(p.tps_median for p in s.points)) for s in ordered)
    if len(ordered) < 3:
        return History(tuple(steps), line)
    alpha = changepoints.ALPHA / len(section.clients)  # Bonferroni over the client counts
    changes = _changes(ordered, section.clients, alpha, build)
    return History(tuple(steps), line, graphed(changes, section.workload, draw), alpha)


def graphed(changes: Sequence[ChangePoint], workload: str, draw: DiffDrawer | None
            ) -> tuple[ChangePoint, ...]:
    """Each change with the differential flame graph from the version before to the version
    after, where both were profiled at one client count of ``workload``: the change's own,
    else the first both share (issue 19); a change whose graph cannot be drawn has none."""
    if draw is None:
        return tuple(changes)
    out = []
    for c in changes:
        both = sorted(at.clients for at in draw.profiled if at.workload == workload and
                      at.server == c.before and replace(at, server=c.after) in draw.profiled)
        clients = c.clients if c.clients in both else (both[0] if both else None)
        path = None if clients is None else draw(At(c.before, workload, clients),
                                                 At(c.after, workload, clients))
        out.append(replace(c, graph=path, graph_clients=clients) if path else c)
    return tuple(out)


def _changes(ordered: Sequence[ServerSeries], clients: Sequence[int], alpha: float,
             build: Callable[[ServerSeries, ServerSeries], tuple[tuple[str, str, str], ...]]
             ) -> tuple[ChangePoint, ...]:
    """The change points of each client count's line of log TPS values."""
    out = []
    for i, c in enumerate(clients):
        groups = [[math.log(v) for v in s.points[i].tps_values if v > 0] for s in ordered]
        found = changepoints.change_points(groups, alpha=alpha)
        bounds = [0, *(f.boundary for f in found), len(ordered)]
        for j, f in enumerate(found):
            before = [v for s in ordered[bounds[j]:f.boundary] for v in s.points[i].tps_values]
            after = [v for s in ordered[f.boundary:bounds[j + 2]] for v in s.points[i].tps_values]
            ratio = intervals.ratio_interval(after, before)  # across versions: unpaired
            b = max((k for k in range(f.boundary) if groups[k]), default=f.boundary - 1)
            a, z = ordered[b], ordered[f.boundary]
            out.append(ChangePoint(
                c, a.server, a.version, z.server, z.version,
                ratio.value if ratio else statistics.median(after) / statistics.median(before),
                (ratio.low, ratio.high) if ratio else None, ratio.confidence if ratio else None,
                f.p, build=build(a, z)))
    return tuple(out)


def _cell(after: Point, before: Point, comparisons: int, margin_pct: float) -> HistoryCell:
    found = judging.ratio(after.tps_values, before.tps_values, comparisons=comparisons,
                          margin_pct=margin_pct, blocks=after.tps_blocks,
                          baseline_blocks=before.tps_blocks)
    return HistoryCell(after.clients, found.estimate, found.ci, found.level, found)
