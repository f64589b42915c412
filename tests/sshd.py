"""A real OpenSSH server for tests: ``/usr/sbin/sshd -D -e`` on 127.0.0.1 and a free port, or
on the address of a network namespace the test made (a host of its own on the network: each
namespace's sshd is another "machine" for a study's ``ssh`` server).

It lets the existing unprivileged account ``postgres`` log in with a key generated for the
test, so that an ``ssh`` server of a study runs its cluster on "another host" that is in
fact this machine, reached through real OpenSSH. Everything lives in a private temporary
directory: host key, client key, authorized_keys, known_hosts, an ssh_config with a Host
alias for the study (``ssh: <alias>`` plus ``ssh_config: <file>``). sshd is stopped by its
pid on exit; nothing of the system's own ssh configuration is read or changed.
"""

from __future__ import annotations

import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

SSHD = "/usr/sbin/sshd"
LOGIN = "postgres"  # an existing unprivileged account (PostgreSQL refuses to run as root)


@dataclass(frozen=True)
class Sshd:
    alias: str         # the Host of ``config``: what a study writes as ``ssh:``
    config: Path       # an ssh_config file: what a study writes as ``ssh_config:``
    port: int
    pid: int
    directory: Path
    log: Path          # sshd's own log (-e: errors and auth messages on stderr)

    def log_text(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def available() -> str | None:
    """Why a test sshd cannot run here, or None when it can."""
    if not os.path.exists(SSHD):
        return f"{SSHD} is not installed (apt-get install openssh-server)"
    if shutil.which("ssh-keygen") is None or shutil.which("ssh") is None:
        return "the OpenSSH client (ssh, ssh-keygen) is not installed"
    if os.geteuid() != 0:
        return "a test sshd that logs in as another account needs root"
    try:
        pwd.getpwnam(LOGIN)
    except KeyError:
        return f"there is no '{LOGIN}' account to log in as"
    return None


def _keygen(path: Path) -> None:
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "teiten-test",
                    "-f", str(path)], check=True, timeout=30, capture_output=True)


def _listening(address: str, port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.settimeout(0.5)
        return s.connect_ex((address, port)) == 0


@contextmanager
def running_sshd(alias: str = "teiten-db1", *, netns: str | None = None,
                 address: str = "127.0.0.1") -> Iterator[Sshd]:
    """Start sshd for one test and stop it (by its pid) afterwards: on ``address``, inside the
    network namespace ``netns`` (its name under /run/netns) when given."""
    # sshd's privilege-separation directory; Debian's package creates it only at boot.
    Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)
    directory = Path(tempfile.mkdtemp(prefix="teiten-sshd-"))
    # The account logging in reads authorized_keys as itself: the directory must be
    # reachable by it (mkdtemp makes it private to root).
    directory.chmod(0o755)
    proc: subprocess.Popen[bytes] | None = None
    try:
        _keygen(directory / "host_key")
        _keygen(directory / "client_key")
        keys = directory / "authorized_keys"
        keys.write_text((directory / "client_key.pub").read_text())
        keys.chmod(0o644)
        port = free_port()
        (directory / "sshd_config").write_text(f"""\
Port {port}
ListenAddress {address}
HostKey {directory / 'host_key'}
PidFile {directory / 'sshd.pid'}
AuthorizedKeysFile {keys}
StrictModes no
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
# UsePAM yes: the postgres account's password is locked ('!' in /etc/shadow), which sshd
# refuses without PAM even for key logins; PAM's account stack accepts it.
UsePAM yes
AllowUsers {LOGIN}
PermitRootLogin no
AllowAgentForwarding no
X11Forwarding no
PrintMotd no
LogLevel VERBOSE
""")
        config = directory / "ssh_config"
        config.write_text(f"""\
Host {alias}
    HostName {address}
    Port {port}
    User {LOGIN}
    IdentityFile {directory / 'client_key'}
    IdentitiesOnly yes
    UserKnownHostsFile {directory / 'known_hosts'}
    StrictHostKeyChecking accept-new
    LogLevel ERROR
""")
        log = directory / "sshd.log"
        with log.open("wb") as out:
            enter = ["nsenter", f"--net=/run/netns/{netns}", "--"] if netns else []
            proc = subprocess.Popen([*enter, SSHD, "-D", "-e", "-f", str(directory / "sshd_config")],
                                    stdin=subprocess.DEVNULL, stdout=out, stderr=out,
                                    start_new_session=True)
        deadline = time.monotonic() + 15
        while not _listening(address, port):
            if proc.poll() is not None:
                raise RuntimeError(f"sshd exited ({proc.returncode}): {log.read_text()}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"sshd did not listen on {address} port {port} within 15 s")
            time.sleep(0.05)
        yield Sshd(alias=alias, config=config, port=port, pid=proc.pid,
                       directory=directory, log=log)
    finally:
        if proc is not None and proc.poll() is None:
            # sshd -D is the listener; each login is a child of it in its own session, so
            # ended logins have already gone. Stop the listener (by its pid) and wait.
            os.kill(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.kill(proc.pid, signal.SIGKILL)
                proc.wait(timeout=10)
        shutil.rmtree(directory, ignore_errors=True)
