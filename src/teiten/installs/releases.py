"""What a PostgreSQL release has: the one place that says which settings, functions, views,
columns, extensions and options each major release of the server offers, so that the
settings teiten writes, the extensions it makes and the monitors it runs follow the server's
version (the PGECons reports of 2014 and 2016 compared 9.3, 9.4 and 9.5).

Everything here is a fact of PostgreSQL's, with the release that brought it, named by
``server_version_num``'s counting (90300 for 9.3, 100000 for 10). Code elsewhere asks a
:class:`Release` rather than comparing version numbers itself.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

MB = 1024 * 1024
WAL_SEGMENT_BYTES = 16 * MB  # the default segment size, the one every build of teiten's has

# Settings that came with a release: a server of an older one refuses them in its
# configuration file ("unrecognized configuration parameter"). Only those teiten writes or a
# workload asks for; from the runtime-config chapters of each release's documentation.
_SETTINGS_SINCE = {
    "max_wal_size": 90500, "min_wal_size": 90500,  # replaced checkpoint_segments (9.5 notes)
    "max_worker_processes": 90400, "max_replication_slots": 90400, "wal_log_hints": 90400,
    "max_parallel_workers_per_gather": 90600, "idle_in_transaction_session_timeout": 90600,
    "max_parallel_workers": 100000, "max_parallel_maintenance_workers": 110000, "jit": 110000,
    "wal_keep_size": 130000,
}
# Settings a release removed: a server of that release or later refuses them.
_SETTINGS_UNTIL = {"checkpoint_segments": 90500, "wal_keep_segments": 130000}


@dataclass(frozen=True, order=True)
class Release:
    """A major release of PostgreSQL, as ``server_version_num`` counts it without the minor:
    90300 (9.3), 90600 (9.6), 170000 (17)."""

    num: int

    @classmethod
    def of(cls, version: str) -> Release:
        """The release of a version as an install names it: "9.3.25", "9.6", "17.2", "18beta1"."""
        nums = [int(n) for n in re.findall(r"\d+", version)[:2]]
        if not nums:
            raise ValueError(f"not a PostgreSQL version: {version!r}")
        if nums[0] < 10:
            return cls(nums[0] * 10000 + (nums[1] if len(nums) > 1 else 0) * 100)
        return cls(nums[0] * 10000)

    @classmethod
    def of_num(cls, server_version_num: int) -> Release:
        """The release of a running server (``conn.info.server_version``: 90325, 170002)."""
        if server_version_num < 100000:
            return cls(server_version_num // 100 * 100)
        return cls(server_version_num // 10000 * 10000)

    @property
    def name(self) -> str:
        """As PostgreSQL names it: "9.3", "17"."""
        if self.num < 100000:
            return f"{self.num // 10000}.{self.num // 100 % 100}"
        return str(self.num // 10000)

    def __str__(self) -> str:
        return self.name

    # -- settings ---------------------------------------------------------------------------

    def has_setting(self, name: str) -> bool:
        """Whether a server of this release knows the setting ``name`` (of those listed above;
        any other is taken as known: the check of a study asks the install itself)."""
        since = _SETTINGS_SINCE.get(name, 0)
        until = _SETTINGS_UNTIL.get(name)
        return self.num >= since and (until is None or self.num < until)

    def wal_volume(self, max_wal_bytes: int) -> dict[str, str]:
        """The setting that lets ``max_wal_bytes`` of WAL build up between checkpoints.

        From 9.5, max_wal_size says it. Before, checkpoint_segments counts segments between
        checkpoints, and 9.5's release notes give the equivalent as
        max_wal_size = (3 * checkpoint_segments) * 16MB (docs/DESIGN.md, "Versions before 9.6")."""
        if self.num >= 90500:
            return {"max_wal_size": f"{max(1, math.ceil(max_wal_bytes / MB))}MB"}
        return {"checkpoint_segments": str(max(1, max_wal_bytes // (3 * WAL_SEGMENT_BYTES)))}

    @property
    def alter_system(self) -> bool:
        """ALTER SYSTEM (9.4)."""
        return self.num >= 90400

    @property
    def streaming_standbys(self) -> bool:
        """Standbys as teiten makes them (9.6): slots reserved at once by pg_basebackup, and
        wal_level 'replica' (named 'hot_standby' before 9.6)."""
        return self.num >= 90600

    # -- extensions, functions, views -------------------------------------------------------

    @property
    def pg_prewarm(self) -> bool:
        """The pg_prewarm extension (contrib, 9.4)."""
        return self.num >= 90400

    @property
    def wait_events(self) -> bool:
        """pg_stat_activity's wait_event_type and wait_event (9.6; before, a boolean 'waiting')."""
        return self.num >= 90600

    @property
    def backend_type(self) -> bool:
        """pg_stat_activity's backend_type, and background processes in it (10)."""
        return self.num >= 100000

    @property
    def wal_named(self) -> bool:
        """The WAL's functions and columns say "wal" and "lsn" (10); before, "xlog" and
        "location" (pg_current_xlog_location, pg_stat_replication's sent_location)."""
        return self.num >= 100000

    def wal_bytes_sql(self) -> str:
        """An expression of the bytes of WAL written since 0/0: the WAL's position, named
        the "xlog location" before 10."""
        if self.wal_named:
            return "pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')"
        return "pg_xlog_location_diff(pg_current_xlog_location(), '0/0')"

    @property
    def stat_views(self) -> frozenset[str]:
        """The cumulative statistics views of a release beyond those of 9.3 (pg_stat_database,
        pg_stat_bgwriter, pg_stat_all_tables): pg_stat_wal from 14, pg_stat_io from 16,
        pg_stat_checkpointer from 17."""
        since = {"pg_stat_wal": 140000, "pg_stat_io": 160000, "pg_stat_checkpointer": 170000}
        return frozenset(view for view, num in since.items() if self.num >= num)

    @property
    def statements_key(self) -> tuple[str, ...]:
        """The columns that name a row of pg_stat_statements: its queryid from 9.4 (9.3 has
        only the query's text), and toplevel beside it from 14."""
        if self.num >= 140000:
            return ("userid", "queryid", "toplevel")
        return ("userid", "queryid", "dbid") if self.num >= 90400 else ("userid", "dbid", "query")

    # -- files and programs -----------------------------------------------------------------

    @property
    def wal_dir(self) -> str:
        """The WAL's directory in the data directory: pg_wal from 10, pg_xlog before."""
        return "pg_wal" if self.num >= 100000 else "pg_xlog"

    @property
    def initdb_waldir(self) -> str:
        """initdb's option for a WAL directory elsewhere: --waldir from 10, --xlogdir before."""
        return "--waldir" if self.num >= 100000 else "--xlogdir"


# pgbench's options that a study's workload can give, and the first pgbench that has them.
PGBENCH_OPTIONS_SINCE = {"max_tries": Release(150000), "random_seed": Release(110000)}
