"""Boot one qemu guest of a :mod:`teiten.servers.vm.image` image, reach it over ssh, stop it.

The guest's network is one of two. ``user``: qemu's user-mode network; the guest's sshd is
forwarded to a free loopback port here, and :meth:`Guest.forward` forwards more guest ports at
run time through qemu's human monitor on a unix socket (in the guest's own 0700 directory);
qemu copies every packet, which adds to each round trip. ``tap``: a tap device on a bridge in a
network namespace teiten makes (teiten.host.netns.Namespace.create_bridged), which qemu, run
inside it, opens for the guest's virtio-net NIC; the guest takes a fixed address of the
namespace's /29 (given on the kernel's command line) and this machine reaches every port of it
at that address over the veth pair. The namespace (its bridge and tap with it) goes when the
guest stops, and with a killed teiten's leftovers. Every guest boots from a qcow2
overlay of its own on the read-only image, so two guests at once share no writable disk.
A guest with a WAL disk (``wal_dir``: the 2014 guest's WAL on a volume of its own) has a second
virtio disk, ``/dev/vdb``: a raw file in a marked directory of its own below ``wal_dir`` here,
formatted ext4 on this machine (no root in the guest needed); the kernel's command line starts
the guest's init through ``sh -c``, which first mounts it at :data:`WAL_MOUNT` for the guest's
account (the image stays as it is). The file goes when the guest stops, and with a killed
teiten's leftovers.
qemu names its threads (``-name ...,debug-threads=on``: "CPU 0/TCG", "CPU 1/KVM"), so each
vCPU thread can be pinned to host CPUs and its affinity read back from /proc.

:func:`boot` waits, up to a deadline, until ``ssh true`` answers; a guest that does not come
up raises :class:`ServerError` with one line naming the accelerator and the console's last
line. Under ``tcg`` the guest is emulated: a functional stand-in, not a measurement of a VM.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import socket
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import psutil

from teiten.host import cpus, netns, paths, procs
from teiten.host.remote import quote_command
from teiten.model.errors import ProcessError, ServerError, UserError
from teiten.servers.vm.image import Image, vm_dir

ACCELERATORS = ("kvm", "tcg")
NETWORKS = ("user", "tap")
HOST_ALIAS = "teiten-guest"  # the name the guest's host key is known by, whatever the port
SSH_ATTEMPT = 20.0  # seconds one `ssh true` may take (an emulated guest is slow)
_CPU = {"tcg": "max", "kvm": "host,-arch-capabilities"}  # plain `host` aborts under kvm_pvm
_VCPU = re.compile(r"^CPU (\d+)/(TCG|KVM)$")
_BAD_STATUS = ("internal-error", "guest-panicked", "shutdown", "io-error")
_CONTROL = re.compile(r"\x1b(\[[0-9;?]*[A-Za-z]|[A-Za-z])|[\x00-\x08\x0b-\x1f\x7f]")
CONSOLE, MONITOR, SSH_CONFIG, DISK = "console.log", "monitor", "ssh_config", "disk.qcow2"
NETNS = "netns"  # in a guest's directory: the name of its tap network's namespace
WAL_MOUNT = "/var/lib/teiten-wal"  # where a guest mounts its WAL disk (/dev/vdb)
WAL_DISK, WAL_NOTE = "wal.raw", "wal"  # the WAL disk's file; in a guest's directory: its folder


@dataclass
class Guest:
    """A running guest: its qemu process, its directory and the loopback port of its sshd."""

    name: str
    accel: str
    image: Image
    directory: Path
    process: procs.Background
    ssh_port: int
    forwards: dict[int, int] = field(default_factory=dict)  # guest port -> host port
    stopped: bool = False
    namespace: netns.Namespace | None = None  # a tap network's (None: qemu's user-mode network)
    memory_node: int | None = None  # the NUMA node its memory is bound to
    wal_disk: Path | None = None  # the raw file of its WAL disk (/dev/vdb, at WAL_MOUNT)

    @property
    def network(self) -> str:
        return "user" if self.namespace is None else "tap"

    @property
    def address(self) -> str | None:
        """The guest's address on its tap network, which reaches every port of it; None under
        user-mode networking (ports are forwarded to loopback: :meth:`forward`)."""
        return None if self.namespace is None else self.namespace.address

    @property
    def pid(self) -> int:
        return self.process.proc.pid

    @property
    def console(self) -> Path:
        return self.directory / CONSOLE

    @property
    def monitor(self) -> Path:
        return self.directory / MONITOR

    @property
    def ssh_config(self) -> Path:
        """An ssh config whose one Host, :attr:`target`, is this guest (for ``ssh -F``, or
        ``teiten.host.remote.Ssh(guest.target, config=guest.ssh_config)``)."""
        return self.directory / SSH_CONFIG

    @property
    def target(self) -> str:
        return _target(self.name)

    def ssh_argv(self, command: Sequence[str]) -> list[str]:
        return ["ssh", "-F", str(self.ssh_config), self.target, "--", quote_command(command)]

    def run(self, command: Sequence[str], *, timeout: float = 60, check: bool = True) -> procs.Completed:
        """Run ``command`` (an argument list) in the guest as its unprivileged account."""
        return procs.run(self.ssh_argv(command), timeout=timeout, check=check,
                         what=f"ssh to guest {self.name}")

    # -- the monitor --------------------------------------------------------------------------

    def hmp(self, command: str, *, timeout: float = 10) -> str:
        """One command of qemu's human monitor; its answer, without the echo and prompt."""
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.settimeout(timeout)
            s.connect(str(self.monitor))
            _until_prompt(s)
            s.sendall(command.encode() + b"\n")
            answer = _until_prompt(s)
        lines = [re.sub(r"\x1b\[[0-9;]*[A-Za-z]|\r", "", line) for line in answer.split("\n")]
        return "\n".join(line for line in lines[1:] if line.strip()).strip()

    def status(self) -> str:
        """qemu's run state ("running", "paused (internal-error)", ...), or "" unknown."""
        with contextlib.suppress(OSError):
            return self.hmp("info status", timeout=3).removeprefix("VM status:").strip()
        return ""

    def forward(self, guest_port: int) -> int:
        """Forward a free loopback port here to ``guest_port`` of the guest; that port."""
        if self.namespace is not None:
            raise ServerError(f"guest {self.name} is on a tap network: reach its port {guest_port} "
                              f"at {self.address}, not through a forward")
        if guest_port in self.forwards:
            return self.forwards[guest_port]
        for _attempt in range(5):  # another program may take the free port first
            port = free_port()
            answer = self.hmp(f"hostfwd_add n0 tcp:127.0.0.1:{port}-:{int(guest_port)}")
            if not answer:
                self.forwards[guest_port] = port
                return port
        raise ServerError(f"guest {self.name}: qemu could not forward a port to its port "
                          f"{guest_port}: {answer}")

    # -- vCPU threads -------------------------------------------------------------------------

    def vcpu_threads(self) -> dict[int, int]:
        """vCPU index -> the thread id of qemu's thread that runs it."""
        found = {}
        for tid, name, _cpus in thread_affinities(self.pid):
            m = _VCPU.match(name)
            if m:
                found[int(m.group(1))] = tid
        return found

    def pin(self, cpus: Sequence[Sequence[int]]) -> None:
        """Pin vCPU i to the host CPUs ``cpus[i]``."""
        threads = self.vcpu_threads()
        if len(cpus) != len(threads):
            raise UserError(f"guest {self.name} has {len(threads)} vCPUs but {len(cpus)} CPU "
                            "lists were given to pin them to; give one list per vCPU")
        for index, tid in sorted(threads.items()):
            os.sched_setaffinity(tid, set(cpus[index]))

    # -- stopping -----------------------------------------------------------------------------

    def stop(self, *, grace: float = 15) -> None:
        """Stop qemu (``quit`` on the monitor: the guest's disk is a throwaway overlay), kill
        its process group if it does not end, and remove the guest's directory. Once only:
        qemu's pid, once collected, may be another program's."""
        if self.stopped:
            return
        self.stopped = True
        if self.process.alive():
            with contextlib.suppress(OSError):
                self.hmp("quit", timeout=5)
            deadline = time.monotonic() + grace
            while self.process.alive() and time.monotonic() < deadline:
                time.sleep(0.2)
        if self.process.proc.poll() is None:
            procs.kill_group(self.process.proc)  # qemu's own group: what boot() started
        with contextlib.suppress(ProcessError):
            self.process.stop(timeout=5)
        try:
            if self.namespace is not None:
                self.namespace.close()
        finally:
            try:
                if self.wal_disk is not None:
                    paths.remove_owned(self.wal_disk.parent)
            finally:
                paths.remove_owned(self.directory)


