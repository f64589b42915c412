"""Running pgbench for one trial: the argument list and the run itself.

Always ``-n`` (the runner controls vacuum), ``-P 1`` (the per-second series), ``-r``
(per-statement latencies) and ``-s`` (the PGECons scripts compute from :scale, and
without -s pgbench uses 1 for custom scripts).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from teiten.drivers.pgbench_output import PgbenchOutput, parse
from teiten.host import client_account, procs
from teiten.host.cpus import format_list
from teiten.installs import Install
from teiten.model.details import LoadDetails
from teiten.model.errors import ProcessError
from teiten.model.results import LoadFigures, LoadRun
from teiten.servers.base import Endpoint


class Scripts(Protocol):
    """What pgbench needs of a workload: the scripts it selects and the scale they compute
    from. The workloads (teiten.workloads) provide it; drivers never import them."""

    @property
    def scale(self) -> int: ...

    def script_args(self) -> list[str]:
        """``-b NAME@W`` / ``-f PATH@W`` for each script."""
        ...


@dataclass(frozen=True)
class PgbenchRun:
    argv: list[str]
    returncode: int | None
    stdout: str
    stderr: str
    output: PgbenchOutput
    timed_out: bool = False

    def failure(self) -> str | None:
        """Why this run does not count, in pgbench's terms, or None when it does (a crash of
        the server is the runner's to weigh: it comes after a run killed for its time)."""
        out = self.output
        if self.timed_out:
            return "pgbench did not finish in time and was killed"
        if self.returncode != 0 or out.aborted:
            first = out.errors[0] if out.errors else "no error message"
            return f"pgbench exited with status {self.returncode}: {first}"
        if out.tps is None or out.transactions == 0:
            return "pgbench reported no transactions"
        return None

    def load_run(self, *, figures: LoadFigures | None = None,
                 several: LoadDetails | None = None) -> LoadRun:
        """The run in the model's terms: its own figures (or ``figures``, those of a measured
        window inside it), judged by what pgbench printed of the whole run."""
        return LoadRun("pgbench", tuple(self.argv), self.stdout, self.stderr,
                       figures if figures is not None else self.output.figures(),
                       failure=self.failure(), timed_out=self.timed_out, several=several)


def argv(install: Install, endpoint: Endpoint, workload: Scripts, *, clients: int,
         threads: int, duration_s: float, extra: Sequence[str] = ()) -> list[str]:
    return [
        str(install.binary("pgbench")), "-n", *endpoint.pgbench_args(),
        "-c", str(clients), "-j", str(threads), "-T", str(max(1, round(duration_s))),
        "-s", str(workload.scale), "-P", "1", "-r", *extra, *workload.script_args(),
        endpoint.pgbench_dbname,
    ]


def timeout_for(duration_s: float) -> float:
    """How long a run may take before it is killed: pgbench -T overruns a little while
    clients finish their last transaction and disconnect."""
    return duration_s * 1.5 + 60


def run(install: Install, endpoint: Endpoint, workload: Scripts, *, clients: int,
        threads: int, duration_s: float, cpus: list[int] | None = None,
        extra: Sequence[str] = (), overrun_s: float = 0.0) -> PgbenchRun:
    """Run pgbench; ``cpus`` pins it (and its threads) to those CPUs with taskset; ``extra``
    arguments go before the scripts (variables, a transaction log). ``overrun_s`` is how
    long a client may legitimately go on after -T (it finishes its transaction, sleeps
    included)."""
    args = argv(install, endpoint, workload, clients=clients, threads=threads,
                duration_s=duration_s, extra=extra)
    if cpus is not None:
        args = ["taskset", "-c", format_list(cpus), *args]
    # Run as the client account, on copies of the scripts (drivers.client); the run is
    # recorded with the scripts' own paths, which the copies are the same as.
    who = client_account.account(endpoint.password_env)
    with client_account.place(args, who) as where:
        try:
            done = procs.run(where.argv, timeout=timeout_for(duration_s) + overrun_s, check=False,
                             what="pgbench", env=client_account.env(endpoint.password_env),
                             run_as=who, cwd=where.cwd)
        except ProcessError as exc:  # timed out: killed
            said = where.own_paths(exc.stderr_tail)
            return PgbenchRun(args, None, "", said, parse("", said), timed_out=True)
        stdout, stderr = where.own_paths(done.stdout), where.own_paths(done.stderr)
    return PgbenchRun(args, done.returncode, stdout, stderr, parse(stdout, stderr))
