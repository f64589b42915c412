"""Several pgbench processes at once, as one trial's load (METHODS S7: one pgbench per
server, all running at the same time; issue 8: several load clients).

Each *part* is one pgbench: a load client (this machine, or a host reached with OpenSSH)
against one target (a node of a replication topology, its Pgpool-II, or the single
server). The parts are started together by one thread each, released by a barrier; each
records the wall-clock second it started, on the machine it ran on, and the skew between
the first and the last start is kept with the result. Their figures are summed into one
:class:`PgbenchOutput` (transactions and TPS add up; latency is the transaction-weighted
mean; the per-second series add up second by second), and every part is kept as detail.
"""

from __future__ import annotations

import contextlib
import math
import os
import select
import signal
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from teiten.drivers import pgbench
from teiten.drivers.pgbench_output import PgbenchOutput, ProgressPoint, StatementLatency, parse
from teiten.host import procs
from teiten.host.remote import Ssh
from teiten.installs import Install
from teiten.model.details import LoadDetails, LoadPart
from teiten.model.errors import ProcessError
from teiten.servers.base import Target

_STARTED = "teiten-started "  # the first stderr line of a part run over ssh


@dataclass(frozen=True)
class Client:
    """A machine pgbench runs on: this one (``ssh`` None) or a host reached with OpenSSH,
    where ``pgbench`` is the program to run."""

    name: str
    ssh: Ssh | None = None
    pgbench: str | None = None

    @property
    def local(self) -> bool:
        return self.ssh is None


@dataclass
class Part:
    client: str
    node: str
    run: pgbench.PgbenchRun
    started_at: float  # epoch seconds when pgbench started, on the client's clock

    def record(self) -> LoadPart:
        o = self.run.output
        return LoadPart(self.client, self.node, o.tps, o.transactions, o.latency_ms_avg,
                        self.run.returncode, self.started_at, tuple(o.errors[:3]))


@dataclass
class Load:
    parts: list[Part] = field(default_factory=list)

    @property
    def skew_s(self) -> float:
        starts = [p.started_at for p in self.parts]
        return max(starts) - min(starts) if starts else 0.0

    def details(self) -> LoadDetails:
        return LoadDetails(tuple(p.record() for p in self.parts), self.skew_s,
                           tuple(sorted({p.client for p in self.parts})),
                           tuple(sorted({p.node for p in self.parts})))

    def combined(self) -> pgbench.PgbenchRun:
        """One run standing for all parts: the summed output; the worst exit status."""
        runs = [p.run for p in self.parts]
        failing = [r for r in runs if r.timed_out or r.returncode != 0]
        first = failing[0] if failing else runs[0]
        stdout = "\n".join(f"## pgbench {i + 1} ({p.client} -> {p.node})\n{p.run.stdout}"
                           for i, p in enumerate(self.parts))
        stderr = "\n".join(f"## pgbench {i + 1} ({p.client} -> {p.node})\n{p.run.stderr}"
                           for i, p in enumerate(self.parts))
        return pgbench.PgbenchRun(first.argv, first.returncode, stdout, stderr,
                                  combine([r.output for r in runs]),
                                  timed_out=any(r.timed_out for r in runs))


