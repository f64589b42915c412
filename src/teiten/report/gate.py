"""``teiten gate``: a candidate server against a baseline, point by point, as a CI job reads it.

The verdicts are the report's (:mod:`teiten.analysis.verdicts`): the candidate's ratio to the
baseline at each point of every pgbench workload, its interval at the level the gate's family of
comparisons needs (Bonferroni over those points), read with the study's margin. The baseline and
the candidate are two servers of one study (paired by block), or of two studies (unpaired: the
two-sample interval), which the output says. The gate fails when some point is slower (its
interval wholly below 100% and not within the margin), is undecided when some point cannot tell,
and passes when every point is decided and none is slower (:class:`Gate`.outcome).

Its words claim no more than the intervals show (issue 54, item 4): a point is "slower", and
"slower beyond ±m%" only where its interval lies wholly below 100 − m (:func:`beyond_margin`); an
interval of 93.4–98.6% is slower, by an amount it cannot place beyond ±5%.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from decimal import Decimal

from teiten.analysis import verdicts as v
from teiten.analysis.inputs import ReportOptions, StudyData
from teiten.analysis.model import Point, ReportData
from teiten.analysis.summary import report_data
from teiten.errors import UserError
from teiten.report import formats as f
from teiten.report.answer import answer_lines
from teiten.report.cells import Context
from teiten.report.i18n import clients_phrase, join, tr
from teiten.report.verdicts import MARKS, verdict_title

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


def beyond_key(key: str, points: Sequence[GatePoint]) -> str:
    """The catalogue key of a sentence that says ``points`` are slower (or faster): ``key``
    itself when every interval lies beyond the margin, ``key.some-beyond`` when some do (the
    sentence then names them), ``key.not-beyond`` when none does."""
    beyond = sum(beyond_margin(g.point) for g in points)
    return key if beyond == len(points) else f"{key}.some-beyond" if beyond else f"{key}.not-beyond"


def restricted(data: StudyData, names: Sequence[str]) -> StudyData:
    """``data`` with only the servers ``names``, in that order (the first is the baseline), and
    their trials; tenants and environments no longer pair its servers."""
    study = data.study
    by_name = {s.name: s for s in study.servers}
    missing = [n for n in names if n not in by_name]
    if missing:
        raise UserError(f"study {study.name} (#{study.study_id}) has no server {missing[0]}; its "
                        f"servers are {', '.join(by_name)}")
    spec = {**study.spec, "study": {k: val for k, val in study.record.parameters.fields.items()
                                    if k not in ("tenants", "environments")}}
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


def text(gate: Gate, lang: str, *, allow_undecided: bool = False) -> str:
    """The one-screen summary for a CI log."""
    ctx = Context.of(gate.report)
    lines = [_title(gate, lang), _family(gate, lang), ""]
    lines += [f"  {line}" for line in answer_lines(gate.report)]
    lines.append("")
    rows = _rows(gate, ctx)
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]) - 1)]
    lines += ["  " + "  ".join(c.ljust(w) for c, w in zip(r, widths, strict=False)) + "  " + r[-1]
              for r in rows]
    lines += ["", _result(gate, lang, allow_undecided=allow_undecided)]
    return "\n".join(lines) + "\n"


def markdown(gate: Gate, lang: str, *, allow_undecided: bool = False) -> str:
    """The same as Markdown, for a CI job's summary page."""
    ctx = Context.of(gate.report)
    rows = _rows(gate, ctx)
    lines = [f"### {_title(gate, lang)}", "", _family(gate, lang), ""]
    lines += [f"- {line}" for line in answer_lines(gate.report)]
    lines += ["", "| " + " | ".join(rows[0]) + " |", "|" + "---|" * len(rows[0])]
    lines += ["| " + " | ".join(cell.replace("|", "\\|") for cell in r) + " |" for r in rows[1:]]
    lines += ["", f"**{_result(gate, lang, allow_undecided=allow_undecided)}**"]
    return "\n".join(lines) + "\n"


def _title(gate: Gate, lang: str) -> str:
    how = tr("gate.paired" if gate.paired else "gate.unpaired", lang)
    return tr("gate.title", lang, candidate=gate.candidate, baseline=gate.baseline,
              studies=gate.studies, how=how)


def _family(gate: Gate, lang: str) -> str:
    first = gate.points[0].point
    auto = first.required > v.family_level(first.comparisons) + 1e-12
    return tr("gate.family", lang, m=first.comparisons, auto=tr("gate.family.auto", lang) if auto else "",
              required=v.required_text(first.required or v.family_level(first.comparisons)),
              margin=f"{first.margin_pct:g}") + (
        " " + tr("gate.not_judged", lang, workloads=join(gate.not_judged, lang))
        if gate.not_judged else "")


def _rows(gate: Gate, ctx: Context) -> list[tuple[str, ...]]:
    lang = ctx.lang
    rows = [tuple(tr(k, lang) for k in ("gate.workload", "gate.clients", "gate.ratio", "gate.verdict"))]
    for g in gate.points:
        p = g.point
        bounds = f.ratio_ci_bounds(p)
        ratio = f.format_ratio(p.shown_ratio) + (
            f" [{bounds}, {f.format_level(p.ratio_ci_level)}%]" if bounds else "")
        rows.append((g.workload, str(p.clients), f"{MARKS.get(p.verdict, '')} {ratio}",
                     verdict_title(p, ctx)))
    return rows


def _where(points: Sequence[GatePoint], lang: str) -> str:
    by_workload: dict[str, list[int]] = {}
    for g in points:
        by_workload.setdefault(g.workload, []).append(g.point.clients)
    return join([tr("gate.at", lang, workload=w, clients=clients_phrase(c, lang))
                 for w, c in by_workload.items()], lang)


def _points(n: int, lang: str) -> str:
    return tr("gate.points.one", lang) if n == 1 else tr("gate.points.many", lang, n=n)


def _result(gate: Gate, lang: str, *, allow_undecided: bool) -> str:
    margin = f"{gate.points[0].point.margin_pct:g}"
    if gate.outcome == FAIL:
        slower = gate.slower
        return tr(beyond_key("gate.fail", slower), lang, candidate=gate.candidate,
                  baseline=gate.baseline, margin=margin, points=_points(len(slower), lang),
                  where=_where(slower, lang),
                  beyond=_where([g for g in slower if beyond_margin(g.point)], lang))
    if gate.outcome == UNDECIDED:
        key = "gate.undecided.allowed" if allow_undecided else "gate.undecided"
        return tr(key, lang, points=_points(len(gate.undecided), lang),
                  where=_where(gate.undecided, lang))
    one = len(gate.points) == 1
    return tr("gate.pass.one" if one else "gate.pass", lang, candidate=gate.candidate,
              baseline=gate.baseline, margin=margin, points=_points(len(gate.points), lang))
