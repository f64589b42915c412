"""The results store's schema and its migrations, one step at a time (asv update_to_N).

A store carries its schema version in ``meta``. Opening a store written by a newer teiten
is refused; an older one is migrated step by step inside one transaction per step. A PostgreSQL
store takes the same steps, the types written in its words (:func:`for_postgres`), in a schema
``teiten`` that its first step creates.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable

from teiten.store.pg import Connection

SCHEMA_VERSION = 9

_V1 = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE studies (
    id            INTEGER PRIMARY KEY,
    name          TEXT NOT NULL,
    source        TEXT NOT NULL,        -- path of the study file, or builtin:NAME
    spec_yaml     TEXT NOT NULL,
    spec_json     TEXT NOT NULL,
    seed          INTEGER NOT NULL,
    state         TEXT NOT NULL CHECK (state IN ('running', 'finished', 'interrupted')),
    created_at    TEXT NOT NULL,
    finished_at   TEXT,
    fingerprint   TEXT NOT NULL,        -- JSON: machine and software
    teiten_version TEXT NOT NULL,
    run_dir       TEXT                  -- where this study's clusters live while it runs
);
CREATE TABLE servers (
    study_id      INTEGER NOT NULL REFERENCES studies(id),
    name          TEXT NOT NULL,
    position      INTEGER NOT NULL,     -- 0 is the baseline
    kind          TEXT NOT NULL,
    spec_json     TEXT NOT NULL,
    description   TEXT,                 -- JSON: version, pg_config, non-default settings
    PRIMARY KEY (study_id, name)
);
CREATE TABLE trials (
    study_id      INTEGER NOT NULL REFERENCES studies(id),
    trial_id      TEXT NOT NULL,
    order_index   INTEGER NOT NULL,
    server        TEXT NOT NULL,
    workload      TEXT NOT NULL,
    clients       INTEGER NOT NULL,
    threads       INTEGER NOT NULL,
    repetition    INTEGER NOT NULL,
    planned_duration_s REAL NOT NULL,
    status        TEXT NOT NULL CHECK (status IN ('planned', 'running', 'ok', 'failed', 'skipped')),
    attempts      INTEGER NOT NULL DEFAULT 0,
    started_at    TEXT,
    finished_at   TEXT,
    error         TEXT,
    tps           REAL,                 -- excluding the initial connection time
    transactions  INTEGER,
    failed_transactions INTEGER,
    duration_s    REAL,
    latency_ms_avg REAL,
    latency_ms_stddev REAL,
    initial_connection_ms REAL,
    pgbench_version TEXT,
    argv          TEXT,                 -- JSON list
    stdout        TEXT,
    stderr        TEXT,
    server_log    TEXT,
    notes         TEXT,                 -- JSON list of remarks (restores, kills, ...)
    PRIMARY KEY (study_id, trial_id),
    UNIQUE (study_id, order_index)
);
CREATE TABLE progress (
    study_id      INTEGER NOT NULL,
    trial_id      TEXT NOT NULL,
    t             REAL NOT NULL,
    tps           REAL NOT NULL,
    latency_ms    REAL,
    latency_stddev_ms REAL,
    failed        INTEGER,
    PRIMARY KEY (study_id, trial_id, t)
);
CREATE TABLE statements (
    study_id      INTEGER NOT NULL,
    trial_id      TEXT NOT NULL,
    script_index  INTEGER NOT NULL,
    line_no       INTEGER NOT NULL,
    latency_ms    REAL NOT NULL,
    failures      INTEGER,
    command       TEXT NOT NULL,
    PRIMARY KEY (study_id, trial_id, script_index, line_no)
);
CREATE TABLE workdirs (
    study_id      INTEGER NOT NULL REFERENCES studies(id),
    path          TEXT NOT NULL,
    PRIMARY KEY (study_id, path)
);
"""