def run(install: Install, clients: Sequence[Client], targets: Sequence[Target],
        workload: pgbench.Scripts, *, sessions: int, threads: int, duration_s: float,
        cpus: list[int] | None = None) -> Load:
    """Every client runs one pgbench against every target, all started together: a remote
    pgbench is connected and waiting before the barrier, and is told to go after it."""
    pairs = [(c, t) for c in clients for t in targets]
    barrier = threading.Barrier(len(pairs))
    parts: list[Part | None] = [None] * len(pairs)
    errors: list[BaseException] = []

    def one(i: int, client: Client, target: Target) -> None:
        waiting: _Waiting | None = None
        try:
            if not client.local:
                waiting = _Waiting(install, client, target, workload, sessions=sessions,
                                   threads=threads, duration_s=duration_s)
            barrier.wait(timeout=60)
            if waiting is not None:
                parts[i] = waiting.go()
            else:
                started = time.time()
                done = pgbench.run(install, target.endpoint, workload, clients=sessions,
                                   threads=threads, duration_s=duration_s, cpus=cpus)
                parts[i] = Part(client.name, target.node, done, started)
        except BaseException as exc:  # noqa: BLE001 - handed to the caller's thread
            errors.append(exc)
            barrier.abort()  # the others stop waiting (BrokenBarrierError) at once
        finally:
            if waiting is not None:
                waiting.cancel()

    workers = [threading.Thread(target=one, args=(i, c, t), name=f"pgbench-{i}", daemon=True)
               for i, (c, t) in enumerate(pairs)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    if errors:
        raise next((e for e in errors if not isinstance(e, threading.BrokenBarrierError)),
                   errors[0])
    return Load([p for p in parts if p is not None])


# A remote part: the password comes through stdin (never on a command line), then the shell
# says it is ready and waits for a line; when it comes, it prints the time on its own clock
# and becomes pgbench. The connection and the login shell's start are paid before the
# barrier, so only the line's way over the open connection is left in the skew.
_READY = "teiten-ready"
_SCRIPT = ('IFS= read -r p; if [ -n "$p" ]; then PGPASSWORD=$p; export PGPASSWORD; fi; '
           f'echo {_READY} >&2; IFS= read -r go; '
           f"printf '{_STARTED}%s\\n' \"$(date +%s.%N)\" >&2; exec \"$@\" </dev/null")
_READY_TIMEOUT = 60.0


class _Waiting:
    """A pgbench on a load client reached over ssh, connected and waiting to be told to go."""

    def __init__(self, install: Install, client: Client, target: Target, workload: pgbench.Scripts, *,
                 sessions: int, threads: int, duration_s: float):
        assert client.ssh is not None
        self.client, self.node, self.ssh = client.name, target.node, client.ssh
        args = pgbench.argv(install, target.endpoint, workload, clients=sessions,
                            threads=threads, duration_s=duration_s)
        self.timeout = pgbench.timeout_for(duration_s) + 30
        self.remote = self.ssh.start(_SCRIPT, client.pgbench or "pgbench", *args[1:],
                                     what="pgbench")
        self.said = ""  # stderr before the ready line (ssh's warnings)
        self.finished = False
        stdin = self.remote.proc.stdin
        assert stdin is not None
        try:
            stdin.write(target.endpoint.password_env.get("PGPASSWORD", "") + "\n")
            stdin.flush()
        except BrokenPipeError:
            pass  # ssh ended already: _await_ready finds out why
        self._await_ready()

    def _await_ready(self) -> None:
        """Read stderr up to the ready line, byte by byte (nothing is buffered past it)."""
        stderr = self.remote.proc.stderr
        assert stderr is not None
        fd, line, deadline = stderr.fileno(), b"", time.monotonic() + _READY_TIMEOUT
        while True:
            readable, _, _ = select.select([fd], [], [], max(0.0, deadline - time.monotonic()))
            chunk = os.read(fd, 1) if readable else b""
            if not chunk:  # ssh ended, or the host said nothing in time
                self.finished = True
                done = self.remote.stop(signal.SIGTERM, timeout=10)
                done = replace(done, stderr=self.said + line.decode(errors="replace")
                               + done.stderr)
                self.ssh.judge(done, label=self.remote.what)  # ServerError when ssh failed
                raise ProcessError(f"{self.remote.what}: the shell did not get ready within "
                                   f"{_READY_TIMEOUT:g} s: {procs.tail(done.stderr)}",
                                   argv=done.argv, returncode=done.returncode,
                                   stderr_tail=procs.tail(done.stderr))
            line += chunk
            if chunk == b"\n":
                if line.decode(errors="replace").strip() == _READY:
                    return
                self.said += line.decode(errors="replace")
                line = b""

    def go(self) -> Part:
        launched = time.time()
        stdin = self.remote.proc.stdin
        assert stdin is not None
        with contextlib.suppress(BrokenPipeError):
            stdin.write("go\n")
            stdin.flush()
        self.finished = True
        try:
            done = self.ssh.judge(self.remote.finish(timeout=self.timeout),
                                  label=self.remote.what, check=False)
        except ProcessError as exc:  # ran past its time: killed
            return Part(self.client, self.node,
                        pgbench.PgbenchRun(list(exc.argv or []), None, "", exc.stderr_tail,
                                           parse("", exc.stderr_tail), timed_out=True), launched)
        stderr, started = _started(self.said + done.stderr, launched)
        return Part(self.client, self.node,
                    pgbench.PgbenchRun(done.argv, done.returncode, done.stdout, stderr,
                                       parse(done.stdout, stderr)), started)

    def cancel(self) -> None:
        """End the remote shell if it never went (another part failed)."""
        if not self.finished:
            self.finished = True
            self.remote.stop(signal.SIGTERM, timeout=10)


def _started(stderr: str, fallback: float) -> tuple[str, float]:
    """The start time a remote part printed, and its stderr without that line."""
    lines = stderr.splitlines(keepends=True)
    for i, line in enumerate(lines):
        if line.startswith(_STARTED):
            try:
                return "".join(lines[:i] + lines[i + 1:]), float(line[len(_STARTED):])
            except ValueError:
                break
    return stderr, fallback


def combine(outputs: Sequence[PgbenchOutput]) -> PgbenchOutput:
    """The figures of several pgbench runs that ran at the same time, as one."""
    if len(outputs) == 1:
        return outputs[0]
    ran = [o for o in outputs if o.transactions]
    total = sum(o.transactions for o in outputs)
    tps = sum(o.tps for o in outputs if o.tps is not None) if all(
        o.tps is not None for o in outputs) else None
    return replace(
        outputs[0],
        clients=_sum([o.clients for o in outputs]),
        threads=_sum([o.threads for o in outputs]),
        transactions=total,
        failed_transactions=_sum([o.failed_transactions for o in outputs]),
        tps=tps,
        tps_including_connections=None,
        latency_ms_avg=_weighted([(o.latency_ms_avg, o.transactions) for o in ran]),
        latency_ms_stddev=_pooled_stddev(ran),
        initial_connection_ms=max((o.initial_connection_ms for o in outputs
                                   if o.initial_connection_ms is not None), default=None),
        aborted=any(o.aborted for o in outputs),
        errors=tuple(e for o in outputs for e in o.errors),
        progress=_progress(outputs),
        statements=_statements(ran),
        scripts=(),
    )


def _sum(values: Sequence[int | None]) -> int | None:
    return None if any(v is None for v in values) else sum(v for v in values if v is not None)


def _weighted(pairs: Sequence[tuple[float | None, int]]) -> float | None:
    known = [(v, w) for v, w in pairs if v is not None and w]
    weight = sum(w for _, w in known)
    return sum(v * w for v, w in known) / weight if weight else None


def _pooled_stddev(outputs: Sequence[PgbenchOutput]) -> float | None:
    """The standard deviation of all transactions' latencies, from each run's mean,
    standard deviation and count."""
    rows = [(o.latency_ms_avg, o.latency_ms_stddev, o.transactions) for o in outputs]
    if not rows or any(m is None or s is None for m, s, _ in rows):
        return None
    n = sum(c for _, _, c in rows)
    mean = sum(m * c for m, _, c in rows if m is not None) / n
    var = sum(c * ((s or 0) ** 2 + ((m or 0) - mean) ** 2) for m, s, c in rows) / n
    return math.sqrt(var)


def _progress(outputs: Sequence[PgbenchOutput]) -> tuple[ProgressPoint, ...]:
    """The per-second series summed second by second (over the seconds every run reported)."""
    series = [o.progress for o in outputs]
    length = min((len(s) for s in series), default=0)
    points = []
    for i in range(length):
        at = [s[i] for s in series]
        points.append(ProgressPoint(
            t=at[0].t, tps=sum(p.tps for p in at),
            latency_ms=_weighted([(p.latency_ms, max(1, round(p.tps))) for p in at]),
            latency_stddev_ms=None,
            failed=_sum([p.failed for p in at])))
    return tuple(points)


def _statements(outputs: Sequence[PgbenchOutput]) -> tuple[StatementLatency, ...]:
    """Per-statement latencies weighted by each run's transactions, when every run ran the
    same statements."""
    if not outputs:
        return ()
    shape = [(s.script_index, s.line_no, s.command) for s in outputs[0].statements]
    if any([(s.script_index, s.line_no, s.command) for s in o.statements] != shape
           for o in outputs):
        return outputs[0].statements
    merged = []
    for i, first in enumerate(outputs[0].statements):
        merged.append(replace(
            first,
            latency_ms=_weighted([(o.statements[i].latency_ms, o.transactions)
                                  for o in outputs]) or first.latency_ms,
            failures=_sum([o.statements[i].failures for o in outputs])))
    return tuple(merged)

