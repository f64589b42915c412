"""``teiten show TRIAL_ID``: everything the store knows about one trial, in words, from the
typed trial (:class:`teiten.model.shown.Shown`, read by :mod:`teiten.store.shown`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, fields

from teiten.analysis import cycle as cycles
from teiten.cli.output import table
from teiten.model.cycles import cycle as stored_cycle
from teiten.model.details import Percentiles, PgbenchDetails
from teiten.model.shown import AppDetails, Design, Shown, Step, Wait
from teiten.monitors import registry


def render_text(rec: Shown) -> str:
    t, f, details = rec.trial, rec.trial.figures, rec.details
    p = t.planned
    point = p.variant if p.variant else f"{p.clients} clients ({p.threads} threads)"
    out = [f"trial {t.trial_id} of study {t.study}: {p.server} · {p.workload}"
           f" · {point} · repetition {p.repetition} · order {p.order_index}",
           f"status: {t.status}" + (f" ({t.error})" if t.error else ""),
           f"started {t.started_at}, finished {t.finished_at}, attempts {t.attempts}"]
    if f is not None and f.tps is not None:
        out.append(f"TPS {f.tps:.1f} (without connection time), {f.transactions} "
                   f"transactions, {f.failed_transactions or 0} failed, measured over "
                   f"{f.duration_s:.2f} s; latency {_ms(f.latency_ms_avg)} ms "
                   f"(stddev {_ms(f.latency_ms_stddev)})")
    pgbench = details.pgbench
    found, source = (pgbench.percentiles if pgbench else None), "pgbench's log"
    latency = details.latency  # another driver's, from its own histogram
    if not found and latency is not None and latency.percentiles:
        found, source = latency.percentiles, f"{latency.driver or 'its driver'}'s latency histogram"
    if pgbench is not None and _limited(pgbench):
        out.append(_limits_line(pgbench, f.transactions if f else None))
    if found:
        out.append(_percentiles_line(found, source))
    if details.cycle:
        out += _cycle_lines(details.cycle, rec)
    if details.design is not None:
        out.append(_design_line(details.design))
    if rec.steps:
        out += ["", "steps:"] + [_step_line(st) for st in rec.steps]
    else:
        out.append("command: " + " ".join(rec.argv))
    if rec.notes:
        out += ["", "notes:"] + [f"  - {n}" for n in rec.notes]
    if rec.metrics:
        out += ["", "monitors (window):"] + [_metric_line(k, v) for k, v in sorted(rec.metrics.items())]
    if rec.top_waits:
        out += ["", "top waits:", table([asdict(w) for w in rec.top_waits],
                                        [f.name for f in fields(Wait)])]
    if rec.statements:
        out += ["", "statement latencies (ms):", table(rec.statements, [
            "script_index", "line_no", "latency_ms", "failures", "command"])]
    if rec.progress:
        out += ["", "per-second progress:", table(rec.progress, [
            "t", "tps", "latency_ms", "latency_stddev_ms", "failed"])]
    if rec.series:
        out += ["", f"system series: {len(rec.series)} metrics, e.g. "
                + ", ".join(n for n in rec.series if n.startswith("cpu."))]
    if details.app is not None:
        out += ["", _app_text(details.app), table([asdict(t) for t in details.app.types], [
            "name", "weight", "count", "avg_ms", "p50_ms", "p95_ms", "p99_ms", "response_ms"])]
    if details.stats:
        out += ["", "statistics views with deltas: " + ", ".join(sorted(details.stats))]
    out += ["", "pgbench stdout:", rec.stdout or "(none)", "pgbench stderr:",
            rec.stderr or "(none)", "server log:", rec.server_log or "(none)"]
    return "\n".join(out)


def _metric_line(name: str, value: float) -> str:
    """One stored metric with its unit and its label, as its monitor registered them (a metric
    no monitor declares: its name and value only)."""
    line = f"  {name} = {value:.0f}" if float(value).is_integer() else f"  {name} = {value:.2f}"
    unit, label = registry.unit(name), registry.label(name)
    return line + (f" {unit}" if unit else "") + (f"  ({label})" if label != name else "")


def _limited(pgbench: PgbenchDetails) -> bool:
    """Whether pgbench ran rate-limited, latency-limited or retrying (it then reports more)."""
    return any(getattr(pgbench, f.name) is not None for f in fields(PgbenchDetails) if f.name != "percentiles")


def _limits_line(limits: PgbenchDetails, transactions: int | None) -> str:
    """What a rate-limited, latency-limited or retrying pgbench run reported."""
    parts = []
    if limits.latency_limit_ms is not None:
        parts.append(f"{limits.late or 0} of {transactions} transactions above the "
                     f"{limits.latency_limit_ms:g} ms latency limit")
    if limits.skipped is not None:
        parts.append(f"{limits.skipped} skipped (would have started too late; not in the "
                     "latencies)")
    if limits.retried is not None:
        parts.append(f"{limits.retried} retried after a serialization or deadlock failure "
                     f"({limits.retries or 0} retries)")
    if limits.lag_ms_avg is not None:
        parts.append(f"schedule lag {_ms(limits.lag_ms_avg)} ms on average, "
                     f"{_ms(limits.lag_ms_max)} at most")
    return "limits: " + "; ".join(parts)


def _percentiles_line(found: Percentiles, source: str) -> str:
    """The latency percentiles of a trial that took them (pgbench's transaction log, or
    another driver's histogram: ``source``)."""
    shown = " · ".join(f"{label} {_ms(value)}" for label, value in (
        ("p50", found.p50_ms), ("p90", found.p90_ms), ("p95", found.p95_ms), ("p99", found.p99_ms),
        ("p99.9", found.p999_ms), ("max", found.max_ms)))
    return (f"latency percentiles (ms): {shown}; of {found.count} transactions in "
            f"{source}, within {found.precision * 100:.1f}%")


def _cycle_lines(cycle: Mapping[str, object], rec: Shown) -> list[str]:
    """Where the trial's machine time went, and what state it started from."""
    app, f = rec.details.app, rec.trial.figures
    kept = stored_cycle(cycle)
    got = cycles.phases(kept, None if rec.trial.planned.variant else
                        (f.duration_s if f else None) or (app.window_s if app else None) or 0.0)
    ratio = got.overhead()
    return [f"started from: {cycles.started_from(kept.start)}",
            f"cycle: {got.text()}; {got.total:.2f} s in all"
            + (f", {ratio:.2f}x the measured window" if ratio else "")]


def _design_line(design: Design) -> str:
    """How the trial was run (teiten.run.plan.trial_design)."""
    return (f"design: block {design.block}, order {design.order}, "
            f"{float(design.duration_s or 0):g} s, restart {design.restart}, "
            f"prewarm {'on' if design.prewarm else 'off'}, pgbench on CPUs {design.client_cpus}"
            + (f", restore {design.restore}" if design.restore else ""))


def _ms(value: float | None) -> str:
    """A latency in ms rounded for people: three significant places, ``-`` when unknown."""
    if value is None:
        return "-"
    return f"{value:.3f}" if abs(value) < 10 else f"{value:,.2f}" if abs(value) < 1000 else f"{value:,.0f}"


def _app_text(app: AppDetails) -> str:
    """One line on the measured window of a tpcc or bookstore trial."""
    if app.tps is None:  # reading its transaction log failed: the trial says why
        return f"{app.app}: no window measured; by type:"
    line = (f"{app.app}: {app.tps:.1f} per second over the {app.window_s or 0:g} s window "
            f"after a {app.rampup_s:g} s ramp-up")
    if app.nopm is not None:
        line += f"; NOPM {app.nopm:,.0f}, TPM {app.tpm or 0:,.0f}"
    if app.theoretical_tps:
        line += f"; theoretical {app.theoretical_tps:.1f} (users / {app.think_time_s:g} s)"
    return line + "; by type:"


def _step_line(st: Step) -> str:
    """One timed step: name, param, time, rows, and what its plan and cache say."""
    parts = [f"  {st.name}" + (f" [{st.param}]" if st.param else ""), f"{st.seconds * 1000:.2f} ms"]
    if st.rows is not None:
        parts.append(f"{st.rows} rows")
    if plan := st.plan:
        parts.append(f"workers {plan.workers_launched}/{plan.workers_planned}, buffers hit "
                     f"{plan.shared_hit} read {plan.shared_read}, removed by recheck "
                     f"{plan.rows_removed_by_index_recheck}, filter {plan.rows_removed_by_filter}")
        parts.append(plan.shape)
    if st.cache:
        parts.append(f"cache {st.cache.state}")
    extra = st.extra
    if extra is not None and extra.window_s >= 1 and extra.cpu_busy_pct is not None:  # shorter: a few ticks
        machine = f"CPU busy {extra.cpu_busy_pct:.0f}%, I/O wait {extra.cpu_iowait_pct:.0f}%"
        if extra.device:
            machine += (f", {extra.device} {extra.device_util_pct:.0f}% util, read "
                        f"{extra.read_mb_s:,.1f} MB/s, write {extra.write_mb_s:,.1f} MB/s")
        parts.append(machine)
    return " · ".join(parts)