# 2: what the monitors saw in each trial's measured window.
_V2 = """
CREATE TABLE series (
    study_id      INTEGER NOT NULL,
    trial_id      TEXT NOT NULL,
    source        TEXT NOT NULL,        -- system
    t             REAL NOT NULL,        -- seconds since the window opened
    name          TEXT NOT NULL,        -- cpu.user, cpu0.idle, disk.vda.util, net.lo.rx_bytes_s, ...
    value         REAL NOT NULL,
    PRIMARY KEY (study_id, trial_id, source, name, t)
);
CREATE TABLE metrics (
    study_id      INTEGER NOT NULL,
    trial_id      TEXT NOT NULL,
    name          TEXT NOT NULL,        -- cpu_user, wal_bytes, checkpoints_in_window, ...
    value         REAL NOT NULL,
    PRIMARY KEY (study_id, trial_id, name)
);
CREATE TABLE waits (
    study_id      INTEGER NOT NULL,
    trial_id      TEXT NOT NULL,
    backend_type  TEXT NOT NULL,
    wait_event_type TEXT NOT NULL,      -- CPU when the backend was running
    wait_event    TEXT NOT NULL,
    samples       INTEGER NOT NULL,
    PRIMARY KEY (study_id, trial_id, backend_type, wait_event_type, wait_event)
);
CREATE TABLE details (
    study_id      INTEGER NOT NULL,
    trial_id      TEXT NOT NULL,
    kind          TEXT NOT NULL,        -- stats (deltas per view), devices, waits_source, warnings
    body          TEXT NOT NULL,        -- JSON
    PRIMARY KEY (study_id, trial_id, kind)
);
"""


def _to_v2(conn: Connection) -> None:
    _execute_all(conn, _V2)


# 3: measured-statement workloads: a trial's variant, and its timed steps.
_V3 = """
ALTER TABLE trials ADD COLUMN variant TEXT NOT NULL DEFAULT '';
CREATE TABLE steps (
    study_id      INTEGER NOT NULL,
    trial_id      TEXT NOT NULL,
    step_index    INTEGER NOT NULL,     -- in the order the trial ran them
    name          TEXT NOT NULL,        -- load, index, query, search, vacuum, ...
    param         TEXT,                 -- what the step was given: a keyword, a ratio, a day
    seconds       REAL NOT NULL,
    rows          INTEGER,
    body          TEXT NOT NULL,        -- JSON: plan summary, sizes, cache state, extra figures
    PRIMARY KEY (study_id, trial_id, step_index)
);
"""


def _to_v3(conn: Connection) -> None:
    _execute_all(conn, _V3)


# 4: a trial disturbed by foreign load on the machine (kept, left out of the analysis) and
# the repeat that replaces it. SQLite cannot change a CHECK: the table is rebuilt, its
# columns in the same order, every row copied.
_V4 = """
CREATE TABLE trials_v4 (
    study_id      INTEGER NOT NULL REFERENCES studies(id),
    trial_id      TEXT NOT NULL,
    order_index   INTEGER NOT NULL,
    server        TEXT NOT NULL,
    workload      TEXT NOT NULL,
    clients       INTEGER NOT NULL,
    threads       INTEGER NOT NULL,
    repetition    INTEGER NOT NULL,
    planned_duration_s REAL NOT NULL,
    status        TEXT NOT NULL
                  CHECK (status IN ('planned', 'running', 'ok', 'failed', 'skipped', 'disturbed')),
    attempts      INTEGER NOT NULL DEFAULT 0,
    started_at    TEXT,
    finished_at   TEXT,
    error         TEXT,
    tps           REAL,
    transactions  INTEGER,
    failed_transactions INTEGER,
    duration_s    REAL,
    latency_ms_avg REAL,
    latency_ms_stddev REAL,
    initial_connection_ms REAL,
    pgbench_version TEXT,
    argv          TEXT,
    stdout        TEXT,
    stderr        TEXT,
    server_log    TEXT,
    notes         TEXT,
    variant       TEXT NOT NULL DEFAULT '',
    repeat_of     TEXT,                 -- the disturbed trial this one repeats
    PRIMARY KEY (study_id, trial_id),
    UNIQUE (study_id, order_index)
);
INSERT INTO trials_v4 SELECT *, NULL FROM trials;
DROP TABLE trials;
ALTER TABLE trials_v4 RENAME TO trials
"""


