"""A Debian root file system that holds one PostgreSQL install: what a VM guest's disk
(teiten.servers.vm.image) and a container's image (teiten.servers.docker.image) are made of.

mmdebstrap makes it as root from this machine's Debian release and apt sources: the minimal
variant, the Debian packages of the libraries the install's programs load (``ldd``, then
``dpkg -S``), and the install's files at the same absolute path as here. The builds are cached
in directories of teiten's own that only root enters, one build at a time, named by the
install's identity and the recipe of what is built from it.
"""

from __future__ import annotations

import contextlib
import fcntl
import glob
import hashlib
import json
import logging
import os
import re
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import IO

from teiten.host import paths, procs, safefs
from teiten.installs import Install
from teiten.installs.manifest import MANIFEST
from teiten.model.errors import ServerError, UserError

log = logging.getLogger(__name__)

BUILD_TIMEOUT = 1800.0
# mmdebstrap writes none: without it PostgreSQL's default listen_addresses ("localhost") fails.
HOSTS = "127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n127.0.1.1\tteiten-guest\n"

def install_dirs(install: Install) -> list[Path]:
    """The directories that hold ``install``: its prefix (the parent of bin/), and the share
    and library directories ``pg_config`` names outside it (Debian's packages keep share/ in
    /usr/share/postgresql/N)."""
    prefix = install.bindir.resolve().parent
    found = [prefix]
    if install.has("pg_config"):
        done = procs.run([str(install.binary("pg_config")), "--sharedir", "--pkglibdir"], timeout=30,
                         check=False)
        for line in done.stdout.splitlines() if done.returncode == 0 else []:
            where = Path(line.strip()).resolve()
            if line.strip() and where.is_dir() and not any(where.is_relative_to(d) for d in found):
                found.append(where)
    return found


def _elf_files(dirs: Sequence[Path]) -> Iterator[Path]:
    for top in dirs:
        # safe: the install's own files (teiten's cache or the system's), read only
        for directory, _subdirs, names in os.walk(top):
            for name in sorted(names):
                path = Path(directory) / name
                if path.is_symlink() or not path.is_file():
                    continue
                # safe: the install's own files (teiten's cache or the system's), read only
                with open(path, "rb") as f:
                    if f.read(4) == b"\x7fELF":
                        yield path


def needed_libraries(dirs: Sequence[Path]) -> list[Path]:
    """The shared libraries outside ``dirs`` that the install's programs and libraries load,
    as ``ldd`` resolves them here."""
    found: set[Path] = set()
    for path in _elf_files(dirs):
        done = procs.run(["ldd", str(path)], timeout=30, check=False)
        for line in done.stdout.splitlines():
            m = re.match(r"\s*\S+ => (/\S+) \(0x", line) or re.match(r"\s*(/\S+) \(0x", line)
            if m and not any(Path(m.group(1)).is_relative_to(d) for d in dirs):
                found.add(Path(m.group(1)))
            elif "not found" in line:
                log.info("%s: %s", path, line.strip())
    return sorted(found)


def _spellings(path: Path) -> list[str]:
    """``path`` as dpkg may list it: merged /usr makes /lib/x and /usr/lib/x the same file."""
    text = str(path)
    other = text[4:] if text.startswith("/usr/") else "/usr" + text
    return [text, other, str(path.resolve())]


def packages_of(libraries: Sequence[Path]) -> list[str]:
    """The Debian packages that hold ``libraries`` (``dpkg -S``); a library no package
    holds is refused, since the image could not have it."""
    owners: dict[str, str] = {}
    asked = sorted({s for lib in libraries for s in _spellings(lib)})
    done = procs.run(["dpkg-query", "-S", *asked], timeout=60, check=False) if asked else None
    for line in done.stdout.splitlines() if done else []:
        package, sep, path = line.partition(": ")
        if sep and "," not in package and " " not in package:  # not a diversion's line
            owners[path.strip()] = package.split(":")[0]
    result = set()
    for lib in libraries:
        owner = next((owners[s] for s in _spellings(lib) if s in owners), None)
        if owner is None:
            raise ServerError(f"the install needs {lib}, which no Debian package of this machine "
                              "holds, so an image built from it cannot have it; install it from a "
                              "Debian package")
        result.add(owner)
    return sorted(result)


def debian_sources() -> tuple[str, list[str]]:
    """This machine's Debian release (``VERSION_CODENAME``) and its apt sources of that
    release, as one-line entries ("deb URI SUITE COMPONENTS") for mmdebstrap."""
    release = ""
    with contextlib.suppress(OSError):
        # safe: the system's, root's
        for line in Path("/etc/os-release").read_text().splitlines():
            if line.startswith("VERSION_CODENAME="):
                release = line.split("=", 1)[1].strip().strip('"')
    if not release:
        raise UserError("an image is built from this machine's Debian release, but "
                        "/etc/os-release names none (VERSION_CODENAME); build it on Debian")
    entries: list[str] = []
    files = sorted(glob.glob("/etc/apt/sources.list.d/*.sources"))  # safe: apt's, root's
    for name in files:
        for stanza in re.split(r"\n\s*\n", Path(name).read_text()):
            fields = dict(re.findall(r"^(\w[\w-]*):\s*(.*)$", stanza, re.M))
            if "deb" in fields.get("Types", "").split() and fields.get("Enabled", "yes") != "no":
                for uri in fields.get("URIs", "").split():
                    for suite in fields.get("Suites", "").split():
                        entries.append(f"deb {uri} {suite} {fields.get('Components', 'main')}")
    # safe: apt's configuration, root's
    for name in ["/etc/apt/sources.list", *sorted(glob.glob("/etc/apt/sources.list.d/*.list"))]:
        with contextlib.suppress(OSError):
            for line in Path(name).read_text().splitlines():
                words = re.sub(r"\[[^]]*\]", "", line.split("#", 1)[0]).split()
                if len(words) >= 3 and words[0] == "deb":
                    entries.append(" ".join(words))
    mine = [e for e in entries if e.split()[2].split("/")[0].startswith(release)]
    if not mine:
        raise UserError(f"no apt source of this machine serves Debian {release} "
                        "(/etc/apt/sources.list*); add one to build an image")
    return release, list(dict.fromkeys(mine))


