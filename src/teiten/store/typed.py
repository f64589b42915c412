"""The types of an SQLite store's values, checked where they are read.

SQLite keeps whatever a column is given (its declared type is only an affinity): a store that
another program wrote, or a damaged one, can hold text where teiten wrote a number, and
that text would fail far from here, in the middle of a report (a TypeError on ``trials.tps``).
Each table a read touches is checked once per study and store (``typeof()`` of every column,
in one query that SQLite runs in C, a small part of what reading the rows costs) against the
types of teiten's own schema, and the first value of a wrong type is refused in one line that
names its table, column and row. A PostgreSQL store types its columns itself.
"""

from __future__ import annotations

import sqlite3
from functools import cache

from teiten.model.errors import UnusableStore
from teiten.store.pg import Connection, one
from teiten.store.schema import MIGRATIONS

# A declared type -> the storage classes (typeof) its values may have. A number column takes
# either kind of number (SQLite keeps 3.5 in an INTEGER column as a real), never text or a blob.
_ALLOWED = {"INTEGER": ("integer", "real"), "REAL": ("real", "integer"), "TEXT": ("text",)}
_SAID = {"INTEGER": "an integer", "REAL": "a number", "TEXT": "text"}
# The per-second tables, millions of rows in a large study: only their numbers are checked
# (their text columns are keys that each read matches as text), which keeps the check at a
# few seconds for 3 million rows (bench/report_size.py --trials 100000).
_PER_SECOND = frozenset({"series", "progress"})


@cache
def expected() -> dict[str, tuple[tuple[str, str, tuple[str, ...]], ...]]:
    """Each table of teiten's schema: (column, declared type, storage classes allowed), made
    by running the migrations on an empty database in memory (the schema's one source)."""
    conn = sqlite3.connect(":memory:")
    conn.row_factory = sqlite3.Row
    try:
        for step in sorted(MIGRATIONS):
            MIGRATIONS[step](conn)
        out = {}
        for (table,) in conn.execute("SELECT name FROM sqlite_master WHERE type='table'").fetchall():
            columns = []
            for row in conn.execute(f'PRAGMA table_info("{table}")').fetchall():
                declared = str(row["type"]).upper()
                if declared in _ALLOWED:
                    allowed = _ALLOWED[declared] + (() if row["notnull"] else ("null",))
                    columns.append((str(row["name"]), declared, allowed))
            out[str(table)] = tuple(columns)
        return out
    finally:
        conn.close()


def check(conn: Connection, path: object, table: str, study_id: int | None = None) -> None:
    """Refuse (:class:`UnusableStore`, one line) the first row of ``table`` (of the study
    ``study_id``, else any) holding a value of a type its column does not take."""
    wanted = expected().get(table)
    if not wanted:
        return
    present = {str(r[1]) for r in conn.execute(f'PRAGMA table_info("{table}")').fetchall()}
    columns = [(c, d, a) for c, d, a in wanted
               if c in present and (d != "TEXT" or table not in _PER_SECOND)]
    if not columns:
        return
    wrong = " OR ".join(f"""typeof("{c}") NOT IN ({", ".join(f"'{k}'" for k in allowed)})"""
                        for c, _, allowed in columns)
    # "+": the table read in its own order, not a page at a time in the order of the index of
    # the study's rows, which was several times slower in a study of 100,000 trials.
    column = "id" if table == "studies" else "study_id"
    where, params = ("", ()) if study_id is None else (f"+{column}=? AND ", (study_id,))
    found = conn.execute(f'SELECT rowid FROM "{table}" WHERE {where}({wrong}) LIMIT 1',  # noqa: S608
                         params).fetchone()
    if found is None:
        return
    rowid = found[0]
    kinds = one(conn.execute(f"""SELECT {", ".join(f'typeof("{c}")' for c, _, _ in columns)} """  # noqa: S608
                             f'FROM "{table}" WHERE rowid=?', (rowid,)))
    column = next(c for (c, _, allowed), kind in zip(columns, kinds, strict=True)
                  if kind not in allowed)
    value, kind = one(conn.execute(f'SELECT "{column}", typeof("{column}") FROM "{table}" '  # noqa: S608
                                   "WHERE rowid=?", (rowid,)))
    declared = next(d for c, d, _ in columns if c == column)
    trial = ""
    if "trial_id" in present and column != "trial_id":
        trial_id = one(conn.execute(f'SELECT trial_id FROM "{table}" WHERE rowid=?',  # noqa: S608
                                    (rowid,)))[0]
        trial = f" (trial {str(trial_id)[:40]})"
    shown = "NULL" if value is None else f"{kind} {_short(value)}"
    raise UnusableStore(
        f"{path} is damaged or not a teiten store: table {table}, column {column}, row {rowid}"
        f"{trial} holds {shown} where teiten writes {_SAID[declared]}; give the store "
        "'teiten run' wrote, or a copy of it from before the damage")


def _short(value: object) -> str:
    text = repr(value if not isinstance(value, bytes) else value[:16])
    return text if len(text) <= 40 else text[:37] + "..."
