"""teiten.analysis.locks: the medians of stored LWLOCK_STATS rows per point, and a family's
table by core count, on rows of the shape the runner stores (details of kind "lwlock")."""

from __future__ import annotations

from teiten.analysis.locks import LockFigures, figures, lock_cores, lock_tables
from teiten.results import Point


def row(lock: str, shared: float, exclusive: float, blk: float, *, split: bool = True) -> dict[str, object]:
    out: dict[str, object] = {"lock": lock, "requests_per_tx": shared + exclusive,
                              "contentions_per_tx": blk}
    if split:
        out |= {"shared_per_tx": shared, "exclusive_per_tx": exclusive}
    return out


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
    per_server = lock_tables(w, ["a-1core", "a-2cores", "a-4cores"], [48, 256, 320], locks)
    assert [(t.server, t.clients) for t in per_server] == [("a-1core", (48, 256)),
                                                           ("a-2cores", (256, 320))]
