"""A compiler cache for source builds: ccache, where the machine has it.

A build of nearby commits, or of the same source in another build directory, compiles mostly
the same files again. ccache keeps their objects and hands them back. teiten uses it the way
distributions package it: a directory of links named after the compilers (gcc, cc, ...),
first in the build's PATH. So configure still finds and records ``gcc``, and ``pg_config CC``
and the build's key do not change with the cache (the Differences table never calls the cache
a build difference).

Hits across build directories and checkouts come from one layout and two settings:
- every build compiles its source at the same place relative to its build directory:
  ``builds/<key>/src/postgresql-<version>``, an unpacked tarball or a copy of a checkout
  (teiten.installs.source_workspace), beside ``builds/<key>/build``;
- ``CCACHE_BASEDIR``, the deepest directory that holds both the source and the build
  (``builds/<key>``), so that their absolute paths are hashed relative to the compiler's
  working directory;
- ``CCACHE_NOHASHDIR``, so that the working directory itself is not hashed (PostgreSQL's default
  CFLAGS carry no -g, whose debug information would name it).

The cache lives where ccache keeps it by default, outside any checkout (``~/.cache/ccache``, or
``$CCACHE_DIR``); as root, builds run as the build account (installs/source_workspace.py), and
the cache is that account's, ``$TEITEN_HOME/ccache``. ``TEITEN_CCACHE=off`` turns it off; so
does a machine without ccache.
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass
from pathlib import Path

from teiten.host import paths, safefs
from teiten.host.procs import RunAs

# Where distributions put ccache's compiler links (Debian and Ubuntu, Fedora, a source build).
LINK_DIRS = (Path("/usr/lib/ccache"), Path("/usr/lib64/ccache"), Path("/usr/local/lib/ccache"))


def links() -> Path | None:
    """The directory of ccache's compiler links, None without one (or when turned off)."""
    if os.environ.get("TEITEN_CCACHE", "").lower() in ("off", "0", "no", "false"):
        return None
    return next((d for d in LINK_DIRS if (d / "gcc").exists() or (d / "cc").exists()), None)


def build_env(path: str, source: Path, build: Path, stats_log: Path | None = None, *,
              owner: RunAs | None = None) -> dict[str, str]:
    """The variables a build that uses the cache adds to its environment (``path``: the
    build's PATH), or nothing when there is no cache. With ``stats_log``, ccache appends there
    what each compile was (a hit, a miss...): :func:`counts` reads it. With ``owner`` (the
    build account, teiten being root) the cache is ``$TEITEN_HOME/ccache``, that account's
    (:func:`owned_dir`)."""
    found = links()
    if found is None:
        return {}
    base = os.path.commonpath([os.path.realpath(source), os.path.realpath(build)])
    env = {"PATH": f"{found}:{path}", "CCACHE_NOHASHDIR": "1"}
    if base != "/":
        env["CCACHE_BASEDIR"] = base
    if owner is not None:
        env["CCACHE_DIR"] = str(owned_dir(owner))
    elif os.environ.get("CCACHE_DIR"):
        env["CCACHE_DIR"] = os.environ["CCACHE_DIR"]
    if stats_log is not None:
        env["CCACHE_STATSLOG"] = str(stats_log)
    return env


def owned_dir(owner: RunAs) -> Path:
    """``$TEITEN_HOME/ccache``, made for the build account ``owner`` when missing: the
    compiler cache of every build teiten runs as that account, kept where the next build (of
    another checkout too) finds it. Root never works in it."""
    where = paths.home() / "ccache"
    if not os.path.lexists(where):
        paths.refuse_replaceable(where.parent, f"TEITEN_HOME {where.parent}")
        where.parent.mkdir(parents=True, exist_ok=True)  # safe: teiten's home, checked above
        safefs.make_dir(where, mode=0o700, give=True)
    return where


@dataclass(frozen=True)
class Counts:
    """The hits and misses of one build's compiles (the install's metadata keeps them as
    ``ccache_counts``)."""

    hits: int
    misses: int

    def to_json(self) -> dict[str, int]:
        return asdict(self)


def counts(stats_log: Path) -> Counts:
    """The hits and misses of the compiles one build logged (ccache's stats log: a line
    ``# <file>`` per compile, then its counters, one a line); zeros when nothing was logged."""
    try:
        lines = stats_log.read_text(errors="replace").splitlines()
    except OSError:
        lines = []
    return Counts(hits=sum(ln in ("direct_cache_hit", "preprocessed_cache_hit") for ln in lines),
                  misses=sum(ln == "cache_miss" for ln in lines))
