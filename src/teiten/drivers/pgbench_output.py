"""Parse what pgbench prints: the summary on stdout, progress and errors on stderr.

Pure functions, no I/O. :func:`parse` never raises, even on the partial output of an
aborted or killed run: missing figures are ``None`` (or 0 transactions), and
``aborted``/``errors`` say what happened.

pgbench version quirks, checked against real runs of 14.23, 15.18, 17.11 and 18.6
(goldens in tests/golden/pgbench/) and the PostgreSQL 13 source:

* 14+ print a banner ``pgbench (17.11)``; distribution builds nest their own string,
  ``pgbench (15.18 (Debian 15.18-0+deb12u1))``, and a client/server mismatch gives
  ``pgbench (17.11, server 15.18)``. 13 and older print no banner.
* 13 and older print two tps lines, ``(including connections establishing)`` and
  ``(excluding connections establishing)``. 14 already prints ``initial connection time
  = X ms`` and a single ``tps = X (without initial connection time)``; with ``-C``
  (14+) the single line is ``tps = X (including reconnection times)``.
* 15+ add failure accounting: ``number of failed transactions: N (x%)`` (the percentage
  is ``NaN%`` when nothing ran; 18 then omits the line), ``, N failed`` in progress
  lines, and a failures column in the ``-r`` listing, whose header becomes ``statement
  latencies in milliseconds and failures:`` (``..., failures and retries:`` plus a
  retries column when --max-tries is not 1), and then ``number of transactions retried: N
  (x%)`` and ``total number of retries: N`` in the summary.
* 18 separates the failures column from the command by one space instead of two.
* Per-script sections (several -f/-b): up to 17 ``- N transactions (x% of total, tps =
  T)``; 18 splits it into ``- N transactions (x% of total)`` and ``- number of
  transactions actually processed: N (tps = T)``.
* \\set and other meta-commands are listed in the ``-r`` report with their own latency.
* When the server dies mid-run, pgbench still prints a full summary (``duration: 3 s``
  is the requested duration, but tps is computed over the time actually run), then
  ``pgbench: error: client N aborted in command ...`` and ``Run was aborted; the above
  results are incomplete.`` on stderr, interleaved with server ``WARNING:`` lines.
* Error prefixes: ``pgbench: error:`` (14+; 14 also ``pgbench: fatal:``); 13 and older
  print ``client N aborted ...`` and ``Run was aborted ...`` bare.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

from teiten.model.results import LoadFigures, ProgressPoint, StatementLatency


@dataclass(frozen=True)
class ScriptStats:
    """The section of one script when several scripts (or weights) are used."""

    index: int  # 0-based ("SQL script 1" is index 0)
    name: str
    weight: int | None
    transactions: int
    tps: float | None
    latency_ms: float | None


@dataclass(frozen=True)
class PgbenchOutput:
    """Everything a pgbench run reported."""

    pgbench_version: str | None
    scale: int | None
    clients: int | None
    threads: int | None
    duration_s: float | None
    transactions: int
    failed_transactions: int | None
    tps: float | None  # excluding initial connection time
    tps_including_connections: float | None  # 13 and older only
    latency_ms_avg: float | None
    latency_ms_stddev: float | None
    initial_connection_ms: float | None
    aborted: bool
    errors: tuple[str, ...]
    progress: tuple[ProgressPoint, ...]
    statements: tuple[StatementLatency, ...]
    scripts: tuple[ScriptStats, ...]
    # With --rate and --latency-limit: transactions skipped because they would have started
    # later than the limit (they are not in the latencies), transactions that ended later
    # than the limit, and the schedule lag behind the rate.
    skipped: int | None = None
    late: int | None = None
    latency_limit_ms: float | None = None
    lag_ms_avg: float | None = None
    lag_ms_max: float | None = None
    # With --max-tries other than 1: transactions that succeeded after a retry, and all retries.
    retried: int | None = None
    retries: int | None = None

    def limits(self) -> dict[str, float | int] | None:
        """What a rate-limited, latency-limited or retrying run reported, None for other runs."""
        found = {"skipped": self.skipped, "late": self.late,
                 "latency_limit_ms": self.latency_limit_ms, "lag_ms_avg": self.lag_ms_avg,
                 "lag_ms_max": self.lag_ms_max, "retried": self.retried, "retries": self.retries}
        return {k: v for k, v in found.items() if v is not None} or None

    def measured_duration(self) -> float | None:
        """The seconds pgbench measured over: transactions / tps (tps excludes the time spent
        connecting), or the requested duration when nothing ran."""
        if self.tps and self.transactions:
            return self.transactions / self.tps
        return self.duration_s

    def figures(self) -> LoadFigures:
        """What the store keeps of this run."""
        return LoadFigures(
            tps=self.tps, transactions=self.transactions,
            failed_transactions=self.failed_transactions, duration_s=self.measured_duration(),
            latency_ms_avg=self.latency_ms_avg, latency_ms_stddev=self.latency_ms_stddev,
            initial_connection_ms=self.initial_connection_ms, pgbench_version=self.pgbench_version,
            progress=self.progress, statements=self.statements)


_NUM = r"([-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?|[-+]?(?:nan|NaN|inf|Inf))"
_PROGRESS = re.compile(
    rf"progress: {_NUM} s, {_NUM} tps(?:, lat {_NUM} ms(?: stddev {_NUM})?)?(.*)$"
)
_FAILED = re.compile(r", (\d+) failed\b")
_BANNER = re.compile(r"^pgbench \(([^\s,()]+)")
_TPS = re.compile(rf"^tps = {_NUM}\s*(?:\((.*)\))?")
_HEADER_FIELD = re.compile(r"^(scaling factor|number of clients|number of threads|duration): (\d+)")
_SCRIPT = re.compile(r"^SQL script (\d+): (.*)$")
# Per-script lines: " - 123 transactions (66.1% of total, tps = 41.0)" (<= 17) or
# " - 123 transactions (66.1% of total)" (18).
_SCRIPT_XACTS = re.compile(rf"^(\d+) transactions \(.*?(?:tps = {_NUM})?\)")
_STATEMENTS_HEADER = re.compile(r"^statement latencies in milliseconds(.*):$")
# --rate / --latency-limit: "number of transactions skipped: 12 (0.400%)", "number of
# transactions above the 5.0 ms latency limit: 3/886 (0.339%)", "rate limit schedule lag:
# avg 0.116 (max 3.757) ms".
_SKIPPED = re.compile(r"^number of transactions skipped: (\d+)")
_LATE = re.compile(rf"^number of transactions above the {_NUM} ms latency limit: (\d+)/")
_RETRIED = re.compile(r"^number of transactions retried: (\d+)")
_RETRIES = re.compile(r"^total number of retries: (\d+)")
_LAG = re.compile(rf"^rate limit schedule lag: avg {_NUM} \(max {_NUM}\) ms")
# A stderr line that starts a new error message.
_ERROR_START = re.compile(
    r"pgbench: (?:error|fatal): .*"  # 14+
    r"|^client \d+ aborted .*"  # <= 13
    r"|^Run was aborted.*"  # <= 13
    r"|^(?:WARNING|ERROR|FATAL|PANIC):  .*"  # server messages relayed by libpq
)
# Lines that continue the previous server message (LINE 1: ..., the caret, DETAIL: ...).
_CONTINUATION = re.compile(r"^(?:\s|LINE \d+:|DETAIL:|HINT:|CONTEXT:|QUERY:)")


def _num(text: str | None) -> float | None:
    """A float from pgbench's printf output; None for missing or NaN figures."""
    if text is None:
        return None
    try:
        value = float(text)
    except ValueError:
        return None
    return None if math.isnan(value) else value


