"""What a study adds to its plan once the planned trials are done: one more block at a time
(repetitions: auto, teiten.analysis.stopping), and then, once, the profile trials at each
workload's point of largest difference (profile: {at: largest-difference},
teiten.analysis.largest). Both are saved in the store before they run, so that resume runs
them; the runner calls :func:`after_blocks` whenever it runs out of trials."""

from __future__ import annotations

import math
from collections.abc import Callable
from datetime import datetime

from teiten import workloads
from teiten.analysis import stopping
from teiten.analysis.largest import largest_differences
from teiten.messages import tr
from teiten.model.results import PlannedTrial
from teiten.model.studyrecord import AUTO_DECISIONS, Append, StudyRecord
from teiten.run.plan import plan, profile_trials
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
    plan one more block (saved before it runs, with the decision, so that resume goes on).

    The block holds only the points still undecided -- each ratio not yet known within
    ±target, with its reference server's point at the same workload and clients (docs/DESIGN.md,
    "Blocks": a block is one repetition of the points it holds) -- in the plan's seeded order.
    Each ratio's interval is then its own stopping rule's, the one bench/stopping_coverage.py
    simulates; a point already known is not measured again for another's sake."""
    auto = study.auto_repetitions
    stored = store.study_results(study_id).measured()
    blocks = max(t.planned.repetition for t in stored.trials)
    timed = [(datetime.fromisoformat(t.finished_at) - datetime.fromisoformat(t.started_at))
             .total_seconds() for t in stored.trials if t.started_at and t.finished_at]
    spent = sum(timed)
    ratios = stopping.widths(stored.trials, stored.servers[0].name,
                             margin_pct=study.margin_pct if auto.settle else None, floor=auto.floor)
    open_ = [w for w in ratios or () if not w.known(study.target_pct)]
    # The message names the widest ratio still open (the widest of all once none is).
    found = stopping.widest_of(open_ or ratios)
    undecided = {p for w in open_ for p in w.points}
    block = [t for t in plan(study, workloads.variants(study), blocks=blocks + 1)
             if t.repetition == blocks + 1 and t.point in undecided]
    block_s = spent / max(len(timed), 1) * len(block)
    ceiling, budget = limits(study, stored.record.granted_until(), blocks)
    decision = stopping.decide(ratios, blocks=blocks, target_pct=study.target_pct,
                               ceiling=ceiling, spent_s=spent, block_s=block_s, budget_s=budget)
    added: list[PlannedTrial] = []
    if decision == stopping.ADD:
        added = store.add_block(study_id, block)
    # How many more blocks would decide every open ratio (by the margin or on width): the ETA's
    # likely end while blocks are added (a stop on the decision coming), the cost said at the
    # ceiling or the budget.
    need = _more_blocks(open_, blocks, study) if open_ else None
    more = need if decision in (stopping.CEILING, stopping.BUDGET) else None
    store.update_spec(study_id, {AUTO_DECISIONS: Append({
        "blocks": blocks, "decision": decision, "spent_s": round(spent, 1),
        "widest_pct": None if found is None or found.pct is None else round(found.pct, 2),
        "where": found.where if found else None, "trials": len(added),
        "settled": sum(1 for w in ratios or () if w.settled and not w.narrow(study.target_pct)),
        **({"more_blocks": more, "more_s": round(more * block_s, 1)} if more else {}),
        **({"to_decide": need} if decision == stopping.ADD and need is not None else {}),
        **({"ceiling": ceiling} if ceiling != auto.ceiling else {})})})
    key = "auto.nothing" if found is None else f"auto.{decision}" if found.pct is not None \
        else f"auto.unknown.{decision}"
    note(tr(
        key, blocks=blocks, target=f"{study.target_pct:g}", where=found.where if found else "-",
        widest=f"{found.pct:.1f}" if found is not None and found.pct is not None else "-",
        trials=len(added), undecided=len(open_), margin=f"{study.margin_pct:g}",
        settled=sum(1 for w in ratios or () if w.settled and not w.narrow(study.target_pct))))
    if more:
        note(tr("auto.more", more=more, minutes=f"{max(1, round(more * block_s / 60))}"))
    return added


def limits(study: Study, granted_until: int | None, blocks: int) -> tuple[int, float]:
    """The ceiling and time budget of repetitions: auto after ``blocks`` blocks: the study's,
    or, up to the block ``teiten resume --more-blocks`` granted, that block and no budget."""
    auto = study.auto_repetitions
    if granted_until is None or blocks >= granted_until:
        return max(auto.ceiling, granted_until or 0), auto.budget
    return max(auto.ceiling, granted_until), math.inf


def _more_blocks(open_: list[stopping.Width], blocks: int, study: Study) -> int | None:
    """About how many more blocks would decide every ratio still open, if the noise stays as
    it was (stopping.blocks_to_decide); None when one has no interval to project from."""
    needed = [stopping.blocks_to_decide(w, blocks, target_pct=study.target_pct,
                                        margin_pct=study.margin_pct) for w in open_]
    if not needed or any(n is None for n in needed):
        return None
    return max(n for n in needed if n is not None) - blocks


def eta(store: Store, study_id: int, study: Study, spent: list[float], left: int) -> tuple[float, float] | None:
    """The time still to run, from the mean trial so far: (likely, at most). ``left`` trials are
    planned; with repetitions: auto, the blocks likely still to come are added to the first
    (the blocks the last decision projected each open ratio to need before its interval lies
    beyond or within the margin or within the target, stopping.blocks_to_decide: a stop on the
    decision that is coming; from a store of before, the widest interval projected to the target),
    and every block up to the ceiling, within the budget, to the second, each the size of the
    last block added. None before any trial."""
    if not spent:
        return None
    mean = sum(spent) / len(spent)
    now = mean * left
    if study.repetitions != "auto":
        return now, now
    stored = StudyRecord.from_json(store.study(study_id).spec)
    last = stored.last_decision()
    # A later block holds only the ratios still undecided: the last one added is the most the
    # next may hold (before the first decision, or from a store of before: a whole block).
    per_block = last.trials if last else 0
    per_block = per_block or len(plan(study, workloads.variants(study), blocks=1))
    done = last.blocks if last else 0
    planned = max(done + 1, study.blocks) if last else study.blocks
    ceiling, budget = limits(study, stored.granted_until(), done)
    most = max(0, ceiling - planned)
    likely = 0
    widest = last.widest_pct if last else None
    to_decide = last.to_decide if last else None
    if to_decide is not None:  # each open ratio's blocks to its decision (stopping.blocks_to_decide)
        likely = min(most, max(0, done + to_decide - planned))
    elif widest and done:  # a store of before: the widest interval's blocks to the target
        needed = math.ceil(done * (widest / study.target_pct) ** 2)
        likely = min(most, max(0, needed - planned))
    budget_left = max(0.0, budget - sum(spent) - now)
    extra = min(most * per_block * mean, budget_left)
    return now + min(likely * per_block * mean, extra), now + extra
