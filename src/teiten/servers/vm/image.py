"""A bootable qemu guest that holds one PostgreSQL install, built once and cached.

The guest is Debian (the release and mirrors of this machine's apt sources), made with
mmdebstrap as root: the minimal variant, openssh-server, Debian's kernel and initramfs, the
Debian packages of the libraries the install's programs load (``ldd``, then ``dpkg -S``),
an unprivileged account ``teiten`` and the install's files at the same absolute path as here.
No systemd: the kernel starts ``/sbin/teiten-init``, which mounts what sshd needs, brings up
the network (qemu's user-mode stack's 10.0.2.15, gateway 10.0.2.2, or the address and gateway
the kernel's command line gives as ``teiten.ip=`` and ``teiten.gateway=``: a tap network), runs ``sshd -D`` and
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
import glob
import json
import logging
import os
import re
import shutil
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from pydantic import TypeAdapter

from teiten.host import paths, procs, safefs, waiting
from teiten.installs import Install
from teiten.model.errors import ProcessError, ServerError, UserError
from teiten.servers import rootfs

log = logging.getLogger(__name__)

RECIPE = 4  # raise when what goes into an image changes: images of older recipes are rebuilt
USER = "teiten"  # the guest's unprivileged account, reached over ssh
DONE = "image.json"
# Besides the libraries: sshd, the kernel (its initramfs comes with it), `ip` for the network,
# time zones (a Debian-built server reads the system's), ps/pkill (teiten's host scripts),
# /etc/services and /etc/protocols.
BASE_PACKAGES = ("openssh-server", "linux-image-amd64", "iproute2", "kmod", "tzdata", "procps",
                 "netbase")
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
# kernel's command line) and moved /dev, /proc and /sys into it. {MOUNTS}: init_script's.
INIT = """\
#!/bin/sh
PATH=/usr/sbin:/usr/bin:/sbin:/bin
export PATH
mountpoint -q /proc || mount -t proc proc /proc
mountpoint -q /sys || mount -t sysfs sysfs /sys
mountpoint -q /dev || mount -t devtmpfs devtmpfs /dev
mkdir -p /dev/pts /dev/shm
mountpoint -q /dev/pts || mount -t devpts -o gid=5,mode=620 devpts /dev/pts
{MOUNTS}
mkdir -p /run/sshd /run/lock
hostname teiten-guest
modprobe virtio_net 2>/dev/null
ip link set lo up
# The address: qemu's user-mode one, or teiten.ip= and teiten.gateway= of the kernel's command
# line (a tap network's, servers/vm/tapnet.py).
address=10.0.2.15/24
gateway=10.0.2.2
for word in $(cat /proc/cmdline); do
  case "$word" in
    teiten.ip=*) address="${word#teiten.ip=}" ;;
    teiten.gateway=*) gateway="${word#teiten.gateway=}" ;;
  esac