def _to_v4(conn: Connection) -> None:
    _execute_all(conn, _V4)


# 5: why a trial ran: '' for a trial of the blocks, 'profile' for one run after them to
# profile the point where the servers differ most (profile: {at: largest-difference}), which
# no figure of the analysis counts.
_V5 = """
ALTER TABLE trials ADD COLUMN purpose TEXT NOT NULL DEFAULT ''
"""


def _to_v5(conn: Connection) -> None:
    _execute_all(conn, _V5)


# 6: each point's summary, kept when a study finishes (the figures, interval and verdict of the
# report, with the testbed and the build), and the view that tools outside teiten read
# (docs/DESIGN.md, "Results others read"). One row per study, workload, client count and
# server; the baseline's own row has no baseline and no ratio. TIMESTAMPTZ is a real
# timestamp in PostgreSQL and ISO 8601 text with its offset in SQLite (:func:`_to_v6`).
_V6 = """
CREATE TABLE point_summaries (
    study_id      INTEGER NOT NULL REFERENCES studies(id),
    study         TEXT NOT NULL,        -- the study's name: one series across builds per name
    testbed       TEXT NOT NULL,        -- the user's name for the machine, else a hash of its identity
    workload      TEXT NOT NULL,
    clients       INTEGER NOT NULL,
    threads       INTEGER,
    server        TEXT NOT NULL,
    baseline      TEXT,                 -- the server it is compared with; NULL on the baseline's row
    tps_median    REAL,                 -- NULL: no successful trial
    tps_low       REAL,                 -- the median's order-statistic interval ...
    tps_high      REAL,
    tps_level_pct REAL,                 -- ... and the level it reaches
    n_ok          INTEGER NOT NULL,
    n_failed      INTEGER NOT NULL,
    baseline_tps_median REAL,
    ratio_pct     REAL,                 -- the ratio of the medians, as the CSV's ratio_pct
    estimate_pct  REAL,                 -- the interval's own estimate: the ratio the report prints
    low_pct       REAL,                 -- the ratio's interval ...
    high_pct      REAL,
    level_pct     REAL,                 -- ... the level it reaches
    required_pct  REAL,                 -- ... and the level the report's family needs
    method        TEXT,                 -- signed-rank | sign-test | hodges-lehmann
    margin_pct    REAL,
    verdict       TEXT,                 -- faster | slower | no-difference | cannot-tell
    verdict_reason TEXT,                -- for cannot-tell: no-ratio | no-interval | short | wide
    version       TEXT,
    build_key     TEXT,                 -- the install's key, when teiten built it
    git_commit    TEXT,
    git_subject   TEXT,
    git_position  INTEGER,              -- on its branch's first-parent line
    committed_at  TIMESTAMPTZ,
    finished_at   TIMESTAMPTZ NOT NULL, -- when the study finished
    PRIMARY KEY (study_id, workload, clients, server)
);
CREATE VIEW teiten_points AS SELECT
    finished_at AS time, testbed, coalesce(git_commit, build_key, version) AS build,
    study || '/' || workload || '/clients=' || clients AS benchmark,
    tps_median AS value, tps_low AS low, tps_high AS high,
    study_id, study, workload, clients, threads, server, baseline, tps_level_pct, n_ok,
    n_failed, baseline_tps_median, ratio_pct, estimate_pct, low_pct, high_pct, level_pct,
    required_pct, method, margin_pct, verdict, verdict_reason, version, build_key, git_commit,
    git_subject, git_position, committed_at
FROM point_summaries
"""


def _to_v6(conn: Connection) -> None:
    _execute_all(conn, _V6.replace("TIMESTAMPTZ", "timestamptz" if _postgres(conn) else "TEXT"))


