"""How fast the command line answers (python -m bench.cli_imports; issue 38, item 5).

``teiten --help``, ``teiten run --help`` and a mistyped option must answer at once: the command
line imports its commands, the store's addresses and the durations only once a command needs
them. For each command line below this prints the median wall time of 10 runs, the import time
Python's ``-X importtime`` counts, and the heaviest modules it imported; then whether any of the
modules --help must not import (the analysis, the report, the runner, numpy, pydantic, psycopg)
was imported. ``teiten plan`` of the default study is there for contrast: a command that runs
imports what it needs. Figures are printed, not asserted (tests/unit/test_cli_imports.py asserts
the list of modules, which does not depend on the machine's speed).
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HEAVY = ("teiten.analysis", "teiten.report", "teiten.run.runner", "numpy", "pydantic", "psycopg")
# A mistyped option of a command that takes a store reads its address (psycopg's conninfo
# parser) before it says what is wrong: argparse converts the default store too.
LINES = (["--help"], ["run", "--help"], ["--version"], ["run", "--bogus"], ["plan"])


def imports(argv: list[str]) -> list[tuple[str, int]]:
    """(module, cumulative microseconds) of every module ``teiten ARGV`` imported."""
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
    done = subprocess.run([sys.executable, "-X", "importtime", "-m", "teiten", *argv], env=env,
                          capture_output=True, text=True, timeout=120, check=False)
    found = []
    for line in done.stderr.splitlines():
        if line.startswith("import time:") and "|" in line:
            _, cumulative, name = (part.strip() for part in line.split(":", 1)[1].split("|"))
            if cumulative.isdigit():
                found.append((name, int(cumulative)))
    return found


def heavy(found: list[tuple[str, int]]) -> list[str]:
    """Which of the packages --help must not import were imported."""
    return [h for h in HEAVY if any(name == h or name.startswith(h + ".") for name, _ in found)]


def wall(argv: list[str], runs: int = 10) -> float:
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run([sys.executable, "-m", "teiten", *argv], env=env, capture_output=True,
                       timeout=120, check=False)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    wall(["--version"], runs=1)  # warm the file cache
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", "pass"], check=True)
    python = time.perf_counter() - start
    print(f"python -c pass: {python * 1000:.0f} ms (the floor)")
    for argv in LINES:
        found = imports(argv)
        top = sorted((c for n, c in found if n.startswith("teiten") or "." not in n), reverse=True)
        total = max((c for _, c in found), default=0)
        named = sorted(found, key=lambda f: -f[1])[:4]
        print(f"teiten {' '.join(argv):<14} median {wall(argv) * 1000:5.0f} ms; imports "
              f"{total / 1000:.0f} ms (largest: "
              f"{', '.join(f'{n} {c / 1000:.0f}' for n, c in named)}); "
              f"{len(top)} top-level modules")
        print(f"  of {', '.join(HEAVY)}, it imported: {', '.join(heavy(found)) or 'none'}")


if __name__ == "__main__":
    main()
