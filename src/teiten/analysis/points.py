"""Each point of a finished study as the report judged it, for the store to keep
(``point_summaries``; docs/DESIGN.md, "Results others read"). Pure functions.

The figures are the report's own (:func:`teiten.analysis.summary.report_data`, which the caller
runs on the same study): the server's median TPS and its interval, and for a server compared
with another (its baseline, or a tenant's reference) the ratio of the medians, the interval's
own estimate, the interval at the level the report's family needs, and the verdict read from
it; and what the registered tables add to a point's summary (the latency percentiles, where
the workload measured them: teiten.analysis.tables.point_figures). So a summary says what
``teiten report`` and ``teiten gate`` print for that point. Points
of measured-statement workloads have no TPS and no summary, as the gate judges none.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import TypedDict

from teiten.analysis import tables, verdicts
from teiten.analysis.model import Point, ReportData
from teiten.host import fingerprint
from teiten.model.results import PointSummary, ServerRecord, StudyResults


def summaries(report: ReportData, study: StudyResults) -> list[PointSummary]:
    """One summary per server and point of every pgbench workload of ``report``, the report of
    ``study``: the baseline's own row (its median, no ratio) first, then each compared
    server's."""
    finished = stamp(study.finished_at) or stamp(study.created_at) or study.created_at
    testbed = fingerprint.testbed_key(study.fingerprint, study.record.testbed)
    records = {s.name: s for s in study.servers}
    versions = {i.name: i.version for i in report.servers}
    emulated = {i.name for i in report.servers if i.emulated}
    threads = {(t.planned.server, t.planned.workload, t.planned.clients): t.planned.threads
               for t in study.trials}
    out = []
    for sec in report.sections:
        if sec.suite is not None:
            continue
        by_name = {s.server: {p.clients: p for p in s.points} for s in sec.servers}
        latencies = tables.point_figures(sec)  # latency percentiles, where measured
        for series in sec.servers:
            baseline = None if series.server == sec.baseline else series.reference or sec.baseline
            build = _build(records.get(series.server))
            for p in series.points:
                ref = by_name.get(baseline or "", {}).get(p.clients)
                out.append(PointSummary(
                    study_id=study.study_id, study=study.name, testbed=testbed,
                    workload=sec.workload, clients=p.clients,
                    threads=threads.get((series.server, sec.workload, p.clients)),
                    server=series.server, baseline=baseline, tps_median=p.tps_median,
                    tps_low=p.tps_ci[0] if p.tps_ci else None,
                    tps_high=p.tps_ci[1] if p.tps_ci else None,
                    tps_level_pct=_pct(p.tps_ci_level), n_ok=p.n_ok, n_failed=p.n_failed,
                    baseline_tps_median=ref.tps_median if ref else None,
                    **(_judged(p) if baseline is not None else _unjudged()),
                    version=versions.get(series.server), **build, finished_at=finished,
                    emulated=int(bool({series.server, baseline} & emulated)),
                    **latencies.get((series.server, p.clients), {})))
    return out


def _pct(value: float | None) -> float | None:
    return None if value is None else value * 100


class Judged(TypedDict):
    """A compared server's ratio, interval and verdict, in percent, as the report's CSV (all
    None for the baseline's own row)."""

    ratio_pct: float | None
    estimate_pct: float | None
    low_pct: float | None
    high_pct: float | None
    level_pct: float | None
    required_pct: float | None
    method: str | None
    margin_pct: float | None
    verdict: str | None
    verdict_reason: str | None


class Build(TypedDict):
    """The build a server ran, as a point's summary keeps it."""

    build_key: str | None
    git_commit: str | None
    git_subject: str | None
    git_position: int | None
    committed_at: str | None


def _judged(p: Point) -> Judged:
    """A compared server's ratio, interval and verdict, in percent, as the report's CSV."""
    return {"ratio_pct": _pct(p.ratio), "estimate_pct": _pct(p.estimate),
            "low_pct": _pct(p.ratio_ci[0]) if p.ratio_ci else None,
            "high_pct": _pct(p.ratio_ci[1]) if p.ratio_ci else None,
            "level_pct": _pct(p.ratio_ci_level),
            "required_pct": _pct(p.required or verdicts.family_level(p.comparisons)),
            "method": p.ratio_method or None, "margin_pct": p.margin_pct,
            "verdict": p.verdict or None, "verdict_reason": p.reason or None}


def _unjudged() -> Judged:
    return {"ratio_pct": None, "estimate_pct": None, "low_pct": None, "high_pct": None, "level_pct": None,
            "required_pct": None, "method": None, "margin_pct": None, "verdict": None, "verdict_reason": None}


def _build(record: ServerRecord | None) -> Build:
    """The build a server ran: the install's key and its git commit, as ``teiten install``
    recorded them in the server's resolved install ({"key", "git": {"commit", "subject",
    "position", "committed_at", ...}}); None where it recorded none."""
    build: Mapping[str, object] = (record.setup.build or {}) if record else {}
    found = build.get("git")
    git: Mapping[str, object] = found if isinstance(found, Mapping) and found else {}
    position = git.get("position")
    return {"build_key": _text(build.get("key")), "git_commit": _text(git.get("commit")),
            "git_subject": _text(git.get("subject")),
            "git_position": None if position is None else _whole(position),
            "committed_at": stamp(git.get("committed_at"))}


def _text(value: object) -> str | None:
    return None if value is None else str(value)


def _whole(value: object) -> int:
    if isinstance(value, int | float | str):
        return int(value)
    raise ValueError(f"a stored build's git position is not a number: {value!r}")


def stamp(text: object) -> str | None:
    """An ISO 8601 timestamp with its offset (one written without is UTC, as teiten writes
    them); None for none or for text that is not one."""
    if not text:
        return None
    try:
        found = datetime.fromisoformat(str(text))
    except ValueError:
        return None
    return (found if found.tzinfo else found.replace(tzinfo=UTC)).isoformat()
