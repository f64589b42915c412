"""``accesslog``: parallel query and partitioning on a wide access-log table (METHODS S6,
after the PGECons 2016 study).

The same rows are loaded twice: into one table, and into a table partitioned by day. Each
trial runs one aggregate over one day, with ``max_parallel_workers_per_gather`` set to one
of the study's values, on one layout:

- ``single``: the one table, no index: the day is found by a (parallel) sequential scan;
- ``partitioned``: the partitioned table with partition pruning on: one partition is read;
- ``partitioned-unpruned``: the same with ``enable_partition_pruning = off``: every
  partition is read, as before pruning existed (S6: "partition pruning off and on");
- ``join``: the one table's day joined to ``pages`` (a row per path: 20,000), whose
  ``parallel_workers`` is 1 where the log's is the largest value swept (S6's third
  question: tables of different degrees of parallelism joined, which workers start). The
  plan's figures say, per table, how many processes scanned it and whether they divided it
  (a Parallel Hash) or each read it whole (a Hash built in every process).

Every table has the storage parameter ``parallel_workers`` set to the largest value swept,
so that the planner may plan as many workers as asked however small the table (otherwise
it plans by size: one worker per tripling of min_parallel_table_scan_size). The planner's
costs are left alone: whether it chooses a parallel plan is part of the result. Workers
planned and launched are read back from EXPLAIN ANALYZE; the server gets
max_worker_processes and max_parallel_workers of at least the largest value.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import date, timedelta

import psycopg

from teiten.drivers.sql import Session
from teiten.installs.releases import Release
from teiten.messages import tr
from teiten.workloads.statements import Suite

ROW_BYTES = 190  # measured: 3,000,000 rows are 570 MB per copy on 15-18
START = "2024-01-01"

_COLUMNS = """
    ts timestamptz NOT NULL, client inet NOT NULL, method text NOT NULL, path text NOT NULL,
    status int NOT NULL, bytes int NOT NULL, response_ms real NOT NULL, referer text NOT NULL,
    user_agent text NOT NULL, session_id text NOT NULL
"""

# Rows in time order, the whole day covered evenly; the other columns from the row number
# with a few cheap hashes: ~20 paths, 5 methods, mostly 200, a long tail of byte counts.
_FILL = """
INSERT INTO {table}
SELECT timestamptz '{start} 00:00:00+00' + (g * 86400.0 / {per_day}) * interval '1 second',
       ('10.' || (g % 250) || '.' || ((g / 250) % 250) || '.' || (g * 31 % 250))::inet,
       (ARRAY['GET','GET','GET','GET','POST','GET','PUT','GET','HEAD','DELETE'])[1 + g % 10],
       '/shop/' || (ARRAY['item','cart','search','user','order'])[1 + g * 7 % 5] || '/' || (g * 13 % 4000),
       (ARRAY[200,200,200,200,200,200,200,304,404,500])[1 + (g * 17) % 10],
       (g * 2654435761) % 65536 + 200,
       ((g * 40503) % 1000) / 10.0 + 0.5,
       'https://example.com/' || (g * 7 % 100),
       'Mozilla/5.0 (teiten; client ' || (g % 64) || ')',
       md5(g::text)
