"""The tpcc workload on a real PostgreSQL 18 cluster: the loaded data against the TPC-C
spec at one warehouse, the consistency conditions after a mixed run, the mix, the 1% of
New-Orders that roll back, and teiten's NOPM against a recount from the tables."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from teiten.drivers import pgbench
from teiten.host import client_account, paths
from teiten.model.details import APP
from teiten.servers.local.server import LocalServer
from teiten.servers.profiles import Sizing
from teiten.spec import ServerSpec, load_text
from teiten.workloads import Workload, apps, resolve

SIZING = Sizing(ram_bytes=24 << 30, disk_free_bytes=50 << 30, max_clients=8, data_bytes=150 << 20)
STUDY = """\
study: t
servers: [{name: pg18, install: "18"}]
workloads: [{name: tpcc, warehouses: 1, rampup: 1, check_consistency: true}]
"""


@pytest.fixture(scope="module")
def loaded(pg18, teiten_home: Path) -> Iterator[tuple[LocalServer, Workload]]:  # noqa: ANN001
    run_dir = paths.make_owned(paths.clusters_dir() / f"tpcc-{os.getpid()}-{time.monotonic_ns()}",
                               "tpcc integration test")
    [workload] = resolve(load_text(STUDY, "t.yaml"))
    server = LocalServer(ServerSpec(name="pg18", install="18"), pg18, run_dir, SIZING)
    try:
        server.prepare(workload)  # loads, checks consistency after the load, snapshots
        yield server, workload
    finally:
        server.close()
        paths.remove_owned(run_dir)


def _query(server: LocalServer, workload: Workload, text: str) -> list[tuple[Any, ...]]:
    cluster = server.slots[workload.key].cluster
    with cluster.connect(workload.database) as conn:
        return conn.execute(text.encode()).fetchall()


def _trial(server: LocalServer, workload: Workload, tid: str, *, clients: int,
           duration: float) -> tuple[apps.AppTrial, pgbench.PgbenchRun, dict[str, Any], str | None]:
    endpoint = server.begin_trial(workload, tid, prewarm=False)
    log_dir = paths.make_owned(server.run_dir / f"log-{tid}", "test pgbench log")
    client_account.hand_over(log_dir)  # pgbench writes it as the client account, as in a trial
    app = apps.AppTrial(workload, endpoint.conninfo(), trial_id=tid, duration_s=duration,
                        clients=clients, log_dir=log_dir)
    app.start()
    run = pgbench.run(server.install, endpoint, workload, clients=clients, threads=2,
                      duration_s=app.total_s, extra=app.pgbench_args())
    _, found, error = app.finish(run.output)
    paths.remove_owned(log_dir)
    return app, run, APP.json(found), error  # the details as the store keeps them


def test_schema_and_cardinalities_at_one_warehouse(loaded: tuple[LocalServer, Workload]) -> None:
    server, w = loaded
    server.begin_trial(w, "cardinalities", prewarm=False)
    try:
        tables = ("warehouse", "district", "customer", "history", "orders", "new_order", "item",
                  "stock", "order_line")
        counts = dict(_query(server, w, " UNION ALL ".join(
            f"SELECT '{t}', count(*) FROM {t}" for t in tables) +
            " UNION ALL SELECT 'sum_ol_cnt', sum(o_ol_cnt) FROM orders"))
        assert counts == {"warehouse": 1, "district": 10, "customer": 30_000, "history": 30_000,
                          "orders": 30_000, "new_order": 9_000, "item": 100_000, "stock": 100_000,
                          "order_line": counts["sum_ol_cnt"], "sum_ol_cnt": counts["sum_ol_cnt"]}
        assert 5 * 30_000 <= counts["order_line"] <= 15 * 30_000
        [(original_items, original_stock, bc, lo, hi, next_o)] = _query(server, w, """
            SELECT (SELECT avg((i_data LIKE '%ORIGINAL%')::int) FROM item),
                   (SELECT avg((s_data LIKE '%ORIGINAL%')::int) FROM stock),
                   (SELECT avg((c_credit = 'BC')::int) FROM customer),
                   (SELECT min(o_ol_cnt) FROM orders), (SELECT max(o_ol_cnt) FROM orders),
                   (SELECT min(d_next_o_id) FROM district)""")
        assert 0.08 < original_items < 0.12 and 0.08 < original_stock < 0.12 and 0.08 < bc < 0.12
        assert (lo, hi, next_o) == (5, 15, 3001)
        # Customers 1..1000 of each district have the last names of the numbers 0..999
        # (clause 4.3.2.3); "BARBARBAR" is 000 and "EINGEINGEING" is 999.
        names = dict(_query(server, w, "SELECT c_id, c_last FROM customer WHERE c_w_id = 1 AND "
                                       "c_d_id = 1 AND c_id IN (1, 372, 1000)"))
        assert names == {1: "BARBARBAR", 372: "PRICALLYOUGHT", 1000: "EINGEINGEING"}
        keyed = {r[0] for r in _query(server, w, "SELECT conrelid::regclass::text FROM "
                                                 "pg_constraint WHERE contype = 'p' AND "
                                                 "connamespace = 'public'::regnamespace")}
        assert keyed == {"warehouse", "district", "customer", "new_order", "orders",
                         "order_line", "item", "stock"}
        assert [r[2] for r in _query(server, w, "SELECT * FROM tpcc_consistency() "
                                                "ORDER BY condition")] == [0, 0, 0, 0]
    finally:
        server.end_trial()


def test_mixed_run_keeps_consistency_with_the_mix_and_one_percent_rollbacks(
        loaded: tuple[LocalServer, Workload]) -> None:
    server, w = loaded
    app, run, details, error = _trial(server, w, "mixed", clients=4, duration=10)
    try:
        assert error is None, error
        assert run.returncode == 0 and not run.output.aborted, run.stderr
        assert run.output.failed_transactions in (0, None)
        assert [c["violations"] for c in details["consistency"]] == [0, 0, 0, 0]
        # The mix, from pgbench's own per-script counts of the whole run.
        scripts = run.output.scripts
        total = sum(s.transactions for s in scripts)
        assert total > 5000, f"too few transactions ({total}) to test the mix"
        for s, (_, weight) in zip(scripts, w.scripts, strict=True):
            assert abs(s.transactions / total - weight / 100) < 0.02, (s.name, s.transactions, total)
        # 1% of New-Orders roll back: each call that committed made one order.
        calls = scripts[0].transactions
        [(made,)] = _query(server, w, "SELECT count(*) FROM orders WHERE o_id > 3000")
        rolled_back = 1 - made / calls
        assert 0.003 < rolled_back < 0.02, (made, calls)
    finally:
        server.end_trial()


def test_nopm_equals_a_recount_of_the_orders_made_in_the_window(
        loaded: tuple[LocalServer, Workload]) -> None:
    server, w = loaded
    clients = 4
    app, run, details, error = _trial(server, w, "nopm", clients=clients, duration=5)
    try:
        assert error is None, error
        a, b = details["samples"]
        assert details["new_orders"] == b["new_orders"] - a["new_orders"] > 0
        assert details["nopm"] == pytest.approx(details["new_orders"] / ((b["at"] - a["at"]) / 60))
        # Orders entered between the two samples. A New-Order in flight at a sample can
        # fall on either side: at most one per client at each end.
        [(recount,)] = _query(server, w, f"""
            SELECT count(*) FROM orders WHERE o_id > 3000
               AND o_entry_d >= to_timestamp({a['at']}) AND o_entry_d < to_timestamp({b['at']})""")
        assert abs(recount - details["new_orders"]) <= 2 * clients, (recount, details["new_orders"])
        # The window excludes the ramp-up and the tail: pgbench ran longer than it.
        assert app.total_s == 1 + 5 + apps.TAIL_S
        assert 0 < details["tps"] < run.output.transactions / 5
        assert details["tpm"] > 0 and details["tpm_pgbench"] > 0
        types = {t["name"]: t for t in details["types"]}
        assert set(types) == {"new_order", "payment", "order_status", "delivery", "stock_level"}
        for t in types.values():
            if t["count"]:
                assert t["p50_ms"] <= t["p95_ms"] <= t["p99_ms"]
    finally:
        server.end_trial()
