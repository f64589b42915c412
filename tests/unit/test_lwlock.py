"""Tests of the LWLOCK_STATS parser against real logs of a -DLWLOCK_STATS build of 15.18,
and against lines built from the format strings of other versions.

tests/golden/lwlock/SOURCE.md says how each golden was made. The expected sums are
computed here independently, by splitting the lines on spaces (the 15 tranche names have
none), or were counted by hand with awk and written down.
"""

from __future__ import annotations

import gzip
import re
from collections import defaultdict
from pathlib import Path

import pytest

from teiten.drivers.pgbench_output import parse as parse_pgbench
from teiten.monitors.lwlock import (
    LockStats,
    LWLockLine,
    LWLockStats,
    parse,
    parse_line,
    per_transaction,
    read_window,
)

GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "lwlock"
REAL = ("pg15-tpcb", "pg15-select-only")


def log_text(name: str) -> str:
    return gzip.decompress((GOLDEN / f"{name}.log.gz").read_bytes()).decode()


def transactions(name: str) -> int:
    return parse_pgbench((GOLDEN / f"{name}.pgbench.stdout").read_text(), "").transactions


def naive_sums(text: str) -> dict[str, list[int]]:
    """Per tranche: shacq, exacq, blk, spindelay, dequeue self -- by position, as awk would."""
    sums: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0, 0, 0])
    for line in text.splitlines():
        f = line.split(" ")
        if f[0] == "PID" and f[2] == "lwlock":
            for i, pos in enumerate((6, 8, 10, 12, 15)):
                sums[f[3]][i] += int(f[pos])
    return dict(sums)


def pgbench_backends(text: str) -> set[int]:
    """The PIDs the log's connection lines (log_connections = on) give to pgbench."""
    found = re.findall(r"\[(\d+)\] LOG:  connection authorized: .*application_name=pgbench", text)
    return {int(pid) for pid in found}


@pytest.mark.parametrize("name", REAL)
def test_real_log_sums_match_an_independent_count(name: str) -> None:
    text = log_text(name)
    stats = parse(text)
    expected = naive_sums(text)
    assert {s.lock for s in stats.locks} == set(expected)
    for s in stats.locks:
        assert [s.shacq, s.exacq, s.blk, s.spindelay, s.dequeue_self] == expected[s.lock], s.lock
    assert len(stats.lines) == sum(1 for line in text.splitlines() if line.startswith("PID "))
    # Every other line (startup, connections, checkpoint, shutdown) is ignored.
    assert any("database system is shut down" in line for line in text.splitlines())


def test_tpcb_known_totals() -> None:
    # Counted by hand: awk '$1=="PID"{sh[$4]+=$7; ex[$4]+=$9; b[$4]+=$11} ...' on the log.
    stats = parse(log_text("pg15-tpcb"))
    assert len(stats.lines) == 4811
    assert sum(s.requests for s in stats.locks) == 275042
    assert sum(s.blk for s in stats.locks) == 1614
    assert stats.lock("BufferContent") == LockStats("BufferContent", 48800, 29106, 50, 0, 7, 1774, 6)
    assert stats.lock("LockManager") == LockStats("LockManager", 0, 25826, 1555, 0, 3, 16, 7)
    assert stats.lock("WALWrite") is not None and stats.lock("Nonexistent") is None


def test_tpcb_processes() -> None:
    text = log_text("pg15-tpcb")
    stats = parse(text)
    backends = pgbench_backends(text)
    # pgbench's first connection plus one per client (-c 4); then the autovacuum launcher
    # and the logical replication launcher at shutdown. Auxiliary processes print nothing.
    assert len(backends) == 5
    assert set(stats.pids) - backends == {4679, 4680}
    assert stats.pids[-2:] == (4680, 4679)  # they exit last, at the shutdown
    # Each process reports the acquisition of lock 0 that print_lwlock_stats itself makes.
    zero = stats.lock("<unassigned:0>")
    assert zero is not None and (zero.exacq, zero.pids, zero.instances) == (7, 7, 1)
    # The per-process sums add up to the totals.
    totals = {s.lock: s.requests for s in stats.locks}
    by_pid: dict[str, int] = defaultdict(int)
    for pid in stats.pids:
        for s in stats.for_pid(pid):
            by_pid[s.lock] += s.requests
    assert by_pid == totals
    assert {s.pids for s in stats.for_pid(4689)} == {1}


