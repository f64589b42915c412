"""Orchestration: wall time of a whole study (teiten run, from the CLI) divided by the sum
of its load durations, with 10 s trials (target: <= 1.10, issue 24), where the time went
(every trial's cycle summed, as the report's Machine time part shows it), and how close
'teiten plan''s estimate came (target: within 30%; the rates come from this machine's
earlier runs in the benchmarks' TEITEN_HOME, or the defaults on the first run)."""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.common import ROOT, install
from teiten.analysis.gather import study_machine_time
from teiten.store import Store

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
    planned = subprocess.run([sys.executable, "-m", "teiten", "plan", str(study)], check=True,
                             env=dict(os.environ), capture_output=True, text=True).stderr
    said = next(line for line in planned.splitlines() if "estimate:" in line)
    t0 = time.monotonic()
    subprocess.run([sys.executable, "-m", "teiten", "run", str(study), "--store",
                    str(work / "s.db"), "--no-report"], check=True, env=dict(os.environ),
                   stderr=subprocess.DEVNULL)
    wall = time.monotonic() - t0
    trials = 2 * 2 * 2 * reps
    load = trials * duration
    ratio = wall / load
    print(f"orchestration: {trials} trials of {duration} s: wall {wall:.1f} s, load {load} s, "
          f"ratio {ratio:.3f} (target <= 1.10; includes initdb, pgbench -i and snapshots of "
          f"4 clusters)")
    _breakdown(work / "s.db", wall)
    guess = _estimated_s(said)
    print(f"teiten plan said {said.split('estimate: ', 1)[1]}")
    print(f"plan estimate / actual wall: {guess / wall:.3f} ({guess:.0f} s / {wall:.0f} s; "
          "target within 0.7-1.3)")
    return ratio


def _estimated_s(line: str) -> float:
    """The seconds in 'about 1 min 43 s of wall time' / 'about 95 s of ...' / '2 h 05 min'."""
    m = re.search(r"about (?:(\d+) h )?(?:(\d+) min ?)?(?:(\d+) s)? of wall time", line)
    assert m, line
    hours, minutes, seconds = (int(g or 0) for g in m.groups())
    return hours * 3600 + minutes * 60 + seconds


def _breakdown(store: Path, wall: float) -> None:
    """Every trial's cycle summed, and the run's wall time by part as the report gives it
    (loading the data, starting teiten, the noise guard's quiet check, between the trials)."""
    st = Store.open(store)
    try:
        found = study_machine_time(st, st.study_results(1))
    finally:
        st.close()
    assert found is not None and found.run is not None
    print(f"  trials' cycles: {found.phases.total:.1f} s of {wall:.1f} s wall "
          f"({found.phases.total / found.phases.window:.3f} of their windows); by phase: "
          f"{found.phases.text()}")
    parts = found.run.parts(found.phases.total, found.trials)
    assert parts is not None
    print(f"  the run as teiten kept it: {found.run.wall:.1f} s; "
          + ", ".join(f"{name} {s:.1f} s" for name, s in parts.items()))


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--duration", type=int, default=10)
    ap.add_argument("--reps", type=int, default=1)
    a = ap.parse_args()
    main(a.duration, a.reps)
