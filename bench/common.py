"""Shared pieces of teiten's own benchmarks (not part of the test suite)."""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import psutil

from teiten.host import paths
from teiten.installs import Install, install_version
from teiten.servers.base import Endpoint
from teiten.servers.local.server import LocalServer
from teiten.servers.profiles import Sizing
from teiten.spec import ServerSpec
from teiten.workloads import BUILTINS, Workload

ROOT = Path(__file__).resolve().parent.parent
os.environ.setdefault("TEITEN_HOME", str(ROOT / ".cache" / "teiten-bench"))


def install(major: str = "17") -> Install:
    return install_version(major)


def workload(name: str, scale: int) -> Workload:
    b = BUILTINS[name]
    return Workload(name, b.scripts, scale, b.fillfactor, b.modifies_data, b.description)


@contextmanager
def local_server(inst: Install, w: Workload, *, max_clients: int = 4,
                 directory: Path | None = None) -> Iterator[LocalServer]:
    """A local server of ``inst`` for ``w``; its clusters in ``directory`` when given (e.g.
    a loop-mounted XFS), else in teiten's clusters directory."""
    run_dir = paths.make_owned(paths.clusters_dir() / f"bench-{os.getpid()}-{time.time_ns()}",
                               "benchmark")
    sizing = Sizing(psutil.virtual_memory().total, psutil.disk_usage(str(directory or run_dir)).free,
                    max_clients, w.data_bytes())
    server = LocalServer(ServerSpec(name=f"pg{inst.major}", install=str(inst.major),
                                    directory=str(directory) if directory else None), inst,
                         run_dir, sizing)
    try:
        yield server
    finally:
        server.close()
        paths.remove_owned(run_dir)


def interleaved_pairs(server: LocalServer, w: Workload, sides: dict[str, Callable[[Endpoint], float]],
                      pairs: int) -> list[float]:
    """Run the two ``sides`` alternately on fresh trials of ``server`` (which goes first
    alternates too, so that drift favours neither); return first/second TPS per pair."""
    first, second = sides
    ratios = []
    for i in range(pairs):
        tps = {}
        for side in ((first, second) if i % 2 == 0 else (second, first)):
            endpoint = server.begin_trial(w, f"{side}-{i}", prewarm=True)
            try:
                tps[side] = sides[side](endpoint)
            finally:
                server.end_trial()
        ratios.append(tps[first] / tps[second])
        print(f"  pair {i + 1}: {first} {tps[first]:.1f} tps, {second} {tps[second]:.1f} tps, "
              f"ratio {ratios[-1]:.3f}", flush=True)
    return ratios


def summary(name: str, values: list[float], unit: str = "") -> str:
    med = statistics.median(values)
    spread = f" (min {min(values):.3f}, max {max(values):.3f}, n={len(values)})"
    return f"{name}: median {med:.3f}{unit}{spread}"
