"""The store's typed reads: a statement certain to give one row reads it (or says in one line
that the store gave none), and a result row's steps and sizes become one CSV cell each, a
malformed step refused by the name of what it lacks."""

from __future__ import annotations

import sqlite3

import pytest
from pydantic import ValidationError

from teiten.model.errors import StoreError
from teiten.store import pg
from teiten.store.rows import csv_row


def test_one_reads_the_row_a_statement_is_certain_to_give() -> None:
    conn = sqlite3.connect(":memory:")
    conn.row_factory = sqlite3.Row
    try:
        row = pg.one(conn.execute("SELECT 1 AS n, 'a' AS s"))
        assert (row[0], row["s"], tuple(row), row.keys()) == (1, "a", (1, "a"), ["n", "s"])
        with pytest.raises(StoreError, match="gave no row"):
            pg.one(conn.execute("SELECT 1 WHERE 0"))
    finally:
        conn.close()


def test_a_result_rows_steps_and_sizes_are_one_cell_each_in_csv() -> None:
    row: dict[str, object] = {
        "trial_id": "t1",
        "steps": [{"name": "load", "param": "2 devices", "seconds": 0.0055412, "rows": None},
                  {"name": "index", "param": None, "seconds": 1, "rows": 3}],
        "sizes": {"iot_rdb": 188416, "iot_rdb_pkey": 8192}, "tps": None}
    cells = csv_row(row)
    assert cells == {"trial_id": "t1", "steps": "load[2 devices]=0.0055412; index=1",
                     "sizes": "iot_rdb=188416; iot_rdb_pkey=8192", "tps": None}
    assert list(cells) == list(row)  # the columns in their order
    plain: dict[str, object] = {"trial_id": "t2", "steps": None, "sizes": None}
    assert csv_row(plain) == plain


def test_a_step_without_its_seconds_is_refused_by_name() -> None:
    with pytest.raises(ValidationError, match="seconds"):
        csv_row({"trial_id": "t1", "steps": [{"name": "load", "param": None}], "sizes": None})
