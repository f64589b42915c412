"""Monitor overhead: median TPS with the monitors on divided by TPS with them off,
select-only, 2 clients, interleaved pairs. Target: >= 0.99."""

from __future__ import annotations

import argparse
import statistics

from bench.common import install, local_server, summary, workload
from teiten.drivers import pgbench
from teiten.monitors import Monitors


def main(pairs: int = 5, duration: float = 10, clients: int = 2) -> float:
    inst = install("17")
    w = workload("select-only", 10)
    ratios = []
    with local_server(inst, w) as server:
        server.prepare(w)
        for i in range(pairs):
            tps = {}
            for side in (("on", "off") if i % 2 == 0 else ("off", "on")):
                endpoint = server.begin_trial(w, f"{side}-{i}", prewarm=True)
                watch = Monitors(endpoint, devices=server.devices()) if side == "on" else None
                if watch:
                    watch.start()
                run = pgbench.run(inst, endpoint, w, clients=clients, threads=1,
                                  duration_s=duration)
                if watch:
                    watch.stop()
                server.end_trial()
                tps[side] = run.output.tps
            ratios.append(tps["on"] / tps["off"])
            print(f"  pair {i + 1}: on {tps['on']:.1f} tps, off {tps['off']:.1f} tps, "
                  f"ratio {ratios[-1]:.3f}", flush=True)
    print(summary("monitor overhead, TPS on/off (target >= 0.99)", ratios))
    return statistics.median(ratios)


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--pairs", type=int, default=5)
    ap.add_argument("--duration", type=float, default=10)
    a = ap.parse_args()
    main(a.pairs, a.duration)
