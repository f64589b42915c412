"""One trial, everything the store holds of it: as JSON for ``teiten show --format json`` (every
column of its row, then its monitors' figures, waits, per-second progress, statement latencies,
details, steps and system series), and typed for its text (:class:`teiten.model.shown.Shown`)."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, fields

from teiten.model import shown
from teiten.model.errors import UserError
from teiten.model.results import TrialRecord
from teiten.store import pg, trial_rows
from teiten.store.db import Store


@dataclass(frozen=True)
class _Printed:
    """What a trial's row keeps of what its load was given and printed (argv and notes as the
    JSON lists they are stored as; None or empty: none)."""

    argv: str | None
    notes: str | None
    stdout: str | None
    stderr: str | None
    server_log: str | None

    @classmethod
    def of(cls, row: pg.StoreRow) -> _Printed:
        return cls(**{f.name: row[f.name] for f in fields(cls)})


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


def _trial(store: Store, study_id: int, trial_id: str) -> tuple[pg.StoreRow, TrialRecord]:
    """The trial's row (every column, as stored) and its record."""
    return next((row, found) for row in store.trials(study_id)
                if (found := trial_rows.record(row)).trial_id == trial_id)


def _listed(stored: str | None) -> list[str]:
    """A list of texts as its column keeps it (argv, notes: JSON); none stored: empty."""
    found: list[str] = json.loads(stored) if stored else []
    return found


def _series(store: Store, study_id: int, trial_id: str) -> dict[str, list[list[float]]]:
    """The trial's system series: (seconds, value) by name."""
    series: dict[str, list[list[float]]] = {}
    for t, name, value in store.series(study_id, trial_id):
        series.setdefault(name, []).append([t, value])
    return series


def record(store: Store, study_id: int, trial_id: str) -> dict[str, object]:
    """The whole trial as one JSON-able object."""
    row, _ = _trial(store, study_id, trial_id)
    out = {k: row[k] for k in row.keys()}  # noqa: SIM118 - sqlite3.Row
    out.update({key: _listed(row[key]) for key in ("argv", "notes")})
    out.update(
        metrics=store.metrics(study_id, trial_id),
        top_waits=[asdict(w) for w in store.top_waits(study_id, trial_id, n=10)],
        waits=[dict(r) for r in store.waits(study_id, trial_id)],
        progress=[dict(r) for r in store.progress(study_id, trial_id)],
        statements=[dict(r) for r in store.statements(study_id, trial_id)],
        details=store.details(study_id, trial_id),
        steps=[st.to_json() for _, st in store.steps(study_id, trial_id)],
        series=_series(store, study_id, trial_id))
    out.pop("study_id", None)
    return out


def typed(store: Store, study_id: int, trial_id: str) -> shown.Shown:
    """The trial as ``teiten show`` prints it."""
    row, trial = _trial(store, study_id, trial_id)
    printed = _Printed.of(row)
    return shown.Shown(
        trial=trial, argv=tuple(_listed(printed.argv)), notes=tuple(_listed(printed.notes)),
        stdout=printed.stdout, stderr=printed.stderr, server_log=printed.server_log,
        metrics=store.metrics(study_id, trial_id), top_waits=tuple(store.top_waits(study_id, trial_id, n=10)),
        statements=tuple(dict(r) for r in store.statements(study_id, trial_id)),
        progress=tuple(dict(r) for r in store.progress(study_id, trial_id)),
        series=tuple(sorted(_series(store, study_id, trial_id))),
        details=shown.details(store.details(study_id, trial_id)),
        steps=shown.steps([st.to_json() for _, st in store.steps(study_id, trial_id)]))
