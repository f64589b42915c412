"""Evicting files from the operating system's page cache: a stopped cluster's, and a server's
programs before it starts.

A cold cache (METHODS S10, "not in shared_buffers") means more than a restarted server:
the kernel still holds the files it read. teiten asks the kernel to drop the pages of the
cluster's own files only, with ``posix_fadvise(POSIX_FADV_DONTNEED)`` - no root needed,
nothing else on the machine is touched - and measures with ``fincore`` (util-linux), where
it is installed, how much stayed resident. What was possible is returned, to be recorded.

A server's programs (its install's bin and lib) are dropped the same way before every start
(:func:`evict_programs`): where the kernel puts a program's pages in memory stays as long as
they are cached, and can make one copy of a build measure 20-25% slower than another copy of
the same bytes for as long (bench/aa_installs.py). Drawn again at every start, that placement
is a difference between trials, which the paired blocks see, instead of one between servers
for the whole study, which no interval sees.
"""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path

from teiten.host import privileges, procs, safefs
from teiten.model.errors import ProcessError


def _files(dirs: list[Path]) -> list[Path]:
    """The regular files below ``dirs``, walked by descriptor (never through a link). A name
    gone since the walk listed it is left out: the server account may add and remove entries
    there meanwhile (``ln -sf`` makes a link under a temporary name and renames it)."""
    out = []
    for top in dirs:
        with safefs.Dir.open(top) as directory:
            for rel, _, names, fd in directory.walk():
                out += [top / rel / n for n in names if _regular(n, fd)]
    return [Path(os.path.normpath(p)) for p in out]


def _regular(name: str, dir_fd: int) -> bool:
    try:
        return stat.S_ISREG(os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode)
    except FileNotFoundError:
        return False


def resident_bytes(files: list[Path]) -> int | None:
    """Bytes of these files in the page cache, or None when fincore is missing."""
    if shutil.which("fincore") is None or not files:
        return None
    total = 0
    for start in range(0, len(files), 500):
        try:
            # As the server account: fincore opens by name, and the names are the server's.
            done = procs.run(["fincore", "--bytes", "--noheadings", "--raw", "--output", "RES",
                              *map(str, files[start:start + 500])], timeout=60, what="fincore",
                             run_as=privileges.server_account())
        except ProcessError:
            return None
        total += sum(int(line) for line in done.stdout.split() if line.isdigit())
    return total


def evict(dirs: list[Path]) -> dict[str, object]:
    """Drop the page cache of every file under ``dirs`` (a stopped cluster's). Returns what
    was done: files, bytes resident before and after (None when not measurable), failures."""
    files = _files(dirs)
    before = resident_bytes(files)
    failed = _evict_all(dirs)[1]
    after = resident_bytes(files)
    return {"method": "posix_fadvise(DONTNEED) on the cluster's files", "files": len(files),
            "not_evicted_files": failed, "resident_before_bytes": before,
            "resident_after_bytes": after}


def evict_programs(bindir: Path) -> dict[str, object]:
    """Drop the page cache of a PostgreSQL install's programs and libraries (``bindir`` and the
    ``lib`` beside it) before a server of it starts; pages a running process maps stay. Returns
    what was done, to be recorded; an install that cannot be walked is said, not fatal."""
    dirs = [d for d in (bindir, bindir.parent / "lib") if d.is_dir()]
    try:
        files, failed = _evict_all(dirs)
    except (OSError, safefs.UnsafePath) as exc:
        return {"names": 0, "not_evicted": str(exc)}
    return {"names": files, "not_evicted_files": failed}


def _evict_all(dirs: list[Path]) -> tuple[int, int]:
    """Drop the cached pages of every regular file under ``dirs``: (files seen, not dropped)."""
    seen = failed = 0
    for top in dirs:
        with safefs.Dir.open(top) as directory:
            for rel, _, names, dir_fd in directory.walk():
                for name in names:
                    seen += 1
                    failed += not _evict(safefs.Dir(os.dup(dir_fd), top / rel), name)
    return seen, failed


def _evict(directory: safefs.Dir, name: str) -> bool:
    """Drop the cached pages of the regular file ``name``: a link or a FIFO planted since
    the walk is refused, never followed or waited on. Whether it was done."""
    with directory:
        st = directory.lstat(name)
        if st is None or not stat.S_ISREG(st.st_mode):
            return True  # not a file of the cluster's: nothing to evict
        try:
            fd = directory.open_file(name)
        except (OSError, safefs.UnsafePath):
            return False
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        return True
    except OSError:
        return False
    finally:
        os.close(fd)
