"""A trial as the store's rows hold it: the plan's columns written, and a row read back as a
typed :class:`teiten.model.results.TrialRecord` (either dialect's row)."""

from __future__ import annotations

from collections.abc import Sequence

from teiten.model.results import LoadFigures, PlannedTrial, TrialRecord
from teiten.store import pg


def insert_planned(c: pg.Connection, study_id: int, trials: Sequence[PlannedTrial]) -> None:
    c.executemany(
        "INSERT INTO trials (study_id, trial_id, order_index, server, workload, clients, threads,"
        " repetition, planned_duration_s, variant, repeat_of, purpose, status) VALUES"
        " (?,?,?,?,?,?,?,?,?,?,?,?, 'planned')",
        [(study_id, t.trial_id, t.order_index, t.server, t.workload, t.clients, t.threads,
          t.repetition, t.duration_s, t.variant, t.repeat_of, t.purpose) for t in trials])


def record(row: pg.Row) -> TrialRecord:
    planned = PlannedTrial(
        trial_id=row["trial_id"], order_index=row["order_index"], server=row["server"],
        workload=row["workload"], clients=row["clients"], threads=row["threads"],
        repetition=row["repetition"], duration_s=row["planned_duration_s"], variant=row["variant"],
        repeat_of=row["repeat_of"], purpose=row["purpose"])
    figures = None
    if row["transactions"] is not None:
        figures = LoadFigures(
            tps=row["tps"], transactions=row["transactions"],
            failed_transactions=row["failed_transactions"], duration_s=row["duration_s"],
            latency_ms_avg=row["latency_ms_avg"], latency_ms_stddev=row["latency_ms_stddev"],
            initial_connection_ms=row["initial_connection_ms"], pgbench_version=row["pgbench_version"])
    return TrialRecord(planned, study_id=row["study_id"], study=row["study"], status=row["status"],
                       attempts=row["attempts"], started_at=row["started_at"],
                       finished_at=row["finished_at"], error=row["error"], figures=figures)
