"""An added round-trip time through teiten's calibrated delay proxy (teiten.netdelay; issue 36,
item 4), measured as a user measures a network: ``teiten probe`` through the proxy moves the
median round trip of SELECT 1 by the added 0, 1 and 5 ms (± 0.3 ms) against the same server
reached directly, and at 5 ms one pgbench client of select-only runs between 0.8 and 1.0 times
the round-trip bound (1000 / RTT statements a second: METHODS S11). Real PostgreSQL, the real
proxy process, real pgbench; loopback only.

It runs alone: a round trip of a tenth of a millisecond is what other tests' load moves.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import psutil
import pytest
from tests.conftest import run_cli, scratch_database

from teiten import netdelay, procs
from teiten.servers.cluster import SUPERUSER

pytestmark = [pytest.mark.slow, pytest.mark.alone]


@pytest.fixture(scope="module")
def server(pg17) -> Iterator[Any]:  # noqa: ANN001
    with scratch_database(pg17) as scratch:
        yield scratch


PARAMS = {"user": SUPERUSER, "dbname": "teiten_scratch"}


def _probe(host: str, port: int) -> float:
    done = run_cli("probe", f"host={host} port={port} user={SUPERUSER} dbname=teiten_scratch",
                   "--round-trips", "400", "--format", "json", check=True)
    return float(json.loads(done.stdout)["rtt_ms_median"])


def test_the_proxy_adds_its_round_trip_time_and_no_more(server: Any) -> None:
    port = server.cluster.port
    direct = _probe("127.0.0.1", port)
    for rtt in (0, 1, 5):
        with netdelay.proxy("127.0.0.1", port, rtt, PARAMS) as made:
            assert made.host == "127.0.0.1" and made.port != port
            through = _probe(made.host, made.port)
        assert abs(through - direct - rtt) <= 0.3, (rtt, direct, through, made)
        assert abs(made.added_ms - rtt) <= 0.3, made  # what a study records
        assert not psutil.pid_exists(made.pid) or psutil.Process(made.pid).status() == "zombie"


def test_one_client_at_5_ms_runs_at_the_round_trip_bound(server: Any, pg17) -> None:  # noqa: ANN001
    port = server.cluster.port
    pgbench = str(pg17.bindir / "pgbench")
    base = ["-h", "127.0.0.1", "-U", SUPERUSER]
    procs.run([pgbench, *base, "-p", str(port), "-i", "-s", "1", "-q", "teiten_scratch"],
              timeout=120)
    with netdelay.proxy("127.0.0.1", port, 5, PARAMS) as made:
        done = procs.run([pgbench, "-h", made.host, "-p", str(made.port), "-U", SUPERUSER, "-S",
                          "-c", "1", "-T", "3", "teiten_scratch"], timeout=60)
        # pgbench's C client spends less per round trip than the probe's psycopg: the bound
        # is from the round trip pgbench itself sees, sending SELECT 1
        rtt = netdelay.pgbench_rtt(pg17.bindir / "pgbench", made, SUPERUSER, "teiten_scratch")
    assert rtt is not None and abs(rtt - made.through_ms) <= 0.3, (rtt, made)
    tps = float(re.search(r"tps = ([0-9.]+)", done.stdout).group(1))  # type: ignore[union-attr]
    bound = 1000 / rtt
    assert 0.8 * bound <= tps <= 1.0 * bound, (tps, bound, rtt)
