"""Tests of the pgbench output parser against real pgbench 14, 15, 17 and 18 output.

The goldens under tests/golden/pgbench/<major>/<case>.{stdout,stderr,cmd} were captured
from real runs; each .cmd file records the argv, the environment and the exit code.
"""

from __future__ import annotations

import dataclasses
import math
import re
from pathlib import Path

import pytest

from teiten.drivers.pgbench_output import (
    PgbenchOutput,
    ProgressPoint,
    ScriptStats,
    StatementLatency,
    parse,
    parse_progress_line,
)

GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "pgbench"
CASES = sorted(f"{p.parent.name}/{p.stem}" for p in GOLDEN.glob("*/*.stdout"))

# The scripts the goldens ran (the .cmd files say which); their -r listing has one
# line per script line, \set meta-commands included.
READ_SCRIPT = r"""\set naccounts 100000 * :scale
\set row_count 10000
\set aid_max :naccounts - :row_count
\set aid random(1, :aid_max)
SELECT count(abalance) FROM pgbench_accounts WHERE aid BETWEEN :aid and :aid + :row_count;
""".splitlines()
UPDATE_SCRIPT = r"""\set naccounts 100000 * :scale
\set aid_val random(1, :naccounts)
UPDATE pgbench_accounts SET filler=repeat(md5(current_timestamp::text),2) WHERE aid = :aid_val;
""".splitlines()
SELECT_ONLY_BUILTIN = [
    r"\set aid random(1, 100000 * :scale)",
    "SELECT abalance FROM pgbench_accounts WHERE aid = :aid;",
]
CONFLICT_SCRIPT = ["UPDATE pgbench_accounts SET abalance = abalance + 1 WHERE aid = 1;"]
LISTINGS = {
    "read": [READ_SCRIPT],
    "server_killed": [READ_SCRIPT],
    "select_only": [SELECT_ONLY_BUILTIN],
    "weighted": [READ_SCRIPT, UPDATE_SCRIPT],
    "failures": [CONFLICT_SCRIPT],
    "aborted": [],  # every client aborted at once: no -r listing at all
}


def load(case: str) -> tuple[PgbenchOutput, int]:
    """Parse one golden; also return the exit code its .cmd file recorded."""
    base = GOLDEN / case
    out = parse(base.with_suffix(".stdout").read_text(), base.with_suffix(".stderr").read_text())
    cmd = base.with_suffix(".cmd").read_text()
    match = re.search(r"^exit_code: (\d+)$", cmd, re.M)
    assert match, f"{case}.cmd records no exit code"
    return out, int(match.group(1))


def test_all_goldens_are_present() -> None:
    for major in ("15", "17", "18"):
        for case in LISTINGS:
            assert f"{major}/{case}" in CASES
    assert "14/read" in CASES


@pytest.mark.parametrize("case", CASES)
def test_golden_is_consistent(case: str) -> None:
    out, exit_code = load(case)
    major, name = case.split("/")
    assert out.pgbench_version is not None and out.pgbench_version.split(".")[0] == major
    assert (out.scale, out.duration_s) == (1, 3.0)
    assert out.clients in (2, 4) and out.threads in (1, 2)
    # pgbench exits 2 exactly when a client aborted; the parser must say so.
    assert out.aborted == (exit_code != 0)
    assert bool(out.errors) == out.aborted
    assert out.tps_including_connections is None  # only 13 and older print it
    assert (out.failed_transactions is None) == (major == "14" or case == "18/aborted")

    listings = LISTINGS[name]
    assert len(out.statements) == sum(len(lines) for lines in listings)
    for index, lines in enumerate(listings):
        rows = [s for s in out.statements if s.script_index == index]
        assert [s.command for s in rows] == lines
        assert [s.line_no for s in rows] == list(range(1, len(lines) + 1))
        assert all(s.latency_ms >= 0 for s in rows)
        assert all((s.failures is None) == (major == "14") for s in rows)

    if name == "aborted":
        assert out.transactions == 0 and out.tps is None and out.latency_ms_avg is None
        assert out.progress == ()
    else:
        assert out.transactions > 0 and out.tps and out.tps > 0
        assert out.latency_ms_avg and out.latency_ms_stddev is not None
        assert out.initial_connection_ms and out.initial_connection_ms > 0
        expected_points = 1 if name == "server_killed" else 3  # killed 1.2 s into the run
        assert [p.t for p in out.progress] == [float(i + 1) for i in range(expected_points)]
        assert all(p.tps > 0 and p.latency_ms and p.latency_stddev_ms for p in out.progress)
        assert all((p.failed is None) == (major == "14") for p in out.progress)