FROM generate_series(0::bigint, {rows} - 1) AS g
"""


# Every path the log has (5 kinds x 4000), with a category and a weight.
_PAGES = """
INSERT INTO pages
SELECT '/shop/' || kind || '/' || n, kind || (CASE WHEN n % 3 = 0 THEN '-sale' ELSE '' END), n % 97
FROM unnest(ARRAY['item','cart','search','user','order']) AS kind, generate_series(0, 3999) AS n
"""


@dataclass(frozen=True)
class Options:
    rows_per_day: int = 100_000
    days: int = 30
    workers: tuple[int, ...] = (0, 1, 2, 4)  # values of max_parallel_workers_per_gather
    layouts: tuple[str, ...] = ("single", "partitioned", "partitioned-unpruned")
    cache: tuple[str, ...] = ("warm",)


@dataclass(frozen=True)
class Variant:
    layouts: str
    workers: int
    cache: str


def _settings(options: Options) -> dict[str, str]:
    most = max(options.workers)
    return {"max_worker_processes": str(max(8, most + 2)), "max_parallel_workers": str(max(8, most))}


def _day(options: Options) -> str:
    """The day every trial aggregates: the middle one."""
    return (date.fromisoformat(START) + timedelta(days=int(options.days) // 2)).isoformat()


def setup(conninfo: str, options: Options, jobs: int) -> dict[str, float]:
    days, per_day, most = int(options.days), int(options.rows_per_day), max(options.workers)
    took = {}
    with psycopg.connect(conninfo, autocommit=True) as conn:
        t0 = time.monotonic()
        conn.execute(f"CREATE TABLE access_log ({_COLUMNS}) WITH (autovacuum_enabled = off, "
                     f"parallel_workers = {most})")
        conn.execute(_FILL.format(table="access_log", start=START, per_day=per_day,
                                  rows=days * per_day))
        took["single_s"] = time.monotonic() - t0
        t0 = time.monotonic()
        conn.execute(f"CREATE TABLE access_log_part ({_COLUMNS}) PARTITION BY RANGE (ts)")
        for d in range(days):
            conn.execute(
                f"CREATE TABLE access_log_p{d:04d} PARTITION OF access_log_part FOR VALUES FROM "
                f"(timestamptz '{START} 00:00:00+00' + interval '{d} days') TO "
                f"(timestamptz '{START} 00:00:00+00' + interval '{d + 1} days') "
                f"WITH (autovacuum_enabled = off, parallel_workers = {most})")
        conn.execute("INSERT INTO access_log_part SELECT * FROM access_log")
        took["partitioned_s"] = time.monotonic() - t0
        if "join" in options.layouts:
            t0 = time.monotonic()
            conn.execute("CREATE TABLE pages (path text NOT NULL, category text NOT NULL, "
                         "weight int NOT NULL) WITH (autovacuum_enabled = off, parallel_workers = 1)")
            conn.execute(_PAGES)
            took["pages_s"] = time.monotonic() - t0
        t0 = time.monotonic()
        conn.execute("VACUUM ANALYZE")
        took["vacuum_s"] = time.monotonic() - t0
    return took


def _partitions(session: Session) -> list[str]:
    return [r[0] for r in session.rows("SELECT inhrelid::regclass::text FROM pg_inherits "
                                       "WHERE inhparent = 'access_log_part'::regclass ORDER BY 1")]


def run(session: Session, variant: Variant, options: Options) -> None:
    layout, workers = variant.layouts, int(variant.workers)
    table = "access_log" if layout in ("single", "join") else "access_log_part"
    day = _day(options)
    session.set(max_parallel_workers_per_gather=workers,
                enable_partition_pruning=layout != "partitioned-unpruned")
    if layout == "join":
        session.cache(variant.cache, ["access_log", "pages"])
        session.query(
            "join",
            "SELECT p.category, count(*), sum(a.bytes) FROM access_log a JOIN pages p ON "
            f"p.path = a.path WHERE a.ts >= timestamptz '{day} 00:00:00+00' AND a.ts < "
            f"timestamptz '{day} 00:00:00+00' + interval '1 day' GROUP BY p.category "
            "ORDER BY p.category", param=day, workers=workers)
        return
    session.cache(variant.cache, [table] if layout == "single" else _partitions(session))
    session.query(
        "aggregate",
        f"SELECT status, count(*), sum(bytes), avg(response_ms) FROM {table} "
        f"WHERE ts >= timestamptz '{day} 00:00:00+00' AND ts < timestamptz '{day} 00:00:00+00' "
        "+ interval '1 day' GROUP BY status ORDER BY status",
        param=day, workers=workers)


SUITE = Suite(
    name="accesslog",
    description=tr("workload.about.accesslog"),
    options_model=Options,
    variant_model=Variant,
    setup=setup,
    run=run,
    data_bytes=lambda o: 2 * int(o.rows_per_day) * int(o.days) * ROW_BYTES,
    settings=_settings,
    since=Release(90600),  # parallel query
    chart=("aggregate", "workers"),
)
