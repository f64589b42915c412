"""One trial, everything the store holds of it: as JSON for ``teiten show --format json`` (every
column of its row, then its monitors' figures, waits, per-second progress, statement latencies,
details, steps and system series), and typed for its text (:class:`teiten.model.shown.Shown`)."""

from __future__ import annotations

import json
from typing import Any

from teiten.model import shown
from teiten.model.errors import UserError
from teiten.store.db import Store


def find(store: Store, trial_id: str) -> tuple[int, str]:
    """The (study id, trial id) that ``trial_id`` (TRIAL_ID or STUDY_ID:TRIAL_ID) names, or one
    line that says why none does."""
    found = [t for t in store.records() if trial_id in (t.trial_id, f"{t.study_id}:{t.trial_id}")]
    if not found:
        raise UserError(f"no trial {trial_id} in {store}; 'teiten results --store "
                        f"{store}' lists them")
    if len(found) > 1:
        ids = ", ".join(f"{t.study_id}:{t.trial_id}" for t in found)
        raise UserError(f"trial {trial_id} is in several studies of {store}; give one of {ids}")
    return found[0].study_id, found[0].trial_id


def record(store: Store, study_id: int, trial_id: str) -> dict[str, Any]:
    """The whole trial as one JSON-able object."""
    row = next(r for r in store.trials(study_id) if r["trial_id"] == trial_id)
    out = {k: row[k] for k in row.keys()}  # noqa: SIM118 - sqlite3.Row
    out.update({key: json.loads(row[key]) if row[key] else [] for key in ("argv", "notes")})
    series: dict[str, list[list[float]]] = {}
    for r in store.series(study_id, trial_id):
        series.setdefault(r["name"], []).append([r["t"], r["value"]])
    out.update(
        metrics=store.metrics(study_id, trial_id), top_waits=store.top_waits(study_id, trial_id, n=10),
        waits=[dict(r) for r in store.waits(study_id, trial_id)],
        progress=[dict(r) for r in store.progress(study_id, trial_id)],
        statements=[dict(r) for r in store.statements(study_id, trial_id)],
        details=store.details(study_id, trial_id),
        steps=[{k: v for k, v in st.items() if k != "trial_id"} for st in store.steps(study_id, trial_id)],
        series=series)
    out.pop("study_id", None)
    return out


def typed(store: Store, study_id: int, trial_id: str) -> shown.Shown:
    """The trial as ``teiten show`` prints it."""
    whole = record(store, study_id, trial_id)
    trial = next(t for t in store.records(study_id) if t.trial_id == trial_id)
    return shown.Shown(
        trial=trial, argv=tuple(whole["argv"]), notes=tuple(whole["notes"]), stdout=whole["stdout"],
        stderr=whole["stderr"], server_log=whole["server_log"], metrics=whole["metrics"],
        top_waits=shown.waits(whole["top_waits"]), statements=tuple(whole["statements"]),
        progress=tuple(whole["progress"]), series=tuple(sorted(whole["series"])),
        details=shown.details(whole["details"]), steps=shown.steps(whole["steps"]))