def test_17_read_figures() -> None:
    out, _ = load("17/read")
    assert out.pgbench_version == "17.11"
    assert (out.clients, out.threads) == (2, 1)
    assert out.transactions == 9707
    assert out.failed_transactions == 0
    assert out.tps == pytest.approx(3238.985547)
    assert (out.latency_ms_avg, out.latency_ms_stddev) == (0.615, 0.136)
    assert out.initial_connection_ms == 3.747
    assert not out.aborted and out.errors == ()
    assert out.progress[1] == ProgressPoint(2.0, 3302.0, 0.603, 0.132, 0)
    assert out.statements[4] == StatementLatency(0, 5, 0.615, 0, READ_SCRIPT[4])
    assert out.scripts == ()


def test_15_debian_banner_and_select_only() -> None:
    out, _ = load("15/select_only")
    assert out.pgbench_version == "15.18"  # from "pgbench (15.18 (Debian 15.18-0+deb12u1))"
    assert out.transactions == 111888
    assert out.tps == pytest.approx(37342.76559)
    assert [s.latency_ms for s in out.statements] == [0.0, 0.051]


def test_14_read_has_no_failure_accounting() -> None:
    out, _ = load("14/read")
    assert out.pgbench_version == "14.23"
    assert out.transactions == 8979
    # 14 already prints "(without initial connection time)": no "including" tps line.
    assert out.tps == pytest.approx(2995.155514)
    assert out.tps_including_connections is None
    assert out.failed_transactions is None
    assert out.initial_connection_ms == 2.833
    assert out.progress[0] == ProgressPoint(1.0, 3011.0, 0.660, 0.104, None)
    assert {s.failures for s in out.statements} == {None}


@pytest.mark.parametrize(
    ("major", "expected"),
    [
        ("15", [(2, 5673, 1892.680069, 0.881), (1, 2837, 946.506849, 0.320)]),
        ("17", [(2, 6353, 2119.722798, 0.773), (1, 3276, 1093.060268, 0.303)]),
        # 18 moved tps to " - number of transactions actually processed: N (tps = T)".
        ("18", [(2, 6225, 2076.991142, 0.785), (1, 3018, 1006.965344, 0.338)]),
    ],
)
def test_weighted_scripts(major: str, expected: list[tuple[int, int, float, float]]) -> None:
    out, _ = load(f"{major}/weighted")
    assert [(s.index, s.name) for s in out.scripts] == [(0, "read.pgbench"), (1, "update.pgbench")]
    assert [(s.weight, s.transactions, s.tps, s.latency_ms) for s in out.scripts] == expected
    assert sum(s.transactions for s in out.scripts) == out.transactions
    # The per-script " - latency average" lines must not overwrite the run-wide figures.
    assert out.latency_ms_avg not in {s.latency_ms for s in out.scripts}
    assert [s.script_index for s in out.statements] == [0] * 5 + [1] * 3


@pytest.mark.parametrize("major", ["15", "17", "18"])
def test_aborted_run(major: str) -> None:
    out, exit_code = load(f"{major}/aborted")
    assert exit_code == 2 and out.aborted
    assert out.errors[-1] == "pgbench: error: Run was aborted; the above results are incomplete."
    aborts = [e for e in out.errors if " aborted in command 1 " in e]
    assert len(aborts) == 2
    # The server's ERROR comes with its LINE/caret continuation lines.
    assert all('relation "no_such_table" does not exist\nLINE 1: SELECT' in e for e in aborts)
    assert all(e.endswith("^") for e in aborts)
    # 15/17 print "number of failed transactions: 0 (NaN%)"; 18 omits the line.
    assert out.failed_transactions == (None if major == "18" else 0)


