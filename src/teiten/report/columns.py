"""The machine-readable columns of every table the report writes as CSV and JSON
(:mod:`teiten.report.exports`), whatever the report's language.

Columns are only ever appended (docs/DESIGN.md, "The store"): scripts read them by position
too. Units are in the names (``_pct``, ``_ms``, ``_bytes``, ``seconds``); a missing figure is
an empty CSV field and ``null`` in JSON.
"""

from __future__ import annotations

from teiten.analysis.verdicts import Judged
from teiten.report.cells import Value
from teiten.words import formats as f

TPS_COLUMNS = ("workload", "server", "version", "clients", "tps_median", "tps_ci_low", "tps_ci_high",
               "cv_pct", "n_ok", "n_failed", "tps_ci_level_pct",
               "cpu_idle_pct",  # of the server's CPUs (report.tables.idle_at), where monitored
               "emulated")  # 1: the figures are an emulation's (a VM guest under tcg), not a measurement
# ratio_pct: the ratio of the medians; estimate_pct: the interval's own (Hodges-Lehmann) estimate,
# the figure the report prints, always inside [ratio_ci_low_pct, ratio_ci_high_pct], which is at
# 1 - alpha / p_value_family_size (Bonferroni over the report's ratios). ratio_ci_method:
# signed-rank (paired by block) or hodges-lehmann (unpaired); p_value_holm: p after Holm's
# correction over the same family (informative: the verdict is read from the interval).
# verdict: faster | slower | no-difference | cannot-tell, within ±margin_pct; verdict_reason says
# why it cannot tell (no-ratio | no-interval | short | wide). significance keeps its three values:
# significant (faster or slower), not-significant, too-few (the blocks cannot reach the level).
RATIO_COLUMNS = ("workload", "server", "baseline", "clients", "ratio_pct", "ratio_ci_low_pct",
                 "ratio_ci_high_pct", "significance", "p_value", "needed", "detectable_pct",
                 "ratio_ci_level_pct", "ratio_ci_method", "p_value_holm", "p_value_family_size",
                 "estimate_pct", "estimate_method", "verdict", "verdict_reason", "margin_pct",
                 "emulated")  # 1: the server's or its baseline's figures are an emulation's
LATENCY_COLUMNS = ("workload", "server", "clients", "latency_ms_median", "latency_ratio_pct",
                   "n_ok", "n_failed", "emulated")
SUMMARY_COLUMNS = ("workload", "server", "version", "peak_tps", "peak_clients", "knee_clients",
                   "mean_tps_diff_pct", "mean_latency_diff_pct", "emulated")
DEGRADATION_COLUMNS = ("workload", "a", "b", "clients", "tps_a", "tps_b", "degradation_pct",
                       "tps_difference", "degradation_ci_low", "degradation_ci_high",
                       "degradation_ci_level")
APP_COLUMNS = ("workload", "server", "clients", "type", "tps", "nopm", "tpm", "tpm_pgbench",
               "theoretical_tps", "share_pct", "target_pct", "avg_ms", "p50_ms", "p95_ms", "p99_ms",
               "response_ms", "n_ok")
STEP_COLUMNS = ("workload", "server", "variant", "step", "param", "occurrence", "seconds_median", "n", "rows",
                "cache", "workers_planned", "workers_launched", "shared_hit", "shared_read",
                "rows_removed_by_filter", "rows_removed_by_index_recheck", "heap_blocks_exact",
                "heap_blocks_lossy", "shape",
                # each relation's scans ("access_log=3; pages=3") and those its processes divided
                "scans", "divided",
                # the machine around the step (a server on this machine): medians over repetitions
                "window_s", "cpu_busy_pct", "cpu_iowait_pct", "device", "device_util_pct",
                "read_mb_s", "write_mb_s")
# The step figures of the machine around it, as the steps' data and the system table carry them.
SYSTEM_FIGURES = ("cpu_busy_pct", "cpu_iowait_pct", "device_util_pct", "read_mb_s", "write_mb_s")
SIZE_COLUMNS = ("workload", "server", "variant", "table_bytes", "index_bytes")
# A differences table's columns are its servers': "what", one per server, "cause".

# A judged ratio beside the TPS table's (analysis.judging), as the ratio table words it: the
# interval's own estimate, its bounds and level, the verdict within ±margin_pct and why it
# cannot tell.
JUDGED = ("estimate_pct", "ratio_ci_low_pct", "ratio_ci_high_pct", "ratio_ci_level_pct", "verdict",
          "verdict_reason", "margin_pct")
