"""Snapshot restore: restoring the stopped cluster copy, divided by re-initialising the
data with pgbench -i, at scale 50. Target: <= 0.25."""

from __future__ import annotations

import argparse
import statistics
import time

from bench.common import install, local_server, summary, workload
from teiten import procs
from teiten.servers.cluster import SUPERUSER


def main(scale: int = 50, rounds: int = 3) -> float:
    inst = install("17")
    w = workload("pgecons-update", scale)
    with local_server(inst, w) as server:
        t0 = time.monotonic()
        server.prepare(w)
        print(f"  prepare (initdb, pgbench -i -s {scale}, snapshot): {time.monotonic() - t0:.1f} s")
        slot = server.slots[w.key]
        cluster = slot.cluster
        restores, restarts, inits = [], [], []
        for i in range(rounds):
            restores.append(cluster.restore(slot.snapshot))
            t0 = time.monotonic()
            cluster.start(cluster.root / "logs" / f"bench-{i}")
            restarts.append(time.monotonic() - t0 + restores[-1])
            t0 = time.monotonic()
            procs.run([str(inst.binary("pgbench")), *w.init_args(), "-h", cluster.host, "-p",
                       str(cluster.port), "-U", SUPERUSER, w.database], timeout=3600)
            with cluster.connect(w.database) as conn:
                conn.execute("CHECKPOINT")
            inits.append(time.monotonic() - t0)
            cluster.stop()
            print(f"  round {i + 1}: restore {restores[-1]:.2f} s, restore+start "
                  f"{restarts[-1]:.2f} s, pgbench -i + checkpoint {inits[-1]:.2f} s", flush=True)
    ratio = statistics.median(restores) / statistics.median(inits)
    print(summary("snapshot restore (cp) seconds", restores))
    print(summary("re-initialisation (pgbench -i -I dtGvp -F 80 + CHECKPOINT) seconds", inits))
    print(f"snapshot restore / re-initialisation at scale {scale}: {ratio:.3f} (target <= 0.25); "
          f"with the server start: "
          f"{statistics.median(restarts) / statistics.median(inits):.3f}")
    return ratio


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--scale", type=int, default=50)
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    main(a.scale, a.rounds)
