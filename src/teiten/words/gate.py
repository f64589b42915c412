"""``teiten gate``'s words: the decision of :mod:`teiten.analysis.gate` as a CI log and a job
summary read it, saying whether the two servers ran paired (in the same blocks) or unpaired.

Its words claim no more than the intervals show (issue 54, item 4): a point is "slower", and
"slower beyond ±m%" only where its interval lies wholly below 100 − m
(:func:`teiten.analysis.gate.beyond_margin`); an interval of 93.4–98.6% is slower, by an amount it
cannot place beyond ±5%.
"""

from __future__ import annotations

from collections.abc import Sequence

from teiten.analysis import verdicts as v
from teiten.analysis.gate import FAIL, UNDECIDED, Gate, GatePoint, beyond_margin
from teiten.words import formats as f
from teiten.words.answer import answer_lines
from teiten.words.context import Context
from teiten.words.i18n import clients_phrase, join, tr
from teiten.words.verdicts import MARKS, verdict_title


def beyond_key(key: str, points: Sequence[GatePoint]) -> str:
    """The catalogue key of a sentence that says ``points`` are slower (or faster): ``key``
    itself when every interval lies beyond the margin, ``key.some-beyond`` when some do (the
    sentence then names them), ``key.not-beyond`` when none does."""
    beyond = sum(beyond_margin(g.point) for g in points)
    return key if beyond == len(points) else f"{key}.some-beyond" if beyond else f"{key}.not-beyond"


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
