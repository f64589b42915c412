"""An added round-trip time between pgbench and a server, where the kernel has no netem
(issue 36, item 4: METHODS S1 2014's peak at 80 clients came from the client-server latency,
S11's round-trip bound).

teiten starts a small TCP proxy of its own (``python -m teiten.host.netdelay``, one process, listening
on a free loopback port) that forwards to the server: what the client sends passes at once, and
every chunk the server sends back leaves the proxy a fixed time after it arrived. A request and
its answer, one round trip, then take that much longer, which is what a statement at one client
waits; an answer of many chunks is delayed once, not once per chunk, since each chunk keeps its
own deadline.

Toxiproxy's latency toxic, tried first, takes whole milliseconds and overshot by 0.3-0.9 ms on a
virtual machine (waking a timer on an idle virtual CPU costs that much), and so does any sleep
here. So the proxy is calibrated when it starts: teiten probes the server directly and through
the proxy (``teiten probe``'s SELECT 1 round trips), and starts it again with the delay less
what the first probe measured beyond the asked value; the probe through the calibrated proxy is
what a study records. The proxy holds no password (the connection's authentication passes
through it) and listens on loopback only.

It can also give the path a bandwidth (``bandwidth_mbps``): each direction is one link of that
rate that every connection of the server shares, as one network interface is. A chunk waits
for the link (its bytes take size / rate on it, in pieces of at most :data:`PIECE` bytes, so
that a large answer flows at the rate instead of in bursts) and then the delay; the study
records the rate measured through the proxy, a large answer timed as it crosses.

It is a Python process: each round trip costs it some tens of microseconds of one CPU, so at
thousands of round trips a second it becomes the limit.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import os
import re
import signal
import socket
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import psutil

import teiten
from teiten.host import client_account, procs
from teiten.host.probe import Probe, probe
from teiten.model.errors import ServerError

START_TIMEOUT_S = 10.0
CALIBRATION_ROUND_TRIPS = 200
RECORDED_PROBES = 3  # of CALIBRATION_ROUND_TRIPS each, through the calibrated proxy
CHUNK = 65536
PIECE = 16384  # at a limited bandwidth, the most bytes that cross the link at once
MEASURED_BYTES = 4 << 20  # the answer timed through the proxy to measure its bandwidth


@dataclass(frozen=True)
class Measured:
    """A running proxy: where a client connects, and the round trips measured directly and
    through it (medians, ms)."""

    host: str
    port: int
    pid: int
    asked_ms: float
    direct_ms: float
    through_ms: float
    delay_ms: float  # the delay the proxy was started with after calibration
    bandwidth_mbps: float | None = None  # the rate asked of each direction (None: unlimited)
    measured_mbps: float | None = None  # an answer of MEASURED_BYTES timed through the proxy

    @property
    def added_ms(self) -> float:
        return round(self.through_ms - self.direct_ms, 4)

    def to_json(self) -> dict[str, float | int | str | None]:
        return {"rtt_ms": self.asked_ms, "direct_rtt_ms": self.direct_ms,
                "rtt_ms_median": self.through_ms, "added_rtt_ms": self.added_ms,
                "proxy_delay_ms": round(self.delay_ms, 4),
                **({"bandwidth_mbps": self.bandwidth_mbps, "measured_mbps": self.measured_mbps}
                   if self.bandwidth_mbps is not None else {})}


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _conninfo(params: dict[str, str], host: str, port: int) -> str:
    from psycopg.conninfo import make_conninfo  # late: psycopg is heavy for the proxy process

    return make_conninfo(**{**params, "host": host, "port": str(port)})


def start(upstream: tuple[str, int], delay_ms: float,
          bandwidth_mbps: float | None = None) -> tuple[procs.Background, int]:
    """A proxy to ``upstream`` that delays what comes back by ``delay_ms`` (as calibrated),
    each direction a link of ``bandwidth_mbps`` when given: the running process and the
    loopback port it listens on. It ends by itself when the process that started it does (a
    killed run leaves none)."""
    port = _free_port()
    rate = ["--bandwidth-bps", str(round(bandwidth_mbps * 1e6))] if bandwidth_mbps else []
    server = procs.spawn([sys.executable, "-m", "teiten.host.netdelay", "--listen", str(port),
                          "--upstream", f"{upstream[0]}:{upstream[1]}", "--parent", str(os.getpid()),
                          "--delay-us", str(round(delay_ms * 1000)), *rate], what="teiten delay proxy",
                         env=procs.build_env({"PYTHONPATH": str(Path(teiten.__file__).parent.parent)}))
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if server.proc.poll() is not None:
            done = server.stop(timeout=1)
            raise ServerError(f"the delay proxy exited {server.proc.returncode}: "
                              f"{procs.tail(done.stderr + done.stdout, 2)}")
        if _listening(server.proc.pid, port):
            return server, port
        time.sleep(0.02)
    server.stop(timeout=1)
    raise ServerError(f"the delay proxy did not listen on 127.0.0.1:{port} within "
                      f"{START_TIMEOUT_S:g} s")


def _listening(pid: int, port: int) -> bool:
    """Whether ``pid`` listens on ``port`` (asked of the kernel: a connection to see would
    reach the server behind and leave an "incomplete startup packet" in its log)."""
    try:
        found = psutil.Process(pid).net_connections(kind="tcp")
    except psutil.Error:
        return False
    return any(c.status == psutil.CONN_LISTEN and c.laddr and c.laddr.port == port for c in found)


def _rtt(params: dict[str, str], host: str, port: int) -> Probe:
    return probe(_conninfo(params, host, port), round_trips=CALIBRATION_ROUND_TRIPS, connects=2)


def _bandwidth(params: dict[str, str], host: str, port: int) -> float:
    """Megabits a second of one large answer through the proxy (the best of three)."""
    import psycopg  # late: psycopg is heavy for the proxy process

    best = 0.0
    with psycopg.connect(_conninfo(params, host, port), autocommit=True) as conn:
        for _ in range(3):
            began = time.perf_counter()
            conn.execute("SELECT repeat('x', %s)", (MEASURED_BYTES,)).fetchone()
            best = max(best, MEASURED_BYTES * 8 / (time.perf_counter() - began) / 1e6)
    return round(best, 2)


@contextlib.contextmanager
def proxy(upstream_host: str, upstream_port: int, rtt_ms: float,
          params: dict[str, str], bandwidth_mbps: float | None = None) -> Iterator[Measured]:
    """A running proxy to ``upstream_host:upstream_port`` that adds ``rtt_ms`` to each round
    trip (and limits each direction to ``bandwidth_mbps``), calibrated by probing with the
    libpq ``params`` (user, dbname, ...): yields where a client connects and what was
    measured; stops the proxy afterwards. The delay is calibrated without the limit, whose
    own time on the link is then part of every round trip measured, as on a real link."""
    upstream = (upstream_host, upstream_port)
    # other load only lengthens a round trip: the least of three medians is the path's own
    direct = min(_rtt(params, *upstream).rtt_ms_median for _ in range(3))
    delay = rtt_ms
    server, port = start(upstream, delay)
    try:
        # the same through the proxy: one median that other load lengthened would take off too
        # much below (a 5 ms proxy once added 4.69 ms once calibrated on one median)
        through = min(_rtt(params, "127.0.0.1", port).rtt_ms_median for _ in range(3))
        if rtt_ms > 0 or bandwidth_mbps:  # take off what the proxy and its sleep add
            delay = max(0.0, rtt_ms - (through - direct - rtt_ms)) if rtt_ms > 0 else 0.0
            server.stop(signal.SIGTERM, timeout=10)
            server, port = start(upstream, delay, bandwidth_mbps)
        # what a study records: the least of the medians through the calibrated proxy (at 0,
        # the first probe went through it too)
        earlier = [through] if rtt_ms == 0 and not bandwidth_mbps else []
        through = min([*earlier, *(_rtt(params, "127.0.0.1", port).rtt_ms_median
                                   for _ in range(RECORDED_PROBES))])
        rate = _bandwidth(params, "127.0.0.1", port) if bandwidth_mbps else None
        yield Measured("127.0.0.1", port, server.proc.pid, rtt_ms, direct, through, delay,
                       bandwidth_mbps, rate)
    finally:
        server.stop(signal.SIGTERM, timeout=10)


def pgbench_rtt(pgbench: Path, made: Measured, user: str, dbname: str,
                seconds: int = 2) -> float | None:
    """The round trip as pgbench sees it through the proxy (ms): the mean latency of one client
    sending SELECT 1. pgbench's C client spends less per round trip than the probe's psycopg
    (0.03-0.1 ms less through the proxy here), so this, not the probe, is what bounds its
    transactions (METHODS S11); None when pgbench does not say."""
    with tempfile.TemporaryDirectory(prefix="teiten-rtt-") as tmp:
        script = Path(tmp) / "select1.sql"
        script.write_text("SELECT 1;\n")
        done = client_account.run([str(pgbench), "-n", "-f", str(script), "-c", "1", "-T", str(seconds),
                           "-h", made.host, "-p", str(made.port), "-U", user, dbname],
                          timeout=seconds + 60, what="pgbench (round trip through the proxy)")
    found = re.search(r"latency average = ([0-9.]+) ms", done.stdout)
    return round(float(found.group(1)), 4) if found else None


# --- the proxy process ------------------------------------------------------------------------

class Link:
    """One direction of the path at ``rate_bps``, shared by every connection: when each piece
    of bytes has crossed it. A piece waits for the pieces before it, of any connection; a
    connection books its next piece only when what is booked ahead is less than one piece's
    time, so that connections sending at once take turns, as their packets would on a wire,
    instead of one booking its whole answer first (and the proxy stops reading that
    connection meanwhile, which slows its sender as the network would)."""

    def __init__(self, rate_bps: float) -> None:
        self.rate = rate_bps
        self.turn = PIECE * 8 / rate_bps  # one piece's time on the link
        self.free = 0.0  # when the link is free again (time.perf_counter)
        self.lock = threading.Lock()

    def cross(self, size: int, arrived: float) -> float:
        while True:
            with self.lock:
                ahead = self.free - time.perf_counter()
                if ahead <= self.turn:
                    self.free = max(arrived, self.free) + size * 8 / self.rate
                    return self.free
            time.sleep(max(ahead - self.turn, 0.0002))


def _pieces(data: bytes, link: Link | None) -> list[bytes]:
    if link is None or len(data) <= PIECE:
        return [data]
    return [data[i:i + PIECE] for i in range(0, len(data), PIECE)]


def _pass(source: socket.socket, sink: socket.socket) -> None:
    """Client to server: at once."""
    with contextlib.suppress(OSError):
        while data := source.recv(CHUNK):
            sink.sendall(data)
    with contextlib.suppress(OSError):
        sink.shutdown(socket.SHUT_WR)


def _delayed(source: socket.socket, sink: socket.socket, delay_s: float,
             link: Link | None = None) -> None:
    """Each chunk leaves ``delay_s`` after it arrived, or after it crossed ``link`` (a reader
    and a writer thread, so that chunks in flight keep their own deadlines)."""
    pending: collections.deque[tuple[float, bytes]] = collections.deque()
    ready = threading.Condition()

    def write() -> None:
        while True:
            with ready:
                while not pending:
                    ready.wait()
                due, data = pending.popleft()
            if not data:
                break
            wait = due - time.perf_counter()
            if wait > 0:
                time.sleep(wait)
            try:
                sink.sendall(data)
            except OSError:
                break
        with contextlib.suppress(OSError):
            sink.shutdown(socket.SHUT_WR)

    writer = threading.Thread(target=write, daemon=True)
    writer.start()
    data = b"x"
    while data:
        try:
            data = source.recv(CHUNK)
        except OSError:
            data = b""
        arrived = time.perf_counter()
        for piece in _pieces(data, link):
            # booked outside the lock: the writer sends what is due while this waits its turn
            crossed = link.cross(len(piece), arrived) if link is not None and piece else arrived
            with ready:
                pending.append((crossed + delay_s, piece))
                ready.notify()
    writer.join()


def _connection(client: socket.socket, upstream: tuple[str, int], delay_s: float,
                links: tuple[Link, Link] | None = None) -> None:
    try:
        server = socket.create_connection(upstream, timeout=10)
    except OSError:
        client.close()
        return
    server.settimeout(None)
    for s in (client, server):
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    up = threading.Thread(target=_pass, args=(client, server), daemon=True) if links is None else \
        threading.Thread(target=_delayed, args=(client, server, 0.0, links[0]), daemon=True)
    up.start()
    if delay_s > 0 or links is not None:
        _delayed(server, client, delay_s, links[1] if links is not None else None)
    else:
        _pass(server, client)
    up.join()
    client.close()
    server.close()


def _orphaned(parent: int) -> None:
    """End the proxy once the teiten that started it has gone (killed, say)."""
    while os.getppid() == parent:
        time.sleep(0.5)
    os._exit(0)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m teiten.host.netdelay")
    parser.add_argument("--listen", type=int, required=True)
    parser.add_argument("--upstream", required=True)
    parser.add_argument("--delay-us", type=int, required=True)
    parser.add_argument("--parent", type=int, required=True)
    parser.add_argument("--bandwidth-bps", type=int, default=0)
    args = parser.parse_args(argv)
    links = (Link(args.bandwidth_bps), Link(args.bandwidth_bps)) if args.bandwidth_bps > 0 else None
    host, _, port = args.upstream.rpartition(":")
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    threading.Thread(target=_orphaned, args=(args.parent,), daemon=True).start()
    listener = socket.create_server(("127.0.0.1", args.listen))
    while True:
        client, _ = listener.accept()
        threading.Thread(target=_connection, args=(client, (host, int(port)), args.delay_us / 1e6,
                                                   links), daemon=True).start()


if __name__ == "__main__":
    sys.exit(main())
