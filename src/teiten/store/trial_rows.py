"""A trial as the store's rows hold it: the plan's columns written, and a row read back as a
typed :class:`teiten.model.results.TrialRecord` (either dialect's row)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import fields
from typing import Any

from teiten.model.results import LoadFigures, PlannedTrial, TrialRecord
from teiten.store import pg


def insert_planned(c: pg.Connection, study_id: int, trials: Sequence[PlannedTrial]) -> None:
    c.executemany(
        "INSERT INTO trials (study_id, trial_id, order_index, server, workload, clients, threads,"
        " repetition, planned_duration_s, variant, repeat_of, purpose, status) VALUES"
        " (?,?,?,?,?,?,?,?,?,?,?,?, 'planned')",
        [(study_id, t.trial_id, t.order_index, t.server, t.workload, t.clients, t.threads,
          t.repetition, t.duration_s, t.variant, t.repeat_of, t.purpose) for t in trials])


def _columns(row: pg.StoreRow, names: Sequence[str], renamed: Mapping[str, str]) -> dict[str, Any]:
    """The values of ``row`` under the names of a record's fields: each field reads the column
    of its own name, or the one ``renamed`` gives it."""
    return {name: row[renamed.get(name, name)] for name in names}


_PLANNED = tuple(f.name for f in fields(PlannedTrial))
_FIGURES = tuple(f.name for f in fields(LoadFigures) if f.name not in ("progress", "statements"))
_TRIAL = ("study_id", "study", "status", "attempts", "started_at", "finished_at", "error")


def record(row: pg.StoreRow) -> TrialRecord:
    """A trial's row as its record: the plan's columns, its state, and its load's figures
    (None where no load finished: no transactions counted)."""
    planned = PlannedTrial(**_columns(row, _PLANNED, {"duration_s": "planned_duration_s"}))
    figures = None if row["transactions"] is None else LoadFigures(**_columns(row, _FIGURES, {}))
    return TrialRecord(planned, **_columns(row, _TRIAL, {}), figures=figures)
