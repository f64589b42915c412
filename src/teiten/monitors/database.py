"""The database monitor: wait events sampled during the measured window, and the deltas of
PostgreSQL's cumulative statistics over it.

Wait events come from pg_stat_activity at 10 Hz (the modern stand-in for the 2014 team's
LWLOCK_STATS builds, METHODS S2), or from the pg_wait_sampling extension when it is
installed. A server before 9.6 has no wait events: only its autovacuum workers are watched,
and the result says why it holds no waits (``WaitResult.unavailable``), which the report
repeats. Statistics views differ between versions (pg_stat_wal from 14, before which the WAL's bytes
come from its position and its records and full-page images are not known; pg_stat_io from
16, pg_stat_checkpointer from 17, columns moved in 17 and 18): rather than naming
columns per version, every numeric column of each view present is snapshotted and
differenced, and the few figures teiten interprets are looked up by the names each
version uses.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from decimal import Decimal
from typing import TypeGuard

import psycopg

from teiten.installs.releases import Release
from teiten.model.metrics import CHECKPOINTS_IN_WINDOW

log = logging.getLogger(__name__)

WaitKey = tuple[str, str, str]  # backend_type, wait_event_type (or CPU), wait_event (or CPU)

_ACTIVITY = ("SELECT pid, backend_type, state, wait_event_type, wait_event "
             "FROM pg_stat_activity WHERE pid <> pg_backend_pid()")
# 9.6 has wait events but no backend_type, and shows only backends (autovacuum workers by
# their query) in pg_stat_activity.
_ACTIVITY_96 = ("SELECT pid, CASE WHEN query LIKE 'autovacuum:%' THEN 'autovacuum worker' "
                "ELSE 'client backend' END, state, wait_event_type, wait_event "
                "FROM pg_stat_activity WHERE pid <> pg_backend_pid()")
# Before 9.6: no wait events (a boolean 'waiting' for heavyweight locks only); the rows
# still find the autovacuum workers.
_ACTIVITY_OLD = ("SELECT pid, CASE WHEN query LIKE 'autovacuum:%' THEN 'autovacuum worker' "
                 "ELSE 'client backend' END, state, NULL, NULL "
                 "FROM pg_stat_activity WHERE pid <> pg_backend_pid()")


def activity_sql(release: Release) -> str:
    """The sampler's query of pg_stat_activity for a server of ``release``."""
    if release.backend_type:
        return _ACTIVITY
    return _ACTIVITY_96 if release.wait_events else _ACTIVITY_OLD


@dataclass
class WaitResult:
    source: str = "pg_stat_activity"          # or pg_wait_sampling
    samples: int = 0                          # sampling rounds
    counts: Counter[WaitKey] = field(default_factory=Counter)
    autovacuum_pids: set[int] = field(default_factory=set)
    error: str | None = None
    unavailable: str | None = None            # the release, when it has no wait events

    def top(self, n: int = 5) -> list[dict[str, object]]:
        """The ``n`` largest wait events (CPU included) over all backends, with shares."""
        by_event: Counter[tuple[str, str]] = Counter()
        for (_, etype, event), c in self.counts.items():
            by_event[(etype, event)] += c
        total = sum(by_event.values())
        return [{"wait_event_type": t, "wait_event": e, "samples": c,
                 "share": c / total if total else 0.0}
                for (t, e), c in by_event.most_common(n)]


