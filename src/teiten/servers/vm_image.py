"""A bootable qemu guest that holds one PostgreSQL install, built once and cached.

The guest is Debian (the release and mirrors of this machine's apt sources), made with
mmdebstrap as root: the minimal variant, openssh-server, Debian's kernel and initramfs, the
Debian packages of the libraries the install's programs load (``ldd``, then ``dpkg -S``),
an unprivileged account ``teiten`` and the install's files at the same absolute path as here.
No systemd: the kernel starts ``/sbin/teiten-init``, which mounts what sshd needs, brings up
the network of qemu's user-mode stack (10.0.2.15, gateway 10.0.2.2), runs ``sshd -D`` and
powers the guest off when sshd ends.

The result lives in ``paths.home()/vm/<install>-<key>/`` (a directory only root can enter):
``disk.ext4`` (read-only: every guest boots from an overlay of its own), ``vmlinuz`` and
``initrd.img`` (booted with qemu's ``-kernel``/``-initrd``), the client key ``id_ed25519``
(0600: the one secret, it never enters the guest) and ``image.json``, written last: a
directory without it is a build that did not finish. The key of the cache is the install's
identity (its manifest when teiten made it, else its files' sizes and times) and
:data:`RECIPE`; a second build of the same install reuses the image, and a new image of an
install (its files or the recipe changed) replaces its older ones.
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
import shutil
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from teiten import paths, procs, safefs
from teiten.errors import ProcessError, ServerError, UserError
from teiten.installs import Install
from teiten.installs.manifest import MANIFEST

log = logging.getLogger(__name__)

RECIPE = 3  # raise when what goes into an image changes: images of older recipes are rebuilt
USER = "teiten"  # the guest's unprivileged account, reached over ssh
DONE = "image.json"
BUILD_TIMEOUT = 1800.0
# Besides the libraries: sshd, the kernel (its initramfs comes with it), `ip` for the network,
# time zones (a Debian-built server reads the system's), ps/pkill (teiten's host scripts),
# /etc/services and /etc/protocols.
BASE_PACKAGES = ("openssh-server", "linux-image-amd64", "iproute2", "kmod", "tzdata", "procps",
                 "netbase")
# mmdebstrap writes none: without it PostgreSQL's default listen_addresses ("localhost") fails.
HOSTS = "127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n127.0.1.1\tteiten-guest\n"
SSHD_CONFIG = f"""\
# teiten's guest: one key, one account, no passwords
HostKey /etc/ssh/ssh_host_ed25519_key
PasswordAuthentication no
KbdInteractiveAuthentication no
PermitRootLogin no
AllowUsers {USER}
UseDNS no
PrintMotd no
"""
# PID 1 of the guest. The initramfs has mounted the root file system (read-write: "rw" on the
# kernel's command line) and moved /dev, /proc and /sys into it.
INIT = """\
#!/bin/sh
PATH=/usr/sbin:/usr/bin:/sbin:/bin
export PATH
mountpoint -q /proc || mount -t proc proc /proc
mountpoint -q /sys || mount -t sysfs sysfs /sys
mountpoint -q /dev || mount -t devtmpfs devtmpfs /dev
mkdir -p /dev/pts /dev/shm
mountpoint -q /dev/pts || mount -t devpts -o gid=5,mode=620 devpts /dev/pts
mountpoint -q /dev/shm || mount -t tmpfs -o mode=1777 tmpfs /dev/shm
mountpoint -q /run || mount -t tmpfs -o mode=755 tmpfs /run
mountpoint -q /tmp || mount -t tmpfs -o mode=1777 tmpfs /tmp
mkdir -p /run/sshd /run/lock
hostname teiten-guest
modprobe virtio_net 2>/dev/null
ip link set lo up
ip addr add 10.0.2.15/24 dev eth0
ip link set eth0 up
ip route add default via 10.0.2.2
echo "teiten-init: starting sshd"
/usr/sbin/sshd -D -e
echo "teiten-init: sshd ended ($?), powering off"
sync
echo 1 > /proc/sys/kernel/sysrq
echo o > /proc/sysrq-trigger
sleep 60
"""


@dataclass(frozen=True)
class Image:
    """A built guest: what qemu boots and how ssh reaches it."""

    directory: Path
    host_key: str  # the guest's public host key ("ssh-ed25519 AAAA..."), for known_hosts
    packages: tuple[str, ...]  # the Debian packages asked for (base and libraries)
    install_dirs: tuple[Path, ...]  # the install's directories, at the same path in the guest
    seconds: float  # what the build took

    @property
    def disk(self) -> Path:
        return self.directory / "disk.ext4"

    @property
    def kernel(self) -> Path:
        return self.directory / "vmlinuz"

    @property
    def initrd(self) -> Path:
        return self.directory / "initrd.img"

    @property
    def key(self) -> Path:
        """The client's private key (root's, 0600; its public half is the guest account's)."""
        return self.directory / "id_ed25519"

    @property
    def user(self) -> str:
        return USER

    @classmethod
    def load(cls, directory: Path) -> Image | None:
        """The image built in ``directory``, or None when its build did not finish."""
        try:
            data = json.loads(safefs.read_text(directory / DONE))
        except (OSError, ValueError, safefs.UnsafePath):
            return None
        if data.get("recipe") != RECIPE:
            return None
        return cls(directory=directory, host_key=str(data["host_key"]),
                   packages=tuple(data["packages"]),
                   install_dirs=tuple(Path(p) for p in data["install_dirs"]),
                   seconds=float(data["seconds"]))


