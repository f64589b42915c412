"""Harness overhead: TPS of a teiten trial divided by a plain pgbench run with the same
arguments on the same cluster, interleaved in pairs. Target: median ratio >= 0.98."""

from __future__ import annotations

import argparse
import statistics
import subprocess

from bench.common import install, interleaved_pairs, local_server, summary, workload
from teiten.drivers import pgbench
from teiten.drivers.pgbench_output import parse
from teiten.servers.base import Endpoint


def main(pairs: int = 5, duration: float = 10, clients: int = 2) -> float:
    inst = install("17")
    w = workload("pgecons-read", 10)
    threads = max(1, clients // 2)

    def teiten(endpoint: Endpoint) -> float:
        run = pgbench.run(inst, endpoint, w, clients=clients, threads=threads,
                          duration_s=duration)
        return float(run.output.tps or 0)

    def plain(endpoint: Endpoint) -> float:
        argv = pgbench.argv(inst, endpoint, w, clients=clients, threads=threads,
                            duration_s=duration)
        done = subprocess.run(argv, capture_output=True, text=True, check=True)
        return float(parse(done.stdout, done.stderr).tps or 0)

    with local_server(inst, w) as server:
        server.prepare(w)
        ratios = interleaved_pairs(server, w, {"teiten": teiten, "plain": plain}, pairs)
    print(summary("harness overhead, teiten/plain TPS ratio (target >= 0.98)", ratios))
    return statistics.median(ratios)


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--pairs", type=int, default=5)
    ap.add_argument("--duration", type=float, default=10)
    a = ap.parse_args()
    main(a.pairs, a.duration)
