"""A network namespace for one server, reached from here through a veth pair (METHODS S5:
host network vs a virtual network, shown here without Docker or a VM).

teiten creates the namespace ``teiten-<tag>-<id>`` and a veth pair: ``tei<id>`` stays in
the root namespace with the client's address, its peer ``tei<id>n`` moves into the
namespace with the server's address. The two addresses are a private /30 that clashes with
no address or route of this machine. A server started through :meth:`Namespace.wrap`
binds in the namespace; clients here reach it over the veth pair, and the unix socket keeps
working (a socket file is reached through the filesystem, which is not namespaced here).

Leftovers: the namespace name carries the caller's tag. Callers put the name of the run
directory first in the tag (``f"{run_dir.name}-{server}"``, as for CPU cgroups), so the
cleanup of a killed run calls ``remove_stale(run_dir.name + "-")``. The ``teiten-`` prefix
means teiten made it: nothing else is ever deleted.
"""

from __future__ import annotations

import contextlib
import fcntl
import ipaddress
import logging
import os
import re
import secrets
import shutil
import stat
from collections.abc import Iterator
from pathlib import Path

from teiten.host import procs
from teiten.host.procs import RunAs
from teiten.model.errors import ProcessError, ServerError, UserError

log = logging.getLogger(__name__)

PREFIX = "teiten-"
NETNS_DIR = Path("/run/netns")  # where `ip netns add` mounts the namespaces
# Private ranges tried in turn for the /30 of each namespace.
POOLS = ("10.213.0.0/16", "172.29.213.0/24", "192.168.213.0/24")
# Serialises picking and assigning addresses between teiten processes on this machine.
LOCK = Path("/run/lock/teiten-netns.lock")
_TAG_MAX = 180  # namespace names are files (NAME_MAX 255); interface names carry only the id
_TIMEOUT = 15.0


def _clean(tag: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]", "_", tag)[:_TAG_MAX]


def _ip(*args: str, what: str, check: bool = True) -> procs.Completed:
    """``ip ARGS``; a failure becomes a one-line ServerError."""
    ip = shutil.which("ip")
    if ip is None:
        raise UserError("the 'ip' program (iproute2) is missing; install iproute2 to run "
                        "servers in network namespaces")
    try:
        return procs.run([ip, *args], timeout=_TIMEOUT, check=check, what=f"ip {args[0]}")
    except ProcessError as exc:
        raise ServerError(f"{what} failed: {exc.stderr_tail or exc}; check 'ip netns list' "
                          "and 'ip -o addr', and that this kernel allows network namespaces "
                          "and veth") from None


def _require_root_and_tools() -> None:
    if os.geteuid() != 0:
        raise UserError(f"network namespaces need root and teiten runs as uid {os.geteuid()}; "
                        "run teiten as root or use the loopback network")
    for program, package in (("ip", "iproute2"), ("nsenter", "util-linux")):
        if shutil.which(program) is None:
            raise UserError(f"the '{program}' program is missing; install {package} to run "
                            "servers in network namespaces")


def _taken_networks() -> list[ipaddress.IPv4Network]:
    """Every IPv4 network this machine has an address in or a route to (except default)."""
    taken = []
    for line in _ip("-o", "-4", "addr", "show", what="listing addresses").stdout.splitlines():
        fields = line.split()
        if "inet" in fields:
            taken.append(ipaddress.ip_interface(fields[fields.index("inet") + 1]).network)
    routes = _ip("-4", "route", "show", "table", "all", what="listing routes").stdout
    for line in routes.splitlines():
        for token in line.split()[:2]:  # the destination, after an optional route type
            with contextlib.suppress(ValueError):
                taken.append(ipaddress.IPv4Network(token, strict=False))
                break
    return [n for n in taken if isinstance(n, ipaddress.IPv4Network)]


def pick_block(taken: list[ipaddress.IPv4Network], *, start: int = 0,
               prefix: int = 30) -> ipaddress.IPv4Network:
    """The first block (a /30, or a ``prefix``) of the pools, from block ``start`` on, that
    overlaps nothing taken."""
    for pool in (ipaddress.IPv4Network(p) for p in POOLS):
        blocks = list(pool.subnets(new_prefix=prefix))
        first = start % len(blocks)
        for block in blocks[first:] + blocks[:first]:
            if not any(block.overlaps(net) for net in taken):
                return block
    raise ServerError(f"no free /{prefix} in {', '.join(POOLS)}: every block clashes with an address "
                      "or route here ('ip -o addr', 'ip route'); remove leftover teiten "
                      "namespaces with 'ip netns list' / 'ip netns del'")