def test_tpcb_per_transaction_table() -> None:
    text = log_text("pg15-tpcb")
    tx = transactions("pg15-tpcb")
    assert tx == 2431
    backends = parse(text).only(pgbench_backends(text))
    rows = per_transaction(backends, tx)
    assert [r.lock for r in rows[:6]] == [
        "BufferContent", "BufferMapping", "ProcArray", "LockFastPath", "LockManager", "WALInsert",
    ]  # fmt: skip
    requests = [r.requests_per_tx for r in rows]
    assert requests == sorted(requests, reverse=True)
    lockmgr = next(r for r in rows if r.lock == "LockManager")
    manager = backends.lock("LockManager")
    assert manager is not None
    assert lockmgr.requests_per_tx == pytest.approx(manager.requests / tx)
    assert lockmgr.contentions_per_tx == pytest.approx(manager.blk / tx)
    assert lockmgr.contentions == manager.blk > 1000  # the tpcb hot spot: a few branches
    # pgbench's backends alone, not the launchers' 36 lines.
    assert sum(r.requests for r in rows) == sum(line.shacq + line.exacq for line in backends.lines)
    assert len(backends.lines) == 4811 - 36
    assert per_transaction(backends, tx, top=3) == rows[:3]


def test_select_only_against_tpcb() -> None:
    per_tx = {}
    for name in REAL:
        text = log_text(name)
        rows = per_transaction(parse(text).only(pgbench_backends(text)), transactions(name))
        per_tx[name] = {r.lock: r for r in rows}
    assert transactions("pg15-select-only") == 86916
    select, tpcb = per_tx["pg15-select-only"], per_tx["pg15-tpcb"]
    assert list(select)[:4] == ["LockFastPath", "BufferMapping", "BufferContent", "ProcArray"]
    # Read-only: next to no WAL and no lock-manager contention; and no UPDATE, whose
    # MultiXactIdSetOldestMember takes MultiXactGen once per transaction.
    assert select["WALInsert"].requests_per_tx < tpcb["WALInsert"].requests_per_tx / 100
    assert select["LockManager"].contentions_per_tx < tpcb["LockManager"].contentions_per_tx / 1000
    assert tpcb["MultiXactGen"].requests == 2431 and "MultiXactGen" not in select


@pytest.mark.parametrize("name", REAL)
def test_window_after_the_servers_start(name: str, tmp_path: Path) -> None:
    """The caller parses what was written after the offset it noted when the run began."""
    path = tmp_path / "postgresql.log"
    path.write_text(log_text(name))
    offset = int((GOLDEN / f"{name}.offset").read_text())
    whole = parse(path.read_text())
    assert read_window(path, offset) == whole  # the startup lines hold no LWLock lines
    # An offset in the middle of the first PID line: that line is dropped, nothing else.
    data = path.read_bytes()
    first = data.index(b"\nPID ") + 1
    dropped = parse_line(data[first : data.index(b"\n", first)].decode())
    assert dropped is not None
    window = read_window(path, first + 5)
    assert window.lines == whole.lines[1:]
    assert parse(data[first + 5 :].decode(), starts_mid_line=True).lines == whole.lines[1:]
    # Without the hint, the cut line ("12345 lwlock ...") is still no match.
    assert parse(data[first + 5 :].decode()).lines == whole.lines[1:]
    # A window that ends inside a line: the unterminated line is not counted.
    end = data.index(b" blk ", first) + len(b" blk 0")
    assert parse(data[:end].decode()).lines == ()
    assert read_window(path, len(data)).lines == ()


def test_collector_lines_go_to_the_stderr_file_not_the_csvlog() -> None:
    stats = parse((GOLDEN / "pg15-collector.log").read_text())
    assert set(stats.pids) == {4924, 4920, 4921}  # psql's backend, the two launchers
    assert len(stats.lines) == 215
    assert parse((GOLDEN / "pg15-collector.csv").read_text()).lines == ()


def test_9_3_bare_lock_numbers() -> None:
    stats = parse((GOLDEN / "constructed-9.3.log").read_text())
    assert [s.lock for s in stats.locks] == ["main 245", "main 4", "main 8"]
    assert stats.lock("main 4") == LockStats("main 4", 2300, 608, 21, None, None, 1, 2)
    assert stats.lines[0] == LWLockLine(3101, "main 4", "4", 1200, 310, 12, None, None)


def test_9_4_main_tranche_is_split_by_index() -> None:
    stats = parse((GOLDEN / "constructed-9.4.log").read_text())
    assert stats.lock("main 4") == LockStats("main 4", 2900, 590, 35, 5, None, 1, 2)
    assert stats.lock("main 1203") == LockStats("main 1203", 100, 4, 1, 0, None, 1, 2)
    assert stats.pids == (4101, 4102)


