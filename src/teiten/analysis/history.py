"""The line of versions (定点観測 over time): each version against the one before it.

A study whose servers differ only in their install (the declared factor is the version) is a
line of versions. The TPS table compares every server with the study's first (基準比); this
view orders the servers by version and gives each version's ratio to the one before it (the
real 前バージョン比), per client count, with the interval of the ratio (signed-rank over the
blocks, as the TPS table's), and the medians along the line for its chart.

It is shown where it says more than the TPS table: three versions or more, or two whose
baseline is the newer one. The intervals are not corrected for the comparisons they add.
"""

from __future__ import annotations

from collections.abc import Sequence

from teiten.analysis import differences, intervals
from teiten.analysis.model import History, HistoryCell, HistoryStep, Point, WorkloadSection
from teiten.installs.model import version_key
from teiten.results import ServerRecord


def is_line_of_versions(servers: Sequence[ServerRecord], versions: Sequence[str]) -> bool:
    """The servers differ in their install alone, and each runs another release."""
    return (len(servers) >= 2 and differences.declared(servers) <= {"install"}
            and len(set(versions)) == len(versions) and "?" not in versions)


def history(section: WorkloadSection, servers: Sequence[ServerRecord]) -> History | None:
    """The line of versions of one workload, or None where it would say nothing more than
    the TPS table (see the module's docstring) or the study is no line of versions."""
    series = list(section.servers)
    versions = [s.version for s in series]
    if section.suite is not None or not is_line_of_versions(servers, versions):
        return None
    ordered = sorted(series, key=lambda s: version_key(s.version))
    if len(ordered) == 2 and ordered[0].server == section.baseline:
        return None  # the TPS table's ratio is already the ratio to the previous version
    steps = []
    for before, after in zip(ordered, ordered[1:], strict=False):
        cells = tuple(_cell(a, b) for a, b in zip(after.points, before.points, strict=True))
        steps.append(HistoryStep(after.server, after.version, before.server, before.version, cells))
    line = tuple((s.server, s.version, tuple(p.tps_median for p in s.points)) for s in ordered)
    return History(tuple(steps), line)


def _cell(after: Point, before: Point) -> HistoryCell:
    if after.tps_median is None or not before.tps_median:
        return HistoryCell(after.clients, None)
    found = intervals.ratio_interval(after.tps_values, before.tps_values, blocks=after.tps_blocks,
                                     baseline_blocks=before.tps_blocks)
    if found is None:
        return HistoryCell(after.clients, after.tps_median / before.tps_median)
    return HistoryCell(after.clients, found.value, (found.low, found.high), found.confidence)
