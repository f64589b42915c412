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

from teiten.host import privileges, procs, safefs
from teiten.model.errors import ProcessError

# How a restore was made, as the trial's record says it.
CLONE = "reflink clone"
INCREMENTAL = "incremental copy"

# path relative to the tree -> (size, mtime_ns, ctime_ns, inode)
Manifest = dict[str, tuple[int, int, int, int]]


def _signature(st: os.stat_result) -> tuple[int, int, int, int]:
    return (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)


def manifest(tree: Path) -> Manifest:
    """The signature of every regular file below ``tree`` (walked by descriptor, never
    through a link: see :mod:`teiten.host.safefs`)."""
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
    """Copy ``src`` to ``dest`` (which must not exist, in a directory of teiten's) and return
    the manifest of ``src``. The copy goes by descriptor, as a restore does: ``src`` is the
    server's, and a link planted there is copied as a link, never followed. Extents are
    cloned where the filesystem can (btrfs, XFS), as ``cp --reflink=auto`` would."""
    with safefs.Dir.open(src) as source, safefs.Dir.open(dest.parent) as parent, \
            parent.make_dir(dest.name, mode=0o700, give=False) as copy:
        _sync(source, copy, "", {}, clone=True)
        _same_metadata(copy.fd, source.st)
    settle(dest)
    return manifest(src)


def restore(snapshot: Path, target: Path, known: Manifest, *, clone: bool = False
            ) -> tuple[Manifest, int]:
    """Make ``target`` identical to ``snapshot``. ``known`` is the manifest of ``target``
    after it was last made identical; ``clone``: clone the changed files (where
    :func:`clone_seconds` said the filesystem can). Returns the new manifest and the bytes
    copied (none for a clone)."""
    if not safefs.exists(target):
        safefs.make_dir(target, mode=0o700)
        known = {}
    # The target is the server's: every step goes through descriptors, links refused.
    with safefs.Dir.open(snapshot) as source, safefs.Dir.open(target) as top:
        copied = _sync(source, top, "", known, clone)
    settle(target)
    return manifest(target), copied


def _sync(src: safefs.Dir, dst: safefs.Dir, rel: str, known: Manifest, clone: bool) -> int:
    """Make the directory ``dst`` hold what ``src`` holds: directories, regular files, links
    (as links) and FIFOs (made anew, never opened); nothing else is copied. Returns the bytes
    copied."""
    copied = 0
    names = set()
    with os.scandir(src.fd) as entries:
        found = [(entry.name, entry.stat(follow_symlinks=False)) for entry in entries]
    for name, sst in found:
        kind = stat.S_IFMT(sst.st_mode)
        if kind not in (stat.S_IFDIR, stat.S_IFREG, stat.S_IFLNK, stat.S_IFIFO):
            continue  # a socket or a device: nothing of a cluster's
        names.add(name)
        here = os.path.normpath(os.path.join(rel, name))
        current = dst.lstat(name)
        if kind == stat.S_IFDIR:
            if current is not None and not stat.S_ISDIR(current.st_mode):
                dst.remove(name)
                current = None
            if current is None:
                os.mkdir(name, 0o700, dir_fd=dst.fd)
            with src.child(name) as below, dst.child(name) as sub:
                copied += _sync(below, sub, here, known, clone)
                _same_metadata(sub.fd, sst)
        elif kind == stat.S_IFLNK:
            link = os.readlink(name, dir_fd=src.fd)
            if (current is None or not stat.S_ISLNK(current.st_mode)
                    or os.readlink(name, dir_fd=dst.fd) != link):
                dst.remove(name)
                os.symlink(link, name, dir_fd=dst.fd)
                if (owner := _owner(sst)) is not None:
                    os.chown(name, *owner, dir_fd=dst.fd, follow_symlinks=False)
        elif kind == stat.S_IFIFO:
            if current is None or not stat.S_ISFIFO(current.st_mode):
                dst.remove(name)
                os.mkfifo(name, stat.S_IMODE(sst.st_mode) & 0o777, dir_fd=dst.fd)
        elif current is None or known.get(here) != _signature(current):
            dst.remove(name)
            copied += _copy(src, name, dst, sst, clone=clone)
    for name in dst.names():
        if name not in names:
            dst.remove(name)
    return copied


def _copy(src: safefs.Dir, name: str, dst: safefs.Dir, sst: os.stat_result, *, clone: bool) -> int:
    """Copy (or clone) the regular file ``name`` of ``src`` to a new file of ``dst``; the
    bytes copied."""
    source = src.open_file(name)
    try:
        out = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                      0o600, dir_fd=dst.fd)
        try:
            copied = 0
            if not (clone and _cloned(source, out)):
                size = os.fstat(source).st_size
                while copied < size:
                    sent = os.sendfile(out, source, copied, size - copied)
                    if sent == 0:
                        break
                    copied += sent
            _same_metadata(out, sst)
        finally:
            os.close(out)
    finally:
        os.close(source)
    return copied


def clone_seconds(snapshot: Path, target: Path) -> float | None:
    """Seconds one whole clone of ``snapshot`` beside ``target`` took, or None when the
    filesystem cannot clone it (``cp --reflink=always`` fails: no reflinks, or another
    filesystem). The trial clone is removed."""
    probe = target.with_name(f".{target.name}.clone-probe")
    _remove(str(probe))
    started = time.monotonic()
    try:
        # safe: from the snapshot (root's, 0700) to a probe in the cluster's root (teiten's)
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


def _owner(sst: os.stat_result) -> tuple[int, int] | None:
    """Whom a copied file belongs to: as root, the server account (every file of a cluster
    is its), else nobody is changed."""
    if os.geteuid() != 0:
        return None
    account = privileges.server_account()
    return (account.uid, account.gid) if account is not None else (sst.st_uid, sst.st_gid)


def _same_metadata(fd: int, sst: os.stat_result) -> None:
    if (owner := _owner(sst)) is not None:
        os.fchown(fd, *owner)
    os.fchmod(fd, stat.S_IMODE(sst.st_mode) & 0o777)  # never a set-id bit
    os.utime(fd, ns=(sst.st_atime_ns, sst.st_mtime_ns))


def _remove(path: str) -> None:
    """Remove what teiten made at ``path`` (in a directory of teiten's)."""
    safefs.remove(Path(path))