# A line of versions: each version's ratio to the one before it, per client count.
HISTORY_COLUMNS = ("workload", "server", "version", "previous", "previous_version", "clients", *JUDGED)
# METHODS S4: per core count, the peak and its interval, the gain over the core count before
# with its interval and verdict, and the evidence at the peak: % idle of the server's CPUs, the
# top wait events and hottest functions ("LWLock:WALWrite=35.2; CPU:CPU=20.1", shares in %);
# then the chains of callers of the hottest ("s_lock<-LWLockAcquire<-ReadBuffer=62.0": share
# of its own samples, analysis.callers).
SCALEUP_COLUMNS = ("workload", "family", "cores", "server", "peak_tps", "peak_tps_ci_low",
                   "peak_tps_ci_high", "peak_tps_ci_level_pct", "peak_clients", "gain_pct",
                   "gain_ci_low_pct", "gain_ci_high_pct", "gain_ci_level_pct", "gain_verdict",
                   "cpu_idle_pct", "waits", "hot_functions", "hot_clients",
                   "hot_callers")
# LWLOCK_STATS: per lock and client count, requests and contentions per transaction; the
# requests' shared and exclusive parts (empty for stores from before they were recorded).
LOCK_COLUMNS = ("workload", "server", "lock", "clients", "requests_per_transaction",
                "contentions_per_transaction", "shared_per_transaction", "exclusive_per_transaction")
# The same by core count: per family of servers alike but for their cores, at one client count.
LOCK_CORES_COLUMNS = ("workload", "family", "clients", "lock", "cores", "server",
                      "requests_per_transaction", "contentions_per_transaction",
                      "shared_per_transaction", "exclusive_per_transaction")
# The 2014 LWLock figures (teiten.report.lock_charts): a row per segment drawn. figure: requests |
# contentions | contentions-split; build: the family (axis cores) or the server (axis clients);
# mode: shared | exclusive | all; per_transaction is divided by divided_by (the split lock's parts).
LOCK_BAR_COLUMNS = ("workload", "figure", "build", "axis", "x", "server", "lock", "mode",
                    "per_transaction", "divided_by")
# METHODS S5: the CPU of each server of a pair per client count (medians of the windows' means).
CPU_PAIR_COLUMNS = ("workload", "a", "b", "clients", "server", "user_pct", "sys_pct", "iowait_pct",
                    "steal_pct", "idle_pct")
# The activity's device table: %util per server, client count and device (data, wal, ...), and
# what fell inside the measured windows (checkpoints; trials in which autovacuum ran), repeated
# on each device's row of that server and client count (one row, no device, where it has none).
DEVICE_COLUMNS = ("workload", "server", "clients", "device", "util_pct", "checkpoints",
                  "autovacuum_trials")
# The activity's CPU breakdown (its chart's figures): per server and client count, each part in %
# as measured, of the CPUs named in "cpus": machine (this machine's: the server's when it runs
# here, the client's when it runs elsewhere), server (a confined server's own CPUs), host (the
# server's own host, for a server on another machine).
CPU_COLUMNS = ("workload", "server", "clients", "cpus", "user_pct", "sys_pct", "iowait_pct",
               "steal_pct", "irq_pct", "idle_pct")
# The activity's wait events (its chart's figures): each event's share of the samples, largest
# first, as the monitor kept them ("CPU:CPU" is time on CPU); what is left is other events.
WAIT_COLUMNS = ("workload", "server", "clients", "event", "share_pct")
# accesslog (S6): a step's time against the same variant's without workers.
SPEEDUP_COLUMNS = ("workload", "server", "variant", "step", "seconds_median", "speedup",
                   "workers_launched", "workers_planned", "cpu_busy_pct", "cpu_iowait_pct",
                   "device_util_pct")
# iot (S8): per model and index, the load and its rate, the index build, the sizes, the query.
MODEL_COLUMNS = ("workload", "server", "variant", "load_seconds", "load_rows_per_second",
               "index_seconds", "table_bytes", "index_bytes", "query_seconds")
# fulltext (S9): each method's strengths and weaknesses, in English whatever the report's
# language, sentences separated by "; ".
STRENGTH_COLUMNS = ("workload", "server", "method", "strengths", "weaknesses")
# The report's "Machine time": each phase of the trials' cycles, and of the study's wall time.
MACHINE_TIME_COLUMNS = ("phase", "seconds", "share_pct")
MACHINE_RUN_COLUMNS = ("part", "seconds", "share_pct")
# Every trial of the per-second series: its TPS as analysed, how many seconds its series has,
# the seconds of ramp-up before its steady part, its stalls and its drift.
TRIAL_COLUMNS = ("trial_id", "server", "workload", "clients", "repetition", "status", "tps",
                 "series_seconds", "rampup_seconds", "stalls", "drift_pct_per_min", "runs_before",
                 "emulated")


def judged(j: Judged | None) -> tuple[Value, ...]:
    """The :data:`JUDGED` values of a judged ratio (all empty without one)."""
    if j is None:
        return (None,) * len(JUDGED)
    low, high = j.ci or (None, None)
    return (f.pct_or_none(j.estimate), f.pct_or_none(low), f.pct_or_none(high), f.level_pct(j.level),
            j.verdict.word, j.verdict.reason or None, j.margin_pct)


def shares(items: tuple[tuple[str, float], ...]) -> str | None:
    """``LWLock:WALWrite=35.2; CPU:CPU=20.1``: names with their shares (0..1) in %."""
    return "; ".join(f"{name}={share * 100:.1f}" for name, share in items) or None
