"""A Docker engine of the test's own (DESIGN, "Docker in tests"): ``dockerd`` with its own data
root and socket, inside a network namespace the test creates, so that its bridge and NAT live
there and the clients (a teiten run entered into the namespace) reach the containers from
inside it. Only the namespace's network is entered (``nsenter --net``): ``ip netns exec`` would
also mount a fresh /sys, which hides the cgroup hierarchies dockerd needs.

The data root is kept in the test cache (the images teiten built stay for the next session)
while this session holds its lock; a second session at the same time gets a fresh one.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import subprocess
import tempfile
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

DOCKER = shutil.which("dockerd") and shutil.which("docker")


@dataclass(frozen=True)
class Engine:
    namespace: str
    host: str  # DOCKER_HOST
    data_root: Path

    @property
    def env(self) -> dict[str, str]:
        return {"DOCKER_HOST": self.host}

    @property
    def enter(self) -> tuple[str, ...]:
        """The argv prefix that runs a program in the engine's network namespace."""
        return ("nsenter", f"--net=/var/run/netns/{self.namespace}")

    def docker(self, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        return subprocess.run(["docker", *args], env={**os.environ, **self.env}, text=True,
                              capture_output=True, timeout=timeout, check=False)


def why_not() -> str | None:
    """Why no engine of the test's own can start here, or None."""
    if os.geteuid() != 0:
        return "dockerd runs as root"
    if not DOCKER:
        return "docker.io is not installed (make system installs it)"
    if shutil.which("nsenter") is None or shutil.which("ip") is None:
        return "nsenter and ip are needed"
    return None


@contextlib.contextmanager
def engine(cache: Path) -> Iterator[Engine]:
    """A running dockerd in a network namespace of its own; stopped, its containers removed and
    the namespace deleted afterwards."""
    namespace = f"teiten-dock-{uuid.uuid4().hex[:6]}"
    run = Path(tempfile.mkdtemp(prefix="teiten-dockerd-"))  # short: unix socket paths
    cache.mkdir(parents=True, exist_ok=True)
    lock = open(cache / "docker.lock", "w")  # noqa: SIM115 (held for the engine's life)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        data_root = cache / "docker"
    except BlockingIOError:
        data_root = run / "data"
    subprocess.run(["ip", "netns", "add", namespace], check=True, timeout=30)
    proc = None
    try:
        subprocess.run(["ip", "-n", namespace, "link", "set", "lo", "up"], check=True, timeout=30)
        log = open(run / "dockerd.log", "w")  # noqa: SIM115
        proc = subprocess.Popen(
            ["nsenter", f"--net=/var/run/netns/{namespace}", "dockerd", "--data-root",
             str(data_root), "--exec-root", str(run / "exec"), "--pidfile", str(run / "dockerd.pid"),
             "-H", f"unix://{run}/docker.sock"], stdout=log, stderr=subprocess.STDOUT)
        made = Engine(namespace, f"unix://{run}/docker.sock", data_root)
        deadline = time.monotonic() + 60
        while made.docker("version", "--format", "{{.Server.Version}}", timeout=10).returncode != 0:
            if proc.poll() is not None or time.monotonic() > deadline:
                raise AssertionError("dockerd did not start: "
                                     + (run / "dockerd.log").read_text()[-2000:])
            time.sleep(0.5)
        yield made
        left = made.docker("ps", "--all", "--quiet").stdout.split()
        if left:
            made.docker("rm", "--force", "--volumes", *left)
    finally:
        if proc is not None:
            proc.terminate()
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=30)
        subprocess.run(["ip", "netns", "delete", namespace], check=False, timeout=30)
        _unmount_under(run)  # dockerd leaves its bind mount of the host's namespace there
        shutil.rmtree(run, ignore_errors=True)
        lock.close()


def _unmount_under(top: Path) -> None:
    with open("/proc/mounts") as f:
        points = [line.split()[1] for line in f]
    for point in sorted((p for p in points if p.startswith(f"{top}/")), key=len, reverse=True):
        subprocess.run(["umount", point], check=False, timeout=30)
