"""Servers in a qemu guest that teiten builds from the study's own install and boots here
(servers/vm.py): the guest is a host reached over OpenSSH, so what runs in it (one cluster, or
a primary with standbys) is an ssh server's."""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping, Sequence
from typing import Any

from teiten.errors import ServerError
from teiten.installs import Install
from teiten.servers.base import Server
from teiten.servers.kind import Kind, Problem, Request
from teiten.servers.ssh import SshServer
from teiten.servers.ssh_topology import SshTopologyServer
from teiten.servers.vm import VmHost
from teiten.spec import ServerSpec

_PROGRAMS = {"qemu-system-x86_64": "qemu-system-x86", "qemu-img": "qemu-utils",
             "mmdebstrap": "mmdebstrap", "mkfs.ext4": "e2fsprogs", "ssh": "openssh-client",
             "ssh-keygen": "openssh-client"}


class Vm(Kind):
    name = "vm"
    field = "vm"
    install_here = True  # its 'install' is PostgreSQL on this machine, copied into the guest

    def build(self, request: Request) -> Server:
        spec = request.spec
        assert spec.vm is not None
        host = VmHost(spec.name, spec.vm, request.install)
        client = request.client or request.install  # whose pgbench loads it and drives it
        if spec.replicas:
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
        return None

    def unavailable(self, spec: ServerSpec) -> str | None:
        assert spec.vm is not None
        if spec.vm.accelerator == "kvm" and not os.access("/dev/kvm", os.R_OK | os.W_OK):
            return (f"server {spec.name}: -accel kvm needs /dev/kvm, which this machine does "
                    "not offer; give accelerator: tcg for an emulated guest (not a measurement "
                    "of a VM)")
        return None

    def check_install(self, install: Install, *, pgbench: bool) -> None:
        missing = [p for p in ("initdb", "pg_ctl", "postgres") if not install.has(p)]
        if missing:
            raise ServerError(f"PostgreSQL {install.version} in {install.bindir} lacks "
                              f"{', '.join(missing)}, which the VM guest runs")

    def notices(self, server: str, description: Mapping[str, Any]) -> list[tuple[str, dict[str, str]]]:
        guest = (description.get("host") or {}).get("vm") or {}
        return [("vm-emulated", {"server": server})] if guest.get("emulated") else []

    def remove_leftovers(self, specs: Sequence[Mapping[str, Any]], run: str) -> list[str]:
        return []  # a guest's qemu ends with the run that started it (vm_qemu), its disk is a throwaway overlay


KIND = Vm()
