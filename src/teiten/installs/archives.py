"""Unpacking a tarball safely on every Python teiten supports (3.11.2 onwards).

Python 3.12, and 3.11 from 3.11.4, have ``extractall(filter="data")`` (PEP 706): no member
outside the destination, no link out of it, no device or fifo, no setuid bit, no group or other
write bit, no owner taken from the archive. Debian 12's own ``python3`` is 3.11.2, which lacks
it: there, :func:`extract_all` applies the same rules member by member before extracting, so that
an install behaves the same under either Python. Standard library only.
"""

from __future__ import annotations

import copy
import os
import tarfile
from pathlib import Path


class UnsafeMember(tarfile.TarError):
    """A member the "data" filter refuses (it would land or point outside the destination,
    or it is a device or a fifo)."""


def extract_all(tar: tarfile.TarFile, dest: Path) -> None:
    """Extract every member of ``tar`` (opened for reading, also as a stream) into ``dest``
    under the rules of tarfile's "data" filter; raise :class:`UnsafeMember` (or the filter's own
    error on a newer Python, also a :class:`tarfile.TarError`) for the first member it refuses."""
    if hasattr(tarfile, "data_filter"):
        tar.extractall(dest, filter="data")
        return
    root = Path(os.path.realpath(dest))
    for member in tar:
        tar.extract(data_member(member, root), root)


def data_member(member: tarfile.TarInfo, root: Path) -> tarfile.TarInfo:
    """``member`` as the "data" filter would extract it into ``root`` (a resolved directory):
    a copy with its leading slashes removed, its mode made safe and no owner of its own;
    :class:`UnsafeMember` where the filter refuses it."""
    name = member.name.lstrip("/" + os.sep)
    target = Path(os.path.realpath(root / name))
    if not _inside(target, root):
        raise UnsafeMember(f"{member.name!r} would be extracted outside {root}")
    if member.isdev() or member.isfifo() or not (member.isreg() or member.isdir() or
                                                  member.issym() or member.islnk()):
        raise UnsafeMember(f"{member.name!r} is a special file (device or fifo)")
    if member.issym() or member.islnk():
        if os.path.isabs(member.linkname):
            raise UnsafeMember(f"{member.name!r} links to an absolute path, {member.linkname!r}")
        base = target.parent if member.issym() else root
        if not _inside(Path(os.path.realpath(base / member.linkname)), root):
            raise UnsafeMember(f"{member.name!r} links outside {root}, to {member.linkname!r}")
    safe = copy.copy(member)
    safe.name = name
    mode = member.mode & 0o755
    if member.isreg() or member.islnk():
        mode |= 0o600
        if not mode & 0o100:
            mode &= ~0o111
    elif member.isdir():
        mode = 0o777 & ~_umask()  # the filter ignores a directory's mode: the system's default
    safe.mode = mode
    # Owned by whoever unpacks it (as the filter does): never the archive's uid or names.
    safe.uid, safe.gid, safe.uname, safe.gname = os.getuid(), os.getgid(), "", ""
    return safe


def _umask() -> int:
    """This process's umask, read without changing it (Linux 4.7+), else by setting it back."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    except OSError:
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _inside(path: Path, root: Path) -> bool:
    return path == root or root in path.parents
