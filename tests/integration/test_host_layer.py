"""The host layer (servers/ssh/host.py): what runs on a host (servers/ssh/server.py) asks the host where
this machine reaches its ports and how to name it, and never which host it is. Shown with a host
reached only through forwards of its ports, as a VM behind qemu's user-mode network is: a real
sshd on loopback, a real cluster there, real pgbench through teiten's delay proxy at no delay
(the forwarder). Its own module, so that it runs beside the others (test_ssh_server's module
holds a test that runs alone)."""

from __future__ import annotations

import os
from pathlib import Path

import psutil
from tests.integration.test_ssh_server import SIZING, _spec, _workload, pg15, run_dir, sshd
from tests.sshd import Sshd

from teiten.drivers import pgbench
from teiten.host import netdelay, procs
from teiten.installs import Install
from teiten.servers.ssh.host import SshHost
from teiten.servers.ssh.server import SshServer
from teiten.spec import ServerSpec

__all__ = ["pg15", "run_dir", "sshd"]  # the fixtures, shared with test_ssh_server


class _ForwardedHost(SshHost):
    """A host this machine reaches only through forwards of its ports, as a VM behind qemu's
    user-mode network is: each port gets a forwarder of its own on loopback (teiten's delay
    proxy at no delay), and ``address`` names the forwarder, never the host."""

    origin = "forwarded"

    def __init__(self, spec: ServerSpec):
        assert spec.ssh is not None
        super().__init__(spec.name, spec.ssh, spec.ssh_config)
        self.forwards: dict[int, tuple[procs.Background, int]] = {}

    def address(self, port: int) -> tuple[str, int]:
        if port not in self.forwards:
            self.forwards[port] = netdelay.start(super().address(port), 0)
        return "127.0.0.1", self.forwards[port][1]

    def describe(self) -> dict[str, object]:
        return {**super().describe(), "forwards": len(self.forwards)}

    def close(self) -> None:
        for proxy, _ in self.forwards.values():
            proxy.stop(timeout=10)
        super().close()


def test_a_server_runs_on_any_host_through_the_host_layer(
        sshd: Sshd, pg15: Install, run_dir: Path) -> None:
    """On a host reached only through forwards, every connection goes through one, the
    server names the host as the host describes itself, and nothing else changes."""
    w = _workload("select-only")
    spec = _spec(sshd)
    host = _ForwardedHost(spec)
    server = SshServer(spec, host, pg15, run_dir, SIZING)
    try:
        server.prepare(w)
        slot = server.slots[w.key]
        assert host.forwards, "loading went through a forward"
        endpoint = server.begin_trial(w, "t1", prewarm=False)
        assert slot.port is not None and slot.port in host.forwards
        assert (endpoint.host, endpoint.port) == ("127.0.0.1", host.forwards[slot.port][1])
        assert endpoint.port != slot.port
        run = pgbench.run(pg15, endpoint, w, clients=1, threads=1, duration_s=1)
        assert run.returncode == 0, run.stderr
        assert run.output.transactions > 0
        assert server.end_trial().crashed is None
        described = server.describe()
        assert described["origin"] == "forwarded"
        # As the host described itself when the data was loaded, through its first forward
        # (every start picks a port of its own: the trial's went through a second).
        assert len(host.forwards) == 2
        assert described["host"] == {
            "ssh": sshd.alias, "ram_bytes": psutil.virtual_memory().total,
            "cpus": os.cpu_count(), "uname": " ".join(os.uname()[i] for i in (0, 2, 4)),
            "boot_id": Path("/proc/sys/kernel/random/boot_id").read_text().strip(),
            "forwards": 1}
    finally:
        server.close()
    assert all(proxy.proc.poll() is not None for proxy, _ in host.forwards.values())
