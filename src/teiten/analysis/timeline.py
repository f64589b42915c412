"""A study's history on one testbed across the builds that ran it (``teiten timeline``; issue
35, item 3): for each point (workload and client count), each build's TPS, in the order of
its commits on the branch's first-parent line where every build is a git commit, else in
version order (then the order they first ran), and the change points of that series.

The points come from the store's point summaries (``teiten_points``): every study of that name
on that testbed, every server in it. A build's observations are the TPS of every ok
repetition of every server that ran it there, in any of those studies (a build that was the
new one in one study and the previous one in the next counts once, with both studies'
repetitions). The change points are E-divisive's over the builds' log TPS, builds as groups
(:mod:`teiten.analysis.changepoints`): each names the last build before it and the first after
it, with the ratio of the segments on either side and its unpaired interval, as the line of
versions gives them. The timeline's series are one family, as the line of versions' client
counts are (issue 54): each series' permutation test is at alpha divided by the number of
series tested (Bonferroni), so that a timeline without any change shows a change point in at
most alpha of timelines, however many workloads and client counts it has
(tests/unit/test_timeline_level.py simulates it). Pure functions.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from teiten.analysis import changepoints, intervals
from teiten.installs.model import version_key
from teiten.model.results import PointRow

FIRST_PARENT, VERSION = "first-parent", "version"


@dataclass(frozen=True)
class Build:
    key: str                  # the view's build: the git commit, else the install key, else the version
    version: str | None
    commit: str | None
    subject: str | None
    position: int | None      # on the first-parent line
    first_ran: str            # when a study with it first finished (ISO 8601)

    @property
    def label(self) -> str:
        """A short name: the commit's first 12 hex digits, else the version (and key)."""
        if self.commit:
            return self.commit[:12]
        if self.version and self.key == self.version:
            return self.version
        return f"{self.version or '?'} ({self.key[:8]})"


@dataclass(frozen=True)
class Change:
    clients: int
    before: Build             # the last build before the change
    after: Build              # the first build after it
    ratio: float              # the segments' ratio, after / before
    ci: tuple[float, float] | None
    level: float | None
    p: float


@dataclass(frozen=True)
class PointLine:
    workload: str
    clients: int
    values: tuple[tuple[float, ...], ...]  # per build (the timeline's order): its repetitions' TPS

    @property
    def medians(self) -> tuple[float | None, ...]:
        return tuple(statistics.median(v) if v else None for v in self.values)


@dataclass(frozen=True)
class Timeline:
    study: str
    testbed: str
    order: str                # FIRST_PARENT or VERSION
    builds: tuple[Build, ...]
    lines: tuple[PointLine, ...]
    changes: tuple[tuple[str, Change], ...]  # (workload, change), by workload and clients
    alpha: float              # the timeline's: a false change point in at most alpha of timelines
    studies: int              # how many studies it gathers
    tested: int               # the series tested (two builds with values, three values)
    series_alpha: float       # each series' test: alpha / tested (Bonferroni)


Values = Mapping[tuple[int, str, str, int], Sequence[float]]  # (study, server, workload, clients)


def timeline(rows: Sequence[PointRow], values: Values, *,
             alpha: float = changepoints.ALPHA) -> Timeline:
    """The timeline of the view's ``rows`` of one study name and testbed (every server of
    every such study), with ``values``: each row's repetitions' TPS."""
    if not rows:
        raise ValueError("a timeline needs point summaries")
    builds: dict[str, Build] = {}
    for r in sorted(rows, key=lambda r: r.time):
        if r.build not in builds:
            builds[r.build] = Build(r.build, r.version, r.git_commit, r.git_subject, r.git_position, r.time)
    ordered, order = _ordered(list(builds.values()))
    place = {b.key: i for i, b in enumerate(ordered)}
    gathered: dict[tuple[str, int], list[list[float]]] = {}
    for r in rows:
        line = gathered.setdefault((r.workload, r.clients), [[] for _ in ordered])
        line[place[r.build]] += values.get((r.study_id, r.server, r.workload, r.clients), ())
    lines = tuple(PointLine(w, c, tuple(tuple(v) for v in found))
                  for (w, c), found in sorted(gathered.items()))
    tested = sum(changepoints.testable(_groups(line)) for line in lines)
    each = alpha / max(tested, 1)  # Bonferroni over the series: the timeline is one family
    changes = tuple((line.workload, change) for line in lines
                    for change in _changes(line, ordered, each))
    return Timeline(rows[0].study, rows[0].testbed, order, tuple(ordered), lines,
                    changes, alpha, len({r.study_id for r in rows}), tested, each)


def _ordered(builds: list[Build]) -> tuple[list[Build], str]:
    """First-parent order where every build is a commit with its position; else version
    order, builds of one version in the order they first ran."""
    if builds and all(b.commit and b.position is not None for b in builds):
        return sorted(builds, key=lambda b: (b.position, b.first_ran)), FIRST_PARENT
    return sorted(builds, key=lambda b: (version_key(b.version or ""), b.first_ran)), VERSION


def _groups(line: PointLine) -> list[list[float]]:
    return [[math.log(v) for v in found if v > 0] for found in line.values]


def _changes(line: PointLine, builds: Sequence[Build], alpha: float) -> list[Change]:
    groups = _groups(line)
    found = changepoints.change_points(groups, alpha=alpha,
                                       permutations=changepoints.permutations_for(alpha))
    bounds = [0, *(f.boundary for f in found), len(builds)]
    out = []
    for j, f in enumerate(found):
        before = [v for vs in line.values[bounds[j]:f.boundary] for v in vs]
        after = [v for vs in line.values[f.boundary:bounds[j + 2]] for v in vs]
        ratio = intervals.ratio_interval(after, before)  # across builds: unpaired
        last = max((k for k in range(f.boundary) if groups[k]), default=f.boundary - 1)
        out.append(Change(line.clients, builds[last], builds[f.boundary],
                          ratio.value if ratio else statistics.median(after) / statistics.median(before),
                          (ratio.low, ratio.high) if ratio else None,
                          ratio.confidence if ratio else None, f.p))
    return out
