"""Orchestration: wall time of a whole study (teiten run, from the CLI) divided by the sum
of its load durations, with 10 s trials. Target: <= 1.3."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.common import ROOT, install

STUDY = """
study: bench-orchestration
servers:
  - {{name: pg17, install: "17"}}
  - {{name: pg18, install: "18"}}
workloads: [pgecons-read, {{name: pgecons-update, fillfactor: 80}}]
scale: 10
clients: [1, 2]
duration: {duration}s
repetitions: {reps}
"""


def main(duration: int = 10, reps: int = 1) -> float:
    install("17")
    install("18")
    work = Path(tempfile.mkdtemp(prefix="teiten-bench-", dir=ROOT / ".cache"))
    work.chmod(0o755)
    study = work / "study.yaml"
    study.write_text(STUDY.format(duration=duration, reps=reps))
    t0 = time.monotonic()
    subprocess.run([sys.executable, "-m", "teiten", "run", str(study), "--store",
                    str(work / "s.db"), "--no-report"], check=True, env=dict(os.environ),
                   stderr=subprocess.DEVNULL)
    wall = time.monotonic() - t0
    trials = 2 * 2 * 2 * reps
    load = trials * duration
    ratio = wall / load
    print(f"orchestration: {trials} trials of {duration} s: wall {wall:.1f} s, load {load} s, "
          f"ratio {ratio:.3f} (target <= 1.3; includes initdb, pgbench -i and snapshots of "
          f"4 clusters)")
    return ratio


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--duration", type=int, default=10)
    ap.add_argument("--reps", type=int, default=1)
    a = ap.parse_args()
    main(a.duration, a.reps)