def _until_prompt(s: socket.socket) -> str:
    data = b""
    while not data.endswith(b"(qemu) "):
        chunk = s.recv(65536)
        if not chunk:
            break
        data += chunk
    return data.decode(errors="replace").removesuffix("(qemu) ")


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def parse_cpu_list(text: str) -> set[int]:
    """{0, 1, 3} from "0-1,3" (the kernel's list format, as teiten.host.cpus reads it)."""
    return set(cpus.parse_list(text.strip()))


def thread_affinities(pid: int) -> list[tuple[int, str, set[int]]]:
    """(thread id, name, allowed CPUs) of every thread of ``pid``, from /proc/<pid>/task/*/status."""
    found = []
    # safe: the kernel's files
    for task in sorted(Path(f"/proc/{pid}/task").iterdir(), key=lambda p: int(p.name)):
        with contextlib.suppress(OSError):
            fields = dict(line.split(":\t", 1) for line in task.joinpath("status").read_text()
                          .splitlines() if ":\t" in line)
            found.append((int(task.name), fields["Name"].strip(), parse_cpu_list(fields["Cpus_allowed_list"])))
    return found


def last_line(path: Path) -> str:
    """The last line of a console log with something printable on it, without the terminal's
    control sequences (SeaBIOS and the kernel clear the screen), or "(nothing)"."""
    with contextlib.suppress(OSError):
        # safe: a guest's directory (root's, 0700)
        text = _CONTROL.sub("", path.read_text(errors="replace").replace("\r", "\n"))
        lines = [line.strip() for line in text.splitlines() if line.strip()]
        if lines:
            return lines[-1]
    return "(nothing)"


