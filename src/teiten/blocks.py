"""What a study adds to its plan once the planned trials are done: one more block at a time
(repetitions: auto, teiten.analysis.stopping), and then, once, the profile trials at each
workload's point of largest difference (profile: {at: largest-difference},
teiten.analysis.largest). Both are saved in the store before they run, so that resume runs
them; the runner calls :func:`after_blocks` whenever it runs out of trials."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from teiten import workloads
from teiten.analysis import stopping
from teiten.analysis.largest import largest_differences
from teiten.messages import tr
from teiten.plan import plan, profile_trials
from teiten.results import PlannedTrial
from teiten.spec import Study
from teiten.store import Store

Note = Callable[[str], None]  # a line for the progress display


def after_blocks(store: Store, study_id: int, study: Study, note: Note) -> list[PlannedTrial]:
    """When the planned trials are done: one more block (repetitions: auto), else, once, the
    profile trials at each workload's point of largest difference (profile: {at:
    largest-difference}), saved before they run, so that resume runs them."""
    stored = store.study_results(study_id)
    if any(t.planned.purpose for t in stored.trials):
        return []
    if study.repetitions == "auto" and (more := next_block(store, study_id, study, note)):
        return more
    if study.profile is None or study.profile.at != "largest-difference":
        return []
    found = largest_differences(stored)
    for f in found:
        note(f.said())
    return store.add_block(study_id, profile_trials(study, [f.point for f in found]))


def next_block(store: Store, study_id: int, study: Study, note: Note) -> list[PlannedTrial]:
    """repetitions: auto, after a block: stop on width, at the ceiling or the budget, or
    plan one more block (saved before it runs, with the decision, so that resume goes on)."""
    auto = study.auto_repetitions
    stored = store.study_results(study_id).measured()
    blocks = max(t.planned.repetition for t in stored.trials)
    spent = sum((datetime.fromisoformat(t.finished_at) - datetime.fromisoformat(t.started_at))
                .total_seconds() for t in stored.trials if t.started_at and t.finished_at)
    found = stopping.widest(stored.trials, stored.servers[0].name)
    decision = stopping.decide(found, blocks=blocks, target_pct=study.target_pct,
                               ceiling=auto.ceiling, spent_s=spent, block_s=spent / blocks,
                               budget_s=auto.budget)
    added: list[PlannedTrial] = []
    if decision == stopping.ADD:
        added = store.add_block(study_id, [
            t for t in plan(study, workloads.variants(study), blocks=blocks + 1)
            if t.repetition == blocks + 1])
    store.update_spec(study_id, {"auto_decisions": [*stored.spec.get("auto_decisions", []), {
        "blocks": blocks, "decision": decision, "spent_s": round(spent, 1),
        "widest_pct": None if found is None or found.pct is None else round(found.pct, 2),
        "where": found.where if found else None}]})
    key = "auto.nothing" if found is None else f"auto.{decision}" if found.pct is not None \
        else f"auto.unknown.{decision}"
    note(tr(
        key, blocks=blocks, target=f"{study.target_pct:g}", where=found.where if found else "-",
        widest=f"{found.pct:.1f}" if found is not None and found.pct is not None else "-"))
    return added


