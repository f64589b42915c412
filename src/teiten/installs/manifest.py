"""What an install teiten made holds, so that a damaged or altered one is refused before root
runs or loads anything from it.

When teiten makes an install (PyPI, Maven, npm, a source build) it writes, last,
``.teiten-manifest.json`` (format 2): the install's owner (uid, gid), and every entry under it,
its top directory included: each directory's and regular file's mode (all of st_mode's
permission bits, setuid, setgid and sticky among them) and owner, each file's size and
SHA-256, each symlink's target. Before writing it, teiten takes the group and other write bits
off every entry: an install must not be writable by any account but its owner's.

Every time the install is looked up the whole tree is walked, stat only (``lstat`` of every
entry, ``readlink`` of every link: about 20 ms for the 1,400 entries of PyPI's 17.11, as long
as the sizes-only check before format 2 took, 8 to 60 ms for the 1,000 to 1,900 entries of
other installs on a busy 2-CPU machine); before a study's first trial and by ``teiten
installs --verify`` the files are hashed too (0.1 to 0.3 s for 30 to 60 MB). Either refuses,
naming the first bad path:

- an entry added (a ``lib/libcrypto.so.3`` that the dynamic loader would find first through
  pgbench's RUNPATH ``$ORIGIN/../lib``) or missing; one whose type changed;
- a mode that changed (``chmod u+s bin/pgbench``), and group or other write on any entry even
  where the manifest recorded it;
- an owner that changed (another account's file put in place with the same content), and an
  install whose owner is neither root nor the account teiten runs as: root runs only what
  root (or it) made;
- a size, a link target, and when hashing a SHA-256 that differs.

teiten's own records at the top (the manifest, ``teiten-install.json``, the ownership marker,
and a manifest being written) are not listed, so that teiten may rewrite them; each must be a
regular file of the install's owner, not writable by others, without setuid or setgid.

An install teiten made that has no manifest is refused, with the command that makes it again:
deleting the manifest must not make an install trusted, and nothing else vouches for its files.
Installs teiten did not make (the system's packages, a bindir on PATH) have no manifest and are
never hashed.

Installs made before format 2 have a format-1 manifest: the size and SHA-256 of every regular
file and the target of every symlink, without directories, modes or owners. Such an install is
still used, checked as it is and never rewritten: its manifest lists every file and link it
may hold, so an added, missing or changed one is refused as above, and what format 1 does not
record is held to rules instead, every time: every entry is the install's owner's (root's or
the invoking account's), none is writable by group or others, none has setuid or setgid, and
only a directory may be there unlisted. No other account can change such an install without
breaking one of these rules, which is what format 2's records of modes and owners protect too.
It is not upgraded in place: a check that writes would change the install's identity (a VM
image or root filesystem built from an install is named after its manifest's bytes, and would
be built again) and would fail on a cache this account may only read. ``teiten install
--force`` gives it a format-2 manifest. Format 2 keeps format 1's ``files`` (with more keys in
each) and ``links`` as they were, so that an older teiten sharing the cache still reads it.
"""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import stat
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from teiten.host import paths, safefs
from teiten.installs.source_key import PRESETS
from teiten.model.errors import InstallError

MANIFEST = ".teiten-manifest.json"
METADATA = "teiten-install.json"
# teiten's own records in an install are not what it installed: left out of the manifest,
# so that teiten may add to them later without the install looking damaged.
_OWN = frozenset({MANIFEST, METADATA, paths.MARKER})
_FORMAT = 2
_FORMATS = (1, 2)  # the formats this teiten reads (see the module docstring for format 1)
_OTHERS_WRITE = stat.S_IWGRP | stat.S_IWOTH
_SET_ID = stat.S_ISUID | stat.S_ISGID
_KINDS = {stat.S_IFREG: "file", stat.S_IFDIR: "directory", stat.S_IFLNK: "link",
          stat.S_IFIFO: "fifo", stat.S_IFSOCK: "socket", stat.S_IFCHR: "character device",
          stat.S_IFBLK: "block device"}


def made_by_teiten(prefix: Path) -> bool:
    """``prefix`` (the directory that holds bin/) is an install teiten made."""
    return (prefix / METADATA).is_file()


def _own(rel: str) -> bool:
    """``rel`` is one of teiten's own records at the top of an install (or a manifest being
    written: ``.teiten-manifest.json.<pid>``)."""
    return rel in _OWN or (rel.startswith(f"{MANIFEST}.") and "/" not in rel)


