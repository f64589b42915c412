"""What root may execute, load, read or write: paths that no other account can change.

The rule of OpenSSH's StrictModes and of sudo, against every account but root and the one
teiten runs as (not only the server account, which :mod:`teiten.host.safefs` guards against while
it works in the server's directories): every component of the path from ``/``, links
followed, is owned by root or the invoking user and writable by no one else, a sticky
directory (``/tmp``) excepted, whose entries are then judged by their owners. A path not made
yet is judged by what exists of it: its parent decides. :func:`teiten.host.paths.refuse_replaceable`
turns a refusal into the one line the user reads.
"""

from __future__ import annotations

import contextlib
import grp
import os
import pwd
import stat
from pathlib import Path

_MAX_LINKS = 40


def _trusted_uids() -> frozenset[int]:
    return frozenset({0, os.geteuid()})


def _only_trusted_in(gid: int) -> bool:
    """Whether every account in the group ``gid`` (named in it, or having it as its own) is
    root or the invoking user: then the group's write bit lets no one else in."""
    trusted = _trusted_uids()
    try:
        members = grp.getgrgid(gid).gr_mem
    except KeyError:
        return False
    names = set()
    for uid in trusted:
        with contextlib.suppress(KeyError):
            names.add(pwd.getpwuid(uid).pw_name)
    if any(member not in names for member in members):
        return False
    return all(entry.pw_uid in trusted for entry in pwd.getpwall() if entry.pw_gid == gid)


def owner_name(uid: int) -> str:
    """An account as a message names it: its name and uid."""
    try:
        return f"{pwd.getpwuid(uid).pw_name} (uid {uid})"
    except KeyError:
        return f"uid {uid}"


def _changeable(path: Path, st: os.stat_result) -> str | None:
    """Why another account could change ``path`` itself, or replace what it holds."""
    if st.st_uid not in _trusted_uids():
        return f"{path} is owned by {owner_name(st.st_uid)}"
    if stat.S_ISLNK(st.st_mode):
        return None  # a link's own mode means nothing: its directory and its target decide
    mode = st.st_mode
    sticky = stat.S_ISDIR(mode) and bool(mode & stat.S_ISVTX)
    if mode & stat.S_IWOTH and not sticky:
        return f"{path} can be written by every account (mode {stat.S_IMODE(mode):o})"
    if mode & stat.S_IWGRP and not sticky and not _only_trusted_in(st.st_gid):
        try:
            group = grp.getgrgid(st.st_gid).gr_name
        except KeyError:
            group = f"gid {st.st_gid}"
        return f"{path} can be written by the group {group} (mode {stat.S_IMODE(mode):o})"
    return None


def who_can_change(path: Path | str, *, _depth: int = 0) -> str | None:
    """Why root may not execute, load or write at ``path``, or None when it may: in words,
    the first component from ``/`` (the path itself included, links followed) that an
    account other than root and the invoking user owns, or that another account may write
    (a sticky directory such as ``/tmp`` excepted: its entries are checked by their owners).
    A path not made yet is judged by what exists of it: its parent decides. The rule of
    OpenSSH's StrictModes and of sudo, against every other account, not only the server's."""
    if _depth > _MAX_LINKS:
        return f"{path} has too many levels of symbolic links"
    current = Path("/")
    given = Path(path)
    parts = list((given if given.is_absolute() else Path.cwd() / given).parts[1:])
    try:
        problem = _changeable(current, os.lstat(current))
    except OSError:
        return None
    if problem:
        return problem
    for index, name in enumerate(parts):
        if name in ("", "."):
            continue
        if name == "..":  # the real parent: no link is on the way walked so far
            current = current.parent
            continue
        entry = current / name
        try:
            st = os.lstat(entry)
        except FileNotFoundError:
            return None  # not made yet: what exists of it was checked
        except OSError as exc:
            return f"{entry} cannot be examined ({exc.strerror})"
        problem = _changeable(entry, st)
        if problem:
            return problem
        if stat.S_ISLNK(st.st_mode):
            target = Path(os.readlink(entry))
            rest = Path(*parts[index + 1:]) if index + 1 < len(parts) else Path()
            followed = (target if target.is_absolute() else current / target) / rest
            return who_can_change(followed, _depth=_depth + 1)
        current = entry
    return None