class WaitSampler:
    """Samples pg_stat_activity every ``interval`` seconds on its own connection."""

    def __init__(self, conninfo: str, *, interval: float = 0.1):
        self.conninfo = conninfo
        self.interval = interval
        self.result = WaitResult()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._conn: psycopg.Connection | None = None
        self._profile_before: dict[tuple[str, str], int] = {}
        self._activity = _ACTIVITY

    def start(self) -> None:
        self._conn = psycopg.connect(self.conninfo, autocommit=True, connect_timeout=15)
        self._conn.execute("SET application_name = 'teiten monitor'")
        release = Release.of_num(self._conn.info.server_version)
        self._activity = activity_sql(release)
        if not release.wait_events:
            self.result.source = "none"
            self.result.unavailable = release.name
        elif _has_extension(self._conn, "pg_wait_sampling"):
            self.result.source = "pg_wait_sampling"
            self._profile_before = _wait_profile(self._conn)
        self._thread = threading.Thread(target=self._loop, name="teiten-waits", daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        assert self._conn is not None
        next_at = time.monotonic()
        try:
            while not self._stop.is_set():
                rows = self._conn.execute(self._activity).fetchall()
                self.result.samples += 1
                for pid, btype, state, etype, event in rows:
                    if btype == "autovacuum worker":
                        self.result.autovacuum_pids.add(pid)
                    if self.result.source != "pg_stat_activity":
                        continue  # pg_wait_sampling counts them, or the server has none
                    if btype == "client backend" and state != "active":
                        continue  # an idle connection waits for its client: not load
                    if etype == "Activity":
                        continue  # a background process idling in its main loop
                    self.result.counts[(btype or "?", etype or "CPU", event or "CPU")] += 1
                next_at += self.interval
                self._stop.wait(max(0.0, next_at - time.monotonic()))
        except psycopg.Error as exc:
            self.result.error = f"wait sampling stopped: {exc}".strip()

    def stop(self) -> WaitResult:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)
        if self._conn is not None:
            try:
                if self.result.source == "pg_wait_sampling":
                    after = _wait_profile(self._conn)
                    for (etype, event), n in after.items():
                        d = n - self._profile_before.get((etype, event), 0)
                        if d > 0:
                            self.result.counts[("all", etype, event)] += d
            except psycopg.Error as exc:
                self.result.error = f"pg_wait_sampling: {exc}"
            finally:
                self._conn.close()
        return self.result


def _has_extension(conn: psycopg.Connection, name: str) -> bool:
    row = conn.execute("SELECT 1 FROM pg_extension WHERE extname = %s", (name,)).fetchone()
    return row is not None


def _wait_profile(conn: psycopg.Connection) -> dict[tuple[str, str], int]:
    rows = conn.execute("SELECT coalesce(event_type, 'CPU'), coalesce(event, 'CPU'), sum(count) "
                        "FROM pg_wait_sampling_profile GROUP BY 1, 2").fetchall()
    return {(t, e): int(c) for t, e, c in rows}


# -- cumulative statistics ---------------------------------------------------------------

Rows = dict[str, dict[str, object]]  # row key -> column -> value, as the server gave it
Changed = int | float | str  # a numeric column's growth over the window, else its value after it
Deltas = dict[str, dict[str, Changed]]  # row key -> column -> what changed
STATEMENTS = "statements"  # pg_stat_statements's view: only its busiest rows are kept


@dataclass(frozen=True)
class View:
    """A statistics view as it is snapshotted: its name, its query, and the columns that name
    a row of it (none: one row)."""

    name: str
    sql: str
    key: tuple[str, ...] = ()


def _numeric(value: object) -> TypeGuard[int | float | Decimal]:
    return isinstance(value, int | float | Decimal) and not isinstance(value, bool)


def _rows(conn: psycopg.Connection, sql: str, key: tuple[str, ...]) -> Rows:
    cur = conn.execute(sql)
    names = [d.name for d in cur.description or []]
    out: Rows = {}
    for values in cur.fetchall():
        row = dict(zip(names, values, strict=True))
        out["/".join(str(row.get(k)) for k in key) or "all"] = row
    return out


def _wal(release: Release) -> View:
    if "pg_stat_wal" in release.stat_views:
        return View("wal", "SELECT * FROM pg_stat_wal")
    # no pg_stat_wal: the bytes from the WAL position (not records, FPIs)
    return View("wal", f"SELECT {release.wal_bytes_sql()} AS wal_bytes")


def _views(conn: psycopg.Connection) -> list[View]:
    return views(Release.of_num(conn.info.server_version),
                 statements=_has_extension(conn, "pg_stat_statements"))


