"""``teiten show TRIAL_ID``: everything the store knows about one trial."""

from __future__ import annotations

import json
from typing import Any

from teiten.analysis import cycle as cycles
from teiten.cli.output import table
from teiten.model.errors import UserError
from teiten.monitors import registry
from teiten.store import Store


def trial_record(store: Store, trial_id: str) -> dict[str, Any]:
    """The whole trial as one JSON-able object."""
    rows = [r for r in store.trials() if r["trial_id"] == trial_id or
            f"{r['study_id']}:{r['trial_id']}" == trial_id]
    if not rows:
        raise UserError(f"no trial {trial_id} in {store}; 'teiten results --store "
                        f"{store}' lists them")
    if len(rows) > 1:
        ids = ", ".join(f"{r['study_id']}:{r['trial_id']}" for r in rows)
        raise UserError(f"trial {trial_id} is in several studies of {store}; give one of {ids}")
    row = rows[0]
    sid, tid = row["study_id"], row["trial_id"]
    record = {k: row[k] for k in row.keys()}  # noqa: SIM118 - sqlite3.Row
    for key in ("argv", "notes"):
        record[key] = json.loads(row[key]) if row[key] else []
    record["metrics"] = store.metrics(sid, tid)
    record["top_waits"] = store.top_waits(sid, tid, n=10)
    record["waits"] = [dict(r) for r in store.waits(sid, tid)]
    record["progress"] = [dict(r) for r in store.progress(sid, tid)]
    record["statements"] = [dict(r) for r in store.statements(sid, tid)]
    record["details"] = store.details(sid, tid)
    record["steps"] = [{k: v for k, v in st.items() if k != "trial_id"} for st in store.steps(sid, tid)]
    series: dict[str, list[list[float]]] = {}
    for r in store.series(sid, tid):
        series.setdefault(r["name"], []).append([r["t"], r["value"]])
    record["series"] = series
    for drop in ("study_id",):
        record.pop(drop, None)
    return record


def render_text(rec: dict[str, Any]) -> str:
    point = (rec["variant"] if rec.get("variant") else
             f"{rec['clients']} clients ({rec['threads']} threads)")
    out = [f"trial {rec['trial_id']} of study {rec['study']}: {rec['server']} · {rec['workload']}"
           f" · {point} · repetition {rec['repetition']} · order {rec['order_index']}",
           f"status: {rec['status']}" + (f" ({rec['error']})" if rec["error"] else ""),
           f"started {rec['started_at']}, finished {rec['finished_at']}, attempts {rec['attempts']}"]
    if rec["tps"] is not None:
        out.append(f"TPS {rec['tps']:.1f} (without connection time), {rec['transactions']} "
                   f"transactions, {rec['failed_transactions'] or 0} failed, measured over "
                   f"{rec['duration_s']:.2f} s; latency {_ms(rec['latency_ms_avg'])} ms "
                   f"(stddev {_ms(rec['latency_ms_stddev'])})")
    limits = dict(rec["details"].get("pgbench") or {})
    found, source = limits.pop("percentiles", None), "pgbench's log"
    latency = rec["details"].get("latency") or {}  # another driver's, from its own histogram
    if not found and latency.get("percentiles"):
        driver = latency.get("driver") or "its driver"
        found, source = latency["percentiles"], f"{driver}'s latency histogram"
    if limits:
        out.append(_limits_line(limits, rec))
    if found:
        out.append(_percentiles_line(found, source))
    cycle = rec["details"].get("cycle")
    if cycle:
        out += _cycle_lines(cycle, rec)
    if design := rec["details"].get("design"):
        out.append(_design_line(design))
    if rec.get("steps"):
        out += ["", "steps:"] + [_step_line(st) for st in rec["steps"]]
    else:
        out.append("command: " + " ".join(rec["argv"]))
    if rec["notes"]:
        out += ["", "notes:"] + [f"  - {n}" for n in rec["notes"]]
    if rec["metrics"]:
        out += ["", "monitors (window):"] + [_metric_line(k, v) for k, v in sorted(rec["metrics"].items())]
    if rec["top_waits"]:
        out += ["", "top waits:", table(rec["top_waits"], ["wait_event_type", "wait_event",
                                                            "samples", "share"])]
    if rec["statements"]:
        out += ["", "statement latencies (ms):", table(rec["statements"], [
            "script_index", "line_no", "latency_ms", "failures", "command"])]
    if rec["progress"]:
        out += ["", "per-second progress:", table(rec["progress"], [
            "t", "tps", "latency_ms", "latency_stddev_ms", "failed"])]
    if rec["series"]:
        names = sorted(rec["series"])
        out += ["", f"system series: {len(names)} metrics, e.g. "
                + ", ".join(n for n in names if n.startswith("cpu."))]
    app = rec["details"].get("app")
    if app:
        out += ["", _app_text(app), table(app["types"], ["name", "weight", "count", "avg_ms",
                                                        "p50_ms", "p95_ms", "p99_ms", "response_ms"])]
    stats = rec["details"].get("stats")
    if stats:
        out += ["", "statistics views with deltas: " + ", ".join(sorted(stats))]
    out += ["", "pgbench stdout:", rec["stdout"] or "(none)", "pgbench stderr:",
            rec["stderr"] or "(none)", "server log:", rec["server_log"] or "(none)"]
    return "\n".join(out)