# -- booting -----------------------------------------------------------------------------------

def _target(name: str) -> str:
    return f"{HOST_ALIAS}-{name}"


def wal_init(user: str) -> str:
    """The end of the kernel's command line that mounts the WAL disk before the guest's init:
    ``init=/bin/sh`` and, after ``--``, its arguments (the kernel hands them to the initramfs,
    which hands them to init). The script has no '=', no glob and no word the initramfs reads
    (ro, rw, debug, break...): it sees every word of the command line. A disk that does not
    mount leaves the directory unmounted, which the server finds (``mountpoint``)."""
    script = (f"mkdir -p {WAL_MOUNT}; mount -t ext4 /dev/vdb {WAL_MOUNT} && chown {user} {WAL_MOUNT}; "
              "exec /sbin/teiten-init")
    assert not set(script) & set('="*?[') and user.isidentifier()
    return f'init=/bin/sh -- -c "{script}"'


def make_wal_disk(path: Path, size: int) -> None:
    """A raw disk of ``size`` bytes at ``path`` (sparse), formatted ext4 here: no root and no
    loop device needed (mkfs writes the file)."""
    with open(path, "xb") as disk:  # safe: a new file in a directory of teiten's own (0700)
        disk.truncate(size)
    procs.run(["mkfs.ext4", "-F", "-q", "-L", "teiten-wal", str(path)], timeout=120, what="mkfs.ext4")