def views(release: Release, *, statements: bool) -> list[View]:
    """The statistics views snapshotted on a server of ``release`` (``statements``: it has
    pg_stat_statements)."""
    views = [
        View("database", "SELECT * FROM pg_stat_database WHERE datname = current_database()"),
        View("bgwriter", "SELECT * FROM pg_stat_bgwriter"),
        View("tables", "SELECT sum(autovacuum_count) AS autovacuum_count, sum(autoanalyze_count) "
                       "AS autoanalyze_count, sum(n_tup_upd) AS n_tup_upd, sum(n_tup_hot_upd) AS "
                       "n_tup_hot_upd FROM pg_stat_all_tables"),
        _wal(release),
    ]
    if "pg_stat_io" in release.stat_views:
        views.append(View("io", "SELECT * FROM pg_stat_io", ("backend_type", "object", "context")))
    if "pg_stat_checkpointer" in release.stat_views:
        views.append(View("checkpointer", "SELECT * FROM pg_stat_checkpointer"))
    if statements:
        views.append(View(STATEMENTS, "SELECT * FROM pg_stat_statements WHERE dbid = (SELECT oid "
                                      "FROM pg_database WHERE datname = current_database())",
                          release.statements_key))
    return views


def snapshot(conn: psycopg.Connection) -> dict[str, Rows]:
    """Every statistics view this server has, as rows of values."""
    out = {}
    for view in _views(conn):
        try:
            out[view.name] = _rows(conn, view.sql, view.key)
        except psycopg.Error as exc:
            log.info("statistics view %s unavailable: %s", view.name, exc)
    return out


def _changed(row: dict[str, object], old: dict[str, object]) -> dict[str, Changed]:
    """after - before for every numeric column of a row; other columns as they are after."""
    changed: dict[str, Changed] = {}
    for col, value in row.items():
        if _numeric(value):
            prior = old.get(col, 0)
            d = float(value) - (float(prior) if _numeric(prior) else 0.0)
            changed[col] = int(d) if isinstance(value, int) else d
        elif value is not None:
            changed[col] = str(value)
    return changed


def _busiest(rows: dict[str, dict[str, Changed]]) -> dict[str, dict[str, Changed]]:
    """The statements that did the most in the window: the 20 of the most execution time
    (total_exec_time, named total_time before 13: Release.statements_time)."""
    def time_of(row: dict[str, Changed]) -> float:
        return _figure(row.get("total_exec_time", row.get("total_time")))
    top = sorted(rows.items(), key=lambda kv: -time_of(kv[1]))
    return dict(top[:20])


def delta(before: dict[str, Rows], after: dict[str, Rows]) -> dict[str, Deltas]:
    """after - before for every numeric column; other columns as they are after."""
    out: dict[str, Deltas] = {}
    for view, rows in after.items():
        old = before.get(view, {})
        changed = {key: _changed(row, old.get(key, {})) for key, row in rows.items()}
        out[view] = _busiest(changed) if view == STATEMENTS else changed
    return out


def _figure(value: Changed | None) -> float:
    """A column's change as a number (0 where the view lacks it)."""
    return float(value or 0)


def _one(d: dict[str, Deltas], view: str) -> dict[str, Changed]:
    rows = d.get(view) or {}
    return next(iter(rows.values()), {})


def interpret(d: dict[str, Deltas]) -> dict[str, float]:
    """The figures teiten reports, by the column names each version uses."""
    db, wal, bgw, ckpt, tables = (_one(d, v) for v in
                                  ("database", "wal", "bgwriter", "checkpointer", "tables"))
    out: dict[str, float] = {}
    for col in ("xact_commit", "xact_rollback", "blks_hit", "blks_read", "temp_files",
                "temp_bytes", "deadlocks", "tup_returned", "tup_fetched", "tup_updated"):
        if col in db:
            out[col] = float(db[col])
    for col in ("wal_records", "wal_fpi", "wal_bytes"):
        if col in wal:
            out[col] = float(wal[col])
    if ckpt:  # 17+: pg_stat_checkpointer; 18 counts completed ones in num_done
        done = ckpt.get("num_done")
        out[CHECKPOINTS_IN_WINDOW] = float(done) if done is not None else \
            _figure(ckpt.get("num_timed")) + _figure(ckpt.get("num_requested"))
    elif "checkpoints_timed" in bgw:
        out[CHECKPOINTS_IN_WINDOW] = float(bgw["checkpoints_timed"]) + float(bgw["checkpoints_req"])
    for col in ("autovacuum_count", "autoanalyze_count", "n_tup_upd", "n_tup_hot_upd"):
        if tables.get(col) is not None:
            out[col] = float(tables[col])
    return out