def _metric_line(name: str, value: float) -> str:
    """One stored metric with its unit and its label, as its monitor registered them (a metric
    no monitor declares: its name and value only)."""
    line = f"  {name} = {value:.0f}" if float(value).is_integer() else f"  {name} = {value:.2f}"
    unit, label = registry.unit(name), registry.label(name)
    return line + (f" {unit}" if unit else "") + (f"  ({label})" if label != name else "")


def _limits_line(limits: dict[str, Any], rec: dict[str, Any]) -> str:
    """What a rate-limited, latency-limited or retrying pgbench run reported."""
    parts = []
    if "latency_limit_ms" in limits:
        parts.append(f"{limits.get('late', 0)} of {rec['transactions']} transactions above the "
                     f"{limits['latency_limit_ms']:g} ms latency limit")
    if "skipped" in limits:
        parts.append(f"{limits['skipped']} skipped (would have started too late; not in the "
                     "latencies)")
    if "retried" in limits:
        parts.append(f"{limits['retried']} retried after a serialization or deadlock failure "
                     f"({limits.get('retries', 0)} retries)")
    if "lag_ms_avg" in limits:
        parts.append(f"schedule lag {_ms(limits['lag_ms_avg'])} ms on average, "
                     f"{_ms(limits.get('lag_ms_max'))} at most")
    return "limits: " + "; ".join(parts)


def _percentiles_line(found: dict[str, Any], source: str) -> str:
    """The latency percentiles of a trial that took them (pgbench's transaction log, or
    another driver's histogram: ``source``)."""
    shown = " · ".join(f"{label} {_ms(found.get(key))}" for label, key in (
        ("p50", "p50_ms"), ("p90", "p90_ms"), ("p95", "p95_ms"), ("p99", "p99_ms"),
        ("p99.9", "p999_ms"), ("max", "max_ms")))
    return (f"latency percentiles (ms): {shown}; of {found['count']} transactions in "
            f"{source}, within {found['precision'] * 100:.1f}%")


def _cycle_lines(cycle: dict[str, Any], rec: dict[str, Any]) -> list[str]:
    """Where the trial's machine time went, and what state it started from."""
    app = rec["details"].get("app") or {}
    got = cycles.phases(cycle, None if rec.get("variant") else
                        rec["duration_s"] or app.get("window_s") or 0.0)
    ratio = got.overhead()
    return [f"started from: {cycles.started_from(cycle.get('start') or {})}",
            f"cycle: {got.text()}; {got.total:.2f} s in all"
            + (f", {ratio:.2f}x the measured window" if ratio else "")]


def _design_line(design: dict[str, Any]) -> str:
    """How the trial was run (teiten.run.plan.trial_design)."""
    return (f"design: block {design.get('block')}, order {design.get('order')}, "
            f"{float(design.get('duration_s') or 0):g} s, restart {design.get('restart')}, "
            f"prewarm {'on' if design.get('prewarm') else 'off'}, pgbench on CPUs {design.get('client_cpus')}")


def _ms(value: float | None) -> str:
    """A latency in ms rounded for people: three significant places, ``-`` when unknown."""
    if value is None:
        return "-"
    return f"{value:.3f}" if abs(value) < 10 else f"{value:,.2f}" if abs(value) < 1000 else f"{value:,.0f}"


def _app_text(app: dict[str, Any]) -> str:
    """One line on the measured window of a tpcc or bookstore trial."""
    line = (f"{app['app']}: {app['tps']:.1f} per second over the {app['window_s']:g} s window "
            f"after a {app['rampup_s']:g} s ramp-up")
    if app.get("nopm") is not None:
        line += f"; NOPM {app['nopm']:,.0f}, TPM {app['tpm']:,.0f}"
    if app.get("theoretical_tps"):
        line += f"; theoretical {app['theoretical_tps']:.1f} (users / {app['think_time_s']:g} s)"
    return line + "; by type:"


def _step_line(st: dict[str, Any]) -> str:
    """One timed step: name, param, time, rows, and what its plan and cache say."""
    parts = [f"  {st['name']}" + (f" [{st['param']}]" if st["param"] else ""),
             f"{st['seconds'] * 1000:.2f} ms"]
    if st.get("rows") is not None:
        parts.append(f"{st['rows']} rows")
    plan = st.get("plan")
    if plan:
        parts.append(f"workers {plan['workers_launched']}/{plan['workers_planned']}, buffers hit "
                     f"{plan['shared_hit']} read {plan['shared_read']}, removed by recheck "
                     f"{plan['rows_removed_by_index_recheck']}, filter {plan['rows_removed_by_filter']}")
        parts.append(plan["shape"])
    if st.get("cache"):
        parts.append(f"cache {st['cache'].get('state')}")
    extra = st.get("extra") or {}
    if extra.get("window_s", 0) >= 1 and "cpu_busy_pct" in extra:  # shorter: a few 10 ms ticks
        machine = f"CPU busy {extra['cpu_busy_pct']:.0f}%, I/O wait {extra['cpu_iowait_pct']:.0f}%"
        if extra.get("device"):
            machine += (f", {extra['device']} {extra['device_util_pct']:.0f}% util, read "
                        f"{extra['read_mb_s']:,.1f} MB/s, write {extra['write_mb_s']:,.1f} MB/s")
        parts.append(machine)
    return " · ".join(parts)