def _kind(st: os.stat_result) -> str:
    return _KINDS.get(stat.S_IFMT(st.st_mode), "special file")


def _tree(prefix: Path) -> dict[str, os.stat_result]:
    """Every entry of ``prefix`` by its path relative to it ("." for ``prefix`` itself), as
    lstat sees it: links are not followed, and the tree is read to the bottom."""
    found = {".": os.lstat(prefix)}
    if not stat.S_ISDIR(found["."].st_mode):
        return found
    pending = [("", os.fspath(prefix))]
    while pending:
        above, directory = pending.pop()
        with os.scandir(directory) as entries:
            for entry in entries:
                rel = above + entry.name
                st = entry.stat(follow_symlinks=False)
                found[rel] = st
                if stat.S_ISDIR(st.st_mode):
                    pending.append((rel + "/", entry.path))
    return found


def _attributes(st: os.stat_result) -> dict[str, int]:
    return {"mode": stat.S_IMODE(st.st_mode), "uid": st.st_uid, "gid": st.st_gid}


def record(prefix: Path) -> dict[str, object]:
    """The manifest of the install in ``prefix``, read from its entries now."""
    tree = _tree(prefix)
    files: dict[str, dict[str, object]] = {}
    links: dict[str, str] = {}
    dirs: dict[str, dict[str, int]] = {}
    for rel in sorted(tree):
        st = tree[rel]
        kind = _kind(st)
        if _own(rel):
            continue
        if kind == "link":
            links[rel] = os.readlink(prefix / rel)
        elif kind == "file":
            files[rel] = {"size": st.st_size, "sha256": _sha256(os.path.join(prefix, rel)),
                          **_attributes(st)}
        elif kind == "directory":
            dirs[rel] = _attributes(st)
        else:
            raise InstallError(f"{prefix / rel} is a {kind}; an install holds only files, "
                               "directories and links")
    top = tree["."]
    return {"format": _FORMAT, "algorithm": "sha256", "owner": {"uid": top.st_uid, "gid": top.st_gid},
            "files": files, "links": links, "dirs": dirs}


def write(prefix: Path) -> dict[str, object]:
    """Take group and other write off every entry of ``prefix`` (teiten's, not yet in its
    place), then write its manifest (in one step: a reader sees all of it or none)."""
    for rel, st in _tree(prefix).items():
        if not stat.S_ISLNK(st.st_mode) and st.st_mode & _OTHERS_WRITE:
            safefs.chmod(prefix / rel, stat.S_IMODE(st.st_mode) & ~_OTHERS_WRITE)
    manifest = record(prefix)
    part = prefix / f"{MANIFEST}.{os.getpid()}"  # another teiten may write it at once
    fd = os.open(part, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o644)
    with os.fdopen(fd, "w") as f:
        os.fchmod(f.fileno(), 0o644)
        f.write(json.dumps(manifest, indent=1, sort_keys=True) + "\n")
    part.rename(prefix / MANIFEST)
    return manifest


@dataclass(frozen=True)
class Checked:
    """What checking an install found: ``problem`` is the first difference from its
    manifest, in words ("bin/pgbench has mode 4755, its manifest says 0755"), or None.
    ``files`` and ``size``: the regular files the manifest lists, and their bytes."""

    files: int
    size: int
    seconds: float
    problem: str | None
    # Never set since format 2 (an install without a manifest is refused, none is written
    # at a check); kept for what reads them (teiten installs --verify).
    written: bool = False
    unchecked: bool = False


class _Refused(Exception):
    """The first problem found; its text is the problem."""


@dataclass(frozen=True)
class Attributes:
    """An entry's permission bits (all of st_mode's) and owner, as format 2 records them."""

    mode: int
    uid: int
    gid: int


@dataclass(frozen=True)
class FileEntry:
    size: int
    sha256: str
    attributes: Attributes | None  # None in format 1


@dataclass(frozen=True)
class Manifest:
    """A manifest as read: every entry of its install by path (module docstring)."""

    format: int
    owner: tuple[int, int] | None  # (uid, gid); None in format 1, which records none
    files: Mapping[str, FileEntry]
    links: Mapping[str, str]
    dirs: Mapping[str, Attributes]  # empty in format 1

    @property
    def legacy(self) -> bool:
        return self.format == 1


