"""Settings profiles: postgresql.conf for a local cluster, sized to the machine and data.

``pgecons`` follows METHODS.md S1: no checkpoint and no autovacuum inside the measured
window, checkpoints and lock waits logged, and shared_buffers large enough to hold the data.
The 2021 report ran SF 2000 with 40GB of shared_buffers on a large server; here every
memory figure is derived from this machine's RAM and the workload's size instead. What a
setting is called follows the server's release (teiten.installs.releases): the WAL between
checkpoints is max_wal_size from 9.5, checkpoint_segments before.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from teiten.installs.releases import Release

MB = 1024 * 1024
GB = 1024 * MB

# pgbench: one scale unit is 100,000 accounts; table plus primary key is about 15 MB at
# fillfactor 100 (13 MB heap, 2.2 MB index, measured on PostgreSQL 15-18).
BYTES_PER_SCALE = 15 * MB


@dataclass(frozen=True)
class Sizing:
    """What the profile is sized for."""

    ram_bytes: int
    disk_free_bytes: int
    max_clients: int
    data_bytes: int


def pgbench_data_bytes(scale: int, fillfactor: int | None) -> int:
    """An estimate of the size of pgbench tables and indexes at ``scale``."""
    heap_share = 13 / 15
    ff = (fillfactor or 100) / 100
    return int(scale * BYTES_PER_SCALE * (heap_share / ff + (1 - heap_share)))


def _mb(n: float) -> str:
    return f"{max(1, math.ceil(n / MB))}MB"


def shared_buffers_for(sizing: Sizing) -> tuple[int, bool]:
    """shared_buffers in bytes, and whether the data fits in it."""
    want = int(sizing.data_bytes * 1.3) + 64 * MB
    cap = int(sizing.ram_bytes * 0.4)
    return max(128 * MB, min(want, cap)), want <= cap


def conf_value(value: object) -> str:
    """A study's setting as postgresql.conf writes it (YAML booleans as on/off)."""
    if isinstance(value, bool):
        return "on" if value else "off"
    return str(value)


def merged(profile: str, study_settings: Mapping[str, object], sizing: Sizing,
           release: Release) -> dict[str, str]:
    """A server's settings: its profile's for its ``release``, with the study's own settings
    over them. Every kind of server (local, ssh, docker) gets them from here, so environments
    compare like with like."""
    return {**settings(profile, sizing, release),
            **{k: conf_value(v) for k, v in study_settings.items()}}


def with_needs(settings: Mapping[str, str], needs: Mapping[str, str],
               study_settings: Mapping[str, object], release: Release) -> dict[str, str]:
    """A server's ``settings`` with what a workload ``needs`` of it (a sweep of parallel
    workers: max_worker_processes, max_parallel_workers), unless the study set it or the
    server's ``release`` has no such setting (max_parallel_workers came in 10: 9.6's parallel
    workers are bounded by max_worker_processes alone)."""
    return {**settings, **{k: v for k, v in needs.items()
                           if k not in study_settings and release.has_setting(k)}}


def settings(profile: str, sizing: Sizing, release: Release) -> dict[str, str]:
    """The profile's settings for a server of ``release`` (values as postgresql.conf text)."""
    logging = {
        "logging_collector": "on",
        "log_line_prefix": "%m [%p] %q%u@%d ",
        "log_checkpoints": "on",
        "log_lock_waits": "on",
        "log_autovacuum_min_duration": "0",
    }
    if profile == "default":
        return logging
    max_connections = max(100, sizing.max_clients + 20)
    shared_buffers, _ = shared_buffers_for(sizing)
    work_mem = min(GB, max(4 * MB, sizing.ram_bytes // (4 * max_connections)))
    maintenance = min(20 * GB, max(64 * MB, sizing.ram_bytes // 16))
    # A whole number of 16 MB WAL segments: before 10 max_wal_size counts segments, and
    # rounds any other value, so that every version gets the very same setting (before 9.5,
    # its translation to checkpoint_segments: Release.wal_volume).
    max_wal = min(160 * GB, max(GB, sizing.disk_free_bytes // 4)) // (16 * MB) * (16 * MB)
    return {
        "max_connections": str(max_connections),
        "shared_buffers": _mb(shared_buffers),
        "work_mem": _mb(work_mem),
        "maintenance_work_mem": _mb(maintenance),
        # S1: no checkpoint during a run. The runner also issues CHECKPOINT right before
        # the measured window, so the next timed one is an hour away.
        "checkpoint_timeout": "60min",
        **release.wal_volume(max_wal),
        "autovacuum": "off",
        **logging,
    }
