"""``teiten probe`` against a real PostgreSQL 18, directly and through a TCP relay that the
test starts on loopback and that delays every packet it forwards: the measured round trip
grows by the delay added on the path (tc netem is not available here)."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from psycopg.conninfo import make_conninfo
from tests.conftest import run_cli, scratch_database

DELAY_S = 0.005  # each way: a round trip gets 10 ms longer


@contextmanager
def delaying_relay(port: int, delay_s: float) -> Iterator[int]:
    """A relay on 127.0.0.1 to ``port`` that sleeps ``delay_s`` before forwarding each chunk,
    in each direction. Yields its own port; stops its thread on exit."""
    loop = asyncio.new_event_loop()
    ready: list[int] = []

    async def pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while data := await reader.read(65536):
                await asyncio.sleep(delay_s)
                writer.write(data)
                await writer.drain()
        except ConnectionError:
            pass
        finally:
            writer.close()

    async def handle(client_r: asyncio.StreamReader, client_w: asyncio.StreamWriter) -> None:
        server_r, server_w = await asyncio.open_connection("127.0.0.1", port)
        await asyncio.gather(pipe(client_r, server_w), pipe(server_r, client_w))

    async def serve() -> asyncio.Server:
        server = await asyncio.start_server(handle, "127.0.0.1", 0)
        ready.append(server.sockets[0].getsockname()[1])
        return server

    server = loop.run_until_complete(serve())
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    try:
        yield ready[0]
    finally:
        loop.call_soon_threadsafe(server.close)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=10)


def _probe(conninfo: str) -> dict[str, Any]:
    done = run_cli("probe", conninfo, "--round-trips", "100", "--format", "json", check=True)
    return dict(json.loads(done.stdout))


@pytest.mark.alone  # round-trip bounds measured through a relay in this process
def test_probe_sees_the_delay_added_on_the_path(pg18) -> None:  # noqa: ANN001
    with scratch_database(pg18) as db:
        port = db.cluster.port  # type: ignore[attr-defined]
        direct = _probe(make_conninfo(host="127.0.0.1", port=port, user="postgres",
                                      dbname="teiten_scratch"))
        with delaying_relay(port, DELAY_S) as relay_port:
            delayed = _probe(make_conninfo(host="127.0.0.1", port=relay_port, user="postgres",
                                           dbname="teiten_scratch"))
            text = run_cli("probe", f"postgresql://postgres@127.0.0.1:{relay_port}/teiten_scratch",
                           "--round-trips", "20", check=True).stdout
    assert direct["version"].startswith("18.") and direct["round_trips"] == 100
    assert direct["rtt_ms_min"] <= direct["rtt_ms_median"] <= direct["rtt_ms_p99"]
    assert direct["rtt_ms_median"] < 5, direct  # loopback
    added = delayed["rtt_ms_median"] - direct["rtt_ms_median"]
    assert 2 * DELAY_S * 1000 * 0.9 <= added <= 2 * DELAY_S * 1000 + 15, (direct, delayed)
    assert delayed["ceiling_per_connection"] < 1000 / (2 * DELAY_S * 1000) * 1.05
    # Opening a connection takes several round trips (startup, authentication, ready).
    assert delayed["connect_ms_median"] >= direct["connect_ms_median"] + 2 * DELAY_S * 1000
    assert "max_connections" in direct["settings"]
    assert f"server 127.0.0.1:{relay_port}: PostgreSQL 18." in text
    assert "one connection does at most" in text


def test_an_unreachable_server_is_one_line_and_exit_1() -> None:
    done = run_cli("probe", "host=127.0.0.1 port=1 user=x dbname=x connect_timeout=3")
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert done.stderr.startswith("teiten: error: cannot probe 127.0.0.1:1: ")
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr


def test_a_bad_connection_string_is_exit_2() -> None:
    done = run_cli("probe", "host=127.0.0.1 port")
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.startswith("teiten: error: cannot read the connection string: ")


@pytest.mark.alone  # round-trip bounds measured through a relay in this process
def test_an_external_study_reports_the_round_trip_bound(pg18, workdir: Path) -> None:  # noqa: ANN001
    """S11's analysis: the external server is reached through the delaying relay, so one
    client cannot pass about 1000 / 10 ms transactions a second, and the report says so."""
    with scratch_database(pg18) as db, delaying_relay(db.cluster.port, DELAY_S) as relay_port:  # type: ignore[attr-defined]
        study = workdir / "far.yaml"
        study.write_text(FAR.format(port=relay_port))
        done = run_cli("run", str(study), "--store", str(workdir / "far.db"), timeout=600)
        # The study again, a second study of the store, for the compare report below.
        again = run_cli("run", str(study), "--store", str(workdir / "far.db"), "--no-report", timeout=600)
    assert done.returncode == 0, done.stderr
    assert again.returncode == 0, again.stderr
    assert "2 trials: 2 ok" in done.stderr
    md = (workdir / "far-report" / "report.md").read_text()
    heading = next(line for line in md.splitlines() if line.startswith("### Round-trip bound (S11): far,"))
    rtt = float(heading.split("round trip ")[1].split(" ms")[0])
    assert 2 * DELAY_S * 1000 * 0.9 <= rtt <= 2 * DELAY_S * 1000 + 15, heading
    assert heading.endswith("statements per transaction: 1")  # select-only: one SELECT, one \set
    rows = [line for line in md.split(heading, 1)[1].splitlines() if line.startswith("| 1 |")]
    tps, ceiling, of, network = (c.strip() for c in rows[0].strip("|").split("|")[1:5])
    assert float(ceiling.replace(",", "")) == pytest.approx(1000 / rtt, rel=0.02)
    assert 50 <= float(of.rstrip("%")) <= 105  # nothing runs faster than the round trip allows
    assert float(network.rstrip("%")) >= 70
    # Both studies side by side: each study's server has its bound, as the table read the
    # statements per transaction of the store for itself, by trial id, renamed with the trials.
    done = run_cli("compare", "--store", str(workdir / "far.db"), "--studies", "1,2",
                   "--out", str(workdir / "both"), timeout=300)
    assert done.returncode == 0, done.stderr
    both = (workdir / "both" / "report.md").read_text()
    bounds = [line for line in both.splitlines() if line.startswith("### Round-trip bound (S11): ")]
    assert [b.split(": ", 1)[1].split(",")[0] for b in bounds] == ["far (1)/far", "far (2)/far"], bounds
    assert all(b.endswith("statements per transaction: 1") for b in bounds), bounds


FAR = """\
study: far
servers:
  - {{name: far, external: "host=127.0.0.1 port={port} user=postgres dbname=teiten_scratch", allow_init: true}}
workloads: [select-only]
scale: 1
clients: [1, 2]
duration: 2s
repetitions: 1
"""