def _whole(value: object, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{what} is not a whole number")
    return value


def _object(value: object, what: str) -> Mapping[str, object]:
    if not isinstance(value, dict):
        raise TypeError(f"{what} is not an object")
    return value


def _attributes_of(value: Mapping[str, object], what: str) -> Attributes:
    return Attributes(*(_whole(value.get(k), f"{what}'s {k}") for k in ("mode", "uid", "gid")))


def _parsed(raw: object) -> Manifest:
    """The manifest a JSON document holds; TypeError or KeyError names what in it is wrong
    (an entry without its size, an owner that is not a number)."""
    top = _object(raw, "the manifest")
    form = _whole(top["format"], "format")
    if form not in _FORMATS:
        raise _Refused(f"its {MANIFEST} is of format {form}, which this teiten does not read")
    files = {}
    for rel, entry in _object(top["files"], "files").items():
        entry = _object(entry, rel)
        digest = entry.get("sha256")
        if not isinstance(digest, str):
            raise TypeError(f"{rel}'s sha256 is not text")
        files[rel] = FileEntry(_whole(entry.get("size"), f"{rel}'s size"), digest,
                               None if form == 1 else _attributes_of(entry, rel))
    links = {}
    for rel, target in _object(top["links"], "links").items():
        if not isinstance(target, str):
            raise TypeError(f"the link {rel}'s target is not text")
        links[rel] = target
    if form == 1:
        return Manifest(form, None, files, links, {})
    owner = _object(top["owner"], "owner")
    return Manifest(form, (_whole(owner.get("uid"), "owner's uid"), _whole(owner.get("gid"), "owner's gid")),
                    files, links, {rel: _attributes_of(_object(a, rel), rel)
                                   for rel, a in _object(top["dirs"], "dirs").items()})


def check(prefix: Path, *, hashes: bool) -> Checked:
    """Compare the entries of ``prefix`` with its manifest (module docstring): type, mode,
    owner, size and link target of every entry, and with ``hashes`` the SHA-256 of every
    file too."""
    began = time.monotonic()
    files: Mapping[str, FileEntry] = {}
    try:
        manifest = _load(prefix)
        files = manifest.files
        _compare(prefix, manifest, _tree(prefix), hashes=hashes)
        problem = None
    except _Refused as refused:
        problem = str(refused)
    except OSError as exc:
        problem = f"{exc.filename or prefix} cannot be read ({exc.strerror})"
    size = sum(f.size for f in files.values())
    return Checked(len(files), size, time.monotonic() - began, problem)


def _load(prefix: Path) -> Manifest:
    try:
        fd = os.open(prefix / MANIFEST, os.O_RDONLY | os.O_NOFOLLOW)
    except FileNotFoundError:
        raise _Refused(f"it has no {MANIFEST}, which teiten writes into every install it makes "
                       "(without it nothing vouches for its files)") from None
    except OSError as exc:
        raise _Refused(f"its {MANIFEST} cannot be opened ({exc.strerror})") from None
    try:
        with os.fdopen(fd, "rb") as f:
            return _parsed(json.loads(f.read()))
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise _Refused(f"its {MANIFEST} cannot be read ({exc})") from None


def _compare(prefix: Path, manifest: Manifest, tree: Mapping[str, os.stat_result],
             *, hashes: bool) -> None:
    """Raise :class:`_Refused` for the first bad entry in path order (every entry's stat
    first: cheap, and the usual damage), then for the first file whose SHA-256 differs."""
    files, links, dirs, legacy = manifest.files, manifest.links, manifest.dirs, manifest.legacy
    top = tree["."]
    owner = manifest.owner or (top.st_uid, top.st_gid)
    me = os.geteuid()
    if owner[0] not in (0, me):
        whose = "root's" if me == 0 else f"root's or its own (uid {me})"
        raise _Refused(f"it belongs to uid {owner[0]}, and teiten uses only installs that are "
                       f"{whose}, which no other account can change")
    listed = {**dict.fromkeys(dirs, "directory"), **dict.fromkeys(files, "file"),
              **dict.fromkeys(links, "link")}
    for rel in sorted(tree.keys() | listed.keys()):
        st = tree.get(rel)
        name = "its top directory" if rel == "." else rel
        want = "file" if _own(rel) else listed.get(rel)
        if st is None:
            raise _Refused(f"{'the link ' if want == 'link' else ''}{rel} is missing")
        kind = _kind(st)
        if want is None and not (legacy and kind == "directory"):  # format 1 lists no directory
            raise _Refused(f"{rel} is not in its manifest (a {kind} added since it was installed)")
        if want is not None and kind != want:
            raise _Refused(f"{name} is a {kind}, its manifest says a {want}")
        mode = stat.S_IMODE(st.st_mode)
        if kind != "link" and mode & _OTHERS_WRITE:
            raise _Refused(f"{name} is writable by other accounts (mode {mode:04o})")
        entry = files.get(rel) if kind == "file" else None
        recorded = (None if legacy or _own(rel) else entry.attributes if entry else
                    dirs.get(rel) if kind == "directory" else None)
        if recorded is not None:
            if (st.st_uid, st.st_gid) != (recorded.uid, recorded.gid):
                raise _Refused(f"{name} belongs to {st.st_uid}:{st.st_gid}, its manifest says "
                               f"{recorded.uid}:{recorded.gid}")
            if mode != recorded.mode:
                raise _Refused(f"{name} has mode {mode:04o}, its manifest says {recorded.mode:04o}")
        else:  # not recorded (a link, teiten's own records, format 1): held to the rules
            if st.st_uid != owner[0] or (not legacy and st.st_gid != owner[1]):
                theirs, its = ((f"uid {st.st_uid}", f"uid {owner[0]}") if legacy else
                               (f"{st.st_uid}:{st.st_gid}", f"{owner[0]}:{owner[1]}"))
                raise _Refused(f"{name} belongs to {theirs}, the install to {its}")
            if kind != "link" and mode & _SET_ID:
                raise _Refused(f"{name} has mode {mode:04o} (setuid or setgid), which no install "
                               "teiten makes has")
        if entry is not None and not _own(rel) and st.st_size != entry.size:
            raise _Refused(f"{rel} is {st.st_size} bytes, its manifest says {entry.size}")
        if kind == "link" and (target := os.readlink(prefix / rel)) != links[rel]:
            raise _Refused(f"the link {rel} points to {target}, its manifest says {links[rel]}")
    if hashes:
        for rel in sorted(files):
            try:
                digest = _sha256(os.path.join(prefix, rel))
            except OSError as exc:
                raise _Refused(f"{rel} cannot be read ({exc.strerror})") from None
            if digest != files[rel].sha256:
                raise _Refused(f"{rel} has the size its manifest says but not its SHA-256 "
                               "(changed in place)")


def _sha256(path: str) -> str:
    # O_NOFOLLOW: what the manifest calls a file is never read through a link.
    with os.fdopen(os.open(path, os.O_RDONLY | os.O_NOFOLLOW), "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def damage(prefix: Path, problem: str, *, hashes: bool) -> str:
    """The one line that says an install is damaged, what was checked, and how to reinstall."""
    how = "size and SHA-256" if hashes else "and size"
    return (f"install {prefix.name} ({prefix}) is damaged: {problem} (checked: the type, mode, "
            f"owner{',' if hashes else ''} {how} of every entry against {MANIFEST}); reinstall it "
            f"with '{reinstall_command(prefix)}'")


def reinstall_command(prefix: Path) -> str:
    """The teiten command that makes the install in ``prefix`` again, in its place."""
    try:
        info = json.loads((prefix / METADATA).read_text())
    except (OSError, ValueError):
        info = {}
    origin, version = info.get("origin", "pypi"), info.get("version", "?")
    if origin != "source":
        return f"teiten install --force {origin}:{version}"
    git = info.get("git")
    if isinstance(git, dict):  # a commit (teiten install --from-git)
        argv = ["teiten", "install", "--force", "--from-git", str(git.get("repo")), "--commit",
                str(git.get("commit")), "--name", str(info.get("name"))]
    else:
        argv = ["teiten", "install", "--force", "--from-source",
                str(info.get("source", {}).get("path")), "--name", str(info.get("name"))]
    preset = info.get("preset")
    args = list(info.get("configure", {}).get("argv", [])[2:])  # after configure and --prefix
    if preset in PRESETS:
        argv += ["--preset", preset]
        args = _without_preset(args, PRESETS[preset].cppflags)
    if args:
        argv.append("--configure=" + shlex.join(args))
    return shlex.join(argv)


def _without_preset(args: list[str], cppflags: str) -> list[str]:
    """The configure arguments as given, without the CPPFLAGS the preset added to them."""
    if not cppflags:
        return args
    kept = []
    for arg in args:
        if arg == f"CPPFLAGS={cppflags}":
            continue
        kept.append(arg.removesuffix(f" {cppflags}") if arg.startswith("CPPFLAGS=") else arg)
    return kept
