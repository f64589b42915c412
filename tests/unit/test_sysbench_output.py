"""sysbench's output read into the model's own terms (teiten.drivers.sysbench_output and the
run's verdict in teiten.drivers.sysbench), against real runs of Debian 12's sysbench 1.0.20
on PostgreSQL 17 (tests/golden/sysbench/, its README says how they were made). Each figure is
checked against what sysbench printed, read here with expressions of the test's own."""

from __future__ import annotations

import math
import re
from pathlib import Path

import pytest

from teiten.drivers import sysbench
from teiten.drivers.sysbench import SysbenchRun
from teiten.drivers.sysbench_output import PRECISION, parse, percentile

GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "sysbench"
RAN = ["read_only", "point_select", "read_write"]


def _text(case: str) -> str:
    return (GOLDEN / f"{case}.stdout").read_text()


def _printed(case: str, pattern: str) -> str:
    found = re.search(pattern, _text(case), re.MULTILINE)
    assert found is not None, (case, pattern)
    return found.group(1)


def _argv(case: str) -> list[str]:
    found = re.search(r"^argv: (.*)$", (GOLDEN / f"{case}.cmd").read_text(), re.MULTILINE)
    assert found is not None
    return found.group(1).split()


def _option(case: str, name: str) -> str:
    return next(a.split("=", 1)[1] for a in _argv(case) if a.startswith(f"--{name}="))


@pytest.mark.parametrize("case", RAN)
def test_a_run_s_figures_are_what_sysbench_printed(case: str) -> None:
    out = parse(_text(case))
    figures = out.figures()
    assert out.summary and out.errors == () and out.version == "1.0.20"
    assert out.threads == int(_option(case, "threads"))
    assert figures.transactions == int(_printed(case, r"^\s+transactions:\s+(\d+) "))
    assert figures.tps == float(_printed(case, r"^\s+transactions:\s+\d+\s+\((\S+) per sec\.\)"))
    assert figures.duration_s == float(_printed(case, r"^\s+total time:\s+(\S+)s$"))
    # the mean latency: the summed latencies over the events, which the printed avg rounds
    total = float(_printed(case, r"^\s+sum:\s+(\S+)$"))
    events = int(_printed(case, r"^\s+total number of events:\s+(\d+)$"))
    assert figures.latency_ms_avg == pytest.approx(total / events)
    assert abs(figures.latency_ms_avg - float(_printed(case, r"^\s+avg:\s+(\S+)$"))) <= 0.005 + 1e-9
    assert (figures.pgbench_version, figures.failed_transactions, figures.statements) == (None, None, ())
    # one point a second, its TPS as printed; no mean latency there (sysbench prints a percentile)
    printed = [float(v) for v in re.findall(r"^\[\s*\d+s \] thds: \d+ tps: (\S+)", _text(case), re.MULTILINE)]
    assert len(printed) == int(_option(case, "time"))
    assert [p.tps for p in figures.progress] == printed
    assert [p.t for p in figures.progress] == [float(i + 1) for i in range(len(printed))]
    assert all(p.latency_ms is None and p.failed is None for p in figures.progress)


@pytest.mark.parametrize("case", RAN)
def test_the_histogram_gives_the_percentiles_as_sysbench_reads_its_own(case: str) -> None:
    out = parse(_text(case))
    found = out.percentiles()
    assert found is not None
    assert found["count"] == out.transactions == sum(n for _, n in out.histogram)
    # sysbench's own 95th percentile is read from the same buckets, printed to 0.01 ms
    assert abs(found["p95_ms"] - float(_printed(case, r"^\s+95th percentile:\s+(\S+)$"))) <= 0.005 + 1e-9
    names = ["p50_ms", "p90_ms", "p95_ms", "p99_ms", "p999_ms"]
    assert [found[n] for n in names] == sorted(found[n] for n in names)
    assert found["max_ms"] == float(_printed(case, r"^\s+max:\s+(\S+)$"))
    assert found["p999_ms"] <= found["max_ms"] * (1 + PRECISION)
    assert (found["skipped"], found["failed"], found["precision"]) == (0, 0, PRECISION)
    # the buckets: 1024 on a log scale from 0.001 ms to 100 s, each printed to 0.001 ms
    step = math.log(1e8) / 1023
    for value, _ in out.histogram:
        index = round(math.log(value / 0.001) / step)
        assert abs(0.001 * math.exp(index * step) - value) <= 0.0005 + 1e-9, value
    assert math.expm1(step / 2) == PRECISION


def test_a_percentile_is_the_bucket_at_the_rounded_rank() -> None:
    hist = ((1.0, 50), (2.0, 45), (3.0, 4), (4.0, 1))
    assert [percentile(hist, q) for q in (0.5, 0.9, 0.95, 0.99, 0.999)] == [1.0, 2.0, 2.0, 3.0, 4.0]
    assert percentile((), 0.5) is None