@contextlib.contextmanager
def _locked() -> Iterator[None]:
    # safe: /run/lock is every account's: the lock is opened without following a link, never a FIFO
    LOCK.parent.mkdir(parents=True, exist_ok=True)
    try:
        fd = os.open(LOCK, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC,
                     0o600)
    except OSError as exc:
        raise ServerError(f"cannot open {LOCK} ({exc.strerror}); remove it if it is not a "
                          "regular file of root's") from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise ServerError(f"{LOCK} is not a regular file; remove it")
        fcntl.flock(fd, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


class Namespace:
    """A network namespace teiten created, with its veth pair and addresses."""

    def __init__(self, name: str, host_if: str, host_address: str, address: str, prefix: int = 30):
        self.name = name
        self.host_if = host_if  # the veth end in the root namespace
        self.inner_if = host_if + "n"  # its peer, inside the namespace
        self.host_address = host_address  # the client side, in the root namespace
        self.address = address  # the server side, inside the namespace (a bridged one: the guest's)
        self.prefix = prefix  # the length of the block's network prefix
        self.tap: str | None = None  # a bridged namespace's tap device (create_bridged)
        self.closed = False

    def __repr__(self) -> str:
        return f"Namespace({self.name!r}, {self.host_address} -> {self.address})"

    @classmethod
    def create(cls, tag: str) -> Namespace:
        """A new namespace ``teiten-<tag>-<id>`` joined to this one by a veth pair, both ends
        up with addresses of a free private /30, and ``lo`` up inside."""
        return cls._make(tag, bridged=False)

    @classmethod
    def create_bridged(cls, tag: str) -> Namespace:
        """A new namespace ``teiten-<tag>-<id>`` whose veth peer and a tap device (``tap0``,
        for a qemu guest's NIC: qemu opens it inside the namespace) are the two ports of a
        bridge (``br0``) there, all up. The block is a free private /29: the veth end here has
        its first address, :attr:`address` (its second) is the guest's to take on its NIC; the
        namespace has none of its own. The bridge and the tap go with the namespace."""
        return cls._make(tag, bridged=True)

    @classmethod
    def _make(cls, tag: str, *, bridged: bool) -> Namespace:
        _require_root_and_tools()
        ident = secrets.token_hex(3)
        name, host_if = f"{PREFIX}{_clean(tag)}-{ident}", f"tei{ident}"
        prefix = 29 if bridged else 30
        with _locked():
            block = pick_block(_taken_networks(), start=int(ident, 16), prefix=prefix)
            hosts = list(block.hosts())
            ns = cls(name, host_if, str(hosts[0]), str(hosts[1]), prefix)
            try:
                _ip("netns", "add", name, what=f"creating network namespace {name}")
                _ip("link", "add", host_if, "type", "veth", "peer", "name", ns.inner_if,
                    "netns", name, what=f"creating the veth pair {host_if} of {name}")
                _ip("addr", "add", f"{ns.host_address}/{prefix}", "dev", host_if,
                    what=f"giving {host_if} its address")
                _ip("link", "set", host_if, "up", what=f"bringing {host_if} up")
                if bridged:
                    ns._bridge()
                else:
                    _ip("-n", name, "addr", "add", f"{ns.address}/{prefix}", "dev", ns.inner_if,
                        what=f"giving {ns.inner_if} in {name} its address")
                _ip("-n", name, "link", "set", ns.inner_if, "up",
                    what=f"bringing {ns.inner_if} in {name} up")
                _ip("-n", name, "link", "set", "lo", "up", what=f"bringing lo in {name} up")
            except BaseException:
                ns.close()
                raise
        log.info("created %r", ns)
        return ns

    def _bridge(self) -> None:
        """``br0`` in the namespace, with the veth peer and a new tap device as its ports."""
        name, tap = self.name, "tap0"
        _ip("-n", name, "link", "add", "br0", "type", "bridge", what=f"creating the bridge of {name}")
        _ip("-n", name, "tuntap", "add", "dev", tap, "mode", "tap",
            what=f"creating the tap device of {name} (it needs /dev/net/tun)")
        for port in (self.inner_if, tap):
            _ip("-n", name, "link", "set", port, "master", "br0", what=f"adding {port} to the bridge of {name}")
        for device in ("br0", tap):
            _ip("-n", name, "link", "set", device, "up", what=f"bringing {device} in {name} up")
        self.tap = tap

    def wrap(self, argv: list[str], *, run_as: RunAs | None) -> list[str]:
        """``argv`` run inside the namespace as ``run_as``; the caller runs it as root.

        Entering a network namespace needs root (CAP_SYS_ADMIN), and procs.run(run_as=...)
        drops root before exec, so the program cannot enter by itself. Instead root runs
        ``nsenter --net=/run/netns/NAME -S UID -G GID -- argv``: nsenter joins the network
        namespace, drops every supplementary group, the group and the user (capabilities go
        with them), then execs ``argv``; everything it forks (pg_ctl's postmaster) stays in
        the namespace. ``ip netns exec`` is not used: it also unshares the mount namespace
        and remounts /sys, which the server does not need.
        """
        nsenter = shutil.which("nsenter")
        if nsenter is None:
            raise UserError("the 'nsenter' program is missing; install util-linux to run "
                            "servers in network namespaces")
        cred = ["-S", str(run_as.uid), "-G", str(run_as.gid)] if run_as is not None else []
        return [nsenter, f"--net={NETNS_DIR / self.name}", *cred, "--", *argv]

    def pids(self) -> list[int]:
        """The processes inside the namespace."""
        done = _ip("netns", "pids", self.name, what=f"listing processes in {self.name}",
                   check=False)
        return [int(p) for p in done.stdout.split() if p.isdigit()]

    def close(self) -> None:
        """Delete the veth pair and the namespace. Safe to call twice."""
        if self.closed:
            return
        _remove(self.name)
        self.closed = True
        log.info("removed network namespace %s", self.name)


def remove(name: str) -> bool:
    """Delete the namespace ``name`` that teiten made (its name begins with ``teiten-``) and
    its veth pair, when it is there; whether it was."""
    if not name.startswith(PREFIX) or os.geteuid() != 0 or shutil.which("ip") is None \
            or name not in _listed():
        return False
    _remove(name)
    return True


def _remove(name: str) -> None:
    """Delete namespace ``name`` and its veth pair (found by the id ending the name)."""
    if name in _listed():
        left = _ip("netns", "pids", name, what=f"listing processes in {name}", check=False)
        if left.stdout.split():
            # The namespace lives on until they exit; without the veth nothing reaches them.
            log.warning("processes %s still run in network namespace %s",
                        " ".join(left.stdout.split()), name)
    host_if = "tei" + name.rsplit("-", 1)[-1]
    # Deleting one end of a veth pair deletes both; it is gone already if the namespace died.
    if _ip("link", "show", host_if, what=f"looking for {host_if}", check=False).returncode == 0:
        _ip("link", "del", host_if, what=f"deleting the veth pair {host_if} of {name}")
    if name in _listed():
        _ip("netns", "del", name, what=f"deleting network namespace {name}")


def _listed() -> list[str]:
    out = _ip("netns", "list", what="listing network namespaces").stdout
    return [line.split()[0] for line in out.splitlines() if line.strip()]


def leftovers(prefix: str) -> list[str]:
    """The namespaces teiten created with a tag starting with ``prefix`` (a run directory's
    name and '-'), still present."""
    want = PREFIX + _clean(prefix)
    return sorted(n for n in _listed() if n.startswith(want))


def remove_stale(prefix: str) -> list[str]:
    """Delete what :func:`leftovers` finds (after a killed run). Returns the names removed."""
    if os.geteuid() != 0 or shutil.which("ip") is None:
        return []  # nobody here could have created one
    removed = []
    for name in leftovers(prefix):
        _remove(name)
        removed.append(name)
    return removed


def available() -> str | None:
    """Why network namespaces cannot be used here, or None when they can (tried for real:
    a namespace and veth pair are created and deleted)."""
    try:
        _require_root_and_tools()
        Namespace.create(f"probe-{os.getpid()}").close()
    except (UserError, ServerError) as exc:
        return str(exc)
    return None
