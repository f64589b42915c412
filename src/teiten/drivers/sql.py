"""Timed SQL statements: the driver of measured-statement workloads (METHODS S6, S8-S10).

A :class:`Session` holds one connection to the workload's database and records *steps*:

- :meth:`Session.step` times a statement that changes something (a load, an index build,
  VACUUM) on the client's clock, then records the sizes of every table and index of the
  database, so that each step says what it built;
- :meth:`Session.query` runs a query once under ``EXPLAIN (ANALYZE, BUFFERS, TIMING OFF,
  FORMAT JSON)``: the server's execution time is the step's time, and the plan's figures
  (:mod:`teiten.drivers.explain`) come from the same execution. TIMING OFF leaves out the
  per-node clock reads that inflate EXPLAIN ANALYZE's total, and one execution is what a
  cold cache allows;
- :meth:`Session.cache` puts the cache in a state before the next step: ``warm`` loads the
  named relations into shared_buffers with pg_prewarm (where the server has none, by reading
  them); ``cold`` asks the server to restart
  and to drop the operating system's cache of its files, and the step records what was
  actually done.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import psycopg
from psycopg import sql

from teiten.drivers import explain, records
from teiten.model.errors import ServerError
from teiten.model.results import StepRecord
from teiten.monitors.system import StepMeter, StepReading
from teiten.servers.sql import has_prewarm, read_relations

# Given by the server: restart it with a cold cache; returns the new conninfo and what was done.
ColdRestart = Callable[[], tuple[str, dict[str, object]]]
# What a statement is given: psycopg adapts each parameter by its Python type.
Params = Sequence[object] | None
Statement = str | sql.Composed | sql.SQL

_SIZES = """
SELECT c.relname, c.relkind, pg_relation_size(c.oid), coalesce(pg_table_size(c.oid), 0)
FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE c.relkind IN ('r', 'i', 'm', 'p', 'I') AND n.nspname NOT IN ('pg_catalog', 'information_schema')
  AND n.nspname NOT LIKE 'pg_toast%' AND c.relpersistence <> 't'
