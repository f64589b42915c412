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
import stat
import time
from pathlib import Path

from teiten import procs, safefs
from teiten.errors import ProcessError

# How a restore was made, as the trial's record says it.
CLONE = "reflink clone"
INCREMENTAL = "incremental copy"

# path relative to the tree -> (size, mtime_ns, ctime_ns, inode)
Manifest = dict[str, tuple[int, int, int, int]]


def _signature(st: os.stat_result) -> tuple[int, int, int, int]:
    return (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)


def manifest(tree: Path) -> Manifest:
    """The signature of every regular file below ``tree`` (walked by descriptor, never
    through a link: see :mod:`teiten.safefs`)."""
    out: Manifest = {}
    with safefs.Dir.open(tree) as top:
        for rel_dir, _dirs, files, fd in top.walk():
            for name in files:
                with contextlib.suppress(FileNotFoundError):
                    st = os.stat(name, dir_fd=fd, follow_symlinks=False)
                    if stat.S_ISREG(st.st_mode):
                        out[os.path.normpath(os.path.join(rel_dir, name))] = _signature(st)
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
    # The target is the server's: every step goes through descriptors, links refused.
    with safefs.Dir.open(target) as top:
        copied = _sync(str(snapshot), top, "", known, clone)
    settle(target)
    return manifest(target), copied


def _sync(src: str, dst: safefs.Dir, rel: str, known: Manifest, clone: bool) -> int:
    """Make the directory ``dst`` hold what ``src`` holds; returns the bytes copied."""
    copied = 0
    names = set()
    with os.scandir(src) as entries:
        for entry in entries:
            names.add(entry.name)
            here = os.path.normpath(os.path.join(rel, entry.name))
            sst = entry.stat(follow_symlinks=False)
            current = dst.lstat(entry.name)
            if stat.S_ISDIR(sst.st_mode):
                if current is not None and not stat.S_ISDIR(current.st_mode):
                    dst.remove(entry.name)
                    current = None
                if current is None:
                    os.mkdir(entry.name, 0o700, dir_fd=dst.fd)
                with dst.child(entry.name) as sub:
                    copied += _sync(entry.path, sub, here, known, clone)
                    _same_metadata(sub.fd, sst)
            elif stat.S_ISLNK(sst.st_mode):
                link = os.readlink(entry.path)
                if (current is None or not stat.S_ISLNK(current.st_mode)
                        or os.readlink(entry.name, dir_fd=dst.fd) != link):
                    dst.remove(entry.name)
                    os.symlink(link, entry.name, dir_fd=dst.fd)
                    if os.geteuid() == 0:
                        os.chown(entry.name, sst.st_uid, sst.st_gid, dir_fd=dst.fd,
                                 follow_symlinks=False)
            elif current is None or known.get(here) != _signature(current):
                dst.remove(entry.name)
                copied += _copy(entry.path, dst, entry.name, sst, clone=clone)
    for name in dst.names():
        if name not in names:
            dst.remove(name)
    return copied


def _copy(src: str, dst: safefs.Dir, name: str, sst: os.stat_result, *, clone: bool) -> int:
    """Copy (or clone) the file ``src`` to a new file ``name`` of ``dst``; the bytes copied."""
    out = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                  0o600, dir_fd=dst.fd)
    try:
        # safe: the snapshot, in a directory of root's (0700)
        with open(src, "rb") as f:
            if clone and _cloned(f.fileno(), out):
                copied = 0
            else:
                copied = offset = 0
                while offset < sst.st_size:
                    sent = os.sendfile(out, f.fileno(), offset, sst.st_size - offset)
                    if sent == 0:
                        break
                    offset += sent
                    copied += sent
        _same_metadata(out, sst)
    finally:
        os.close(out)
    return copied


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
    """Write back everything written to the filesystem that holds the directory ``path``
    (syncfs(2); the other filesystems are left alone), and wait for it."""
    syncfs = getattr(_LIBC, "syncfs", None)
    if syncfs is None:  # a C library without it: every filesystem
        os.sync()
        return
    with safefs.Dir.open(path) as directory:
        if syncfs(directory.fd) != 0:
            err = ctypes.get_errno()
            raise OSError(err, os.strerror(err), str(path))


FICLONE = 0x40049409  # linux/fs.h: _IOW(0x94, 9, int)


def _cloned(src_fd: int, dst_fd: int) -> bool:
    """Clone the file ``src_fd`` into the empty ``dst_fd`` (sharing its extents); False
    when the filesystem refuses."""
    try:
        fcntl.ioctl(dst_fd, FICLONE, src_fd)
        return True
    except OSError:
        return False


def _same_metadata(fd: int, sst: os.stat_result) -> None:
    if os.geteuid() == 0:
        os.fchown(fd, sst.st_uid, sst.st_gid)
    os.fchmod(fd, stat.S_IMODE(sst.st_mode))
    os.utime(fd, ns=(sst.st_atime_ns, sst.st_mtime_ns))


def _remove(path: str) -> None:
    """Remove what teiten made at ``path`` (in a directory of teiten's)."""
    safefs.remove(Path(path))
