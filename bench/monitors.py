"""Monitor overhead: median TPS with the monitors on divided by TPS with them off,
select-only, 2 clients, interleaved pairs. Target: >= 0.99.

And the step meter's cost (teiten.monitors.system.StepMeter): each timed statement of a
measured-statement trial is read around by two readings and one difference, outside its timed
part; printed in microseconds per step. Target: under 1 ms a step (a suite of thousands of
short queries then spends under a second on it)."""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

from bench.common import install, interleaved_pairs, local_server, summary, workload
from teiten.drivers import pgbench
from teiten.monitors.activity import Monitors
from teiten.monitors.system import StepMeter, device_of
from teiten.servers.base import Endpoint


def step_meter_cost(steps: int = 2000) -> float:
    """Microseconds per step: two readings of this machine and their difference."""
    meter = StepMeter(device_of(Path.home()))
    started = time.perf_counter()
    for _ in range(steps):
        meter.figures(meter.read(), meter.read())
    per_step = (time.perf_counter() - started) / steps * 1e6
    print(f"step meter: {per_step:.0f} µs a step over {steps} steps (device {meter.device}; "
          "target < 1000)")
    return per_step


def main(pairs: int = 5, duration: float = 10, clients: int = 2) -> float:
    step_meter_cost()
    inst = install("17")
    w = workload("select-only", 10)
    with local_server(inst, w) as server:
        server.prepare(w)

        def load(endpoint: Endpoint) -> float:
            run = pgbench.run(inst, endpoint, w, clients=clients, threads=1, duration_s=duration)
            return float(run.output.tps or 0)

        def monitored(endpoint: Endpoint) -> float:
            watch = Monitors(endpoint.conninfo(), devices=server.devices())
            watch.start()
            try:
                return load(endpoint)
            finally:
                watch.stop()

        ratios = interleaved_pairs(server, w, {"on": monitored, "off": load}, pairs)
    print(summary("monitor overhead, TPS on/off (target >= 0.99)", ratios))
    return statistics.median(ratios)


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--pairs", type=int, default=5)
    ap.add_argument("--duration", type=float, default=10)
    a = ap.parse_args()
    main(a.pairs, a.duration)
