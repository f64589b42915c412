"""The activity monitor: system activity and database activity over the measured window of a
trial (METHODS S1, S2, S4: "taking the number is not enough"), the two in one result, whose
figures are read together (the CPU shares beside the wait events and the statistics' deltas)."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

import psycopg

from teiten.model.metrics import AUTOVACUUM_IN_WINDOW, CHECKPOINTS_IN_WINDOW
from teiten.model.results import Evidence
from teiten.monitors import database
from teiten.monitors.base import Ended, Metric, MonitorKind, Sampling, Window
from teiten.monitors.system import CPU_KEYS, SystemMonitor, SystemResult

log = logging.getLogger(__name__)


@dataclass
class MonitorResult:
    system: SystemResult | None = None
    waits: database.WaitResult | None = None
    stats: dict[str, database.Deltas] = field(default_factory=dict)  # deltas per view
    summary: dict[str, float] = field(default_factory=dict)          # flat figures
    warnings: list[str] = field(default_factory=list)

    def top_waits(self, n: int = 5) -> list[dict[str, object]]:
        return self.waits.top(n) if self.waits else []

    def evidence(self) -> Evidence:
        """The result as the store keeps it."""
        series = [("system", t, name, value) for t, sample in
                  (self.system.series if self.system else []) for name, value in sample.items()]
        waits = [(b, t, e, n) for (b, t, e), n in (self.waits.counts if self.waits else {}).items()]
        details: dict[str, object] = {"stats": self.stats}
        if self.system is not None:
            details["devices"] = self.system.devices
            details["system_summary"] = self.system.summary
        if self.waits is not None:
            details["waits_source"] = {"source": self.waits.source, "rounds": self.waits.samples,
                                       **({"unavailable_before": "9.6", "release": self.waits.unavailable}
                                          if self.waits.unavailable else {})}
        if self.warnings:
            details["warnings"] = self.warnings
        return Evidence(series=series, metrics=dict(self.summary), waits=waits, details=details)


class Monitors:
    """Starts the monitors just before the load and stops them right after it."""

    def __init__(self, conninfo: str, *, devices: dict[str, str] | None = None,
                 system: bool = True, db: bool = True, server_cpus: list[int] | None = None):
        self.conninfo = conninfo  # the trial's database (it may hold a password: never log it)
        self.server_cpus = server_cpus  # a confined server's CPUs: their own figures too
        self.system = SystemMonitor(devices=devices) if system else None
        self.waits = database.WaitSampler(self.conninfo) if db else None
        self.result = MonitorResult()
        self._before: dict[str, database.Rows] = {}

    def start(self) -> None:
        if self.waits is not None:
            try:
                with psycopg.connect(self.conninfo, autocommit=True, connect_timeout=15) as conn:
                    self._before = database.snapshot(conn)
                self.waits.start()
            except psycopg.Error as exc:
                self.result.warnings.append(f"database monitor unavailable: {exc}".strip())
                self.waits = None
        if self.system is not None:
            self.system.start()

    def stop(self) -> MonitorResult:
        r = self.result
        if self.system is not None:
            r.system = self.system.stop()
            for key, name in CPU_KEYS.items():
                if name in r.system.summary:
                    r.summary[key] = r.system.summary[name]
            if self.server_cpus:  # server_cpu_user ... server_cpu_irq: the mean of its CPUs
                for key, name in CPU_KEYS.items():
                    part = name.split(".", 1)[1]
                    values = [r.system.summary[f"cpu{i}.{part}"] for i in self.server_cpus
                              if f"cpu{i}.{part}" in r.system.summary]
                    if values:
                        r.summary[f"server_{key}"] = sum(values) / len(values)
            for role, dev in r.system.devices.items():
                util = r.system.summary.get(f"disk.{dev}.util")
                if util is not None:
                    r.summary[f"{role}_device_util"] = util
        if self.waits is not None:
            r.waits = self.waits.stop()
            if r.waits.error:
                r.warnings.append(r.waits.error)
            try:
                with psycopg.connect(self.conninfo, autocommit=True, connect_timeout=15) as conn:
                    r.stats = database.delta(self._before, database.snapshot(conn))
            except psycopg.Error as exc:
                r.warnings.append(f"statistics after the window unavailable: {exc}".strip())
            r.summary.update(database.interpret(r.stats))
            r.summary[AUTOVACUUM_IN_WINDOW] = float(
                max(len(r.waits.autovacuum_pids), int(r.summary.get("autovacuum_count", 0))))
            if r.summary.get(CHECKPOINTS_IN_WINDOW):
                r.warnings.append(f"{int(r.summary[CHECKPOINTS_IN_WINDOW])} checkpoint(s) "
                                  "inside the measured window (METHODS requires none)")
            if r.summary[AUTOVACUUM_IN_WINDOW]:
                r.warnings.append("autovacuum ran inside the measured window (METHODS "
                                  "requires none)")
        return r


class ActivityWatch(Sampling[MonitorResult]):
    """The system and database monitors of one trial (off with --no-monitors)."""

    def contribute(self, evidence: Evidence, ended: Ended) -> None:
        if self.seen is not None:
            part = self.seen.evidence()
            evidence.series.extend(part.series)
            evidence.metrics.update(part.metrics)
            evidence.waits.extend(part.waits)
            evidence.details.update(part.details)

    def warnings(self) -> list[str]:
        return self.seen.warnings if self.seen else []


def _counts(*names: str, unit: str = "count") -> tuple[Metric, ...]:
    return tuple(Metric(n, unit, "counter", f"metric.{n}") for n in names)


def _activity(window: Window) -> ActivityWatch | None:
    server = window.server
    return ActivityWatch(Monitors(window.conninfo, devices=server.devices(),
                                  server_cpus=server.confined_cpus())) if window.monitors else None


KIND = MonitorKind(
    "activity", _activity, layer=3, metrics=(
        *(Metric(k, "%", "gauge", f"metric.{k}") for k in CPU_KEYS),
        Metric("server_cpu_{part}", "%", "gauge", "metric.server_cpu"),
        Metric("{role}_device_util", "%", "gauge", "metric.device_util"),
        *_counts("xact_commit", "xact_rollback", "blks_hit", "blks_read", "temp_files",
                 "deadlocks", "tup_returned", "tup_fetched", "tup_updated", "wal_records",
                 "wal_fpi", CHECKPOINTS_IN_WINDOW, "autovacuum_count", "autoanalyze_count",
                 "n_tup_upd", "n_tup_hot_upd", AUTOVACUUM_IN_WINDOW),
        *_counts("temp_bytes", "wal_bytes", unit="bytes")))
