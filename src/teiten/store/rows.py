"""Every trial as one flat row, as ``teiten results`` exports it (table, JSON, CSV): the
load's figures, what the monitors saw, and each workload's headline figures (issue 21): an
application workload's window rate, NOPM and TPM (tpcc) or BT/s (bookstore); a measured
statement workload's steps and the sizes of its relations. The README lists the columns."""

from __future__ import annotations

from typing import Any

from teiten.model.details import APP, LATENCY, PGBENCH, AppDetails, LatencyDetails, PgbenchDetails
from teiten.model.results import StepRecord
from teiten.store.db import Store

RESULT_FIELDS = (
    "trial_id", "study", "server", "workload", "clients", "threads", "repetition",
    "order_index", "status", "tps", "transactions", "failed_transactions", "duration_s",
    "latency_ms_avg", "latency_ms_stddev", "started_at", "finished_at", "error",
    "variant", "study_id",  # later columns are added at the end, so CSV readers keep theirs
)
MONITOR_FIELDS = ("cpu_user", "cpu_sys", "cpu_iowait", "cpu_idle", "cpu_steal", "wal_bytes",
                  "blks_hit", "blks_read", "checkpoints_in_window")
# app_tps: an application workload's transactions per second over its window (the
# bookstore's BT/s); nopm and tpm: tpcc's; steps and sizes: a measured-statement workload's;
# skipped and late: a pgbench workload's with a rate and a latency limit; the latency
# percentiles and the largest latency (ms): a pgbench workload's with 'percentiles: true', or
# another driver's from its own histogram (details 'latency').
PERCENTILE_FIELDS = ("p50_ms", "p90_ms", "p95_ms", "p99_ms", "p999_ms", "max_ms")
HEADLINE_FIELDS = ("app_tps", "nopm", "tpm", "window_s", "steps", "sizes", "skipped", "late",
                   *PERCENTILE_FIELDS)
# purpose: "profile" for a trial run after the blocks to profile (counted in no figure);
# retried and retries: a pgbench workload's with max_tries (transactions that succeeded after a
# serialization or deadlock failure, and the retries in all).
LATER_FIELDS = ("purpose", "retried", "retries")
CSV_FIELDS = (*RESULT_FIELDS, *MONITOR_FIELDS, *HEADLINE_FIELDS, *LATER_FIELDS)


def result_rows(store: Store, study_id: int | None = None) -> list[dict[str, Any]]:
    """Every trial as a plain dict with the fields of ``teiten results``: what the monitors
    saw and the workload's headline figures (None where there are none)."""
    rows = []
    apps: dict[int, dict[str, AppDetails]] = {}
    limits: dict[int, dict[str, PgbenchDetails]] = {}
    latencies: dict[int, dict[str, LatencyDetails]] = {}
    steps: dict[int, dict[str, tuple[StepRecord, ...]]] = {}
    for record in store.records(study_id):
        sid = record.study_id
        if sid not in apps:
            apps[sid] = store.details_of(sid, APP)
            limits[sid] = store.details_of(sid, PGBENCH)
            latencies[sid] = store.details_of(sid, LATENCY)
            steps[sid] = store.steps_by_trial(sid)
        out = record.row()
        metrics = store.metrics(sid, record.trial_id)
        for k in MONITOR_FIELDS:
            out[k] = metrics.get(k)
        out["top_waits"] = store.top_waits(sid, record.trial_id)
        out.update(_headline(apps[sid].get(record.trial_id), steps[sid].get(record.trial_id)))
        limited = limits[sid].get(record.trial_id) or PgbenchDetails()
        out.update(skipped=limited.skipped, late=limited.late, retried=limited.retried,
                   retries=limited.retries)
        other = latencies[sid].get(record.trial_id)
        found = limited.percentiles or (other.percentiles if other else None)
        out.update({k: getattr(found, k) if found else None for k in PERCENTILE_FIELDS})
        rows.append(out)
    return rows


def _headline(app: AppDetails | None, steps: tuple[StepRecord, ...] | None) -> dict[str, Any]:
    out: dict[str, Any] = dict.fromkeys(HEADLINE_FIELDS)
    if app:
        out.update(app_tps=app.tps, nopm=app.nopm, tpm=app.tpm, window_s=app.window_s)
    if steps:
        out["steps"] = [{"name": st.name, "param": st.param, "seconds": st.seconds, "rows": st.rows}
                        for st in steps]
        sizes: dict[str, int] = {}
        for st in steps:  # the sizes after the last step that measured them
            sizes.update(st.body.get("sizes") or {})
        out["sizes"] = sizes or None
    return out


def csv_row(row: dict[str, Any]) -> dict[str, Any]:
    """``row`` with its steps and sizes written as one cell each, for CSV:
    ``load[2 devices x 960 steps]=0.00554; index[brin]=0.00193`` and ``iot_rdb=188416; ...``."""
    out = dict(row)
    if row.get("steps"):
        out["steps"] = "; ".join(f"{st['name']}" + (f"[{st['param']}]" if st["param"] else "")
                                 + f"={st['seconds']:.6g}" for st in row["steps"])
    if row.get("sizes"):
        out["sizes"] = "; ".join(f"{k}={v}" for k, v in row["sizes"].items())
    return out