def cache_key(install: Install, dirs: Sequence[Path], recipe: object) -> str:
    """What names an image built from ``install``: the install's manifest when teiten made it, else the size and
    time of each of its files; the version and place; and the image's recipe."""
    digest = hashlib.sha256(json.dumps({"recipe": recipe, "version": install.version,
                                        "bindir": str(install.bindir)}).encode())
    manifest = install.bindir.parent / MANIFEST
    if manifest.is_file():
        # safe: the install's manifest (teiten's cache, root's)
        digest.update(manifest.read_bytes())
    else:
        for top in dirs:
            # safe: the install's own files, read only
            for directory, subdirs, names in os.walk(top):
                subdirs.sort()
                for name in sorted(names):
                    st = os.lstat(os.path.join(directory, name))
                    digest.update(f"{directory}/{name} {st.st_size} {st.st_mtime_ns}\n".encode())
    return digest.hexdigest()[:16]


@contextlib.contextmanager
def locked(top: Path) -> Iterator[None]:
    """One build at a time (another teiten waits, then finds the image made)."""
    with safefs.Dir.open(top) as directory:
        fd = directory.open_file(".build.lock", os.O_RDWR | os.O_CREAT)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def cache_top(top: Path, purpose: str) -> Path:
    """``top``, a directory of teiten's own that only root enters (made when missing)."""
    paths.refuse_replaceable(top.parent)
    if not os.path.lexists(top):
        with contextlib.suppress(UserError):  # another teiten made it meanwhile
            paths.make_owned(top, purpose, mode=0o700)
    if not paths.is_owned(top):
        raise UserError(f"{top} is not a directory teiten made; move it away to build {purpose}")
    return top


def install_label(install: Install) -> str:
    """How the image's directory names the install: its directory's name ("pypi-17.11",
    "src-15.18-g3540e3bab18d-3e3957c3"), with the origin when that does not say it."""
    name = install.bindir.resolve().parent.name
    name = name if name.startswith(install.origin) else f"{install.origin}-{name}"
    return re.sub(r"[^A-Za-z0-9._-]", "_", name)


def make_root(root: Path, dirs: Sequence[Path], base: Sequence[str],
              out: IO[str]) -> tuple[str, list[str], list[str]]:
    """A Debian root file system in ``root`` (mmdebstrap's minimal variant, this machine's
    release and sources) with the packages ``base``, those of the libraries the install in
    ``dirs`` loads, /etc/hosts, and the install's files at the same absolute paths. Returns
    the release, the sources and the packages asked for. ``root`` is in a build directory
    of teiten's own (root's, 0700)."""
    packages = sorted({*base, *packages_of(needed_libraries(dirs))})
    release, sources = debian_sources()
    out.write(f"teiten: mmdebstrap {release} with {' '.join(packages)}\n")
    procs.run(["mmdebstrap", "--mode=root", "--variant=minbase", "--format=directory",
               f"--include={','.join(packages)}", "--skip=output/mknod",
               release, str(root), *sources],
              timeout=BUILD_TIMEOUT, log=out, what="mmdebstrap")
    put(root / "etc/hosts", HOSTS)
    for directory in dirs:  # the install, at the same absolute path
        inside = root / directory.relative_to("/")
        for parent in reversed(inside.parents):
            if parent.is_relative_to(root) and not parent.exists():
                parent.mkdir()  # safe: the build's own directory
                parent.chmod(0o755)  # safe: the same; the guest's account reaches the install
        # safe: from the install (root's or the system's) into the build's own directory
        procs.run(["cp", "-a", "--no-dereference", str(directory), str(inside)], timeout=600, log=out)
    return release, sources, packages


def put(path: Path, text: str, *, mode: int = 0o644, owner: tuple[int, int] | None = None) -> None:
    """Write a file of the root file system being built (in the build's own directory: root's, 0700)."""
    path.write_text(text)  # safe: the build's own directory
    path.chmod(mode)  # safe: the same
    if owner is not None:
        os.chown(path, *owner)  # safe: the same


def get(path: Path) -> str:
    return path.read_text()  # safe: the build's own directory


def ids(root: Path, user: str) -> tuple[int, int]:
    for line in get(root / "etc/passwd").splitlines():
        fields = line.split(":")
        if fields[0] == user:
            return int(fields[2]), int(fields[3])
    raise ServerError(f"useradd made no account {user} in the image")
