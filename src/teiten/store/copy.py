"""``teiten store copy FROM TO``: studies move between stores, SQLite and PostgreSQL both ways.

Every row of a study goes across as it was read (its spec, fingerprint, plan, each trial's
figures, series, statements, waits, steps and details, and its point summaries), so a figure
read from the copy is the one written by the run. A study takes the next free id of the
destination, in one transaction per study: a copy cut short leaves whole studies only. A
study the destination already holds (same name, creation time and machine fingerprint) is not
copied twice, so a copy can be repeated. The directories a run recorded for ``teiten clean``
stay with the source store: they belong to the machine that ran the study, which cleans them
from there.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from teiten.model.studyrow import StudyRow
from teiten.store import pg
from teiten.store.db import Store
from teiten.store.points import STAMPS, iso

COPY_LOCK = 0x74656974656E  # pg_advisory_xact_lock's key while a copy looks for its twin
# The tables of a study's rows (besides ``studies``), in the order their keys need.
STUDY_TABLES = ("servers", "trials", "progress", "statements", "series", "metrics", "waits",
                "details", "steps", "point_summaries")


@dataclass(frozen=True)
class Copied:
    """One study of the source: its id there, its id in the destination (None: not copied),
    and what became of it: copied, already there, or not finished (a study still running,
    or interrupted, is copied once it is finished)."""

    name: str
    source_id: int
    dest_id: int | None
    outcome: str
    trials: int


def copy(source: Store, dest: Store, study_ids: list[int] | None = None) -> Iterator[Copied]:
    """Copy the studies ``study_ids`` (default: all) of ``source`` into ``dest``, one by one,
    each read from one snapshot of the source and written in one transaction."""
    rows = source.studies()
    if study_ids is not None:
        rows = [source.study(i) for i in study_ids]
    for study in rows:
        sid = study.id
        trials = len(source.trials(sid))
        if not study.finished:
            yield Copied(study.name, sid, None, f"not copied: {study.state}", trials)
            continue
        with source.snapshot():
            found = {table: source.conn.execute(
                f"SELECT * FROM {table} WHERE study_id=?", (sid,)).fetchall()  # noqa: S608
                for table in STUDY_TABLES}
        stored = study.columns()
        columns = [k for k in stored if k not in ("id", "run_dir")]
        with dest.transaction() as c:
            if dest.postgres:  # two copies at once: one looks for the twin after the other
                c.execute("SELECT pg_advisory_xact_lock(?)", (COPY_LOCK,))
            twin = _twin(dest, study)
            if twin is None:
                new_id = int(pg.one(c.execute(
                    f"INSERT INTO studies ({', '.join(columns)}) VALUES ({_marks(columns)}) "  # noqa: S608
                    "RETURNING id", tuple(stored[k] for k in columns)))[0])
                for table, table_rows in found.items():
                    _insert(c, table, table_rows, new_id)
        yield Copied(study.name, sid, twin if twin is not None else new_id,
                     "already there" if twin is not None else "copied", trials)


def _twin(dest: Store, study: StudyRow) -> int | None:
    for row in dest.studies():
        if (row.name, row.created_at, row.fingerprint) == (study.name, study.created_at, study.fingerprint):
            return row.id
    return None


def _marks(columns: list[str]) -> str:
    return ", ".join("?" * len(columns))


def _insert(dest: pg.Connection, table: str, rows: Sequence[pg.StoreRow], dest_id: int) -> None:
    if not rows:
        return
    columns = list(rows[0].keys())
    at = columns.index("study_id")
    # A timestamp (point_summaries') is a datetime read from PostgreSQL and text read from
    # SQLite: written as ISO 8601 text, which either reads as its own.
    stamps = {i for i, c in enumerate(columns) if c in STAMPS}
    dest.executemany(
        f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({_marks(columns)})",  # noqa: S608
        [tuple(dest_id if i == at else iso(v) if i in stamps else v for i, v in enumerate(r))
         for r in rows])
