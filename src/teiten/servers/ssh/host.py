"""The host layer of servers teiten makes over OpenSSH (servers/ssh/server.py, topology.py): where
PostgreSQL runs, apart from what runs there.

A :class:`Host` is a machine teiten reaches with OpenSSH: an ssh host the study names
(:class:`SshHost`), or one that a kind of its own brings up first (a virtual machine it boots)
and whose ports this machine reaches through a forward. What runs there (one cluster, a
primary with standbys, a Pgpool-II beside each node) is the same code on every host: it asks
the host for its command channel (``ssh``), its facts (``open``), where this machine reaches
one of its ports (``address``) and what the store keeps of it (``describe``), never which host
it is.

Also here: what teiten learns about a host (its home, memory, CPUs, addresses) and the
PostgreSQL install it finds there, by running OpenSSH commands and POSIX shell on it; and how
teiten marks what it creates there and admits this client in pg_hba.conf.
"""

from __future__ import annotations

import json
import logging
import os
import re
import time
from dataclasses import dataclass
from pathlib import Path

from teiten.host.remote import Ssh
from teiten.installs.model import parse_version
from teiten.installs.releases import Release
from teiten.model.errors import ServerError
from teiten.servers.replication import basebackup_choice
from teiten.servers.scripts import script

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class RemoteInstall:
    """PostgreSQL binaries in ``bindir`` on the host."""

    bindir: str
    version: str
    major: int

    @property
    def release(self) -> Release:
        """Its major release, which says what its server has (teiten.installs.releases)."""
        return Release.of(self.version)

    def binary(self, program: str) -> str:
        return f"{self.bindir}/{program}"


@dataclass(frozen=True)
class HostFacts:
    home: str
    client_ip: str   # this machine as the host sees it: the only address pg_hba admits
    server_ip: str   # the host as this machine reaches it: where pgbench connects
    ram_bytes: int
    cpus: int
    uname: str
    boot_id: str = ""  # the running kernel's: hosts with the same one are one machine


class Host:
    """A machine where teiten makes and controls PostgreSQL over OpenSSH (``ssh``). The defaults
    are those of a host that is there already and that this machine reaches directly."""

    origin = "ssh"  # where the server's PostgreSQL came from, for its description

    def __init__(self, name: str, ssh: Ssh | None):
        self.name = name  # the study's server on this host
        self._ssh = ssh  # None until reached, for a host that is brought up first
        self.facts: HostFacts | None = None

    @property
    def ssh(self) -> Ssh:
        """The command channel to the host."""
        if self._ssh is None:
            raise ServerError(f"{self.where()} has not been reached yet")
        return self._ssh

    def where(self) -> str:
        """The host in messages."""
        return f"ssh host {self.name} ({self.ssh.target})"

    def install_ref(self, ref: str) -> str:
        """Where the host finds the PostgreSQL the study's ``install`` names (a major, a
        version or a bindir, looked up there)."""
        return ref

    def install_hint(self) -> str | None:
        """What to do when the install's path holds no postgres there (None: give another)."""
        return None

    def reach(self) -> HostFacts:
        """Reach the host and read what teiten needs of it. Once; later calls return the same."""
        if self.facts is None:
            self.ssh.check()
            facts = read_facts(self.ssh, self.where())
            if not facts.home.startswith("/"):
                raise ServerError(f"{self.where()}: $HOME is not set there")
            self.facts = facts
        return self.facts

    def wal_base(self) -> str | None:
        """A directory of the host on a volume of the WAL's own, where the server puts each
        cluster's WAL (initdb --waldir), or None: the WAL in the data directory."""
        return None

    def address(self, port: int) -> tuple[str, int]:
        """Where this machine reaches the host's TCP ``port``: the host's address as this
        machine reaches it, and the same port."""
        assert self.facts is not None
        return self.facts.server_ip, port

    def describe(self) -> dict[str, object]:
        """What the server's description keeps of the host."""
        assert self.facts is not None
        return {"ssh": self.ssh.target, "ram_bytes": self.facts.ram_bytes,
                "cpus": self.facts.cpus, "uname": self.facts.uname, "boot_id": self.facts.boot_id}

    def pids(self) -> list[int]:
        """The processes of this machine that run the host (a VM's emulator): the trial's own
        load, not foreign load. None for a machine of its own."""
        return []

    def close(self) -> None:
        """Let go of the host (its ssh connection)."""
        if self._ssh is not None:
            self._ssh.close()


class SshHost(Host):
    """A host the study names by ``ssh`` (user@host or a Host of the ssh config ``config``)."""

    def __init__(self, name: str, target: str, config: str | None):
        super().__init__(name, Ssh(target, Path(config).expanduser() if config else None,
                                   label=name))


def read_facts(ssh: Ssh, where: str) -> HostFacts:
    """What teiten needs of the host: its home, this client's and its own address, memory,
    CPUs and uname. ``where`` names the host in messages.

    Raises :class:`ServerError` when the login user is root, when ``$SSH_CONNECTION`` is not
    set there, or when the host is not Linux. (The caller checks ``home``.)
    """
    out: dict[str, str] = {}
    facts = ssh.shell(script("facts.sh"), timeout=30, what="reading the host").stdout
    for line in facts.splitlines():
        key, _, value = line.partition("=")
        out[key] = value
    if out.get("uid") == "0":
        raise ServerError(
            f"{where}: the login user there is root, and PostgreSQL refuses to run as "
            "root; log in as an unprivileged user (user@host, or User in your ssh config)")
    conn = out.get("conn", "").split()
    if len(conn) != 4:
        raise ServerError(f"{where}: $SSH_CONNECTION is not set there, so teiten "
                          "cannot tell which address the client has; is this OpenSSH's sshd?")
    mem = re.search(r"(\d+)\s*kB", out.get("mem", ""))
    if not mem:
        raise ServerError(f"{where}: cannot read MemTotal from /proc/meminfo there; "
                          "ssh servers need a Linux host")
    return HostFacts(home=out.get("home", "").rstrip("/"), client_ip=conn[0],
                     server_ip=conn[2], ram_bytes=int(mem.group(1)) * 1024,
                     cpus=int(out.get("cpus") or 0), uname=out.get("uname", ""),
                     boot_id=out.get("boot_id", "").strip())