def qemu_argv(image: Image, directory: Path, *, name: str, accel: str, ssh_port: int, cpus: int,
              memory_mb: int, tap: netns.Namespace | None = None,
              memory_node: int | None = None, wal_disk: Path | None = None) -> list[str]:
    """qemu's command line; with ``tap``, the guest's NIC is that bridged namespace's tap device
    (qemu runs inside the namespace) and its address the namespace's :attr:`address`; with
    ``memory_node``, the guest's memory is bound to that NUMA node of this machine (policy bind:
    allocated there or not at all); with ``wal_disk``, that raw file is the guest's second
    virtio disk, mounted at :data:`WAL_MOUNT` before its init (:func:`wal_init`)."""
    init = wal_init(image.user) if wal_disk is not None else "init=/sbin/teiten-init"
    append = "root=/dev/vda rw console=ttyS0 panic=-1 net.ifnames=0"
    netdev = f"user,id=n0,hostfwd=tcp:127.0.0.1:{ssh_port}-:22"
    if tap is not None:
        append += f" teiten.ip={tap.address}/{tap.prefix} teiten.gateway={tap.host_address}"
        netdev = f"tap,id=n0,ifname={tap.tap},script=no,downscript=no"
    append += f" {init}"  # last: what follows its "--" is init's
    drives = ["-drive", f"file={directory / DISK},if=virtio,format=qcow2"]
    if wal_disk is not None:
        drives += ["-drive", f"file={wal_disk},if=virtio,format=raw"]
    machine, memory = "q35", []
    if memory_node is not None:
        machine = "q35,memory-backend=mem0"
        memory = ["-object", f"memory-backend-ram,id=mem0,size={memory_mb}M,"
                  f"host-nodes={int(memory_node)},policy=bind"]
    return ["qemu-system-x86_64", "-name", f"{name},debug-threads=on",
            "-machine", machine, *memory, "-accel", accel, "-cpu", _CPU[accel],
            "-smp", str(cpus), "-m", str(memory_mb), "-nographic", "-no-reboot",
            "-kernel", str(image.kernel), "-initrd", str(image.initrd),
            "-append", append,
            *drives,
            "-netdev", netdev,
            "-device", "virtio-net-pci,netdev=n0",
            "-serial", f"file:{directory / CONSOLE}",
            "-monitor", f"unix:{directory / MONITOR},server=on,wait=off"]


def _write_ssh_files(image: Image, directory: Path, *, name: str, ssh_port: int,
                     address: str = "127.0.0.1") -> None:
    # safe: the guest's own directory (root's, 0700)
    (directory / "known_hosts").write_text(f"{HOST_ALIAS} {image.host_key}\n")
    (directory / SSH_CONFIG).write_text(
        f"Host {_target(name)}\n  HostName {address}\n  Port {ssh_port}\n  User {image.user}\n"
        f"  IdentityFile {image.key}\n  IdentitiesOnly yes\n  IdentityAgent none\n"
        f"  HostKeyAlias {HOST_ALIAS}\n  StrictHostKeyChecking yes\n"
        f"  UserKnownHostsFile {directory / 'known_hosts'}\n  GlobalKnownHostsFile /dev/null\n"
        "  BatchMode yes\n  ConnectTimeout 10\n  LogLevel ERROR\n")


