"""Running sysbench's PostgreSQL driver (Debian's ``sysbench``, its OLTP tests in
/usr/share/sysbench): loading a test's tables and one trial's run, read into the model's own
terms (:class:`~teiten.model.results.LoadRun`).

sysbench connects with libpq: the host (a socket directory or an address), port, user and
database go on its command line, and a password never does: it goes in the environment as
``PGPASSWORD``, which libpq reads when ``--pgsql-password`` is not given. A run is always
``--report-interval=1`` (the per-second series) and ``--histogram`` (the latency
percentiles); each of its ``--threads`` holds one connection, as each pgbench client does.
"""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from psycopg import conninfo as pg_conninfo

from teiten.drivers.sysbench_output import SysbenchOutput, parse
from teiten.host import client_account, procs
from teiten.host.cpus import format_list
from teiten.model.errors import ProcessError
from teiten.model.results import LoadRun

PROGRAM = "sysbench"
INSTALL = "apt-get install sysbench"  # Debian's and Ubuntu's package
PREPARE_TIMEOUT_S = 7200


class Test(Protocol):
    """What sysbench needs of a workload: its test and the test's options. The workloads
    (teiten.workloads) provide it; drivers never import them."""

    def sysbench_args(self) -> list[str]:
        """The test's name (``oltp_read_only``), then its options (``--tables=2`` ...)."""
        ...


def program() -> str | None:
    """Where sysbench is, or None when it is not installed."""
    return shutil.which(PROGRAM)


def connection(conninfo: str) -> tuple[list[str], dict[str, str]]:
    """sysbench's connection options for a libpq connection string, and the environment that
    carries its password (never the command line)."""
    given = pg_conninfo.conninfo_to_dict(conninfo)
    args = ["--db-driver=pgsql"]
    for key, option in (("host", "pgsql-host"), ("port", "pgsql-port"), ("user", "pgsql-user"),
                        ("dbname", "pgsql-db")):
        if given.get(key) is not None:
            args.append(f"--{option}={given[key]}")
    password = given.get("password")
    return args, ({"PGPASSWORD": str(password)} if password else {})


def prepare(test: Test, conninfo: str, *, jobs: int) -> procs.Completed:
    """Create and fill the test's tables in the (empty) database, ``jobs`` tables at once.
    Raises ProcessError when sysbench fails."""
    conn, env = connection(conninfo)
    return client_account.run([program() or PROGRAM, *test.sysbench_args(), *conn,
                               f"--threads={max(1, jobs)}", "prepare"],
                              timeout=PREPARE_TIMEOUT_S, extra_env=env, what="sysbench prepare")


@dataclass(frozen=True)
class SysbenchRun:
    argv: list[str]
    returncode: int | None
    stdout: str
    stderr: str
    output: SysbenchOutput
    timed_out: bool = False

    def failure(self) -> str | None:
        """Why this run does not count, in sysbench's terms, or None when it does."""
        out = self.output
        if self.timed_out:
            return "sysbench did not finish in time and was killed"
        if self.returncode != 0 or out.errors:
            first = out.errors[0] if out.errors else procs.tail(self.stderr or self.stdout, 3) \
                or "no error message"
            return f"sysbench exited with status {self.returncode}: {first}"
        if not out.summary or out.tps is None or out.transactions == 0:
            return "sysbench reported no transactions"
        return None

    def load_run(self) -> LoadRun:
        """The run in the model's terms: its figures, judged by what sysbench printed."""
        return LoadRun("sysbench", tuple(self.argv), self.stdout, self.stderr,
                       self.output.figures(), failure=self.failure(), timed_out=self.timed_out)

    def details(self, test: Sequence[str]) -> dict[str, object]:
        """What the trial keeps beside its figures, by details kind: the driver, its version
        and test ('driver'), what sysbench printed beyond the figures ('sysbench'), and the
        percentiles of its latency histogram ('latency', as any driver's)."""
        name, *options = test
        found: dict[str, object] = {
            "driver": {"name": "sysbench", "version": self.output.version, "test": name,
                       "options": list(options)},
            "sysbench": self.output.details()}
        percentiles = self.output.percentiles()
        if percentiles is not None:
            found["latency"] = {"percentiles": percentiles, "driver": "sysbench"}
        return found


def timeout_for(duration_s: float) -> float:
    """How long a run may take before it is killed: its threads finish the transaction they
    are in, and disconnect, after --time."""
    return duration_s * 1.5 + 60


def argv(test: Test, conninfo: str, *, clients: int, duration_s: float) -> tuple[list[str], dict[str, str]]:
    """The command line of a run (no password on it) and the environment it needs."""
    conn, env = connection(conninfo)
    return [program() or PROGRAM, *test.sysbench_args(), *conn, f"--threads={clients}",
            f"--time={max(1, round(duration_s))}", "--report-interval=1", "--histogram",
            "run"], env


def run(test: Test, conninfo: str, *, clients: int, duration_s: float,
        cpus: list[int] | None = None) -> SysbenchRun:
    """Run the test for ``duration_s`` with ``clients`` threads; ``cpus`` pins sysbench to
    those CPUs with taskset. Raises ProcessError when sysbench cannot be started."""
    args, env = argv(test, conninfo, clients=clients, duration_s=duration_s)
    if cpus is not None:
        args = ["taskset", "-c", format_list(cpus), *args]
    try:
        done = client_account.run(args, timeout=timeout_for(duration_s), check=False,
                                  what="sysbench", extra_env=env)
    except ProcessError as exc:
        if exc.returncode is not None or "did not finish" not in str(exc):
            raise  # not started at all: the trial could not start
        return SysbenchRun(args, None, "", exc.stderr_tail, parse("", exc.stderr_tail), timed_out=True)
    return SysbenchRun(args, done.returncode, done.stdout, done.stderr, parse(done.stdout, done.stderr))
