"""What the compiler cache saves a source build (python -m bench.ccache_builds; issue 38, item 4).

Two checkouts of the same PostgreSQL source (15, from teiten fetch-source into .cache/teiten-bench/src,
copied twice; one file that is not compiled is touched in the second, so that its key and its
build directory differ, as a nearby commit's would) are built one after the other by
``teiten install --from-source``, in a TEITEN_HOME and a ccache directory of their own: the
first fills the cache (cold), the second finds the same objects from another build directory
(warm). It prints each build's wall time and ccache's hits and misses. Run it on an otherwise
quiet machine; it takes two builds (about 5 minutes on 2 CPUs).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from teiten.installs import ccache

ROOT = Path(__file__).resolve().parents[1]


def pg15_source() -> Path:
    done = subprocess.run([sys.executable, "-m", "teiten", "fetch-source", "15",
                           str(ROOT / ".cache" / "teiten-bench" / "src")], text=True,
                          capture_output=True, check=True, timeout=1200)
    return Path(done.stdout.strip().splitlines()[-1])


def _stats(env: dict[str, str]) -> dict[str, int]:
    out = subprocess.run(["ccache", "--print-stats"], env=env, text=True, capture_output=True,
                         check=True).stdout
    return {k: int(v) for k, v in (line.split("\t")[:2] for line in out.splitlines()
                                   if "\t" in line and line.split("\t")[1].isdigit())}


def main() -> None:
    if ccache.links() is None:
        print("ccache is not installed (make system installs it): nothing to measure")
        return
    source = pg15_source()
    with tempfile.TemporaryDirectory(prefix="teiten-ccache-bench-") as tmp:
        work = Path(tmp)
        env = dict(os.environ, TEITEN_HOME=str(work / "home"), CCACHE_DIR=str(work / "ccache"),
                   PYTHONPATH=str(ROOT / "src"))
        env.pop("TEITEN_CCACHE", None)
        for name in ("one", "two"):
            shutil.copytree(source, work / name, symlinks=True)
        (work / "two" / "README").touch()  # another key, another build directory
        for name, label in (("one", "cold (empty cache)"), ("two", "warm (another checkout)")):
            before = _stats(env)
            started = time.monotonic()
            done = subprocess.run([sys.executable, "-m", "teiten", "install", "--from-source",
                                   str(work / name), "--name", f"ccache-{name}",
                                   "--configure=--without-icu"],
                                  env=env, capture_output=True, text=True)
            if done.returncode != 0:
                sys.exit(f"the {label} build failed: {done.stderr.strip()}")
            took = time.monotonic() - started
            after = _stats(env)
            hits = sum(after.get(k, 0) - before.get(k, 0)
                       for k in ("direct_cache_hit", "preprocessed_cache_hit"))
            misses = after.get("cache_miss", 0) - before.get("cache_miss", 0)
            print(f"{label:26} {took:6.1f} s; ccache: {hits} hits, {misses} misses")


if __name__ == "__main__":
    main()