done
ip addr add "$address" dev eth0
ip link set eth0 up
ip route add default via "$gateway"
echo "teiten-init: starting sshd"
/usr/sbin/sshd -D -e
echo "teiten-init: sshd ended ($?), powering off"
sync
echo 1 > /proc/sys/kernel/sysrq
echo o > /proc/sysrq-trigger
sleep 60
"""


# Where the guest's init mounts a tmpfs, and its mode; not over one that holds the install.
TMPFS = (("/dev/shm", "1777"), ("/run", "755"), ("/tmp", "1777"))


def hidden_by_tmpfs(dirs: Sequence[Path]) -> list[str]:
    """The mount points of :data:`TMPFS` that hold one of the install's directories (a
    TEITEN_HOME under /tmp puts the installs there): a tmpfs mounted over one would hide the
    install copied into the image."""
    return [point for point, _ in TMPFS
            if any(d == Path(point) or Path(point) in d.parents for d in dirs)]


def init_script(dirs: Sequence[Path]) -> str:
    """The guest's init: a tmpfs on each of /dev/shm, /run and /tmp, except on one that holds
    the install, which keeps the image's directory (with the tmpfs's mode)."""
    hidden = hidden_by_tmpfs(dirs)
    mounts = [f"chmod {mode} {point}  # it holds the install: no tmpfs over it" if point in hidden
              else f"mountpoint -q {point} || mount -t tmpfs -o mode={mode} tmpfs {point}"
              for point, mode in TMPFS]
    return INIT.replace("{MOUNTS}\n", "\n".join(mounts) + "\n")


def recipe_of(dirs: Sequence[Path]) -> str | int:
    """The recipe an image of an install in ``dirs`` is keyed by: :data:`RECIPE`, and the mount
    points whose tmpfs its init leaves out (an image built before that hid its install, so it
    is built anew; every other keeps its key)."""
    hidden = hidden_by_tmpfs(dirs)
    return f"{RECIPE}-kept-{','.join(hidden)}" if hidden else RECIPE


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
        built = _BUILT.validate_python(data)
        return cls(directory=directory, host_key=built.host_key, packages=built.packages,
                   install_dirs=built.install_dirs, seconds=built.seconds)


@dataclass(frozen=True)
class Built:
    """What a finished build keeps in its directory's ``image.json`` (:func:`_build`) that
    :class:`Image` reads back (its ``recipe`` checked first)."""

    host_key: str
    packages: tuple[str, ...]
    install_dirs: tuple[Path, ...]
    seconds: float


_BUILT = TypeAdapter(Built)


def vm_dir() -> Path:
    return paths.home() / "vm"


# -- building ----------------------------------------------------------------------------------

def build(install: Install, *, log_to: IO[str] | None = None) -> Image:
    """The guest image of ``install``: from the cache, else built (minutes)."""
    for program in ("mmdebstrap", "mkfs.ext4", "ssh-keygen", "dpkg-query", "ldd"):
        if shutil.which(program) is None:
            raise UserError(f"building a VM guest needs '{program}', which is not installed "
                            "(apt-get install mmdebstrap e2fsprogs openssh-client)")
    if os.geteuid() != 0:
        raise UserError("building a VM guest needs root (mmdebstrap's root mode and file owners)")
    dirs = rootfs.install_dirs(install)
    label = rootfs.install_label(install)
    top = rootfs.cache_top(vm_dir(), "qemu guests built from installs")
    final = top / _name(install, dirs)
    image = Image.load(final)
    if image is not None:
        _evict(top, final.name, label)
        return image
    with rootfs.locked(top):
        image = Image.load(final)
        if image is not None:
            return image
        if os.path.lexists(final):  # an unfinished build, or one of an older recipe
            paths.remove_owned(final)
        stage = top / f".{final.name}.{os.getpid()}"
        paths.make_owned(stage, f"VM guest of {install.bindir}, being built", mode=0o700)
        try:
            # safe: the build's own directory (root's, 0700)
            with open(stage / "build.log", "w") as own_log, \
                    waiting.telling(f"building the VM guest of {install.bindir}", build_seconds(),
                                    log=stage / "build.log"):
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


def _name(install: Install, dirs: list[Path]) -> str:
    """The directory of the guest of ``install`` in the cache of guests."""
    return f"{rootfs.install_label(install)}-{rootfs.cache_key(install, dirs, recipe_of(dirs))}"


# About what a build takes on a small machine (2 CPUs, Debian's mirror on the network), until
# this machine has built one: a study of one VM server took 383 s where its plan said 12 s.
BUILD_S = 370.0


def built(install: Install) -> bool:
    """Whether the guest of ``install`` is in the cache already."""
    try:
        return Image.load(vm_dir() / _name(install, rootfs.install_dirs(install))) is not None
    except OSError:
        return False


def build_seconds() -> float:
    """What a build takes here: the median of the guests in the cache, else :data:`BUILD_S`."""
    try:
        names = os.listdir(vm_dir())  # safe: only names read, each loaded through safefs
    except OSError:
        names = []
    seconds = sorted(i.seconds for n in names if (i := Image.load(vm_dir() / n)) is not None)
    return seconds[len(seconds) // 2] if seconds else BUILD_S


def _evict(top: Path, keep: str, label: str) -> None:
    """Remove the images of the install ``label`` other than ``keep`` (older recipes, or
    made before its files changed). A guest that runs on one keeps its open files."""
    for name in os.listdir(top):  # safe: the cache of guests, root's and 0700
        if name != keep and re.fullmatch(re.escape(label) + r"-[0-9a-f]{16}", name):
            paths.remove_owned(top / name)


def _build(install: Install, dirs: list[Path], stage: Path, out: IO[str]) -> None:
    started = time.monotonic()
    root = stage / "root"
    release, sources, packages = rootfs.make_root(root, dirs, BASE_PACKAGES, out)
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
    rootfs.put(root / "etc/ssh/sshd_config.d/teiten.conf", SSHD_CONFIG)
    owner = rootfs.ids(root, USER)
    dot_ssh = root / "home" / USER / ".ssh"
    dot_ssh.mkdir(mode=0o700)  # safe: the build's own directory
    os.chown(dot_ssh, *owner)  # safe: the build's own directory
    rootfs.put(dot_ssh / "authorized_keys", rootfs.get(stage / "id_ed25519.pub"), mode=0o600, owner=owner)
    rootfs.put(root / "sbin/teiten-init", init_script(dirs), mode=0o755)
    rootfs.put(root / "etc/hostname", "teiten-guest\n")
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
    public = rootfs.get(host_key.with_suffix(".pub"))
    rootfs.put(stage / "host_key.pub", public)
    safefs.remove(root)
    record = {"recipe": RECIPE, "install": install.to_json(), "packages": packages,
              "install_dirs": [str(d) for d in dirs], "release": release, "sources": sources,
              "host_key": " ".join(public.split()[:2]),
              "seconds": round(time.monotonic() - started, 1), "megabytes": megabytes}
    safefs.write_text(stage / DONE, json.dumps(record, indent=1) + "\n", mode=0o644, give=False)


def _du(root: Path) -> int:
    total = 0
    for directory, _dirs, names in os.walk(root):  # safe: the build's own directory
        for name in names:
            with contextlib.suppress(OSError):
                total += os.lstat(os.path.join(directory, name)).st_size
    return total
