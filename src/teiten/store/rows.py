"""Every trial as one flat row, as ``teiten results`` exports it (table, JSON, CSV): the
load's figures, what the monitors saw, and each workload's headline figures (issue 21): an
application workload's window rate, NOPM and TPM (tpcc) or BT/s (bookstore); a measured
statement workload's steps and the sizes of its relations. The README lists the columns."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass

from pydantic import TypeAdapter

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


def result_rows(store: Store, study_id: int | None = None) -> list[dict[str, object]]:
    """Every trial as a plain dict with the fields of ``teiten results``: what the monitors
    saw and the workload's headline figures (None where there are none)."""
    rows = []
    apps: dict[int, dict[str, AppDetails]] = {}
    limits: dict[int, dict[str, PgbenchDetails]] = {}
    latencies: dict[int, dict[str, LatencyDetails]] = {}
    steps: dict[int, dict[str, tuple[StepRecord, ...]]] = {}
    for record in store.records(study_id):
        sid, tid = record.study_id, record.trial_id
        if sid not in apps:
            apps[sid] = store.details_of(sid, APP)
            limits[sid] = store.details_of(sid, PGBENCH)
            latencies[sid] = store.details_of(sid, LATENCY)
            steps[sid] = store.steps_by_trial(sid)
        metrics = store.metrics(sid, tid)
        limited = limits[sid].get(tid) or PgbenchDetails()
        other = latencies[sid].get(tid)
        found = limited.percentiles or (other.percentiles if other else None)
        rows.append({**record.row(), **{k: metrics.get(k) for k in MONITOR_FIELDS},
                     "top_waits": [asdict(w) for w in store.top_waits(sid, tid)],
                     **_headline(apps[sid].get(tid), steps[sid].get(tid)),
                     "skipped": limited.skipped, "late": limited.late,
                     **{k: getattr(found, k) if found else None for k in PERCENTILE_FIELDS},
                     "retried": limited.retried, "retries": limited.retries})
    return rows


def _headline(app: AppDetails | None, steps: tuple[StepRecord, ...] | None) -> dict[str, object]:
    """The workload's headline figures, under every name of HEADLINE_FIELDS (None: none)."""
    sizes: dict[str, int] = {}
    for st in steps or ():  # the sizes after the last step that measured them
        sizes.update(st.body.get("sizes") or {})
    return {**dict.fromkeys(HEADLINE_FIELDS),
            **({"app_tps": app.tps, "nopm": app.nopm, "tpm": app.tpm, "window_s": app.window_s} if app else {}),
            **({"steps": [{"name": st.name, "param": st.param, "seconds": st.seconds, "rows": st.rows}
                          for st in steps], "sizes": sizes or None} if steps else {})}


@dataclass(frozen=True)
class _StepCell:
    """A timed step as a result row lists it (``steps``)."""

    name: str
    param: str | None
    seconds: float

    def __str__(self) -> str:
        return self.name + (f"[{self.param}]" if self.param else "") + f"={self.seconds:.6g}"


@dataclass(frozen=True)
class _Cells:
    """The values of a result row that CSV writes as one cell each: its steps and sizes."""

    steps: tuple[_StepCell, ...] | None = None
    sizes: dict[str, int] | None = None  # relation -> bytes

    def text(self) -> dict[str, str]:
        steps = "; ".join(map(str, self.steps or ()))
        sizes = "; ".join(f"{k}={v}" for k, v in (self.sizes or {}).items())
        return {**({"steps": steps} if steps else {}), **({"sizes": sizes} if sizes else {})}


_CELLS = TypeAdapter(_Cells)


def csv_row(row: Mapping[str, object]) -> dict[str, object]:
    """``row`` with its steps and sizes written as one cell each, for CSV:
    ``load[2 devices x 960 steps]=0.00554; index[brin]=0.00193`` and ``iot_rdb=188416; ...``."""
    return {**row, **_CELLS.validate_python(row).text()}
