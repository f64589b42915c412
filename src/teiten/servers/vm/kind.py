"""Servers in a qemu guest that teiten builds from the study's own install and boots here
(servers/vm/server.py): the guest is a host reached over OpenSSH, so what runs in it is an ssh
server's: one cluster, or a primary with standbys in the one guest (no Pgpool-II: the guest has
none)."""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from pydantic import TypeAdapter

from teiten import installs
from teiten.installs import Install
from teiten.model.errors import ServerError, UserError
from teiten.servers.base import Server
from teiten.servers.kind import Kind, Problem, Request
from teiten.servers.ssh.server import SshServer
from teiten.servers.ssh.topology import SshTopologyServer
from teiten.servers.vm import image as vm_image
from teiten.servers.vm import qemu as vm_qemu
from teiten.servers.vm import server as vm
from teiten.servers.vm.spec import VmPlace
from teiten.spec import ServerSpec

_PROGRAMS = {"qemu-system-x86_64": "qemu-system-x86", "qemu-img": "qemu-utils",
             "mmdebstrap": "mmdebstrap", "mkfs.ext4": "e2fsprogs", "ssh": "openssh-client",
             "ssh-keygen": "openssh-client"}
_TAP_PROGRAMS = {"ip": "iproute2", "nsenter": "util-linux"}
TUN = "/dev/net/tun"


class Vm(Kind):
    name = "vm"
    field = "vm"
    install_here = True  # its 'install' is PostgreSQL on this machine, copied into the guest
    waldir_here = True  # its 'initdb.waldir' holds the file of the guest's WAL disk

    def build(self, request: Request) -> Server:
        spec, options = request.spec, VmPlace.on(request.spec).vm
        assert options is not None
        waldir = Path(spec.initdb.waldir).expanduser().absolute() if spec.initdb.waldir else None
        host = vm.VmHost(spec.name, options, request.install, wal_dir=waldir)
        client = request.client or request.install  # whose pgbench loads it and drives it
        if spec.replicas:  # a primary and its standbys in the one guest, as on an ssh host
            return SshTopologyServer(spec, host, client, request.run_dir, request.sizing,
                                     max_clients=request.max_clients)
        return SshServer(spec, host, client, request.run_dir, request.sizing)

    def problem(self, spec: ServerSpec) -> Problem | None:
        missing = sorted({package for program, package in _PROGRAMS.items()
                          if shutil.which(program) is None})
        if missing:
            return Problem("vm", f"server {spec.name}: a VM guest needs {', '.join(missing)}, "
                           f"which this machine lacks: apt-get install {' '.join(missing)}")
        if os.geteuid() != 0:
            return Problem("vm", f"server {spec.name}: teiten builds a VM guest's root file "
                           "system as root (mmdebstrap); run as root, or use another kind")
        options = VmPlace.on(spec).vm
        if options is not None and options.network == "tap":
            missing = sorted({package for program, package in _TAP_PROGRAMS.items()
                              if shutil.which(program) is None})
            if missing:
                return Problem("vm", f"server {spec.name}: a guest on a tap network needs "
                               f"{', '.join(missing)}, which this machine lacks: apt-get install "
                               f"{' '.join(missing)}, or give the guest network: user")
            if not os.path.exists(TUN):
                return Problem("vm", f"server {spec.name}: a guest on a tap network needs {TUN}, "
                               "which this machine lacks (modprobe tun), or give the guest network: user")
        return None

    def image_to_build(self, spec: ServerSpec, install: Install | None) -> tuple[str, float] | None:
        if install is None or vm_image.built(install):
            return None
        return f"the VM guest of {install.bindir}", vm_image.build_seconds()

    def unavailable(self, spec: ServerSpec) -> str | None:
        options = VmPlace.on(spec).vm
        assert options is not None and spec.install is not None
        try:
            install = installs.resolve(spec.install).install
        except UserError:
            return None  # the install's own check says what is wrong with it
        why = vm.accelerator_problem(options, install) if install is not None else None
        return (f"server {spec.name}: {why}; give accelerator: tcg for an emulated guest (not a "
                "measurement of a VM)") if why else None

    def check_install(self, install: Install, *, pgbench: bool) -> None:
        missing = [p for p in ("initdb", "pg_ctl", "postgres") if not install.has(p)]
        if missing:
            raise ServerError(f"PostgreSQL {install.version} in {install.bindir} lacks "
                              f"{', '.join(missing)}, which the VM guest runs")

    def notices(self, server: str, description: Mapping[str, object]) -> list[tuple[str, dict[str, str]]]:
        return [("vm-emulated", {"server": server})] if self.emulated(description) else []

    def emulated(self, description: Mapping[str, object]) -> bool:
        return _guest(description).emulated

    def facts(self, description: Mapping[str, object]) -> list[tuple[str, str, dict[str, str]]]:
        """The guest's network, as the run brought it up (a store from before the choice:
        qemu's user-mode network, the only one then), and where its WAL was (a store from
        before the WAL disk: not said)."""
        host = _SEEN.validate_python(description).host
        if host is None or host.vm is None:
            return []
        guest = host.vm
        network = "tap" if guest.network == "tap" else "user"
        found = [("server.vm.network", f"server.vm.network.{network}", {"address": guest.address or "?"})]
        if guest.wal_disk is not None:
            found.append(("server.vm.wal", f"server.vm.wal.{'disk' if guest.wal_disk else 'data'}", {}))
        return found

    def cpus(self, spec: Mapping[str, object],
             description: Mapping[str, object]) -> tuple[str, dict[str, str]] | None:
        options = _STORED.validate_python(spec).vm or StoredGuest()
        vcpus = options.vcpus or 1
        pinned = _guest(description).pinned_cpus or options.cpus
        key = f"server.cpus.vm.{'one' if vcpus == 1 else 'many'}{'.pinned' if pinned else ''}"
        return key, {"n": str(vcpus), "pinned": pinned or ""}

    def remove_leftovers(self, specs: Sequence[Mapping[str, object]], run: str) -> list[str]:
        # The guests of every teiten that is gone: this run's among them (by their qemu's
        # command line and their directory's marker).
        return vm_qemu.clean_leftovers() if specs else []


@dataclass(frozen=True)
class StoredGuest:
    """What a stored server spec's ``vm`` (its :class:`VmOptions`) says of the guest's CPUs."""

    vcpus: int | None = None
    cpus: str | None = None


@dataclass(frozen=True)
class StoredVm:
    vm: StoredGuest | None = None


@dataclass(frozen=True)
class GuestSeen:
    """The guest as a server's description keeps it (``host.vm``, :meth:`VmHost.describe`)."""

    emulated: bool = False
    pinned_cpus: str | None = None
    network: str | None = None  # "tap" or "user" (before the choice: a sentence of user-mode's)
    address: str | None = None  # the guest's on a tap network
    wal_disk: bool | None = None  # its WAL on a virtual disk of its own (None: a store from before)


@dataclass(frozen=True)
class HostSeen:
    vm: GuestSeen | None = None


@dataclass(frozen=True)
class VmSeen:
    host: HostSeen | None = None


_STORED = TypeAdapter(StoredVm)
_SEEN = TypeAdapter(VmSeen)


def _guest(description: Mapping[str, object]) -> GuestSeen:
    """The guest a stored server's description keeps (none yet: an empty one)."""
    host = _SEEN.validate_python(description).host
    return host.vm if host is not None and host.vm is not None else GuestSeen()


KIND = Vm()
