"""The replication-lag monitor (METHODS S7): pg_stat_replication on the primary, sampled
every second during the measured window.

Per standby (its application_name) it records how far behind the primary's current WAL
position each stage is, in bytes (sent, written, flushed, replayed), and the lag times
PostgreSQL measures (write_lag, flush_lag, replay_lag). PostgreSQL reports those times as
NULL when a standby has caught up and nothing new was sent for a while: NULL means "not
measured", not zero, so such a sample adds no point to the series. 9.6 has the byte
positions only (as "locations"): its lag times are not measured.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass, field
from decimal import Decimal

import psycopg

from teiten.installs.releases import Release
from teiten.model.metrics import REPLICATION_LAG_BYTES_MAX, REPLICATION_REPLAY_LAG_MS_MAX
from teiten.model.results import Evidence
from teiten.monitors.base import Ended, Metric, MonitorKind, Sampling, Window

log = logging.getLogger(__name__)

# Byte lags against the primary's current position; times in ms (NULL stays NULL).
_QUERY = """
SELECT application_name, state, sync_state, host(client_addr),
       pg_wal_lsn_diff(pg_current_wal_lsn(), sent_lsn),
       pg_wal_lsn_diff(pg_current_wal_lsn(), write_lsn),
       pg_wal_lsn_diff(pg_current_wal_lsn(), flush_lsn),
       pg_wal_lsn_diff(pg_current_wal_lsn(), replay_lsn),
       extract(epoch FROM write_lag) * 1000,
       extract(epoch FROM flush_lag) * 1000,
       extract(epoch FROM replay_lag) * 1000
FROM pg_stat_replication
ORDER BY application_name
"""
# Before 10 the positions are "locations" of the "xlog", and there are no lag times.
_QUERY_9 = """
SELECT application_name, state, sync_state, host(client_addr),
       pg_xlog_location_diff(pg_current_xlog_location(), sent_location),
       pg_xlog_location_diff(pg_current_xlog_location(), write_location),
       pg_xlog_location_diff(pg_current_xlog_location(), flush_location),
       pg_xlog_location_diff(pg_current_xlog_location(), replay_location),
       NULL, NULL, NULL
FROM pg_stat_replication
ORDER BY application_name
"""
_METRICS = ("sent_lag_bytes", "write_lag_bytes", "flush_lag_bytes", "lag_bytes",
            "write_lag_ms", "flush_lag_ms", "replay_lag_ms")


@dataclass
class LagResult:
    # (seconds since start, "node1.lag_bytes", value); lag_bytes is the replay lag in bytes
    series: list[tuple[float, str, float]] = field(default_factory=list)
    summary: dict[str, float] = field(default_factory=dict)
    states: dict[str, dict[str, object]] = field(default_factory=dict)  # last state per standby
    samples: int = 0
    warnings: list[str] = field(default_factory=list)


class LagMonitor:
    """Samples pg_stat_replication on the primary every ``interval`` seconds in a thread,
    between start() and stop(), on a connection of its own."""

    def __init__(self, primary_conninfo: str, *, interval: float = 1.0):
        self.conninfo = primary_conninfo
        self.interval = interval
        self.result = LagResult()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._conn: psycopg.Connection | None = None
        self._started = 0.0

    def start(self) -> None:
        self._started = time.monotonic()
        self._sample()  # connects; a primary that cannot be reached yet is a warning
        self._thread = threading.Thread(target=self._loop, name="teiten-lagmon", daemon=True)
        self._thread.start()

    def _connect(self) -> psycopg.Connection:
        conn = psycopg.connect(self.conninfo, autocommit=True, connect_timeout=10)
        conn.execute("SET application_name = 'teiten monitor'")
        return conn

    def _loop(self) -> None:
        while not self._stop.wait(self.interval - ((time.monotonic() - self._started)
                                                   % self.interval)):
            self._sample()

    def _sample(self) -> None:
        """One sample; a failure is recorded as a warning and the next sample reconnects."""
        at = round(time.monotonic() - self._started, 3)
        try:
            if self._conn is None or self._conn.closed:
                self._conn = self._connect()
            query = _QUERY if Release.of_num(self._conn.info.server_version).wal_named else _QUERY_9
            rows = self._conn.execute(query).fetchall()
        except psycopg.Error as exc:
            message = f"replication sample at {at:g} s failed: {str(exc).strip().splitlines()[0]}"
            self.result.warnings.append(message)
            log.warning("%s", message)
            if self._conn is not None:
                self._conn.close()
                self._conn = None
            return
        self.result.samples += 1
        for name, state, sync_state, client_addr, *values in rows:
            row = dict(zip(_METRICS, map(_number, values), strict=True))
            for metric, value in row.items():
                if value is not None:
                    self.result.series.append((at, f"{name}.{metric}", value))
            # client_addr: where the standby streams from (None through a unix socket)
            self.result.states[name] = {"state": state, "sync_state": sync_state,
                                        "client_addr": client_addr, **row}

    def stop(self) -> LagResult:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)
            self._sample()  # the state at the end of the window
        if self._conn is not None:
            self._conn.close()
            self._conn = None
        self.result.summary = summarise(self.result.series)
        return self.result


def summarise(series: list[tuple[float, str, float]]) -> dict[str, float]:
    """Over all standbys and samples: the largest and the mean replay lag in bytes, and the
    largest replay lag in ms (only what was measured at least once)."""
    lag_bytes = [v for _, name, v in series if name.endswith(".lag_bytes")]
    replay_ms = [v for _, name, v in series if name.endswith(".replay_lag_ms")]
    out: dict[str, float] = {}
    if lag_bytes:
        out["lag_bytes_max"] = max(lag_bytes)
        out["lag_bytes_mean"] = sum(lag_bytes) / len(lag_bytes)
    if replay_ms:
        out["replay_lag_ms_max"] = max(replay_ms)
    return out


def _number(value: object) -> float | None:
    if value is None:
        return None
    if isinstance(value, (int, float, Decimal)):
        return float(value)
    raise TypeError(f"pg_stat_replication gave {value!r} where a number was expected")


class LagWatch(Sampling[LagResult]):
    """The lag of a primary's standbys over the window: the series under the source
    ``replication``, the summary as ``replication_*``, the last state of each standby."""

    def contribute(self, evidence: Evidence, ended: Ended) -> None:
        lag = self.seen
        if lag is None:
            return
        evidence.series.extend(("replication", t, name, value) for t, name, value in lag.series)
        evidence.metrics.update({f"replication_{k}": v for k, v in lag.summary.items()})
        evidence.details["replication"] = lag.states


def _lag(window: Window) -> LagWatch | None:
    primary = window.server.lag_conninfo() if window.monitors else None
    return LagWatch(LagMonitor(primary)) if primary else None


KIND = MonitorKind("replication", _lag, layer=1, metrics=(
    Metric(REPLICATION_LAG_BYTES_MAX, "bytes", "peak", "metric.replication_lag_bytes_max"),
    Metric("replication_lag_bytes_mean", "bytes", "gauge", "metric.replication_lag_bytes_mean"),
    Metric(REPLICATION_REPLAY_LAG_MS_MAX, "ms", "peak", "metric.replication_replay_lag_ms_max")))
