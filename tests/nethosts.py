"""Two "hosts" for tests of servers spread over machines: two network namespaces that the test
makes (teiten.host.netns: each joined to this one by a veth pair, with an address of its own), a
third veth pair joining them to each other (a /32 route each way, so host B reaches host A at
the very address this machine reaches it, from its own), and an sshd in each
(tests/sshd.py) that lets the account postgres log in. One ssh_config names both (``ssh:
[alias_a, alias_b]``). They share this machine's kernel, files and CPUs: what differs is the
network, which is what a node on another host changes for teiten's code.

Everything is removed on exit: the sshds by their pids, then the namespaces (with their veth
pairs)."""

from __future__ import annotations

import os
import secrets
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path

from tests.sshd import Sshd, available, running_sshd

from teiten.host.netns import Namespace

PG15 = Path("/usr/lib/postgresql/15/bin")


@dataclass(frozen=True)
class Hosts:
    a: Namespace
    b: Namespace
    sshd_a: Sshd
    sshd_b: Sshd
    config: Path  # an ssh_config with both aliases


def why_not() -> str | None:
    """Why two hosts cannot be made here, or None."""
    if (why := available()) is not None:
        return f"sshd: {why}"
    for program in ("ip", "nsenter"):
        if shutil.which(program) is None:
            return f"the '{program}' program is missing (iproute2, util-linux)"
    if not (PG15 / "postgres").exists():
        return f"PostgreSQL 15 is not at {PG15}"
    if not Path("/usr/sbin/pgpool").exists():
        return "Pgpool-II is not installed (apt-get install pgpool2)"
    return None


def _ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, timeout=15, capture_output=True)


@contextmanager
def two_hosts(aliases: tuple[str, str]) -> Iterator[Hosts]:
    with ExitStack() as stack:
        tag = f"test-hosts-{os.getpid()}"
        a = Namespace.create(f"{tag}-a")
        stack.callback(a.close)
        b = Namespace.create(f"{tag}-b")
        stack.callback(b.close)
        # A's and B's ends of the link between them (deleted with either namespace).
        ident = secrets.token_hex(3)
        end_a, end_b = f"tha{ident}", f"thb{ident}"
        _ip("link", "add", end_a, "netns", a.name, "type", "veth", "peer", "name", end_b,
            "netns", b.name)
        _ip("-n", a.name, "link", "set", end_a, "up")
        _ip("-n", b.name, "link", "set", end_b, "up")
        _ip("-n", a.name, "route", "add", f"{b.address}/32", "dev", end_a, "src", a.address)
        _ip("-n", b.name, "route", "add", f"{a.address}/32", "dev", end_b, "src", b.address)
        sshd_a = stack.enter_context(running_sshd(aliases[0], netns=a.name, address=a.address))
        sshd_b = stack.enter_context(running_sshd(aliases[1], netns=b.name, address=b.address))
        directory = Path(tempfile.mkdtemp(prefix="teiten-hosts-"))
        stack.callback(shutil.rmtree, directory, True)
        config = directory / "ssh_config"
        config.write_text(sshd_a.config.read_text() + sshd_b.config.read_text())
        yield Hosts(a, b, sshd_a, sshd_b, config)
