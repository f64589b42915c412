"""Snapshots of a stopped cluster, restored by copying back only what changed.

A snapshot is a full copy of the data directory (the 2014 team's pgsql-save-db). Restoring
it (pgsql-reload-db) must give the very same bytes, and fast: on filesystems without
reflinks (ext4) a full copy of a large cluster costs seconds. So, like rsync, a restore
skips the files that are provably untouched since the last restore or snapshot: teiten
records each file's size, mtime, ctime and inode right after writing it, and any write,
truncation, rename or chmod by PostgreSQL changes the ctime. Everything else is copied back,
and files that are not in the snapshot are removed.

Where the filesystem shares extents (XFS made with reflink=1, btrfs), a changed file is cloned
from the snapshot (the FICLONE ioctl) instead of copied: no data is copied, so a restore costs
about the same whatever the trial changed and whatever the size of the data (a clone of a
whole tree would clone and then remove every file, unchanged ones too). :func:`clone_seconds`
finds out at prepare, by cloning the snapshot once beside the cluster.

Whatever a snapshot or a restore wrote is written back to the disk before it returns
(:func:`settle`, syncfs(2)): a copy leaves its data dirty in the page cache, and XFS frees the
extents of removed files in the background, and both would otherwise go on inside the next
trial's measured window (the kernel writes dirty pages back after 30 s). The restore's time
includes it, as it should.
"""

from __future__ import annotations

import contextlib
import ctypes
import fcntl
import os
import shutil
import stat
import time
from pathlib import Path

from teiten import procs
from teiten.errors import ProcessError

# How a restore was made, as the trial's record says it.
CLONE = "reflink clone"
INCREMENTAL = "incremental copy"

# path relative to the tree -> (size, mtime_ns, ctime_ns, inode)
Manifest = dict[str, tuple[int, int, int, int]]


def _signature(st: os.stat_result) -> tuple[int, int, int, int]:
    return (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)


def manifest(tree: Path) -> Manifest:
    """The signature of every regular file below ``tree``."""
    out: Manifest = {}
    for dirpath, _dirs, files in os.walk(tree):
        for name in files:
            path = os.path.join(dirpath, name)
            st = os.lstat(path)
            if stat.S_ISREG(st.st_mode):
                out[os.path.relpath(path, tree)] = _signature(st)
    return out


def take(src: Path, dest: Path) -> Manifest:
    """Copy ``src`` to ``dest`` (which must not exist) and return the manifest of ``src``."""
    # GNU cp -a keeps owners, modes, times and symlinks (a separate pg_wal); with
    # --reflink=auto it clones extents where the filesystem can (btrfs, XFS).
    procs.run(["cp", "-a", "--reflink=auto", str(src), str(dest)], timeout=3600, what="cp")
    settle(dest)
    return manifest(src)


def restore(snapshot: Path, target: Path, known: Manifest, *, clone: bool = False
            ) -> tuple[Manifest, int]:
    """Make ``target`` identical to ``snapshot``. ``known`` is the manifest of ``target``
    after it was last made identical; ``clone``: clone the changed files (where
    :func:`clone_seconds` said the filesystem can). Returns the new manifest and the bytes
    copied (none for a clone)."""
    if not target.exists():
        procs.run(["cp", "-a", "--reflink=auto", str(snapshot), str(target)], timeout=3600,
                  what="cp")
        settle(target)
        return manifest(target), sum(s[0] for s in manifest(snapshot).values())
    wanted = set()
    copied = 0
    for dirpath, dirs, files in os.walk(snapshot):
        rel_dir = os.path.relpath(dirpath, snapshot)
        for name in dirs + files:
            rel = os.path.normpath(os.path.join(rel_dir, name))
            wanted.add(rel)
            src, dst = os.path.join(snapshot, rel), os.path.join(target, rel)
            sst = os.lstat(src)
            if stat.S_ISDIR(sst.st_mode):
                if not os.path.isdir(dst) or os.path.islink(dst):
                    _remove(dst)
                    os.mkdir(dst)
                _same_metadata(sst, dst)
            elif stat.S_ISLNK(sst.st_mode):
                if not os.path.islink(dst) or os.readlink(dst) != os.readlink(src):
                    _remove(dst)
                    os.symlink(os.readlink(src), dst)
                    os.lchown(dst, sst.st_uid, sst.st_gid)
            else:
                try:
                    current = _signature(os.lstat(dst))
                except FileNotFoundError:
                    current = None
                if current is None or known.get(rel) != current:
                    _remove(dst)
                    if not (clone and _cloned(src, dst)):
                        shutil.copyfile(src, dst, follow_symlinks=False)
                        copied += sst.st_size
                    _same_metadata(sst, dst)
    for dirpath, dirs, files in os.walk(target, topdown=False):
        for name in files + dirs:
            rel = os.path.normpath(os.path.join(os.path.relpath(dirpath, target), name))
            if rel not in wanted:
                _remove(os.path.join(target, rel))
    settle(target)
    return manifest(target), copied


def clone_seconds(snapshot: Path, target: Path) -> float | None:
    """Seconds one whole clone of ``snapshot`` beside ``target`` took, or None when the
    filesystem cannot clone it (``cp --reflink=always`` fails: no reflinks, or another
    filesystem). The trial clone is removed."""
    probe = target.with_name(f".{target.name}.clone-probe")
    _remove(str(probe))
    started = time.monotonic()
    try:
        procs.run(["cp", "-a", "--reflink=always", str(snapshot), str(probe)], timeout=3600,
                  what="cp --reflink=always")
        settle(probe)  # timed as a restore is
        return time.monotonic() - started
    except ProcessError:
        return None
    finally:
        _remove(str(probe))
        with contextlib.suppress(OSError):  # the probe's frees; never hides the first error
            settle(target.parent)


_LIBC = ctypes.CDLL(None, use_errno=True)


def settle(path: Path) -> None:
    """Write back everything written to the filesystem that holds ``path`` (syncfs(2); the
    other filesystems are left alone), and wait for it."""
    syncfs = getattr(_LIBC, "syncfs", None)
    if syncfs is None:  # a C library without it: every filesystem
        os.sync()
        return
    fd = os.open(path, os.O_RDONLY)
    try:
        if syncfs(fd) != 0:
            err = ctypes.get_errno()
            raise OSError(err, os.strerror(err), str(path))
    finally:
        os.close(fd)


FICLONE = 0x40049409  # linux/fs.h: _IOW(0x94, 9, int)


def _cloned(src: str, dst: str) -> bool:
    """Clone ``src`` to a new ``dst`` (sharing its extents); False, and no ``dst``, when the
    filesystem refuses."""
    with open(src, "rb") as s, open(dst, "wb") as d:
        try:
            fcntl.ioctl(d.fileno(), FICLONE, s.fileno())
            return True
        except OSError:
            pass
    os.unlink(dst)
    return False


def _same_metadata(sst: os.stat_result, dst: str) -> None:
    if os.geteuid() == 0:
        os.chown(dst, sst.st_uid, sst.st_gid)
    os.chmod(dst, stat.S_IMODE(sst.st_mode))
    os.utime(dst, ns=(sst.st_atime_ns, sst.st_mtime_ns))


def _remove(path: str) -> None:
    if os.path.islink(path) or os.path.isfile(path):
        os.unlink(path)
    elif os.path.isdir(path):
        shutil.rmtree(path)
