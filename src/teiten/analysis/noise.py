"""The noise guard in the report: which trials foreign load disturbed (kept, left out of the
analysis) and what repeated them, whether the machine was busy before the first trial, and
whether the guard was on at all (issue 18, item 3), and for a study whose runs had it on for
some trials and off for others, which trials were guarded (issue 53, item 6: from the runs'
guards the study keeps, ``guard_runs``, and when each trial started)."""

from __future__ import annotations

from collections.abc import Mapping

from teiten.analysis.model import Notice
from teiten.host.fingerprint import NOT_EXPOSED
from teiten.host.guard import ForeignLoad, Rule, who
from teiten.model.results import StudyResults, TrialRecord


def noise_notices(study: StudyResults) -> list[Notice]:
    """The guard's notices, first among a report's warnings: a figure left out is a doubt
    about every figure near it."""
    out: list[Notice] = []
    guard, quiet = study.record.noise_guard, study.record.quiet_check
    partly = partly_guarded(study)
    if partly is not None:  # some runs of the study had the guard on, others off: which trials
        out.append(partly)
    elif guard is not None and not study.record.guard_enabled():
        out.append(Notice("noise-guard-off"))
    elif guard is not None and isinstance(spare := guard.get("spare_fraction"), int | float) and spare > 0:
        rule = Rule.of(guard)
        out.append(Notice("noise-guard-spare", {"fraction": f"{rule.fraction:g}",
                                                "limit": f"{rule.limit_cpus:g}"}))
    if guard is not None and quiet is not None and study.record.guard_enabled():
        found, rule = ForeignLoad.from_json(quiet), Rule.of(guard)
        limit = quiet.get("limit")
        if not rule.quiet(found, float(limit) if isinstance(limit, int | float) else rule.limit_cpus):
            out.append(busy_notice(found, rule))
    for t in study.trials:
        if t.status == "disturbed":
            repeat = _next(study.trials, t)
            p = t.planned
            where = {"trial": p.trial_id, "server": p.server, "workload": p.workload,
                     "clients": p.clients, "repetition": p.repetition, "error": t.error}
            out.append(Notice("trial-disturbed", {**where, "repeat": repeat.trial_id})
                       if repeat is not None else Notice("trial-disturbed-kept", where))
    return out


def busy_notice(found: ForeignLoad, rule: Rule | None = None) -> Notice:
    """The machine was busy before the first trial: its foreign load named by program, as the
    busy line and the guard name it (teiten.host.guard.who: stress-ng's workers summed, another
    benchmark as such), in each language (``who_ja``: notice_text takes a parameter's
    ``_<lang>`` form where there is one)."""
    return Notice("machine-busy", {"cpus": f"{found.cpus:.2f}", "who": who(found, "en", rule),
                                   "who_ja": who(found, "ja", rule)})


def tuning_notices(fingerprint: Mapping[str, object]) -> list[Notice]:
    """What in the machine's tuning makes its figures noisier (teiten.host.fingerprint.tuning), as
    pyperf's advice has it: a governor other than performance, turbo boost, transparent huge
    pages always on. Nothing for what the kernel does not say (a virtual machine's cpufreq)."""
    out = []
    governor = fingerprint.get("cpu_governor")
    if isinstance(governor, str) and governor not in ("performance", NOT_EXPOSED):
        out.append(Notice("machine-governor", {"governor": governor}))
    if fingerprint.get("turbo") == "on":
        out.append(Notice("machine-turbo"))
    if fingerprint.get("thp") == "always":
        out.append(Notice("machine-thp"))
    return out


def _next(trials: tuple[TrialRecord, ...], t: TrialRecord) -> TrialRecord | None:
    """The trial that repeated ``t``: the next in its chain of repeats (``<id>.2``, ...)."""
    original = t.planned.repeat_of or t.trial_id
    return next((r for r in trials if r.planned.repeat_of == original
                 and r.planned.attempt == t.planned.attempt + 1), None)


def guarded_trials(study: StudyResults) -> tuple[list[str], list[str]]:
    """The trials that ran with the noise guard on and those that ran with it off, in the
    study's order; a trial that never started is in neither."""
    on: list[str] = []
    off: list[str] = []
    for t in sorted(study.trials, key=lambda t: t.planned.order_index):
        guarded = study.record.guarded(t.started_at) if t.status != "planned" else None
        if guarded is not None:
            (on if guarded else off).append(t.trial_id)
    return on, off


def partly_guarded(study: StudyResults) -> Notice | None:
    """The notice of a study whose runs had the noise guard on for some trials and off for
    others, naming both; None when every trial ran with the one guard."""
    if not study.record.guard_mixed():
        return None
    on, off = guarded_trials(study)
    if not on or not off:
        return None
    return Notice("noise-guard-partly", {"guarded": ", ".join(on), "unguarded": ", ".join(off),
                                         "n_guarded": len(on), "n_unguarded": len(off)})