def boot(image: Image, *, name: str, accel: str, cpus: int = 1, memory_mb: int = 1024,
         deadline: float = 300, pin: Sequence[Sequence[int]] | None = None,
         kernel_within: float | None = None, network: str = "user",
         memory_node: int | None = None, wal_dir: Path | None = None,
         wal_bytes: int = 4 << 30) -> Guest:
    """Start a guest of ``image`` and wait until its sshd answers (at most ``deadline`` s);
    with ``kernel_within``, the guest's kernel must have begun (its first line on the console)
    within that many seconds, or the boot has failed. ``network``: "user" (qemu's user-mode
    network, loopback port forwards) or "tap" (a tap device on a bridge in a network namespace
    of its own, the guest at a fixed address there). ``memory_node``: the NUMA node of this
    machine the guest's memory is bound to (None: the kernel's default policy). ``wal_dir``: a
    directory here that holds the guest's WAL disk of ``wal_bytes`` (None: no WAL disk)."""
    if accel not in ACCELERATORS:
        raise UserError(f"accelerator {accel!r} is not one of {', '.join(ACCELERATORS)}")
    if network not in NETWORKS:
        raise UserError(f"network {network!r} is not one of {', '.join(NETWORKS)}")
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*", name):
        raise UserError(f"guest name {name!r}: use letters, digits, '.', '_' and '-'")
    for program in ("qemu-system-x86_64", "qemu-img", "ssh"):
        if shutil.which(program) is None:
            raise UserError(f"a VM guest needs '{program}', which is not installed "
                            "(apt-get install qemu-system-x86 qemu-utils openssh-client)")
    # safe: the cache of guests (root's, 0700): mkdtemp makes a new 0700 directory
    directory = Path(tempfile.mkdtemp(prefix=f"guest-{name}-", dir=vm_dir()))  # 0700
    paths.mark_owned(directory, f"qemu guest {name}")
    if len(str(directory / "monitor")) > 100:
        paths.remove_owned(directory)
        raise UserError(f"{directory}: too long a path for qemu's monitor socket; "
                        "give TEITEN_HOME a shorter one")
    tap: netns.Namespace | None = None
    wal_disk: Path | None = None
    try:
        if wal_dir is not None:
            # safe: a marked directory of teiten's own (0700), new, below the study's waldir
            folder = paths.make_owned(wal_dir.expanduser().absolute() / f"teiten-{directory.name}",
                                      f"WAL disk of qemu guest {name}", mode=0o700)
            (directory / WAL_NOTE).write_text(f"{folder}\n")  # read by clean_leftovers
            wal_disk = folder / WAL_DISK
            make_wal_disk(wal_disk, wal_bytes)
        procs.run(["qemu-img", "create", "-q", "-f", "qcow2", "-F", "raw", "-b", str(image.disk),
                   str(directory / DISK)], timeout=60)
        port = free_port()
        if network == "tap":
            tap = netns.Namespace.create_bridged(f"vm-{name}")
            # safe: the guest's own directory (root's, 0700): read by clean_leftovers
            (directory / NETNS).write_text(tap.name + "\n")
            port = 22
        _write_ssh_files(image, directory, name=name, ssh_port=port,
                         address=tap.address if tap is not None else "127.0.0.1")
        argv = qemu_argv(image, directory, name=name, accel=accel, ssh_port=port, cpus=cpus,
                         memory_mb=memory_mb, tap=tap, memory_node=memory_node, wal_disk=wal_disk)
        if tap is not None:
            argv = tap.wrap(argv, run_as=None)  # qemu opens the tap inside; nsenter execs it
        process = procs.spawn(argv, what=f"qemu of guest {name}")
        guest = Guest(name=name, accel=accel, image=image, directory=directory, process=process,
                      ssh_port=port, namespace=tap, memory_node=memory_node, wal_disk=wal_disk)
    except BaseException:
        try:
            if tap is not None:
                tap.close()
        finally:
            if wal_disk is not None:
                paths.remove_owned(wal_disk.parent)
            paths.remove_owned(directory)
        raise
    try:
        if pin is not None:
            _wait_for_vcpus(guest, cpus)
            guest.pin(pin)
        _wait_for_ssh(guest, deadline, kernel_within)
        if wal_disk is not None and guest.run(["mountpoint", "-q", WAL_MOUNT], check=False).returncode:
            raise ServerError(f"guest {name} did not mount its WAL disk at {WAL_MOUNT}: the "
                              f"console's last line: {last_line(guest.console)}")
    except BaseException:
        guest.stop(grace=2)
        raise
    return guest


