"""Snapshot restore: bringing back the data after an update trial, divided by
re-initialising it with pgbench -i (+ CHECKPOINT), at scale 50. Target: <= 0.25.

The restore is measured as the runner does it: a short update trial (the S2 script)
dirties the cluster, and the next trial restores the snapshot before it starts.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import time

from bench.common import install, local_server, summary, workload
from teiten import procs
from teiten.drivers import pgbench
from teiten.servers.cluster import SUPERUSER


def main(scale: int = 50, rounds: int = 3, load_s: float = 5) -> float:
    inst = install("17")
    w = workload("pgecons-update", scale)
    with local_server(inst, w) as server:
        t0 = time.monotonic()
        server.prepare(w)
        print(f"  prepare (initdb, pgbench -i -s {scale}, snapshot): {time.monotonic() - t0:.1f} s")
        slot = server.slots[w.key]
        cluster = slot.cluster
        for i in range(rounds + 1):
            endpoint = server.begin_trial(w, f"trial-{i}", prewarm=False)  # restores if dirty
            if i < rounds:
                pgbench.run(inst, endpoint, w, clients=2, threads=1, duration_s=load_s)
            server.end_trial()
        restores = slot.restore_s
        copies, inits = [], []
        for _ in range(rounds):
            scratch = cluster.root / "copy-test"
            t0 = time.monotonic()
            procs.run(["cp", "-a", str(slot.snapshot / "data"), str(scratch)], timeout=3600)
            copies.append(time.monotonic() - t0)
            shutil.rmtree(scratch)
        cluster.start(cluster.root / "logs" / "reinit")
        for _ in range(rounds):
            t0 = time.monotonic()
            procs.run([str(inst.binary("pgbench")), *w.init_args(), "-h", cluster.host, "-p",
                       str(cluster.port), "-U", SUPERUSER, w.database], timeout=3600)
            with cluster.connect(w.database) as conn:
                conn.execute("CHECKPOINT")
            inits.append(time.monotonic() - t0)
        cluster.stop()
        for i, (r, c, n) in enumerate(zip(restores, copies, inits, strict=True)):
            print(f"  round {i + 1}: restore after a {load_s:g} s update trial {r:.2f} s, "
                  f"full copy {c:.2f} s, pgbench -i + checkpoint {n:.2f} s", flush=True)
    ratio = statistics.median(restores) / statistics.median(inits)
    print(summary("snapshot restore seconds", restores))
    print(summary("full copy of the snapshot (cp -a) seconds", copies))
    print(summary("re-initialisation (pgbench -i -I dtGvp -F 80 + CHECKPOINT) seconds", inits))
    print(f"snapshot restore / re-initialisation at scale {scale}: {ratio:.3f} (target <= 0.25); "
          f"a full copy would be {statistics.median(copies) / statistics.median(inits):.3f}")
    return ratio


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--scale", type=int, default=50)
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    main(a.scale, a.rounds)