def test_9_6_adds_dequeue_self() -> None:
    stats = parse((GOLDEN / "constructed-9.6.log").read_text())
    assert stats.lock("main 8") == LockStats("main 8", 0, 590, 86, 2, 5, 1, 2)
    rows = per_transaction(stats, 100)
    assert [(r.lock, r.requests_per_tx, r.contentions_per_tx) for r in rows] == [
        ("main 4", 39.0, 0.24),
        ("main 8", 5.9, 0.86),
    ]


def test_12_tranche_names_and_addresses() -> None:
    stats = parse((GOLDEN / "constructed-12.log").read_text())
    assert stats.lock("buffer_mapping") == LockStats("buffer_mapping", 1130, 53, 3, 0, 0, 2, 2)
    assert stats.lock("ProcArrayLock") == LockStats("ProcArrayLock", 3550, 590, 16, 1, 1, 1, 2)


@pytest.mark.parametrize(
    ("line", "lock", "instance"),
    [
        # log_line_prefix and csvlog-style text before "PID" are allowed.
        ("2026-11-21 10:00:00.123 UTC [1234] LOG:  PID 1234 lwlock WALInsert 0x7f10: "
         "shacq 0 exacq 3 blk 1 spindelay 0 dequeue self 0", "WALInsert", "0x7f10"),
        ('2026-11-21 10:00:00.123 UTC,,,1234,,x,1,,,,0,LOG,00000,"PID 1234 lwlock '
         'ProcArray 0x7f20: shacq 1 exacq 2 blk 0 spindelay 0 dequeue self 0', "ProcArray", "0x7f20"),
        # An extension tranche name with spaces; glibc's "(nil)"; a CRLF line end.
        ("PID 1 lwlock my ext lock 0x7f30: shacq 1 exacq 2 blk 0 spindelay 0 dequeue self 0",
         "my ext lock", "0x7f30"),
        ("PID 1 lwlock (null) (nil): shacq 1 exacq 2 blk 0 spindelay 0 dequeue self 0\r", "(null)", "(nil)"),
    ],
)  # fmt: skip
def test_line_variants(line: str, lock: str, instance: str) -> None:
    parsed = parse_line(line)
    assert parsed is not None and (parsed.lock, parsed.instance) == (lock, instance)


@pytest.mark.parametrize(
    "line",
    [
        "",
        "PID 1 lwlock",
        "ID 1234 lwlock ProcArray 0x7f: shacq 1 exacq 2 blk 0 spindelay 0 dequeue self 0",
        "PID 1 lwlock ProcArray 0x7f: shacq 1 exacq 2 blk 0 spindelay 0 dequeue self 0 junk",
        "PID 1 lwlock ProcArray 0x7f: shacq 1 exacq 2 blk 0 spindelay 0 dequeue self",
        "PID 1 lwlock ProcArray 0x7f: shacq 1 exacq -2 blk 0 spindelay 0 dequeue self 0",
        "PID 1 lwlock ProcArray 0x7f: shacq 1 exacq 2 blk 0 dequeue self 0",
        "PID x lwlock ProcArray 0x7f: shacq 1 exacq 2 blk 0 spindelay 0 dequeue self 0",
        "2026-11-21 10:00:00.123 UTC [1234] LOG:  checkpoint complete: wrote 1606 buffers",
        "PID 1 lwlock ProcArray 0x7fPID 2 lwlock ProcArray 0x7f: shacq 1 exacq 2 blk 0",
    ],
)
def test_garbage_is_ignored(line: str) -> None:
    # The last one is a line cut short and run into the next: that one, whole, is kept.
    parsed = parse_line(line)
    assert parsed is None or (parsed.pid, parsed.lock) == (2, "ProcArray")


def test_empty_and_garbage_logs_give_no_rows() -> None:
    for text in ("", "\n\n", "not a log\n", "PID 1 lwlock X 0x1: shacq 1 exacq 2 blk 3"):
        stats = parse(text)
        assert stats == LWLockStats(()) and stats.locks == () and stats.pids == ()
        assert per_transaction(stats, 10) == []


def test_per_transaction_sorting_and_ties() -> None:
    locks = [
        LockStats("B", 5, 5, 1, 0, 0, 1, 1),
        LockStats("A", 10, 0, 1, 0, 0, 1, 1),
        LockStats("C", 0, 10, 4, 0, 0, 1, 1),
        LockStats("D", 30, 0, 0, 0, 0, 1, 1),
    ]
    rows = per_transaction(locks, 4)
    assert [r.lock for r in rows] == ["D", "C", "A", "B"]  # ties: more contentions, then name
    assert (rows[0].requests_per_tx, rows[1].contentions_per_tx) == (7.5, 1.0)


@pytest.mark.parametrize("tx", [0, -1])
def test_per_transaction_needs_transactions(tx: int) -> None:
    with pytest.raises(ValueError, match="positive transaction count"):
        per_transaction(LWLockStats(()), tx)
