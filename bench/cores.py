"""Cores as a factor: what one more core buys on this machine (python -m bench.cores).

The test suite checks the mechanism of ``cores:`` (every server process stays on its CPUs,
an escape fails the trial); how much faster two cores are than one is a figure of the
machine, printed here and not asserted, so that the suite stays green on a busy machine.

One study runs through the real CLI: pg17, select-only at scale 2 and 4 clients, ``cores:
[1, 2]``, ``--repetitions`` blocks of ``--duration`` each, in random order, with the noise
guard on. Printed: the median TPS of each core count, and the ratio of 2 cores to 1 with its
interval and the level it reaches, as the report computes them (signed-rank over the blocks).
On a quiet 2-CPU machine expect a ratio well above 1 (select-only is CPU-bound); near 1 means
the machine has one usable CPU, or other load took the second.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from bench.common import ROOT
from teiten.analysis import intervals

STUDY = """
study: bench-cores
servers: [{{name: pg17, install: "17"}}]
workloads: [select-only]
cores: [1, 2]
clients: [4]
scale: 2
duration: {duration}s
repetitions: {repetitions}
"""


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repetitions", type=int, default=6)
    parser.add_argument("--duration", type=int, default=5)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="bench-cores-") as tmp:
        work = Path(tmp)
        work.chmod(0o755)
        (work / "cores.yaml").write_text(STUDY.format(duration=args.duration,
                                                      repetitions=args.repetitions))
        store = work / "cores.db"
        teiten = [sys.executable, "-m", "teiten"]
        subprocess.run([*teiten, "run", str(work / "cores.yaml"), "--store", str(store),
                        "--no-report"], check=True, cwd=ROOT)
        rows = json.loads(subprocess.run([*teiten, "results", "--store", str(store), "--format",
                                          "json"], check=True, capture_output=True, text=True,
                                         cwd=ROOT).stdout)
    ok = [r for r in rows if r["status"] == "ok"]
    by = {n: [(r["tps"], r["repetition"]) for r in ok if r["server"] == f"pg17-{n}"]
          for n in ("1core", "2cores")}
    for name, found in by.items():
        values = [t for t, _ in found]
        print(f"{name:7s} median TPS {statistics.median(values):10.1f} over {len(values)} trials "
              f"({', '.join(f'{v:.0f}' for v in values)})")
    two, one = by["2cores"], by["1core"]
    ratio = intervals.ratio_interval([t for t, _ in two], [t for t, _ in one],
                                     blocks=[b for _, b in two], baseline_blocks=[b for _, b in one])
    if ratio is None:
        print("2 cores / 1 core: no interval (too few trials)")
        return
    print(f"2 cores / 1 core: {ratio.value:.3f} [{ratio.low:.3f}, {ratio.high:.3f}] at "
          f"{ratio.confidence * 100:.1f}% ({ratio.method})")


if __name__ == "__main__":
    main()