def vm_dir() -> Path:
    return paths.home() / "vm"


# -- what goes in ------------------------------------------------------------------------------

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
    holds is refused, since the guest could not have it."""
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
                              "holds, so the guest cannot have it; install it from a Debian package")
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
        raise UserError("a VM guest is built from this machine's Debian release, but "
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
                        "(/etc/apt/sources.list*); add one to build a VM guest")
    return release, list(dict.fromkeys(mine))


def cache_key(install: Install, dirs: Sequence[Path], recipe: object = RECIPE) -> str:
    """What names the image: the install's manifest when teiten made it, else the size and
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


# -- building ----------------------------------------------------------------------------------

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


def build(install: Install, *, log_to: IO[str] | None = None) -> Image:
    """The guest image of ``install``: from the cache, else built (minutes)."""
    for program in ("mmdebstrap", "mkfs.ext4", "ssh-keygen", "dpkg-query", "ldd"):
        if shutil.which(program) is None:
            raise UserError(f"building a VM guest needs '{program}', which is not installed "
                            "(apt-get install mmdebstrap e2fsprogs openssh-client)")
    if os.geteuid() != 0:
        raise UserError("building a VM guest needs root (mmdebstrap's root mode and file owners)")
    dirs = install_dirs(install)
    label = install_label(install)
    top = cache_top(vm_dir(), "qemu guests built from installs")
    final = top / f"{label}-{cache_key(install, dirs)}"
    image = Image.load(final)
    if image is not None:
        _evict(top, final.name, label)
        return image
    with locked(top):
        image = Image.load(final)
        if image is not None:
            return image
        if os.path.lexists(final):  # an unfinished build, or one of an older recipe
            paths.remove_owned(final)
        stage = top / f".{final.name}.{os.getpid()}"
        paths.make_owned(stage, f"VM guest of {install.bindir}, being built", mode=0o700)
        try:
            # safe: the build's own directory (root's, 0700)
            with open(stage / "build.log", "w") as own_log:
                _build(install, dirs, stage, log_to or own_log)
            # safe: the cache of guests, root's and 0700
            os.rename(stage, final)
        except ProcessError as exc:  # its output went to the log, removed with the build
            tail = procs.tail(safefs.read_text(stage / "build.log", limit=1 << 16), 3) if log_to is None else ""
            paths.remove_owned(stage)
            raise ServerError(f"building the VM guest of {install.bindir} failed: {exc}"
                              + (f": {tail}" if tail else "")) from exc
        except BaseException:
            paths.remove_owned(stage)
            raise
        _evict(top, final.name, label)
    image = Image.load(final)
    assert image is not None
    log.info("built the VM guest of %s in %.0f s: %s", install.bindir, image.seconds, final)
    return image


