"""Harness overhead: TPS of a teiten trial divided by a plain pgbench run with the same
arguments on the same cluster, interleaved in pairs. Target: median ratio >= 0.98."""

from __future__ import annotations

import argparse
import statistics
import subprocess

from bench.common import install, local_server, summary, workload
from teiten.drivers import pgbench
from teiten.drivers.pgbench_output import parse


def main(pairs: int = 5, duration: float = 10, clients: int = 2) -> float:
    inst = install("17")
    w = workload("pgecons-read", 10)
    ratios = []
    with local_server(inst, w) as server:
        server.prepare(w)
        for i in range(pairs):
            tps = {}
            # Alternate which goes first, so that drift does not favour one side.
            for side in (("teiten", "plain") if i % 2 == 0 else ("plain", "teiten")):
                endpoint = server.begin_trial(w, f"{side}-{i}", prewarm=True)
                argv = pgbench.argv(inst, endpoint, w, clients=clients,
                                    threads=max(1, clients // 2), duration_s=duration)
                if side == "teiten":
                    run = pgbench.run(inst, endpoint, w, clients=clients,
                                      threads=max(1, clients // 2), duration_s=duration)
                    tps[side] = run.output.tps
                else:
                    done = subprocess.run(argv, capture_output=True, text=True, check=True)
                    tps[side] = parse(done.stdout, done.stderr).tps
                server.end_trial()
            ratios.append(tps["teiten"] / tps["plain"])
            print(f"  pair {i + 1}: teiten {tps['teiten']:.1f} tps, plain {tps['plain']:.1f} tps, "
                  f"ratio {ratios[-1]:.3f}", flush=True)
    print(summary("harness overhead, teiten/plain TPS ratio (target >= 0.98)", ratios))
    return statistics.median(ratios)


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--pairs", type=int, default=5)
    ap.add_argument("--duration", type=float, default=10)
    a = ap.parse_args()
    main(a.pairs, a.duration)