def _wait_for_vcpus(guest: Guest, cpus: int) -> None:
    until = time.monotonic() + 30
    while len(guest.vcpu_threads()) < cpus and time.monotonic() < until and guest.process.alive():
        time.sleep(0.1)


def _wait_for_ssh(guest: Guest, deadline: float, kernel_within: float | None = None) -> None:
    started = time.monotonic()
    until = started + deadline
    while True:
        why = ""
        if not guest.process.alive():
            done = guest.process.stop(timeout=5)
            qemu_said = procs.tail(done.stderr, 1)
            why = f"qemu exited with status {done.returncode}" + (f" ({qemu_said})" if qemu_said else "")
        elif any(bad in (status := guest.status()) for bad in _BAD_STATUS):
            why = f"qemu stopped it: {status}"
        elif kernel_within is not None and time.monotonic() > started + kernel_within \
                and not _kernel_started(guest):
            why = f"its kernel did not begin within {kernel_within:g} s"
        elif time.monotonic() > until:
            why = f"ssh did not answer within {deadline:g} s"
        if why:
            raise ServerError(f"guest {guest.name} did not boot under -accel {guest.accel}: {why}; "
                              f"the console's last line: {last_line(guest.console)}")
        attempt = procs.run(guest.ssh_argv(["true"]), timeout=SSH_ATTEMPT + 5, check=False,
                            what=f"ssh to guest {guest.name}") if _sshd_started(guest) else None
        if attempt is not None and attempt.returncode == 0:
            return
        time.sleep(1)


def _kernel_started(guest: Guest) -> bool:
    with contextlib.suppress(OSError):
        # safe: the guest's directory: root's, 0700
        return b"Linux version" in guest.console.read_bytes()
    return False


def _sshd_started(guest: Guest) -> bool:
    with contextlib.suppress(OSError):
        # safe: the guest's own directory (root's, 0700)
        return b"teiten-init: starting sshd" in guest.console.read_bytes()
    return False


# -- what a killed teiten left -------------------------------------------------------------

def clean_leftovers(only: str | None = None) -> list[str]:
    """Stop the guests whose teiten process is gone (killed before :meth:`Guest.stop`): the
    qemu whose command line names a guest directory of :func:`vm_dir`, then the directory.
    A guest whose teiten still runs is left alone; with ``only``, every guest but the one of
    that name too. One note per qemu killed and per directory removed."""
    top = vm_dir()
    notes: list[str] = []
    if not top.is_dir():
        return notes
    for directory in sorted(top.glob(f"guest-{only}-*" if only else "guest-*")):
        try:
            # safe: the cache of guests (root's, 0700)
            owner = int(json.loads((directory / paths.MARKER).read_text())["pid"])
        except (OSError, ValueError, KeyError, TypeError):
            continue  # not a guest directory teiten made
        if psutil.pid_exists(owner):
            continue
        for proc in psutil.process_iter(["cmdline"]):
            argv = proc.info["cmdline"] or []
            if argv[:1] and argv[0].endswith("qemu-system-x86_64") and \
                    f"file:{directory / CONSOLE}" in argv:
                procs.kill_tree(proc.pid)
                notes.append(f"killed qemu {proc.pid} of the leftover guest {directory.name}")
        with contextlib.suppress(OSError):
            # safe: the guest's own directory (root's, 0700)
            namespace = (directory / NETNS).read_text().strip()
            if netns.remove(namespace):
                notes.append(f"removed the leftover guest's network namespace {namespace}")
        with contextlib.suppress(OSError):
            # safe: the guest's own directory (root's, 0700); the folder it names is removed
            # only when it carries teiten's marker
            folder = Path((directory / WAL_NOTE).read_text().strip())
            if paths.remove_owned(folder):
                notes.append(f"removed the leftover guest's WAL disk {folder / WAL_DISK}")
        if paths.remove_owned(directory):
            notes.append(f"removed the leftover guest directory {directory}")
    return notes