def find_install(ssh: Ssh, ref: str, *, server: str, where: str, hint: str | None = None) -> RemoteInstall:
    """The PostgreSQL install on the host that ``ref`` names: a major ("17"), a full version
    ("17.11") or a bindir path. ``server`` and ``where`` name the ssh server in messages;
    ``hint`` is what to do when a path holds no postgres (:meth:`Host.install_hint`).

    Raises :class:`ServerError`, saying where it looked and what it found, when none matches.
    """
    if "/" in ref:
        looked = [ref.rstrip("/"), f"{ref.rstrip('/')}/bin"]
        want_major, want_version, series = None, None, 1
    else:
        parts = ref.split(".")
        series = 2 if parts[0].isdigit() and int(parts[0]) < 10 else 1  # 9.6, then 10
        want_major = ".".join(parts[:series])
        want_version = ref if len(parts) > series else None
        looked = [f"/usr/lib/postgresql/{want_major}/bin"]
    seen = []
    for bindir, version, major in _programs(ssh, "postgres", looked):
        seen.append(f"{version} in {bindir}")
        if "/" in ref and bindir not in looked:
            continue  # a path names its bindir; pg_config's is another install
        if want_major is not None and not _in_series(version, major, want_major, series):
            continue
        if want_version is not None and version != want_version:
            continue
        log.info("%s: PostgreSQL %s in %s", where, version, bindir)
        return RemoteInstall(bindir=bindir, version=version, major=major)
    there = f"; found {', '.join(seen)}" if seen else ""
    if "/" in ref:
        raise ServerError(f"{where}: no postgres binary in {' or '.join(looked)} "
                          f"there{there}; " + (hint or "give the directory that holds postgres, e.g. "
                                                "/usr/lib/postgresql/17/bin"))
    raise ServerError(
        f"PostgreSQL {ref} is not installed on {ssh.target} (server {server}; looked in "
        f"/usr/lib/postgresql/*/bin and pg_config on the PATH there{there}); install it there, e.g. "
        f"apt-get install postgresql-{want_major}")


def _in_series(version: str, major: int, want: str, parts: int) -> bool:
    """Whether ``version`` (of ``major``) is of the series ``want``: "18" holds 18.1,
    18beta1 and 18devel; "9.6" (``parts`` 2) holds 9.6.24 and 9.6beta1, not 9.5.25."""
    if parts == 1 and want.isdigit():
        return major == int(want)
    return re.match(rf"{re.escape(want)}(\D|$)", version) is not None


def find_basebackup(ssh: Ssh, install: RemoteInstall) -> str | None:
    """The pg_basebackup on the host that makes standbys of ``install``: its own where it is
    of 10 or later, else the newest there of 10 or later (replication.basebackup_choice);
    None when there is none."""
    found = {f"{bindir}/pg_basebackup": major
             for bindir, _, major in _programs(ssh, "pg_basebackup", [install.bindir])}
    own = f"{install.bindir}/pg_basebackup"
    others = sorted((p for p in found if p != own), key=lambda p: -found[p])
    return basebackup_choice(install.major, [(p, found[p]) for p in [own, *others] if p in found])


def _programs(ssh: Ssh, program: str, looked: list[str]) -> list[tuple[str, str, int]]:
    """(bindir, version, major) of every ``program`` on the host: in ``looked`` first, then
    in every /usr/lib/postgresql/*/bin and pg_config's bindir (scripts/find_install.sh)."""
    found = ssh.shell(script("find_install.sh"), program, *looked, timeout=60,
                      what=f"looking for {program}")
    programs = []
    for line in dict.fromkeys(found.stdout.splitlines()):
        bindir, _, text = line.partition("\t")
        parsed = parse_version(text)
        if parsed is not None:
            programs.append((bindir, *parsed))
    return programs


def pg_config(ssh: Ssh, install: RemoteInstall) -> dict[str, str]:
    """What ``pg_config`` of the install says of how it was built (empty if it cannot run)."""
    done = ssh.run([install.binary("pg_config")], timeout=30, check=False, what="pg_config")
    keep = ("VERSION", "CONFIGURE", "CC", "CFLAGS", "CPPFLAGS", "LDFLAGS")
    out = {}
    for line in done.stdout.splitlines() if done.returncode == 0 else []:
        key, sep, value = line.partition(" = ")
        if sep and key in keep:
            out[key] = value
    return out


def marker(purpose: str) -> str:
    """The content of the marker file of a directory teiten creates on the host."""
    return json.dumps({"purpose": purpose, "pid": os.getpid(), "host": os.uname().nodename,
                       "created": time.strftime("%Y-%m-%dT%H:%M:%S%z")}) + "\n"


def cidr(ip: str) -> str:
    """The pg_hba.conf address of exactly ``ip`` (IPv4 or IPv6)."""
    return f"{ip}/128" if ":" in ip else f"{ip}/32"
