"""Prewarming where the server has no pg_prewarm (issue 57, item 7): 9.3 has none, so every
trial reads the workload's relations instead (teiten.servers.sql.read_relations). On 9.6 from
Maven Central, the oldest release installable here, with the extension dropped: after a restart
and the reading, a full scan of the table and a full scan of its index find every block in
shared_buffers; without the reading, they do not."""

from __future__ import annotations

import json

import psycopg
from tests.conftest import scratch_database

from teiten.servers.sql import has_prewarm, make_extensions, prewarm_all


def _read_blocks(conn: psycopg.Connection, query: str) -> tuple[int, int]:
    """(shared blocks hit, shared blocks read) of one run of ``query``."""
    row = conn.execute(f"EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) {query}").fetchone()
    assert row is not None
    plan = (row[0] if isinstance(row[0], list) else json.loads(row[0]))[0]["Plan"]
    return int(plan["Shared Hit Blocks"]), int(plan["Shared Read Blocks"])


def _scans(conn: psycopg.Connection) -> list[tuple[int, int]]:
    conn.execute("SET enable_seqscan = on")
    seq = _read_blocks(conn, "SELECT count(*) FROM accounts")
    conn.execute("SET enable_seqscan = off")
    conn.execute("SET enable_bitmapscan = off")
    by_index = _read_blocks(conn, "SELECT count(*) FROM (SELECT aid FROM accounts ORDER BY aid) s")
    return [seq, by_index]


def test_prewarm_reads_every_block_where_pg_prewarm_is_missing(pg96) -> None:  # noqa: ANN001
    with scratch_database(pg96, settings={"shared_buffers": "64MB"}) as db:
        with psycopg.connect(db.conninfo, autocommit=True) as conn:
            make_extensions(conn, "")
            assert has_prewarm(conn)  # 9.6 has it: made as for every workload's database
            conn.execute("DROP EXTENSION pg_prewarm")
            conn.execute("CREATE TABLE accounts AS SELECT g AS aid, repeat('x', 84) AS filler "
                         "FROM generate_series(1, 100000) g")
            conn.execute("CREATE INDEX accounts_aid ON accounts (aid)")
            conn.execute("VACUUM ANALYZE accounts")
            heap, index = (conn.execute(f"SELECT pg_relation_size('{r}') / 8192").fetchone()[0]
                           for r in ("accounts", "accounts_aid"))  # type: ignore[index]
        cold = []
        for prewarm in (False, True):
            db.restart()
            with psycopg.connect(db.conninfo, autocommit=True) as conn:
                assert not has_prewarm(conn)
                if prewarm:
                    assert prewarm_all(conn) == heap + index
                cold.append(_scans(conn))
    (seq_cold, index_cold), (seq_warm, index_warm) = cold
    assert seq_cold[1] > 0 and index_cold[1] > 0, cold  # a restart leaves them out of shared_buffers
    assert seq_warm == (heap, 0), (seq_warm, heap)  # every block of the table: hit, none read
    assert index_warm[1] == 0 and index_warm[0] >= index, (index_warm, index)