@pytest.mark.parametrize("major", ["15", "17", "18"])
def test_server_killed(major: str) -> None:
    out, exit_code = load(f"{major}/server_killed")
    assert exit_code == 2 and out.aborted
    # pgbench still prints a full summary, computed over the time actually run.
    assert out.transactions > 0 and out.tps is not None and len(out.statements) == 5
    assert sum("terminating connection due to immediate shutdown" in e for e in out.errors) == 2
    assert sum("perhaps the backend died" in e for e in out.errors) == 2
    assert out.errors[-1].endswith("Run was aborted; the above results are incomplete.")


@pytest.mark.parametrize(
    ("major", "failed", "statement_failures"),
    [("15", 40990, 40989), ("17", 39205, 39205), ("18", 36944, 36942)],
)
def test_serialization_failures(major: str, failed: int, statement_failures: int) -> None:
    out, exit_code = load(f"{major}/failures")
    assert exit_code == 0 and not out.aborted and out.errors == ()
    assert out.failed_transactions == failed
    assert out.statements[0].failures == statement_failures
    assert all(p.failed and p.failed > 10000 for p in out.progress)


def test_progress_line_with_rate_and_latency_limit() -> None:
    # Real 17.11 output of "pgbench -P 1 -R 500 -L 5 -S".
    line = (
        "progress: 1.0 s, 493.0 tps, lat 0.269 ms stddev 0.153, 0 failed, lag 0.102 ms, 0 skipped"
    )
    assert parse_progress_line(line) == ProgressPoint(1.0, 493.0, 0.269, 0.153, 0)
    # 14 and older: no "failed"; lag and skipped still tolerated.
    old = "progress: 4.0 s, 480.1 tps, lat 1.234 ms stddev 0.500, lag 0.042 ms, 3 skipped"
    assert parse_progress_line(old) == ProgressPoint(4.0, 480.1, 1.234, 0.5, None)
    retries = "progress: 2.0 s, 10.0 tps, lat 3.000 ms stddev 1.000, 4 failed, 2 retried, 5 retries"
    assert parse_progress_line(retries) == ProgressPoint(2.0, 10.0, 3.0, 1.0, 4)
    nan = "progress: 3.0 s, 0.0 tps, lat NaN ms stddev NaN, 0 failed"
    assert parse_progress_line(nan) == ProgressPoint(3.0, 0.0, None, None, 0)
    assert parse_progress_line("pgbench: error: client 0 aborted") is None
    assert parse_progress_line("") is None


def test_pg13_style_summary() -> None:
    # Reconstructed from the PostgreSQL 13 source (no 13 binaries to capture with): no
    # banner, two tps lines, no initial connection time, no failure columns.
    stdout = (
        "transaction type: <builtin: select only>\n"
        "scaling factor: 10\n"
        "query mode: prepared\n"
        "number of clients: 8\n"
        "number of threads: 4\n"
        "number of transactions per client: 1000\n"
        "number of transactions actually processed: 8000/8000\n"
        "latency average = 0.250 ms\n"
        "tps = 31000.123456 (including connections establishing)\n"
        "tps = 32000.654321 (excluding connections establishing)\n"
        "statement latencies in milliseconds:\n"
        "         0.001  \\set aid random(1, 100000 * :scale)\n"
        "         0.240  SELECT abalance FROM pgbench_accounts WHERE aid = :aid;\n"
    )
    out = parse(stdout, "")
    assert out.pgbench_version is None and out.duration_s is None
    assert (out.scale, out.clients, out.threads, out.transactions) == (10, 8, 4, 8000)
    assert out.tps == pytest.approx(32000.654321)
    assert out.tps_including_connections == pytest.approx(31000.123456)
    assert out.latency_ms_avg == 0.25 and out.latency_ms_stddev is None
    assert out.failed_transactions is None and not out.aborted
    assert [(s.line_no, s.failures) for s in out.statements] == [(1, None), (2, None)]


def test_pg13_style_abort_lines() -> None:
    stderr = (
        "client 3 aborted in command 4 (SQL) of script 0; "
        "perhaps the backend died while processing\n"
        "Run was aborted; the above results are incomplete.\n"
    )
    out = parse("number of transactions actually processed: 10\n", stderr)
    assert out.aborted and len(out.errors) == 2


