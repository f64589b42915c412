"""Point summaries: kept when a study finishes (``point_summaries``), read through the view
``teiten_points`` that tools outside teiten read too (docs/DESIGN.md, "Results others read").

The store only writes and reads the rows; analysis computes them (teiten.analysis.points). A
timestamp is ISO 8601 text with its offset in an SQLite store and a ``timestamptz`` in a
PostgreSQL one; read back, it is ISO 8601 in UTC from either.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import fields
from datetime import UTC, datetime
from typing import Any

from teiten.model.results import POINT_SUMMARY_FIELDS, PointRow, PointSummary
from teiten.store import pg
from teiten.store.db import Store

STAMPS = ("finished_at", "committed_at", "time")  # the columns that are timestamps
_VIEW = tuple(f.name for f in fields(PointRow))


def keep(store: Store, study_id: int, summaries: Sequence[PointSummary]) -> None:
    """Replace the summaries of ``study_id`` with ``summaries``, in one transaction."""
    columns = ", ".join(POINT_SUMMARY_FIELDS)
    marks = ", ".join("?" * len(POINT_SUMMARY_FIELDS))
    with store.transaction() as c:
        c.execute("DELETE FROM point_summaries WHERE study_id=?", (study_id,))
        c.executemany(f"INSERT INTO point_summaries ({columns}) VALUES ({marks})",  # noqa: S608
                      [tuple(_stamp(v) if store.postgres and f in STAMPS else v
                             for f, v in zip(POINT_SUMMARY_FIELDS, s.row(), strict=True))
                       for s in summaries])


def summarized(store: Store) -> set[int]:
    """The studies that have summaries."""
    return {int(r[0]) for r in store.conn.execute("SELECT DISTINCT study_id FROM point_summaries")}


def read(store: Store, study_id: int | None = None) -> list[PointRow]:
    """The rows of the view ``teiten_points`` (of one study, or of all), in the order of their
    studies, workloads, client counts and servers."""
    where, args = ("WHERE study_id=? ", (study_id,)) if study_id is not None else ("", ())
    rows = store._read("point_summaries", study_id,  # noqa: SLF001 - the store's own package
                       f"SELECT * FROM teiten_points {where}"  # noqa: S608
                       "ORDER BY study_id, workload, clients, server", args)
    return [PointRow(**_columns(r)) for r in rows]


def _columns(row: pg.StoreRow) -> dict[str, Any]:
    return {k: iso(row[k]) if k in STAMPS else row[k] for k in _VIEW}


def _stamp(value: object) -> object:
    return datetime.fromisoformat(value) if isinstance(value, str) else value


def iso(value: object) -> str | None:
    """A timestamp as ISO 8601 in UTC, to the second: from PostgreSQL's datetime or SQLite's
    text (text without an offset is UTC, as teiten writes it)."""
    if value is None:
        return None
    stamp = value if isinstance(value, datetime) else datetime.fromisoformat(str(value))
    if stamp.tzinfo is None:
        stamp = stamp.replace(tzinfo=UTC)
    return stamp.astimezone(UTC).isoformat(timespec="seconds")
