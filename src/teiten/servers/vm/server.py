"""Servers in a qemu guest on this machine (METHODS S5, 2014: the host against a guest of the
same cores and memory, and two guests at once): a :class:`~teiten.servers.ssh.host.Host` that
teiten brings up itself. The guest is built from the study's own install
(teiten.servers.vm.image: Debian from this machine's apt sources, the install at the same
path inside), booted with its vCPU threads pinned to CPUs here (teiten.servers.vm.qemu), and
reached over OpenSSH; what runs in it is an ssh server's (servers/ssh/server.py), unchanged. Its
network is the study's ``network``: ``tap`` (the default), a tap device on a bridge in a network
namespace of its own, the guest at a fixed address that clients reach as they would another
machine's; or ``user``, qemu's user-mode network, where each port of the guest a client needs is
forwarded on loopback when it is first asked for (``address``): user-mode networking copies
every packet through qemu, which adds to each round trip (bench/vm_network.py measures both).
With the study's ``initdb.waldir``, the guest has a second virtual disk for the WAL, as the 2014
guest had its WAL on a volume of its own: its file in that directory here, mounted in the guest
(teiten.servers.vm.qemu), where the ssh server puts each cluster's WAL (:meth:`VmHost.wal_base`).

Under ``accelerator: tcg`` the guest is emulated: a functional stand-in, never a measurement of
a VM, and every description of it says so (``emulated``).
"""

from __future__ import annotations

import functools
import os
import re
from pathlib import Path

from teiten.host import cpus
from teiten.host.remote import Ssh
from teiten.installs import Install
from teiten.model.errors import ServerError
from teiten.servers.ssh.host import Host, HostFacts
from teiten.servers.vm import image as vm_image
from teiten.servers.vm import qemu as vm_qemu
from teiten.servers.vm.spec import VmOptions

PROBE_S = 60.0  # a guest that answers ssh within this under the accelerator can use it
PROBE_KERNEL_S = 10.0  # ... and whose kernel began within this (under kvm: a second or two)


def accelerator_problem(options: VmOptions, install: Install) -> str | None:
    """Why a guest of ``install`` cannot run under ``options.accelerator`` on this machine, or
    None. kvm is decided by a boot with a deadline (once per image and process): where a guest
    does not boot, the line names the accelerator and the console's last line."""
    if options.accelerator == "tcg":
        return None
    if not os.access("/dev/kvm", os.R_OK | os.W_OK):
        return "-accel kvm needs /dev/kvm, which this machine does not offer"
    return _probe(vm_image.build(install).directory, options.accelerator)


@functools.cache
def _probe(directory: Path, accel: str) -> str | None:
    image = vm_image.Image.load(directory)
    assert image is not None
    try:
        guest = vm_qemu.boot(image, name=f"probe{os.getpid()}", accel=accel, deadline=PROBE_S,
                             kernel_within=PROBE_KERNEL_S)
    except ServerError as exc:
        return str(exc)
    guest.stop()
    return None


class VmHost(Host):
    """The qemu guest of the study's server ``name``, booted when it is first reached."""

    def __init__(self, name: str, options: VmOptions, install: Install, *, wal_dir: Path | None = None):
        super().__init__(name, None)
        self.options = options
        self.install = install
        self.origin = install.origin  # the study's own install, in the guest
        self.guest: vm_qemu.Guest | None = None
        self.image: Path | None = None  # the guest's image, once built
        self.wal_dir = wal_dir  # where the file of the guest's WAL disk goes here (None: no disk)
        self.pinned = ([[c] for c in cpus.parse_list(options.cpus)] if options.cpus
                       else [[c] for c in cpus.choose(options.vcpus)])
        # The guest's memory on the NUMA node of its vCPUs' CPUs, where the machine has nodes.
        self.memory_node = cpus.memory_node(c for group in self.pinned for c in group)

    def where(self) -> str:
        return f"VM guest {self.name} (-accel {self.options.accelerator})"

    def install_ref(self, ref: str) -> str:
        return str(self.install.bindir)  # copied to the same path in the guest

    def install_hint(self) -> str | None:
        return (f"teiten copied the install {self.install.bindir} to that path in the guest when it "
                f"built its image ({self.image}), and something there hides or removed it: remove "
                "that directory and run again to build the image anew")

    def reach(self) -> HostFacts:
        if self.guest is None:
            image = vm_image.build(self.install)
            self.image = image.directory
            self.guest = vm_qemu.boot(
                image, name=re.sub(r"[^A-Za-z0-9._-]", "-", self.name),
                accel=self.options.accelerator, cpus=self.options.vcpus,
                memory_mb=self.options.memory >> 20, deadline=self.options.boot_timeout,
                pin=self.pinned, network=self.options.network, memory_node=self.memory_node,
                wal_dir=self.wal_dir, wal_bytes=self.options.wal_disk)
            self._ssh = Ssh(self.guest.target, self.guest.ssh_config, label=self.name)
        return super().reach()

    def wal_base(self) -> str | None:
        return vm_qemu.WAL_MOUNT if self.wal_dir is not None else None

    def address(self, port: int) -> tuple[str, int]:
        assert self.guest is not None
        if self.guest.address is not None:  # a tap network: every port at the guest's address
            return self.guest.address, port
        return "127.0.0.1", self.guest.forward(port)

    def describe(self) -> dict[str, object]:
        found = super().describe()
        found.pop("ssh", None)
        found["vm"] = {"accelerator": self.options.accelerator,
                       "emulated": self.options.accelerator == "tcg",
                       "vcpus": self.options.vcpus, "memory_bytes": self.options.memory,
                       "pinned_cpus": cpus.format_list(c for group in self.pinned for c in group),
                       "network": self.options.network, "memory_node": self.memory_node,
                       "wal_disk": self.wal_dir is not None,
                       **({"address": self.guest.address} if self.guest and self.guest.address else {})}
        return found

    def pids(self) -> list[int]:
        return [self.guest.pid] if self.guest is not None and not self.guest.stopped else []

    def close(self) -> None:
        try:
            super().close()
        finally:
            if self.guest is not None:
                self.guest.stop()
