"""What a build of a git commit costs, cold and warm (python -m bench.git_builds; issue 35,
item 1).

A git repository of the PostgreSQL 15 source (teiten fetch-source into .cache/teiten-bench/src,
committed as the test suite's pg_git_repo fixture does: tests/gitrepo.py) in a directory of its
own; then, in a TEITEN_HOME and a ccache directory of their own, ``teiten install --from-git``
of its base commit (cold: an empty cache), of the next commit (warm: a comment added to int.c,
so one file misses), of a commit that changes only the README (warm: nothing misses; still a
new install, its commit being its identity), and the first again (reused, nothing built). It
prints each one's wall time and ccache's hits and misses as the build recorded them. Run it on
an otherwise quiet machine; it takes one cold build and two warm ones (about 15 minutes on 2
CPUs).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.ccache_builds import pg15_source
from teiten.installs import ccache, discover

ROOT = Path(__file__).resolve().parents[1]


def _install(env: dict[str, str], repo: Path, commit: str) -> tuple[float, str, dict[str, object]]:
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "teiten", "install", "--from-git", str(repo),
                           "--commit", commit, "--configure=--without-icu"],
                          env=env, capture_output=True, text=True)
    took = time.monotonic() - started
    if done.returncode != 0:
        sys.exit(f"the build of {commit[:12]} failed: {done.stderr.strip()}")
    bindir = Path(done.stdout.strip().splitlines()[-1].rsplit(": ", 1)[1])
    return took, done.stdout, discover.read_metadata(bindir.parent) or {}


def main() -> None:
    if ccache.links() is None:
        print("ccache is not installed (make system installs it): nothing to measure")
        return
    sys.path.insert(0, str(ROOT))
    from tests import gitrepo  # late: the test suite's repository, made the same way

    source = pg15_source()
    with tempfile.TemporaryDirectory(prefix="teiten-git-bench-") as tmp:
        work = Path(tmp)
        repo = gitrepo.make(source, work / source.name)
        env = dict(os.environ, TEITEN_HOME=str(work / "home"), CCACHE_DIR=str(work / "ccache"),
                   PYTHONPATH=str(ROOT / "src"))
        env.pop("TEITEN_CCACHE", None)
        base, comment, readme = repo.commits[0], repo.commits[1], repo.commits[2]
        for commit, label in ((base, "cold (empty cache)"),
                              (comment, "warm (a comment in int.c)"),
                              (readme, "warm (README only)"),
                              (base, "asked again (reused)")):
            took, output, meta = _install(env, repo.path, commit.hash)
            counts = meta.get("ccache_counts") if "built in" in output else None
            said = (f"ccache: {counts['hits']} hits, {counts['misses']} misses"  # type: ignore[index]
                    if counts else "nothing compiled")
            print(f"{label:28} {commit.hash[:12]} {took:6.1f} s; {said}", flush=True)


if __name__ == "__main__":
    main()