def _first_int(text: str) -> int | None:
    match = re.match(r"\s*(\d+)", text)
    return int(match.group(1)) if match else None


def parse_progress_line(line: str) -> ProgressPoint | None:
    """Parse one ``progress:`` line; None if ``line`` is not one.

    Tolerates trailing fields (``, lag 0.102 ms, 0 skipped`` with --rate/--latency-limit,
    ``, N retried, N retries`` with --max-tries) and stray text before ``progress:``,
    which parallel threads' stderr writes can leave on the same line.
    """
    match = _PROGRESS.search(line)
    if match is None:
        return None
    t, tps = _num(match.group(1)), _num(match.group(2))
    if t is None or tps is None:
        return None
    failed = _FAILED.search(match.group(5))
    return ProgressPoint(
        t=t,
        tps=tps,
        latency_ms=_num(match.group(3)),
        latency_stddev_ms=_num(match.group(4)),
        failed=int(failed.group(1)) if failed else None,
    )


def _scan_messages(text: str) -> tuple[list[ProgressPoint], list[str]]:
    """Progress points and error messages (continuation lines joined with newlines)."""
    progress: list[ProgressPoint] = []
    errors: list[str] = []
    in_error = False
    for line in text.splitlines():
        point = parse_progress_line(line)
        if point is not None:
            progress.append(point)
            in_error = False
        elif (match := _ERROR_START.search(line)) is not None:
            errors.append(match.group(0).rstrip())
            in_error = True
        elif in_error and line.strip() and _CONTINUATION.match(line):
            errors[-1] += "\n" + line.rstrip()
        else:
            in_error = False
    return progress, errors


