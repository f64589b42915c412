"""``teiten probe``: what the network between this client and a server costs (METHODS S11).

A statement costs at least one round trip plus the server's time, so one connection can do
at most 1000 / RTT(ms) statements a second (S11: 2.76 ms -> 362/s, 0.54 ms -> 1851/s). The
probe measures, from this client:

- the round-trip time of ``SELECT 1`` on one open connection, many times (median, p99,
  minimum): a statement that costs the server next to nothing, so what remains is the
  network and the two protocol stacks;
- the time to open a connection (TCP or socket, authentication, backend start);
- the server's version and, where the role may read them, its non-default settings.
"""

from __future__ import annotations

import statistics
import time
from dataclasses import asdict, dataclass, field

import psycopg
from psycopg import conninfo as pg_conninfo

from teiten.model.errors import ServerError, UserError


@dataclass(frozen=True)
class Probe:
    target: str  # host:port (or the socket directory)
    round_trips: int
    rtt_ms_median: float
    rtt_ms_p99: float
    rtt_ms_min: float
    connect_ms_median: float
    connects: int
    ceiling_per_connection: float  # statements per second one connection can do at most
    version: str
    settings: dict[str, str] = field(default_factory=dict)
    settings_note: str = ""

    def to_json(self) -> dict[str, object]:
        return asdict(self)


def parse_conninfo(text: str) -> dict[str, str]:
    """The parameters of a libpq connection string; a :class:`UserError` when it cannot be read."""
    try:
        return {k: str(v) for k, v in pg_conninfo.conninfo_to_dict(text).items()}
    except psycopg.ProgrammingError as exc:
        raise UserError(f"cannot read the connection string: {exc}") from None


def _p99(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.99 * (len(ordered) - 1)))]


def probe(conninfo: str, *, round_trips: int = 500, connects: int = 10) -> Probe:
    """Measure the round trip and connect time to the server of ``conninfo``."""
    params = parse_conninfo(conninfo)
    target = f"{params.get('host', 'localhost')}:{params.get('port', '5432')}"
    connect_ms = []
    try:
        for _ in range(connects):
            started = time.perf_counter()
            with psycopg.connect(conninfo, autocommit=True, connect_timeout=15):
                connect_ms.append((time.perf_counter() - started) * 1000)
        with psycopg.connect(conninfo, autocommit=True, connect_timeout=15) as conn:
            for _ in range(20):  # warm the path and the backend's caches, not counted
                conn.execute("SELECT 1").fetchone()
            rtt = []
            for _ in range(round_trips):
                started = time.perf_counter()
                conn.execute("SELECT 1").fetchone()
                rtt.append((time.perf_counter() - started) * 1000)
            row = conn.execute("SELECT current_setting('server_version')").fetchone()
            version = str(row[0]) if row else "?"
            settings, note = _settings(conn)
    except psycopg.Error as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ServerError(f"cannot probe {target}: {first}") from None
    median = statistics.median(rtt)
    return Probe(target=target, round_trips=round_trips, rtt_ms_median=round(median, 4),
                 rtt_ms_p99=round(_p99(rtt), 4), rtt_ms_min=round(min(rtt), 4),
                 connect_ms_median=round(statistics.median(connect_ms), 3), connects=connects,
                 ceiling_per_connection=round(1000 / median, 1) if median > 0 else 0.0,
                 version=version, settings=settings, settings_note=note)


def _settings(conn: psycopg.Connection) -> tuple[dict[str, str], str]:
    """Non-default settings where the role may read pg_settings' sources (a cloud service
    may hide some); otherwise none, and why."""
    try:
        rows = conn.execute(
            "SELECT name, setting, coalesce(unit, '') FROM pg_settings "
            "WHERE source NOT IN ('default', 'override', 'client', 'session') ORDER BY name").fetchall()
    except psycopg.Error as exc:
        return {}, f"settings not readable: {str(exc).strip().splitlines()[0]}"
    return {name: f"{setting}{' ' + unit if unit else ''}" for name, setting, unit in rows}, ""