def test_retried_errors_and_the_queries_are_kept_as_details() -> None:
    out = parse(_text("read_write"))
    details = out.details()
    assert details["ignored_errors"] == 5 == int(_printed("read_write", r"^\s+ignored errors:\s+(\d+) "))
    assert details["queries"] == {"read": 48678, "write": 13890, "other": 6962, "total": 69530}
    assert details["qps"] == float(_printed("read_write", r"^\s+queries:\s+\d+\s+\((\S+) per sec\.\)"))
    assert details["latency_ms"]["p95"] == 3.68 and details["fairness"]["events"] == [1736.0, 115.0]
    seconds = details["per_second"]
    assert seconds["t"] == [1.0, 2.0, 3.0] and seconds["errors_per_s"] == [2.0, 2.0, 1.0]
    assert seconds["p95_ms"] == [1.96, 5.57, 2.22] and len(seconds["qps"]) == 3


def _run(case: str, returncode: int | None, *, timed_out: bool = False) -> SysbenchRun:
    text = "" if timed_out else _text(case)
    return SysbenchRun(_argv(case), returncode, text, "", parse(text), timed_out=timed_out)


def test_a_good_run_counts_and_says_which_driver_ran_it() -> None:
    run = _run("read_only", 0)
    load = run.load_run()
    assert load.driver == "sysbench" and load.failure is None and not load.timed_out
    assert load.figures == run.output.figures() and load.argv == tuple(_argv("read_only"))
    details = run.details(["oltp_read_only", "--tables=2", "--table-size=10000"])
    assert details["driver"] == {"name": "sysbench", "version": "1.0.20", "test": "oltp_read_only",
                                 "options": ["--tables=2", "--table-size=10000"]}
    assert details["latency"] == {"percentiles": run.output.percentiles(), "driver": "sysbench"}
    assert details["sysbench"]["queries"]["total"] == int(_printed("read_only", r"^\s+total:\s+(\d+)$"))


def test_a_refused_connection_is_the_trial_s_reason() -> None:
    out = parse(_text("refused"))
    assert not out.summary and out.transactions == 0 and out.tps is None and out.histogram == ()
    assert out.percentiles() is None and len(out.errors) == 5
    assert _run("refused", 1).load_run().failure == (
        'sysbench exited with status 1: FATAL: Connection to database failed: connection to server '
        'on socket "/tmp/sbx/.s.PGSQL.55439" failed: No such file or directory\n'
        "\tIs the server running locally and accepting connections on that socket?")


def test_a_missing_table_fails_with_the_server_s_words_before_sysbench_crashes() -> None:
    load = _run("missing_table", -11).load_run()  # SIGSEGV, as Python's subprocess says it
    assert load.failure == ('sysbench exited with status -11: FATAL: PQprepare() failed: ERROR:  '
                            'relation "sbtest2" does not exist\nLINE 1: SELECT c FROM sbtest2 '
                            "WHERE id=$1\n                      ^")
    assert load.figures is not None and load.figures.transactions == 0


def test_a_fatal_line_fails_the_run_whatever_its_exit_status() -> None:
    text = _text("read_only").replace("Threads started!", "FATAL: something went wrong\nThreads started!")
    run = SysbenchRun(["sysbench"], 0, text, "", parse(text))
    assert run.failure() == "sysbench exited with status 0: FATAL: something went wrong"


def test_a_run_without_statistics_or_killed_for_its_time_does_not_count() -> None:
    text = _text("read_only").split("SQL statistics:")[0]
    assert SysbenchRun(["sysbench"], 0, text, "", parse(text)).failure() == \
        "sysbench reported no transactions"
    killed = _run("read_only", None, timed_out=True).load_run()
    assert killed.timed_out and killed.failure == "sysbench did not finish in time and was killed"


class _Test:
    def sysbench_args(self) -> list[str]:
        return ["oltp_read_only", "--tables=2", "--table-size=10000"]


def test_a_password_goes_to_the_environment_never_the_command_line() -> None:
    argv, env = sysbench.argv(_Test(), "host=/tmp/socks port=5433 user=u dbname=teiten_sysbench "
                              "password=s3cret", clients=4, duration_s=2.4)
    assert not any("s3cret" in a for a in argv) and env == {"PGPASSWORD": "s3cret"}
    assert argv[1:] == ["oltp_read_only", "--tables=2", "--table-size=10000", "--db-driver=pgsql",
                        "--pgsql-host=/tmp/socks", "--pgsql-port=5433", "--pgsql-user=u",
                        "--pgsql-db=teiten_sysbench", "--threads=4", "--time=2",
                        "--report-interval=1", "--histogram", "run"]
    assert sysbench.connection("host=127.0.0.1 port=5 user=u dbname=d")[1] == {}
