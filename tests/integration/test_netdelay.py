"""An added round-trip time through teiten's calibrated delay proxy (teiten.host.netdelay; issue 36,
item 4), measured as a user measures a network: ``teiten probe`` through the proxy moves the
median round trip of SELECT 1 by the added 0, 1 and 5 ms (± 0.3 ms) against the same server
reached directly (what a study records, too). One pgbench client at 5 ms against the round-trip
bound is tests/e2e/test_delay.py's, through teiten run. Real PostgreSQL, the real proxy process;
loopback only.

It runs alone: a round trip of a tenth of a millisecond is what other tests' load moves.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import psutil
import pytest
from tests.conftest import run_cli, scratch_database

from teiten.host import netdelay
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
