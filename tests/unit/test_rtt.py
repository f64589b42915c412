"""The round-trip bound of S11 (teiten.tables.rtt), on the report's own numbers."""

from __future__ import annotations

import pytest

from teiten.tables.rtt import bound, statements_per_transaction


def test_meta_commands_cost_no_round_trip_and_scripts_count_by_weight() -> None:
    tpcb = [(0, "\\set aid random(1, 100000 * :scale)"), (0, "\\set bid random(1, 1 * :scale)"),
            (0, "BEGIN;"), (0, "UPDATE pgbench_accounts SET ..."), (0, "SELECT abalance ..."),
            (0, "UPDATE pgbench_tellers ..."), (0, "UPDATE pgbench_branches ..."),
            (0, "INSERT INTO pgbench_history ..."), (0, "END;")]
    assert statements_per_transaction(tpcb, [1]) == 7
    select_only = [(1, "\\set aid random(1, 100000 * :scale)"), (1, "SELECT abalance ...")]
    assert statements_per_transaction(tpcb + select_only, [1, 3]) == pytest.approx((7 + 3) / 4)
    assert statements_per_transaction([(0, "\\sleep 1 ms")], [1]) is None


def test_the_s11_examples() -> None:
    # S11: 2.76 ms -> 362 statements a second on one connection, 0.54 ms -> 1851.
    b = bound("cloud", 2.76, 1.0, [(1, 300.0, 3.3), (4, None, None)])
    assert b.rows[0].ceiling_tps == pytest.approx(362.3, abs=0.1)
    assert b.rows[0].of_ceiling_pct == pytest.approx(300 / 362.3 * 100, abs=0.1)
    assert b.rows[0].network_pct == pytest.approx(2.76 / 3.3 * 100)
    assert b.rows[1].ceiling_tps == pytest.approx(4 * 362.3, abs=0.5)
    assert b.rows[1].tps is None and b.rows[1].network_pct is None
    assert bound("near", 0.54, 1.0, [(1, 1000.0, 0.4)]).rows[0].network_pct == 100.0
    assert bound("near", 0.54, 1.0, [(1, 1000.0, 1.0)]).rows[0].ceiling_tps == pytest.approx(1851.9, abs=0.1)