def test_failures_and_retries_columns() -> None:
    stdout = (
        "pgbench (17.11, server 16.4)\n"
        "maximum number of tries: 3\n"
        "number of transactions actually processed: 10\n"
        "number of failed transactions: 1 (9.091%)\n"
        "latency average = 1.500 ms (including failures)\n"
        "tps = 12.000000 (including reconnection times)\n"
        "statement latencies in milliseconds, failures and retries:\n"
        "         0.500           1           4 SELECT 1;\n"
    )
    out = parse(stdout, "")
    assert out.pgbench_version == "17.11"
    assert (out.latency_ms_avg, out.tps, out.failed_transactions) == (1.5, 12.0, 1)
    assert out.statements == (StatementLatency(0, 1, 0.5, 1, "SELECT 1;"),)


def test_connection_failure() -> None:
    # Real 17.11 stderr when nothing listens on the port; stdout stays empty.
    stderr = (
        'pgbench: error: connection to server on socket "/tmp/s/.s.PGSQL.1" failed: '
        "No such file or directory\n"
        "\tIs the server running locally and accepting connections on that socket?\n"
        "pgbench: error: could not create connection for setup\n"
    )
    out = parse("", stderr)
    assert out.aborted and out.transactions == 0 and out.tps is None
    assert len(out.errors) == 2 and "\n\tIs the server running" in out.errors[0]


def test_verbose_errors_are_not_aborts() -> None:
    # --verbose-errors lines (info level), interleaved by parallel threads.
    stderr = (
        "pgbench: client 1 got an error in command 0 (SQL) of script 0; ERROR:  could not "
        "serialize access due to concurrent update\n"
        "pgbench:pgbench: client 0 ends the failed transaction (try 1/1)\n"
    )
    out = parse("number of transactions actually processed: 5\n", stderr)
    assert not out.aborted and out.errors == ()


def test_no_output_at_all() -> None:
    out = parse("", "  \n")
    assert out.aborted and out.errors == ("no output from pgbench",)
    assert out.transactions == 0 and out.progress == out.statements == out.scripts == ()


def test_truncated_output_never_raises() -> None:
    text = (GOLDEN / "18/weighted.stdout").read_text()
    for cut in range(0, len(text), 7):
        out = parse(text[:cut], "")
        assert isinstance(out, PgbenchOutput)
        if "number of transactions actually processed" not in text[:cut]:
            assert out.aborted and out.errors


def test_results_are_frozen() -> None:
    out, _ = load("17/weighted")
    with pytest.raises(dataclasses.FrozenInstanceError):
        out.tps = 1.0  # type: ignore[misc]
    assert isinstance(out.scripts[0], ScriptStats)
    assert not math.isnan(out.tps or 0.0)


LIMITS = GOLDEN.parent / "pgbench-limits"


@pytest.mark.parametrize(("case", "want"), [
    # -M prepared -R 300 -L 5: on schedule, nothing late or skipped
    ("17/rate_select_only", {"skipped": 0, "late": 0, "latency_limit_ms": 5.0,
                             "lag_ms_avg": 0.116, "lag_ms_max": 3.757}),
    # -M extended -L 0.05 (printed as 0.1 ms), no rate: every transaction late, none skipped
    ("17/extended_late", {"late": 1454, "latency_limit_ms": 0.1}),
    # -R 100000 -L 0.2: most transactions skipped, and left out of the latencies
    ("17/rate_skipped", {"skipped": 298342, "late": 1210, "latency_limit_ms": 0.2,
                         "lag_ms_avg": 0.191, "lag_ms_max": 0.2}),
])
def test_rate_and_latency_limits_are_read(case: str, want: dict[str, float]) -> None:
    base = LIMITS / case
    out = parse(base.with_suffix(".stdout").read_text(), base.with_suffix(".stderr").read_text())
    assert out.limits() == want
    assert not out.aborted and out.transactions > 0 and out.tps


def test_a_run_without_limits_has_none() -> None:
    out, _ = load("17/select_only")
    assert out.limits() is None