def _is_abort(error: str) -> bool:
    """Whether an error message means the run (or a client) stopped early."""
    return error.startswith(("pgbench: error:", "pgbench: fatal:", "Run was aborted")) or (
        re.match(r"client \d+ aborted", error) is not None
    )


@dataclass
class _Figures:
    """What the summary said so far, run-wide or of one script (read into PgbenchOutput at the
    end); None: not printed."""

    transactions: int | None = None
    tps: float | None = None
    failed: int | None = None
    latency_average: float | None = None
    latency_stddev: float | None = None


@dataclass
class _Script(_Figures):
    index: int = 0
    name: str = ""
    weight: int | None = None


@dataclass
class _Run(_Figures):
    version: str | None = None
    header: dict[str, int] = field(default_factory=dict)  # scaling factor, number of clients, ...
    connection: float | None = None
    tps_including: float | None = None
    skipped: int | None = None
    latency_limit_ms: float | None = None
    late: int | None = None
    retried: int | None = None
    retries: int | None = None
    lag_ms_avg: float | None = None
    lag_ms_max: float | None = None


def parse(stdout: str, stderr: str) -> PgbenchOutput:
    """Parse a pgbench run's stdout and stderr (either may hold progress/error lines)."""
    if not stdout.strip() and not stderr.strip():
        return PgbenchOutput(
            pgbench_version=None, scale=None, clients=None, threads=None, duration_s=None,
            transactions=0, failed_transactions=None, tps=None,
            tps_including_connections=None, latency_ms_avg=None, latency_ms_stddev=None,
            initial_connection_ms=None, aborted=True, errors=("no output from pgbench",),
            progress=(), statements=(), scripts=(),
        )  # fmt: skip
    top = _Run()  # run-wide figures
    scripts: list[_Script] = []  # one per "SQL script N:" section
    statements: list[StatementLatency] = []
    listing: tuple[int, int] | None = None  # (script index, integer columns) while in -r
    saw_summary = False

    for raw in stdout.splitlines():
        if listing is not None:
            index, ncols = listing
            row = re.match(r"^\s+(\S+)" + r"\s+(\d+)" * ncols + r"\s+(\S.*)$", raw)
            if row is not None and _num(row.group(1)) is not None:
                line_no = sum(1 for s in statements if s.script_index == index) + 1
                statements.append(
                    StatementLatency(
                        script_index=index,
                        line_no=line_no,
                        latency_ms=float(row.group(1)),
                        failures=int(row.group(2)) if ncols else None,
                        command=row.group(ncols + 2).rstrip(),
                    )
                )
                continue
            listing = None
        # Lines of a per-script section start with " - "; the rest are run-wide.
        per_script = raw.startswith(" - ") and bool(scripts)
        line = raw[3:] if per_script else raw.strip()
        script = scripts[-1] if per_script else None
        target: _Figures = script or top

        if (m := _BANNER.match(line)) and not per_script:
            top.version = m.group(1)
        elif m := _SCRIPT.match(line):
            scripts.append(_Script(index=int(m.group(1)) - 1, name=m.group(2).strip()))
        elif m := _STATEMENTS_HEADER.match(line):
            # "... and failures" adds one integer column, "..., failures and retries" two.
            ncols = ("failures" in m.group(1)) + ("retries" in m.group(1))
            listing = (script.index if script else 0, ncols)
        elif script and line.startswith("weight:"):
            script.weight = _first_int(line[len("weight:") :])
        elif script and (m := _SCRIPT_XACTS.match(line)):
            script.transactions = int(m.group(1))
            if m.group(2) is not None:
                script.tps = _num(m.group(2))
        elif line.startswith("number of transactions actually processed:"):
            # Run-wide "N" (-T) or "N/M" (-t); 18 per-script: "N (tps = T)".
            saw_summary = saw_summary or not per_script
            rest = line.split(":", 1)[1]
            target.transactions = _first_int(rest)
            if per_script and (m := re.search(rf"tps = {_NUM}", rest)):
                target.tps = _num(m.group(1))
        elif line.startswith("number of failed transactions:"):
            target.failed = _first_int(line.split(":", 1)[1])
        elif m := re.match(rf"^latency (average|stddev)\s*[=:]\s*{_NUM} ms", line):
            # "latency average = X ms" (maybe "(including failures)"); very old: "average:".
            if m.group(1) == "average":
                target.latency_average = _num(m.group(2))
            else:
                target.latency_stddev = _num(m.group(2))
        elif m := re.match(rf"^initial connection time = {_NUM} ms", line):
            top.connection = _num(m.group(1))
        elif not per_script and (m := _TPS.match(line)):
            label = (m.group(2) or "").lower()
            if "including connections" in label:  # <= 13; "reconnection" (-C) is the tps
                top.tps_including = _num(m.group(1))
            else:
                top.tps = _num(m.group(1))
        elif not per_script and (m := _HEADER_FIELD.match(line)):
            top.header[m.group(1)] = int(m.group(2))
        elif not per_script and (m := _SKIPPED.match(line)):
            top.skipped = int(m.group(1))
        elif not per_script and (m := _LATE.match(line)):
            top.latency_limit_ms, top.late = _num(m.group(1)), int(m.group(2))
        elif not per_script and (m := _RETRIED.match(line)):
            top.retried = int(m.group(1))
        elif not per_script and (m := _RETRIES.match(line)):
            top.retries = int(m.group(1))
        elif not per_script and (m := _LAG.match(line)):
            top.lag_ms_avg, top.lag_ms_max = _num(m.group(1)), _num(m.group(2))

    out_progress, out_errors = _scan_messages(stdout)
    err_progress, err_errors = _scan_messages(stderr)
    errors = out_errors + err_errors
    aborted = any(_is_abort(e) for e in errors)
    if not saw_summary:
        aborted = True
        if not errors:
            errors.append("pgbench printed no summary (killed or stopped before the end?)")

    duration = top.header.get("duration")
    return PgbenchOutput(
        pgbench_version=top.version,
        scale=top.header.get("scaling factor"),
        clients=top.header.get("number of clients"),
        threads=top.header.get("number of threads"),
        duration_s=float(duration) if duration is not None else None,
        transactions=top.transactions or 0,
        failed_transactions=top.failed,
        tps=top.tps,
        tps_including_connections=top.tps_including,
        latency_ms_avg=top.latency_average,
        latency_ms_stddev=top.latency_stddev,
        initial_connection_ms=top.connection,
        aborted=aborted,
        errors=tuple(errors),
        progress=tuple(out_progress + err_progress),
        statements=tuple(statements),
        scripts=tuple(
            ScriptStats(
                index=s.index,
                name=s.name,
                weight=s.weight,
                transactions=s.transactions or 0,
                tps=s.tps,
                latency_ms=s.latency_average,
            )
            for s in scripts
        ),
        skipped=top.skipped,
        late=top.late,
        latency_limit_ms=top.latency_limit_ms,
        lag_ms_avg=top.lag_ms_avg,
        lag_ms_max=top.lag_ms_max,
        retried=top.retried,
        retries=top.retries,
    )
