"""A/A floor of builds: copies of ONE install, compared as if they were builds
(python -m bench.aa_installs).

Bisect, gate and timeline compare builds: installs whose programs are different files. Two
files of the same bytes should measure the same, and an interval over paired blocks says
nothing about a difference that stays with a file for the whole study. On the VM this was
written on (Firecracker, 2 vCPUs) a build measured 20-25% slower than builds of the same code,
in three studies over half an hour, and like them after ``echo 1 > /proc/sys/vm/drop_caches``:
what differed was where its programs sat in memory (the page cache), not its code.

This measures that floor on this machine: ``--copies`` copies of the PostgreSQL 17 install
(the same bytes in other directories), one study of them as servers (pgecons-read at 1 client,
scale 1, ``--duration`` s trials, ``--repetitions`` blocks in random order), ``--rounds`` times;
before every round but the first (and every round with ``--evict``) each copy's files leave the
page cache (posix_fadvise DONTNEED), so that the next round reads them again. Printed, each
round: each copy's median TPS, its ratio to the first copy with the paired interval the report
computes, and the spread of the medians (largest over smallest, less 1). Nothing is asserted:
a spread well above what the intervals allow is a bias between files of this machine, which
comparisons of builds here carry, and no number of repetitions removes. teiten now drops each
server's programs from the page cache before every start (teiten.host.oscache.evict_programs), so
that the placement is drawn again for every trial: run from a checkout before that change, this
printed intervals that excluded 1 for copies of the same bytes; from one after it, none did
(docs/guide/history-and-ci.md, "The commit that did it").
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from bench.common import ROOT, install
from teiten.analysis import intervals

STUDY = """
study: bench-aa-installs
servers:
{servers}
workloads: [pgecons-read]
clients: [1]
scale: 1
duration: {duration}s
repetitions: {repetitions}
"""


def evict(root: Path) -> int:
    """Drop every regular file under ``root`` from the page cache; how many."""
    n = 0
    for where, _, files in os.walk(root):
        for name in files:
            path = os.path.join(where, name)
            if os.path.islink(path):
                continue
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
            try:
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            finally:
                os.close(fd)
            n += 1
    return n


def one_round(work: Path, copies: list[Path], n: int, args: argparse.Namespace) -> None:
    servers = "\n".join(f"  - {{name: copy{i + 1}, install: {c / 'bin'}}}" for i, c in enumerate(copies))
    study = work / f"round{n}.yaml"
    study.write_text(STUDY.format(servers=servers, duration=args.duration,
                                  repetitions=args.repetitions))
    store = work / f"round{n}.db"
    teiten = [sys.executable, "-m", "teiten"]
    done = subprocess.run([*teiten, "run", str(study), "--store", str(store), "--no-report"],
                          cwd=ROOT, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"teiten run exited {done.returncode}:\n{done.stderr[-2000:]}")
    rows = json.loads(subprocess.run([*teiten, "results", "--store", str(store), "--format", "json"],
                                     check=True, capture_output=True, text=True, cwd=ROOT).stdout)
    ok = [r for r in rows if r["status"] == "ok"]
    by = {f"copy{i + 1}": [(r["tps"], r["repetition"]) for r in ok if r["server"] == f"copy{i + 1}"]
          for i in range(len(copies))}
    first = by["copy1"]
    medians = {}
    for name, found in by.items():
        values = [t for t, _ in found]
        medians[name] = statistics.median(values)
        line = f"  {name}: median TPS {medians[name]:8.1f} over {len(values)} trials"
        ratio = None if name == "copy1" else intervals.ratio_interval(
            values, [t for t, _ in first], blocks=[b for _, b in found],
            baseline_blocks=[b for _, b in first])
        if ratio is not None:
            line += (f"; / copy1 {ratio.value:.3f} [{ratio.low:.3f}, {ratio.high:.3f}] at "
                     f"{ratio.confidence * 100:.1f}%")
        print(line, flush=True)
    spread = max(medians.values()) / min(medians.values()) - 1
    print(f"  spread of the medians: {spread * 100:.1f}%", flush=True)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--copies", type=int, default=4)
    parser.add_argument("--repetitions", type=int, default=8)
    parser.add_argument("--duration", type=int, default=1)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--evict", action="store_true", help="evict before the first round too")
    args = parser.parse_args(argv)
    source = install("17").bindir.parent
    with tempfile.TemporaryDirectory(prefix="bench-aa-") as tmp:
        work = Path(tmp)
        work.chmod(0o755)
        copies = []
        for i in range(args.copies):
            copy = work / f"install{i + 1}"
            shutil.copytree(source, copy, symlinks=True)
            copies.append(copy)
        for n in range(args.rounds):
            if n or args.evict:
                files = sum(evict(c) for c in copies)
                print(f"round {n + 1}, after evicting {files} files of the copies:", flush=True)
            else:
                print(f"round {n + 1}, the copies as made (in the page cache):", flush=True)
            one_round(work, copies, n + 1, args)


if __name__ == "__main__":
    main()
