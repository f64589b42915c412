"""Snapshot restore: bringing back the data after an update trial, divided by
re-initialising it with pgbench -i (+ CHECKPOINT), at several scales, on this machine's disk
and on a loop-mounted XFS made with reflink=1 (where the restore is one reflink clone of the
whole snapshot). Targets: <= 0.25 on the disk at scale 50; on XFS <= 0.02 at scale 50, and
the restore less than 2x from scale 50 to 200 (issue 24).

The restore is measured as the runner does it: a short update trial (the S2 script) dirties
the cluster, and the next trial restores the snapshot before it starts. A scale whose data
(with its snapshot and a re-initialisation beside it) would not fit in the free space is
skipped with a note.

    python -m bench.snapshot                       # disk and XFS at scale 50
    python -m bench.snapshot --fs xfs --scales 50,200,1000 --rounds 2
"""

from __future__ import annotations

import argparse
import itertools
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from bench.common import install, local_server, summary, workload
from bench.loopfs import reflink_xfs, why_not
from teiten.drivers import pgbench
from teiten.host import procs
from teiten.servers.cluster import SUPERUSER

BYTES_PER_SCALE = 19 << 20  # pgbench_accounts at fillfactor 80 and its index, about 18 MB a scale unit


def measure(scale: int, rounds: int, load_s: float, directory: Path | None, *,
            full_copy: bool = True) -> dict[str, float]:
    """Median seconds of a restore, a full copy (where ``full_copy``: it needs room for one
    more copy of the data) and a re-initialisation at ``scale``."""
    inst = install("17")
    w = workload("pgecons-update", scale)
    with local_server(inst, w, directory=directory) as server:
        t0 = time.monotonic()
        server.prepare(w)
        print(f"  prepare (initdb, pgbench -i -s {scale}, snapshot): {time.monotonic() - t0:.1f} s")
        slot = server.slots[w.key]
        cluster = slot.cluster
        method, clone_s = cluster.restore_method()
        print(f"  restore method: {method}" + (f" (one clone at prepare {clone_s:.3f} s)"
                                               if clone_s is not None else ""))
        for i in range(rounds + 1):
            endpoint = server.begin_trial(w, f"trial-{i}", prewarm=False)  # restores if dirty
            if i < rounds:
                pgbench.run(inst, endpoint, w, clients=2, threads=1, duration_s=load_s)
            server.end_trial()
        restores = slot.restore_s
        copies, inits = [], []
        for _ in range(rounds if full_copy else 0):
            scratch = cluster.root / "copy-test"
            t0 = time.monotonic()
            procs.run(["cp", "-a", str(slot.snapshot / "data"), str(scratch)], timeout=3600)
            copies.append(time.monotonic() - t0)
            shutil.rmtree(scratch)
        cluster.start(cluster.root / "logs" / "reinit")
        for _ in range(rounds):
            t0 = time.monotonic()
            procs.run([str(inst.binary("pgbench")), *w.init_args(), "-h", cluster.host, "-p",
                       str(cluster.port), "-U", SUPERUSER, w.database], timeout=7200)
            with cluster.connect(w.database) as conn:
                conn.execute("CHECKPOINT")
            inits.append(time.monotonic() - t0)
        cluster.stop()
        for i, (r, n) in enumerate(zip(restores, inits, strict=True)):
            copy = f"full copy {copies[i]:.2f} s, " if copies else ""
            print(f"  round {i + 1}: restore after a {load_s:g} s update trial {r:.3f} s, "
                  f"{copy}pgbench -i + checkpoint {n:.2f} s", flush=True)
    print("  " + summary("snapshot restore seconds", restores))
    if copies:
        print("  " + summary("full copy of the snapshot (cp -a) seconds", copies))
    else:
        print("  full copy skipped: no room for one more copy of the data")
    print("  " + summary("re-initialisation (pgbench -i + CHECKPOINT) seconds", inits))
    return {"restore": statistics.median(restores),
            "copy": statistics.median(copies) if copies else float("nan"),
            "init": statistics.median(inits)}


def _fits(scale: int, where: Path, *, copies: int, say: bool = True) -> bool:
    need = scale * BYTES_PER_SCALE * copies
    free = shutil.disk_usage(where).free
    if need > free * 0.9:
        if say:
            print(f"  scale {scale} skipped: it needs about {need >> 30} GiB, {free >> 30} GiB free")
        return False
    return True


def run(fs: str, scales: list[int], rounds: int, load_s: float) -> dict[int, dict[str, float]]:
    found: dict[int, dict[str, float]] = {}
    if fs == "disk":
        for scale in scales:
            print(f"-- this machine's disk, scale {scale}", flush=True)
            # The cluster, its snapshot and the re-initialisation beside them; a full copy needs
            # room for one more.
            if _fits(scale, Path(tempfile.gettempdir()), copies=3):
                found[scale] = measure(scale, rounds, load_s, None, full_copy=_fits(
                    scale, Path(tempfile.gettempdir()), copies=4, say=False))
        return found
    if (lacking := why_not()) is not None:
        print(f"  XFS skipped: {lacking}")
        return found
    for scale in scales:
        print(f"-- loop-mounted XFS (reflink=1), scale {scale}", flush=True)
        # The cluster, the snapshot's blocks an update trial unshares, a full copy, and the
        # re-initialisation's new tables and WAL beside the old ones: room for eight times
        # the data (the image is sparse: only what is written takes space on the disk).
        size_mb = max(600, scale * BYTES_PER_SCALE * 8 >> 20)
        if not _fits(scale, Path(tempfile.gettempdir()), copies=5):
            continue
        with tempfile.TemporaryDirectory(prefix="teiten-bench-xfs-") as tmp, \
                reflink_xfs(Path(tmp), size_mb) as mount:
            found[scale] = measure(scale, rounds, load_s, mount)
    return found


def main(fs: str = "both", scales: tuple[int, ...] = (50,), rounds: int = 3,
         load_s: float = 5) -> float:
    """Print every figure; returns restore / re-initialisation on the disk at the first scale."""
    results = {kind: run(kind, list(scales), rounds, load_s)
               for kind in (("disk", "xfs") if fs == "both" else (fs,))}
    ratio = float("nan")
    for kind, by_scale in results.items():
        for scale, f in by_scale.items():
            r = f["restore"] / f["init"]
            copy = (f"; a full copy would be {f['copy'] / f['init']:.3f}"
                    if f["copy"] == f["copy"] else "")
            print(f"{kind} scale {scale}: snapshot restore / re-initialisation {r:.4f} "
                  f"(restore {f['restore']:.3f} s, re-initialisation {f['init']:.2f} s){copy}")
            if kind == "disk" and ratio != ratio:
                ratio = r
        known = sorted(by_scale)
        for a, b in itertools.pairwise(known):
            print(f"{kind}: restore grows {by_scale[b]['restore'] / by_scale[a]['restore']:.2f}x "
                  f"from scale {a} to {b} (data {b / a:g}x)")
    print("targets: disk scale 50 <= 0.25; XFS scale 50 <= 0.02 and < 2x from 50 to 200")
    return ratio


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--fs", choices=("both", "disk", "xfs"), default="both")
    ap.add_argument("--scales", default="50", help="comma-separated pgbench scales")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--load", type=float, default=5, help="seconds of each update trial")
    a = ap.parse_args()
    main(a.fs, tuple(int(s) for s in a.scales.split(",")), a.rounds, a.load)
