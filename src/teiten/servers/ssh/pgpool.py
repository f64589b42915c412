"""Pgpool-II on an ssh host, in front of the nodes of an ssh server (METHODS S7: a Pgpool-II
next to each server), started and stopped with OpenSSH and POSIX shell there.

Its configuration is a local Pgpool-II's (servers/pgpool.py), written into a directory of
the trial's logs on the host. It reaches the nodes through their private socket directory
(mode 0700: the host account only), where they trust local connections, and it listens on
the host's address for this client. Clients are checked by pgpool itself: pool_hba.conf
admits only this client's address with scram-sha-256, against the cluster's password in
pool_passwd. That file (mode 0600, in a directory of mode 0700) is the one place the
password is written on the host: pgpool can check scram only with it. It exists while this
pgpool runs and is removed when it stops, and with the run's directory after a killed run.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Sequence
from typing import Literal

from teiten.host import procs
from teiten.host.remote import Ssh
from teiten.model.errors import ProcessError, ServerError
from teiten.servers import pgpool
from teiten.servers.cluster import SUPERUSER
from teiten.servers.scripts import script

log = logging.getLogger(__name__)

_PORTS = (20000, 60999)
_START_TRIES = 3


def find(ssh: Ssh) -> str:
    """The path of a usable Pgpool-II (4.2 or later) on the host, or ServerError saying how
    to install one."""
    said = ssh.shell(script("pgpool_find.sh"), timeout=30, what="looking for pgpool").stdout
    path, _, version = said.partition("\n")
    if not path.strip():
        raise ServerError(f"Pgpool-II is not installed on ssh host {ssh.label} ({ssh.target}): "
                          "install it there, e.g. apt-get install pgpool2")
    problem = pgpool.version_problem(path, version)
    if problem:
        raise ServerError(f"ssh host {ssh.label} ({ssh.target}): {problem}")
    return path.strip()


class RemotePgpool:
    """One Pgpool-II in ``root`` on the host of ``ssh`` (a new directory inside one that
    teiten owns there), for ``backends`` (socket directory or host, port) primary first."""

    def __init__(self, ssh: Ssh, binary: str, root: str, backends: Sequence[tuple[str, int]], *,
                 mode: Literal["streaming", "native"], max_clients: int,
                 weights: Sequence[float], socket_dir: str, listen: str, client_cidr: str,
                 password: str):
        self.ssh = ssh
        self.binary = binary
        self.root = root
        self.backends = list(backends)
        self.mode = mode
        self.max_clients = max_clients
        self.weights = pgpool.check_weights(weights, len(self.backends))
        self.socket_dir = socket_dir
        self.listen = listen
        self.client_cidr = client_cidr
        self.password = password
        self.port: int | None = None
        self.started = False

    def _write(self, port: int, pcp_port: int) -> None:
        values = pgpool.settings(self.mode, self.backends, self.weights,
                                 max_clients=self.max_clients, listen=self.listen, port=port,
                                 pcp_port=pcp_port, socket_dir=self.socket_dir, root=self.root)
        values.update({"enable_pool_hba": "on", "pool_passwd": f"{self.root}/pool_passwd"})
        self.ssh.write_text(f"{self.root}/pgpool.conf", pgpool.render(values))
        self.ssh.write_text(f"{self.root}/pcp.conf",
                            "# no pcp users: teiten stops pgpool by its pid file\n")
        self.ssh.write_text(f"{self.root}/pool_hba.conf", (
            "# written by teiten: only the client that runs the benchmark, with the password\n"
            f"host all {SUPERUSER} {self.client_cidr} scram-sha-256\n"))
        # Through stdin, never on a command line; readable by the host account only.
        self.ssh.shell('umask 077; cat > "$1"', f"{self.root}/pool_passwd",
                       input=f"{SUPERUSER}:TEXT{self.password}\n", timeout=30,
                       what="writing pool_passwd")

    def start(self, *, timeout: float = 60) -> None:
        """Start on a free port of the host and wait until ``SHOW pool_nodes`` answers
        through it from here."""
        self.ssh.run(["mkdir", "-m", "700", "-p", self.root], timeout=30)
        pgpool.start_retrying(_START_TRIES, self._launch, lambda: self._wait_ready(timeout=timeout),
                              self.stop, f"{self.root} on ssh host {self.ssh.label}")

    def _launch(self) -> str | None:
        """Start pgpool on fresh ports of the host; why it did not start, or None."""
        self.port = random.randint(*_PORTS)  # noqa: S311 - a port, not a secret
        self._write(self.port, random.randint(*_PORTS))  # noqa: S311
        done = self.ssh.shell(script("pgpool_start.sh"), self.root, self.binary, timeout=60,
                              check=False, what="pgpool")
        self.started = True
        return (procs.tail(done.stderr + done.stdout, 3) or "no output") if done.returncode != 0 else None

    def _wait_ready(self, *, timeout: float) -> None:
        assert self.port is not None
        pgpool.wait_serving(self.pool_nodes, self.mode, lambda: pgpool.first_fatal(self.read_log()),
                            lambda: pgpool.log_tail(self.read_log()),
                            where=f"on {self.listen} port {self.port}", timeout=timeout, interval=0.3)

    def pool_nodes(self) -> list[dict[str, str]]:
        """``SHOW pool_nodes`` through this pgpool, from here, with the password."""
        assert self.port is not None
        return pgpool.pool_nodes(self.listen, self.port, self.password)

    def read_log(self) -> str:
        done = self.ssh.run(["cat", "--", f"{self.root}/log/pgpool.log"], timeout=60,
                            check=False, what="reading the pgpool log")
        return done.stdout if done.returncode == 0 else ""

    def stop(self) -> list[str]:
        """Stop it (killing what a stop request leaves), and remove pool_passwd."""
        if not self.started:
            return []
        self.started = False
        try:
            said = self.ssh.shell(script("pgpool_kill.sh") + script("pgpool_stop.sh"), self.root,
                                  self.binary, timeout=60, what="stopping pgpool").stdout.strip()
        except (ProcessError, ServerError) as exc:
            log.warning("%s", exc)
            return [f"could not stop Pgpool-II in {self.root}: {exc}"]
        return [said] if said else []

    def close(self) -> list[str]:
        """Nothing to let go here: what it made lives on its host, under the trial's root."""
        return []