ORDER BY c.relname
"""


@dataclass
class Step:
    """One timed step of a trial."""

    name: str  # load, index, query, vacuum, ...
    param: str | None  # what the step was given: a keyword, a day, a ratio
    seconds: float
    rows: int | None = None
    plan: explain.PlanSummary | None = None
    sizes: dict[str, int] | None = None  # relation -> bytes (tables with their TOAST)
    cache: dict[str, object] | None = None  # the cache state set up before this step
    extra: dict[str, object] = field(default_factory=dict)
    indexes: tuple[str, ...] = ()  # which of ``sizes`` are indexes

    def to_json(self) -> dict[str, object]:
        return {"name": self.name, "param": self.param, "seconds": self.seconds, "rows": self.rows,
                "plan": self.plan.to_json() if self.plan else None, "sizes": self.sizes,
                "indexes": list(self.indexes), "cache": self.cache, "extra": self.extra}

    def record(self) -> StepRecord:
        """The step as the store keeps it."""
        return StepRecord.from_json(self.to_json())

    @classmethod
    def from_json(cls, d: Mapping[str, object]) -> Step:
        """A step as :meth:`to_json` wrote it; what an older body lacks (or holds as null or
        empty: plan, extra, indexes) takes its default. A body of another shape raises
        ValueError, naming the field."""
        body = {**d, "param": d.get("param"), "plan": d.get("plan") or None,
                "extra": d.get("extra") or {}, "indexes": d.get("indexes") or ()}
        return records.read(cls, body, "a stored step")


class Session:
    """One connection to a workload's database, recording steps as they finish."""

    def __init__(self, conninfo: str, *, cold_restart: ColdRestart | None = None,
                 on_step: Callable[[Step], None] | None = None, meter: StepMeter | None = None):
        self.conninfo = conninfo
        self.meter = meter  # the machine around each timed step (None: not measured)
        self.cold_restart = cold_restart
        self.on_step = on_step
        self.steps: list[Step] = []
        self.notes: list[str] = []
        self._cache: dict[str, object] | None = None
        self._settings: dict[str, str] = {}
        self.conn = self._connect()

    def _connect(self) -> psycopg.Connection:
        try:
            return psycopg.connect(self.conninfo, autocommit=True, connect_timeout=15)
        except psycopg.Error as exc:
            raise ServerError(f"cannot connect to the workload's database: {exc}") from exc

    def close(self) -> None:
        self.conn.close()

    # -- untimed ---------------------------------------------------------------------------

    def execute(self, statement: Statement, params: Params = None) -> None:
        self.conn.execute(_query(statement), params)

    def scalar(self, statement: Statement, params: Params = None) -> object:
        """The first column of the first row (None: NULL, or no row)."""
        row = self.conn.execute(_query(statement), params).fetchone()
        found: object = row[0] if row else None
        return found

    def scalar_int(self, statement: Statement, params: Params = None) -> int | None:
        """The first column of the first row, an integer (None: NULL, or no row)."""
        found = self.scalar(statement, params)
        if found is not None and (isinstance(found, bool) or not isinstance(found, int)):
            raise ServerError(f"expected an integer, got {found!r}")
        return found

    def rows(self, statement: Statement, params: Params = None) -> list[tuple[Any, ...]]:
        # psycopg's rows are tuple[Any, ...] (its TupleRow): a column's type is the query's.
        return self.conn.execute(_query(statement), params).fetchall()

    def set(self, **settings: object) -> None:
        """SET these for the session; they survive a cold restart."""
        for name, value in settings.items():
            text = ("on" if value else "off") if isinstance(value, bool) else str(value)
            self.conn.execute(sql.SQL("SELECT set_config({}, {}, false)").format(
                sql.Literal(name), sql.Literal(text)))
            self._settings[name] = text

    def sizes(self) -> dict[str, int]:
        """Bytes of every table (with its TOAST) and index of the database."""
        return self._sizes()[0]

    def _sizes(self) -> tuple[dict[str, int], tuple[str, ...]]:
        out, indexes = {}, []
        for name, kind, own, total in self.conn.execute(_SIZES):
            out[name] = int(total if kind in ("r", "m", "p") else own)
            if kind in ("i", "I"):
                indexes.append(name)
        return out, tuple(indexes)

    # -- the cache -------------------------------------------------------------------------

    def cache(self, state: str, relations: Sequence[str] = ()) -> dict[str, object]:
        """Put the cache in ``state`` ('warm' or 'cold') for the next step."""
        if state == "warm":
            names = list(relations)
            # 9.3, or a build without contrib, has no pg_prewarm: the relations are read
            blocks = self._prewarm(names) if has_prewarm(self.conn) else read_relations(self.conn, names)
            self._cache = {"state": "warm", "prewarmed_blocks": blocks, "relations": names}
        elif state == "cold":
            if self.cold_restart is None:
                raise ServerError("a cold cache needs a server that teiten can restart")
            self.conn.close()
            self.conninfo, done = self.cold_restart()
            self.conn = self._connect()
            for name, value in self._settings.items():
                self.conn.execute(sql.SQL("SELECT set_config({}, {}, false)").format(
                    sql.Literal(name), sql.Literal(value)))
            self._cache = {"state": "cold", **done}
        else:
            raise ValueError(f"unknown cache state {state!r}")
        return self._cache

    def _prewarm(self, names: Sequence[str]) -> int:
        """pg_prewarm the tables ``names`` and their indexes; returns the blocks read."""
        blocks = 0
        for name in names:
            blocks += self.scalar_int("SELECT pg_prewarm(%s::regclass)", (name,)) or 0
            for (index,) in self.rows("SELECT indexrelid::regclass::text FROM pg_index "
                                      "WHERE indrelid = %s::regclass", (name,)):
                blocks += self.scalar_int("SELECT pg_prewarm(%s::regclass)", (index,)) or 0
        return blocks

    # -- timed -----------------------------------------------------------------------------

    def step(self, name: str, statement: Statement, *, param: object = None,
             params: Params = None, sizes: bool = True, **extra: object) -> Step:
        """Time a statement on the client's clock, then record the database's sizes."""
        before = self.meter.read() if self.meter else None
        started = time.perf_counter()
        cur = self.conn.execute(_query(statement), params)
        seconds = time.perf_counter() - started
        system = self._system(before)
        rows = cur.rowcount if cur.rowcount is not None and cur.rowcount >= 0 else None
        found, indexes = self._sizes() if sizes else (None, ())
        return self._record(Step(name, _param(param), seconds, rows=rows, sizes=found,
                                 extra={**extra, **system}, indexes=indexes))

    def query(self, name: str, statement: Statement, *, param: object = None,
              params: Params = None, **extra: object) -> Step:
        """Run a query once under EXPLAIN ANALYZE: its execution time and its plan's figures."""
        text = sql.SQL("EXPLAIN (ANALYZE, BUFFERS, TIMING OFF, FORMAT JSON) ") + _query(statement)
        before = self.meter.read() if self.meter else None
        started = time.perf_counter()
        row = self.conn.execute(text, params).fetchone()
        wall = time.perf_counter() - started
        system = self._system(before)
        assert row is not None
        plan = explain.summarise(row[0])
        return self._record(Step(name, _param(param), plan.execution_ms / 1000, rows=plan.rows,
                                 plan=plan, extra={"wall_s": wall, **extra, **system}))

    def _system(self, before: StepReading | None) -> dict[str, float | str]:
        """The machine over the step just timed (from ``before``, the meter's reading)."""
        if self.meter is None or before is None:
            return {}
        return self.meter.figures(before, self.meter.read())

    def _record(self, step: Step) -> Step:
        step.cache, self._cache = self._cache, None
        self.steps.append(step)
        if self.on_step is not None:
            self.on_step(step)
        return step


def _query(statement: Statement) -> sql.Composed | sql.SQL:
    return sql.SQL(statement) if isinstance(statement, str) else statement


def _param(value: object) -> str | None:
    return None if value is None else str(value)
