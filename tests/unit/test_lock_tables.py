"""teiten.analysis.locks: the medians of stored LWLOCK_STATS rows per point, and a family's
table by core count, on rows of the shape the runner stores (details of kind "lwlock")."""

from __future__ import annotations

import pytest

from teiten.analysis.lock_names import lock_name
from teiten.analysis.locks import LockFigures, LockRow, figures, lock_cores, lock_rows, lock_tables
from teiten.model.results import Point


def row(lock: str, shared: float, exclusive: float, blk: float, *, split: bool = True) -> LockRow:
    out: dict[str, object] = {"lock": lock, "requests_per_tx": shared + exclusive,
                              "contentions_per_tx": blk}
    if split:
        out |= {"shared_per_tx": shared, "exclusive_per_tx": exclusive}
    (read,) = lock_rows({"locks": [out]})
    return read


def test_each_figure_is_the_median_over_the_runs_and_an_absent_lock_counts_zero() -> None:
    runs = [[row("WALInsert", 0.0, 3.0, 0.5), row("ProcArray", 2.0, 1.0, 0.0)],
            [row("WALInsert", 0.0, 5.0, 0.7)],
            [row("WALInsert", 0.0, 4.0, 0.1), row("ProcArray", 4.0, 2.0, 0.2)]]
    got = figures(runs)
    assert got["WALInsert"] == LockFigures(4.0, 0.5, 0.0, 4.0)
    assert got["ProcArray"] == LockFigures(3.0, 0.0, 2.0, 1.0)  # medians of (3, 0, 6), (2, 0, 4)...


def test_rows_from_before_the_split_keep_their_requests_and_leave_the_parts_unknown() -> None:
    runs = [[row("XidGen", 0.0, 1.0, 0.0, split=False)], [row("XidGen", 0.0, 1.0, 0.0)]]
    assert figures(runs)["XidGen"] == LockFigures(1.0, 0.0, None, None)


def test_the_family_table_is_taken_where_every_counting_member_has_figures() -> None:
    w = "pgecons-update"
    locks = {Point("a-1core", w, 48): [[row("WALInsert", 0.0, 2.0, 0.1)]],
             Point("a-1core", w, 256): [[row("WALInsert", 0.0, 2.0, 0.3), row("ProcArray", 1.0, 1.0, 0.0)]],
             Point("a-2cores", w, 256): [[row("WALInsert", 0.0, 2.0, 0.9), row("XidGen", 0.0, 1.0, 0.0)]],
             Point("a-2cores", w, 320): [[row("WALInsert", 0.0, 2.0, 1.2)]]}
    members = [(1, "a-1core"), (2, "a-2cores"), (4, "a-4cores")]  # 4 cores counted nothing
    table = lock_cores(w, "a", members, [48, 256, 320], locks)
    assert table is not None
    assert (table.clients, table.cores, table.servers) == (256, (1, 2), ("a-1core", "a-2cores"))
    # Ranked by requests at the most cores; a lock one count lacks is None there.
    assert [name for name, _ in table.rows] == ["WALInsert", "XidGen", "ProcArray"]
    assert dict(table.rows)["XidGen"] == (None, LockFigures(1.0, 0.0, 0.0, 1.0))
    assert dict(table.rows)["ProcArray"] == (LockFigures(2.0, 0.0, 1.0, 1.0), None)
    # One counting member is no comparison; nor are members with no client count in common.
    assert lock_cores(w, "a", members[:1], [48, 256, 320], locks) is None
    apart = {Point("a-1core", w, 48): locks[Point("a-1core", w, 48)],
             Point("a-2cores", w, 320): locks[Point("a-2cores", w, 320)]}
    assert lock_cores(w, "a", members, [48, 256, 320], apart) is None
    per_server = lock_tables(w, {"a-1core": "18.1", "a-2cores": "18.1", "a-4cores": "18.1"},
                             [48, 256, 320], locks)
    assert [(t.server, t.clients) for t in per_server] == [("a-1core", (48, 256)),
                                                           ("a-2cores", (256, 320))]


def test_the_numbered_locks_of_9_4_to_9_6_are_named_and_a_tables_partitions_summed() -> None:
    """9.4 to 9.6 print their built-in locks as places in tranche "main" (the 2014 report's
    ProcArrayLock was "main 4"); 9.4 and 9.5 put the partitioned tables after them."""
    assert lock_name("main 4", "9.4.26") == "ProcArrayLock (main 4)"
    assert lock_name("main 0", "9.4.26") == "BufFreelistLock (main 0)"
    assert lock_name("main 0", "9.5.25") == "main 0"  # freed in 9.5
    assert lock_name("main 41", "9.5.25") == "MultiXactTruncationLock (main 41)"
    assert lock_name("main 42", "9.6.24") == "OldSnapshotTimeMapLock (main 42)"
    assert lock_name("main 38", "9.4.26") == "BufferMapping (main 38-165)"
    assert lock_name("main 170", "9.5.25") == "LockManager (main 170-185)"
    assert lock_name("main 200", "9.5beta1") == "PredicateLockManager (main 186-201)"
    assert lock_name("main 43", "9.6.24") == "main 43"  # 9.6: partitions have tranches; an add-in
    assert lock_name("main 4", "18.1") == "main 4" and lock_name("ProcArray", "9.6.1") == "ProcArray"
    runs = [[row("main 42", 2.0, 0.0, 0.5), row("main 43", 1.0, 0.0, 0.25), row("main 4", 1.0, 1.0, 0.0)]]
    got = figures(runs, "9.5.25")
    assert got["BufferMapping (main 42-169)"] == LockFigures(3.0, 0.75, 3.0, 0.0)
    assert got["ProcArrayLock (main 4)"] == LockFigures(2.0, 0.0, 1.0, 1.0)
    assert set(figures(runs, "15.4")) == {"main 42", "main 43", "main 4"}


def test_stored_lock_rows_are_read_typed_and_a_malformed_body_is_refused() -> None:
    """Details ``lwlock`` as the monitor stores them, with the raw counts it keeps beside the
    figures; a body without a list of rows, or a figure that is no number, says so."""
    (got,) = lock_rows({"locks": [{"lock": "WALInsert", "requests_per_tx": 2.0, "contentions_per_tx": 0.5,
                                   "requests": 200, "contentions": 50}]})
    assert got == LockRow("WALInsert", 2.0, 0.5, None, None)
    with pytest.raises(ValueError, match="no list of lock rows"):
        lock_rows({"rows": []})
    with pytest.raises(ValueError, match="requests_per_tx is not a number"):
        lock_rows({"locks": [{"lock": "WALInsert", "requests_per_tx": "2"}]})
