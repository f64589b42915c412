"""The gate's decision: a candidate server against a baseline, point by point, as a CI job
acts on it (``teiten gate``, and each step of ``teiten bisect``).

The verdicts are the report's (:mod:`teiten.analysis.verdicts`): the candidate's ratio to the
baseline at each point of every pgbench workload, its interval at the level the gate's family of
comparisons needs (Bonferroni over those points), read with the study's margin. The baseline and
the candidate are two servers of one study (paired by block), or of two studies (unpaired: the
two-sample interval). The gate fails when some point is slower (its interval wholly below 100%
and not within the margin), is undecided when some point cannot tell, and passes when every
point is decided and none is slower (:class:`Gate`.outcome). A slower point is beyond the margin
only where its interval lies wholly below 100 − m (:func:`beyond_margin`; issue 54, item 4).
:mod:`teiten.words.gate` words it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from decimal import Decimal

from teiten.analysis import verdicts as v
from teiten.analysis.inputs import ReportOptions, StudyData
from teiten.analysis.model import Point, ReportData
from teiten.analysis.summary import report_data
from teiten.model.errors import UserError

FAIL, UNDECIDED, PASS = "fail", "undecided", "pass"


@dataclass(frozen=True)
class GatePoint:
    workload: str
    point: Point  # the candidate's, judged against the baseline's


@dataclass(frozen=True)
class Gate:
    baseline: str
    candidate: str
    paired: bool
    studies: str  # the study (or studies) the two servers ran in, as the output names them
    points: tuple[GatePoint, ...]
    not_judged: tuple[str, ...]  # workloads whose figures are not TPS (timed steps)
    report: ReportData

    @property
    def slower(self) -> list[GatePoint]:
        return [g for g in self.points if g.point.verdict == v.SLOWER]

    @property
    def undecided(self) -> list[GatePoint]:
        return [g for g in self.points if g.point.verdict not in (v.FASTER, v.SLOWER, v.SAME)]

    @property
    def outcome(self) -> str:
        """fail: some point is slower; undecided: some point cannot tell; pass: every point is
        decided and none is slower."""
        return FAIL if self.slower else UNDECIDED if self.undecided else PASS


def beyond_margin(p: Point) -> bool:
    """Whether a slower (faster) point's interval lies wholly below 100 − m (wholly above
    100 + m), on its printed digits: only then do the words say "beyond ±m%". A slower point's
    interval is wholly below 100% and reaches below 100 − m, but may still reach above it."""
    if p.ratio_ci is None:
        return False
    low, high = v.printed_pct(p.ratio_ci[0]), v.printed_pct(p.ratio_ci[1])
    m = Decimal(str(p.margin_pct))
    if p.verdict == v.SLOWER:
        return high < 100 - m
    if p.verdict == v.FASTER:
        return low > 100 + m
    return False


def restricted(data: StudyData, names: Sequence[str]) -> StudyData:
    """``data`` with only the servers ``names``, in that order (the first is the baseline), and
    their trials; tenants and environments no longer pair its servers."""
    study = data.study
    by_name = {s.name: s for s in study.servers}
    missing = [n for n in names if n not in by_name]
    if missing:
        raise UserError(f"study {study.name} (#{study.study_id}) has no server {missing[0]}; its "
                        f"servers are {', '.join(by_name)}")
    spec = {**study.spec, "study": study.record.parameters.of_some_servers()}
    servers = tuple(replace(by_name[n], position=i) for i, n in enumerate(names))
    trials = tuple(t for t in study.trials if t.planned.server in names)
    return replace(data, study=replace(study, spec=spec, servers=servers, trials=trials))


def judge(data: StudyData, options: ReportOptions, *, paired: bool, studies: str) -> Gate:
    """The gate of ``data``'s second server against its first (``data`` holds those two)."""
    report = report_data(data, options)
    baseline, candidate = (s.name for s in data.study.servers)
    points = tuple(GatePoint(sec.workload, p) for sec in report.sections if sec.suite is None
                   for series in sec.servers if series.server == candidate for p in series.points)
    not_judged = tuple(sec.workload for sec in report.sections if sec.suite is not None)
    if not points:
        raise UserError(f"{candidate} and {baseline} share no point of a pgbench workload to "
                        "judge (the gate judges TPS; timed-step workloads have none)")
    return Gate(baseline, candidate, paired, studies, points, not_judged, report)