# 7: every server's real kind. Until issue 37 the store recorded each server as 'local' or
# 'external', so an ssh, docker or vm server read as 'local' to anything that read the table
# (the report worked it out from the server's spec). A kind is named by the place its spec
# gives (the first of them set, of the places there were then), or 'local'.
_PLACES_V7 = ("external", "ssh", "docker", "vm")


def _to_v7(conn: Connection) -> None:
    rows = conn.execute("SELECT study_id, name, kind, spec_json FROM servers "
                        "WHERE kind IN ('local', 'external')").fetchall()
    for study_id, name, recorded, spec_json in rows:
        spec = json.loads(spec_json)
        kind = next((k for k in _PLACES_V7 if isinstance(spec, dict) and spec.get(k) is not None),
                    "local")
        if kind != recorded:
            conn.execute("UPDATE servers SET kind = ? WHERE study_id = ? AND name = ?",
                         (kind, study_id, name))


# 8: whether a point's figures are an emulation's (issue 54, item 7: a VM guest under qemu's
# tcg), so that the tools that read teiten_points (BMF, OpenMetrics, a timeline) mark them too:
# 1 emulated, 0 measured, NULL in the summaries kept before.
# The view of step 6 with that column last (columns are only ever appended).
_V8 = """
ALTER TABLE point_summaries ADD COLUMN emulated INTEGER;
DROP VIEW teiten_points;
""" + _V6[_V6.index("CREATE VIEW teiten_points"):].replace(
    "git_subject, git_position, committed_at\nFROM", "git_subject, git_position, committed_at, emulated\nFROM")


def _to_v8(conn: Connection) -> None:
    _execute_all(conn, _V8)


# 9: a point's latency percentiles where its workload measured them (issue 56, item 4): the
# medians over the repetitions of each trial's p50 ... p99.9 in ms, as the report's percentiles
# table prints them, so that BMF and OpenMetrics carry them; NULL where none were measured and
# in the summaries kept before. The view of step 8 with those columns last.
PERCENTILES = ("p50_ms", "p90_ms", "p95_ms", "p99_ms", "p999_ms")
_V9 = "".join(f"ALTER TABLE point_summaries ADD COLUMN {c} REAL;\n" for c in PERCENTILES) + \
    "DROP VIEW teiten_points;\n" + _V8[_V8.index("CREATE VIEW teiten_points"):].replace(
    "committed_at, emulated\nFROM", "committed_at, emulated, " + ", ".join(PERCENTILES) + "\nFROM")


def _to_v9(conn: Connection) -> None:
    _execute_all(conn, _V9)


def for_postgres(script: str) -> str:
    """A step's SQL in PostgreSQL's types: SQLite's integers and reals are 64-bit, so BIGINT and
    DOUBLE PRECISION (PostgreSQL's REAL has 24 bits of mantissa), and the study's id an
    identity."""
    script = script.replace("INTEGER PRIMARY KEY", "BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY")
    return re.sub(r"\bREAL\b", "DOUBLE PRECISION", re.sub(r"\bINTEGER\b", "BIGINT", script))


def _postgres(conn: Connection) -> bool:
    return getattr(conn, "dialect", "sqlite") == "postgresql"


def _execute_all(conn: Connection, script: str) -> None:
    # Not executescript(): it commits first, and a migration step is one transaction.
    if _postgres(conn):
        script = for_postgres(script)
    for statement in script.split(";\n"):
        if statement.strip():
            conn.execute(statement)


def _to_v1(conn: Connection) -> None:
    if _postgres(conn):
        conn.execute("CREATE SCHEMA IF NOT EXISTS teiten")
    _execute_all(conn, _V1)


# MIGRATIONS[n] turns a store of version n - 1 into version n.
MIGRATIONS: dict[int, Callable[[Connection], None]] = {
    1: _to_v1, 2: _to_v2, 3: _to_v3, 4: _to_v4, 5: _to_v5, 6: _to_v6, 7: _to_v7, 8: _to_v8, 9: _to_v9}