def _evict(top: Path, keep: str, label: str) -> None:
    """Remove the images of the install ``label`` other than ``keep`` (older recipes, or
    made before its files changed). A guest that runs on one keeps its open files."""
    for name in os.listdir(top):  # safe: the cache of guests, root's and 0700
        if name != keep and re.fullmatch(re.escape(label) + r"-[0-9a-f]{16}", name):
            paths.remove_owned(top / name)


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


def _build(install: Install, dirs: list[Path], stage: Path, out: IO[str]) -> None:
    started = time.monotonic()
    root = stage / "root"
    release, sources, packages = make_root(root, dirs, BASE_PACKAGES, out)
    procs.run(["useradd", "--root", str(root), "--create-home", "--user-group", "--shell", "/bin/sh",
               USER], timeout=60, log=out)
    # safe: below here, everything is in the build's own directory (root's, 0700)
    for old in glob.glob(str(root / "etc/ssh/ssh_host_*")):
        os.unlink(old)  # safe: the build's own directory
    host_key = root / "etc/ssh/ssh_host_ed25519_key"
    procs.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "teiten-guest", "-f", str(host_key)],
              timeout=60, log=out)
    procs.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "teiten", "-f",
               str(stage / "id_ed25519")], timeout=60, log=out)
    os.chmod(stage / "id_ed25519", 0o600)  # safe: the build's own directory
    put(root / "etc/ssh/sshd_config.d/teiten.conf", SSHD_CONFIG)
    owner = ids(root, USER)
    dot_ssh = root / "home" / USER / ".ssh"
    dot_ssh.mkdir(mode=0o700)  # safe: the build's own directory
    os.chown(dot_ssh, *owner)  # safe: the build's own directory
    put(dot_ssh / "authorized_keys", get(stage / "id_ed25519.pub"), mode=0o600, owner=owner)
    put(root / "sbin/teiten-init", INIT, mode=0o755)
    put(root / "etc/hostname", "teiten-guest\n")
    for kind, target in (("vmlinuz", "vmlinuz"), ("initrd.img", "initrd.img")):
        found = sorted(glob.glob(str(root / f"boot/{kind}-*")))  # safe: the build's own
        if not found:
            raise ServerError(f"the guest has no /boot/{kind}-*: linux-image-amd64 did not install "
                              "a kernel")
        shutil.copyfile(found[-1], stage / target)  # safe: the build's own directory
    size = _du(root)
    disk = stage / "disk.ext4"
    # Room for the clusters a study makes in the guest: 2 GiB, plus a fifth of the files.
    megabytes = size * 6 // 5 // (1 << 20) + 2048
    procs.run(["mkfs.ext4", "-q", "-F", "-L", "teiten-root", "-d", str(root), str(disk), f"{megabytes}M"],
              timeout=600, log=out)
    disk.chmod(0o444)  # safe: the build's own; guests boot from overlays, it is never written
    public = get(host_key.with_suffix(".pub"))
    put(stage / "host_key.pub", public)
    safefs.remove(root)
    record = {"recipe": RECIPE, "install": install.to_json(), "packages": packages,
              "install_dirs": [str(d) for d in dirs], "release": release, "sources": sources,
              "host_key": " ".join(public.split()[:2]),
              "seconds": round(time.monotonic() - started, 1), "megabytes": megabytes}
    safefs.write_text(stage / DONE, json.dumps(record, indent=1) + "\n", mode=0o644, give=False)


def put(path: Path, text: str, *, mode: int = 0o644, owner: tuple[int, int] | None = None) -> None:
    """Write a file of the guest being built (in the build's own directory: root's, 0700)."""
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
    raise ServerError(f"useradd made no account {user} in the guest")


def _du(root: Path) -> int:
    total = 0
    for directory, _dirs, names in os.walk(root):  # safe: the build's own directory
        for name in names:
            with contextlib.suppress(OSError):
                total += os.lstat(os.path.join(directory, name)).st_size
    return total
