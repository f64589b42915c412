"""Evicting a stopped cluster's files from the operating system's page cache.

A cold cache (METHODS S10, "not in shared_buffers") means more than a restarted server:
the kernel still holds the files it read. teiten asks the kernel to drop the pages of the
cluster's own files only, with ``posix_fadvise(POSIX_FADV_DONTNEED)`` - no root needed,
nothing else on the machine is touched - and measures with ``fincore`` (util-linux), where
it is installed, how much stayed resident. What was possible is returned, to be recorded.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

from teiten import procs
from teiten.errors import ProcessError


def _files(dirs: list[Path]) -> list[Path]:
    out = []
    for top in dirs:
        for root, _, names in os.walk(top):
            out += [Path(root) / n for n in names]
    return [p for p in out if p.is_file() and not p.is_symlink()]


def resident_bytes(files: list[Path]) -> int | None:
    """Bytes of these files in the page cache, or None when fincore is missing."""
    if shutil.which("fincore") is None or not files:
        return None
    total = 0
    for start in range(0, len(files), 500):
        try:
            done = procs.run(["fincore", "--bytes", "--noheadings", "--raw", "--output", "RES",
                              *map(str, files[start:start + 500])], timeout=60, what="fincore")
        except ProcessError:
            return None
        total += sum(int(line) for line in done.stdout.split() if line.isdigit())
    return total


def evict(dirs: list[Path]) -> dict[str, Any]:
    """Drop the page cache of every file under ``dirs`` (a stopped cluster's). Returns what
    was done: files, bytes resident before and after (None when not measurable), failures."""
    files = _files(dirs)
    before = resident_bytes(files)
    failed = 0
    for path in files:
        try:
            fd = os.open(path, os.O_RDONLY)
        except OSError:
            failed += 1
            continue
        try:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        except OSError:
            failed += 1
        finally:
            os.close(fd)
    after = resident_bytes(files)
    return {"method": "posix_fadvise(DONTNEED) on the cluster's files", "files": len(files),
            "not_evicted_files": failed, "resident_before_bytes": before,
            "resident_after_bytes": after}
