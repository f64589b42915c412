"""The stored names of the metrics that a monitor of teiten/monitors/ writes and analysis
reads, written once: the monitors register them (teiten.monitors: unit, kind and label) and
store their figures under them, and analysis reads them by these names, so that neither spells
them again. (A monitor in a report table's folder names its own: teiten/tables/KEY/monitor.py.)"""

from __future__ import annotations

CHECKPOINTS_IN_WINDOW = "checkpoints_in_window"  # the database monitor's
AUTOVACUUM_IN_WINDOW = "autovacuum_in_window"  # the activity monitor's
LOAD_SKEW_S = "load_skew_s"  # the load's parts: how far apart several pgbench started
REPLICATION_LAG_BYTES_MAX = "replication_lag_bytes_max"  # the replication monitor's
REPLICATION_REPLAY_LAG_MS_MAX = "replication_replay_lag_ms_max"
