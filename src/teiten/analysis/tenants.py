"""Tenants (``tenants:``, METHODS S5's two guests at once): a group's trial, as the analysis
reads it, is one trial per tenant.

The store keeps a group's trial as one row (its figures the sum of the tenants' pgbench) and
each tenant's own figures as a part of its load. Here each part becomes a trial of a server
of its own, ``guest1 (with guest2)``: the tenant as its neighbours found it, in the block and
at the point of the group's trial. The report then compares it with the same server alone by
the usual blocked ratio and its interval (the S5 degradation table), like any two servers.
The machine's CPU breakdown of the group's trial goes with each tenant; the database
monitors, which watch one server, do not.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from teiten.analysis.inputs import StudyData
from teiten.model.errors import UserError
from teiten.model.results import ServerRecord, TrialRecord
from teiten.model.studyrecord import Parameters


def tenant_name(member: str, group: Sequence[str]) -> str:
    """The server that stands for ``member`` loaded beside the rest of ``group``."""
    return f"{member} (with {'+'.join(m for m in group if m != member)})"


def groups(study: Parameters) -> list[list[str]]:
    """The study's groups of tenants (its ``tenants``)."""
    return [list(g) for g in study.tenants]


def pairs(study: Parameters) -> list[tuple[str, str]]:
    """Each tenant alone, and beside its neighbours: the degradation pairs of the report."""
    return [(m, tenant_name(m, g)) for g in groups(study) for m in g]


def degradations(study: Parameters, names: Sequence[str], asked: Sequence[tuple[str, str]] | None
                 ) -> list[tuple[str, str]]:
    """The pairs of servers a report's degradation tables compare: those ``asked``
    (``--degradation``), each of which must name servers of the report; else each tenant
    alone and beside its neighbours (METHODS S5), and, in a study of environments, each
    environment against the first server."""
    if asked:
        for a, b in asked:
            for n in (a, b):
                if n not in names:
                    raise UserError(f"--degradation names server '{n}', which is not in the report "
                                    f"({', '.join(names)})")
        return list(asked)
    found = pairs(study)
    if study.environments:
        beside = {b for _, b in found}
        found = [(names[0], n) for n in names[1:] if n not in beside] + found
    return found


def apart(data: StudyData) -> StudyData:
    """``data`` with each group trial replaced by one trial per tenant (see the module)."""
    found = {"+".join(g): g for g in groups(data.study.record.parameters)}
    if not found:
        return data
    study = data.study
    by_name = {s.name: s for s in study.servers}
    added: dict[str, ServerRecord] = {}
    trials: list[TrialRecord] = []
    metrics = dict(data.metrics)
    for t in study.trials:
        group = found.get(t.planned.server)
        if group is None:
            trials.append(t)
            continue
        load = data.loads.get(t.trial_id)
        parts = {p.node: p for p in (load.parts if load is not None else ())}
        for member in group:
            name = tenant_name(member, group)
            if name not in added:
                added[name] = replace(by_name[member], name=name,
                                      position=len(study.servers) + len(added))
            # a repeat of a disturbed group trial, X.2, stands as X/member.2 (repeat of X/member)
            original, dot, attempt = t.trial_id.partition(".")
            tid = f"{original}/{member}{dot}{attempt}"
            part = parts.get(member)
            figures = None
            if t.figures is not None and part is not None and part.transactions:
                figures = replace(t.figures, tps=part.tps, transactions=int(part.transactions),
                                  latency_ms_avg=part.latency_ms_avg,
                                  latency_ms_stddev=None, failed_transactions=None)
            repeat_of = f"{t.planned.repeat_of}/{member}" if t.planned.repeat_of else None
            trials.append(replace(t, planned=replace(t.planned, trial_id=tid, server=name,
                                                     repeat_of=repeat_of),
                                  figures=figures,
                                  status=t.status if figures is not None or t.status != "ok"
                                  else "failed"))
            metrics[tid] = {k: v for k, v in data.metrics.get(t.trial_id, {}).items()
                            if k.startswith("cpu_")}
    return replace(data, study=replace(study, servers=(*study.servers, *added.values()),
                                       trials=tuple(trials)), metrics=metrics)
