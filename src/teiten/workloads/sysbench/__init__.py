"""The sysbench workload: one of sysbench's OLTP tests, run by Debian's sysbench through its
PostgreSQL driver (teiten.drivers.sysbench) instead of pgbench. An optional kind of workload,
in no built-in study; see README.md beside this file.

Its tables (sbtest1 ... sbtestN) are made by ``sysbench prepare`` on as many connections as
there are tables (at most the server's CPUs), then vacuumed and analysed, and the server's
snapshot keeps them like any workload's data: a test that changes them has them restored
before every trial. A trial is ``sysbench run`` for the trial's duration with one thread (one
connection) per client, inside the monitors' window; its figures, per-second series and
latency percentiles are sysbench's own, in the model's terms.

It runs against a server teiten makes on this machine, one at a time: not over ssh, in a
container or on an external server, and not with replicas, Pgpool-II, several load clients
or tenants (teiten.run.check says so with one line).
"""

from __future__ import annotations

import time
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import ClassVar

import psycopg

from teiten.drivers import sysbench
from teiten.messages import tr
from teiten.model.errors import ServerError
from teiten.servers import kinds
from teiten.spec import LoadedStudy
from teiten.spec.sysbench import READ_ONLY, SysbenchSpec
from teiten.workloads.base import TrialOutcome, TrialRequest, Workload
from teiten.workloads.kind import Loc, WorkloadKind, defaults_of, read_options


@dataclass(frozen=True)
class Options:
    """The options of a sysbench workload, each with its default (teiten.spec.sysbench)."""

    test: str = "oltp_read_only"
    tables: int = 1
    table_size: int = 10000


DEFAULTS = defaults_of(Options)
ROW_BYTES = 256  # a row with its share of both indexes, after VACUUM (PostgreSQL 17: 254)
MB = 1 << 20


class SysbenchWorkload(Workload):
    """A sysbench OLTP test: its tables loaded by sysbench, its trials run by sysbench."""

    kind: ClassVar[str] = "sysbench"
    drives_one_server: ClassVar[bool] = True

    @property
    def sysbench_options(self) -> Options:
        """Its options, typed (a store's lack none: every default was filled in)."""
        return read_options(Options, dict(self.options))

    @property
    def test(self) -> str:
        return self.sysbench_options.test

    @property
    def sql_loaded(self) -> bool:
        return True  # by sysbench prepare (load_sql), not pgbench -i

    def sysbench_args(self) -> list[str]:
        given = self.sysbench_options
        return [given.test, f"--tables={given.tables}", f"--table-size={given.table_size}"]

    def data_bytes(self) -> int:
        return self.sysbench_options.tables * self.sysbench_options.table_size * ROW_BYTES + 8 * MB

    def present_table(self) -> tuple[str, str]:
        return "sbtest1", "sysbench prepare"

    def load_sql(self, conninfo: str, *, jobs: int) -> dict[str, float]:
        """sysbench prepare, one table per connection, then VACUUM ANALYZE. Raises
        ProcessError when sysbench fails, ServerError when the vacuum does."""
        took: dict[str, float] = {}
        began = time.monotonic()
        sysbench.prepare(self, conninfo, jobs=min(jobs, self.sysbench_options.tables))
        took["prepare_s"] = time.monotonic() - began
        began = time.monotonic()
        try:
            with psycopg.connect(conninfo, autocommit=True, connect_timeout=15) as conn:
                conn.execute("VACUUM ANALYZE")
        except psycopg.Error as exc:
            raise ServerError(f"vacuuming the sysbench tables failed: {exc}") from exc
        took["vacuum_s"] = time.monotonic() - began
        return took

    def run_trial(self, request: TrialRequest,
                  measuring: AbstractContextManager[object]) -> TrialOutcome:
        """sysbench run for the trial's duration, one thread per client, measured from its
        start to its end. Raises ProcessError when sysbench cannot be started."""
        with measuring:
            run = sysbench.run(self, request.endpoint.conninfo(), clients=request.sessions,
                               duration_s=request.duration_s, cpus=request.cpus)
        return TrialOutcome(load=run.load_run(), details=run.details(self.sysbench_args()))

    def check(self, loaded: LoadedStudy, index: int) -> None:
        """sysbench must be installed here, and every server one teiten makes here."""
        if sysbench.program() is None:
            raise loaded.error(("workloads", index), f"workloads[{index}]: the sysbench workload "
                               f"runs sysbench, which is not installed here: {sysbench.INSTALL}")
        for i, server in loaded.study.server_matrix():
            kind = kinds.of(server)
            if not kind.runs_here:
                raise loaded.error(("servers", i, kind.field or "name"),
                                   f"servers[{i}] ({server.name}): the sysbench workload runs "
                                   "against servers teiten makes on this machine, not "
                                   f"'{kind.field}' ones; compare {server.name} with pgbench "
                                   "workloads in a study of its own")


def resolve(loaded: LoadedStudy, loc: Loc, spec: SysbenchSpec) -> SysbenchWorkload:
    """The study's sysbench entry, every default filled in."""
    opts = {k: getattr(spec, k) if getattr(spec, k) is not None else v for k, v in DEFAULTS.items()}
    shown = ", ".join(f"{k}={v}" for k, v in opts.items())
    return SysbenchWorkload(spec.key, (), 1, None, read_options(Options, opts).test not in READ_ONLY,
                            f"{tr('workload.about.sysbench')} ({shown})",
                            options=tuple(sorted(opts.items())))


KIND = WorkloadKind("sysbench", SysbenchWorkload, resolve, ("sysbench",), lambda _name: DEFAULTS)
