"""The small parts of the VM guest machinery that need no qemu: what the console's last line
is, the kernel's CPU lists, this machine's Debian sources, and the libraries and packages of an
install (real ldd and dpkg on this machine's files), a WAL disk's drive, kernel command line
and file (real mkfs.ext4). The guest itself: tests/integration/test_vm_guest.py."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from pydantic import ValidationError

from teiten.host import cpus, netns
from teiten.model.errors import ServerError
from teiten.servers import rootfs
from teiten.servers.vm import image as vm_image
from teiten.servers.vm import kind as vm_kind
from teiten.servers.vm import qemu as vm_qemu
from teiten.servers.vm.spec import VmPlace
from teiten.spec import ServerSpec

LIBC = Path("/lib/x86_64-linux-gnu/libc.so.6")


def test_console_last_line_without_control_sequences(tmp_path: Path) -> None:
    console = tmp_path / "console.log"
    console.write_bytes(b"\x1bc\x1b[?7l\x1b[2J\x1b[0mSeaBIOS (version 1.16.2)\r\n\nBooting from ROM...\r\n"
                        b"Probing EDD (edd=off to disable)... ok\r\n\x1bc\x1b[?7l\x1b[2J")
    assert vm_qemu.last_line(console) == "Probing EDD (edd=off to disable)... ok"
    assert vm_qemu.last_line(tmp_path / "none.log") == "(nothing)"


def test_cpu_lists() -> None:
    assert vm_qemu.parse_cpu_list("0-2,5\n") == {0, 1, 2, 5}
    assert vm_qemu.parse_cpu_list("1") == {1}


@pytest.mark.requires(None if Path("/etc/debian_version").exists() else "not Debian: no Debian apt sources")
def test_debian_sources_of_this_release() -> None:
    release, sources = rootfs.debian_sources()
    assert sources and all(line.split()[0] == "deb" for line in sources)
    assert all(line.split()[2].startswith(release) for line in sources), sources


@pytest.mark.requires(None if shutil.which("dpkg-query") and LIBC.exists() else "needs dpkg and glibc")
def test_libraries_and_their_packages(tmp_path: Path) -> None:
    shutil.copy("/bin/ls", tmp_path / "ls")
    libraries = rootfs.needed_libraries([tmp_path])
    assert any(lib.name == "libc.so.6" for lib in libraries), libraries
    assert "libc6" in rootfs.packages_of(libraries)
    (tmp_path / "libmine.so").write_bytes(b"\x7fELF")
    with pytest.raises(ServerError, match="no Debian package"):
        rootfs.packages_of([tmp_path / "libmine.so"])


def test_no_tmpfs_hides_an_install_under_tmp(tmp_path: Path) -> None:
    """Issue 54 item 2: with TEITEN_HOME under /tmp the install is copied to /tmp in the image,
    and the guest's init mounted a tmpfs over /tmp, hiding it. The init now leaves a mount
    point that holds the install alone (and gives it the tmpfs's mode); every other install's
    init, and so its image's key, is what it was (no cached guest is built again); and the
    image of one under /tmp gets a key of its own (the guest built before is not reused)."""
    home = Path("/tmp/teiten-home/installs/pypi-17.6")
    under_tmp = [home / "bin", home / "lib"]
    elsewhere = [Path("/var/cache/teiten/installs/pypi-17.6/bin")]
    init = vm_image.init_script(under_tmp)
    assert "chmod 1777 /tmp" in init and "tmpfs /tmp" not in init
    assert "mount -t tmpfs -o mode=755 tmpfs /run" in init
    assert "mount -t tmpfs -o mode=1777 tmpfs /dev/shm" in init
    plain = vm_image.init_script(elsewhere)
    assert "mountpoint -q /tmp || mount -t tmpfs -o mode=1777 tmpfs /tmp" in plain and "chmod" not in plain
    assert "{MOUNTS}" not in plain and plain.startswith("#!/bin/sh\n")
    assert vm_image.recipe_of(elsewhere) == vm_image.RECIPE
    assert vm_image.recipe_of(under_tmp) == f"{vm_image.RECIPE}-kept-/tmp"
    assert vm_image.hidden_by_tmpfs([Path("/run/user/1000/teiten/installs/x/bin")]) == ["/run"]
    assert vm_image.hidden_by_tmpfs([Path("/tmpx/installs/bin")]) == []  # a name, not the directory


def _topology(root: Path, nodes: dict[int, str]) -> Path:
    """A made-up /sys/devices/system/node: one directory per node with its cpulist."""
    for node, cpulist in nodes.items():
        (root / f"node{node}").mkdir(parents=True)
        (root / f"node{node}" / "cpulist").write_text(cpulist + "\n")
    (root / "online").write_text("0\n")  # a file beside the nodes, as the kernel's has
    return root


def test_the_guests_memory_goes_to_the_node_of_its_pinned_cpus(tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 57, item 9: where the machine has NUMA nodes, a guest whose vCPUs are pinned to the
    CPUs of one node gets its memory bound to that node (this machine has one node: a made-up
    topology of two, four CPUs each, and a second of one)."""
    two = _topology(tmp_path / "two", {0: "0-3", 1: "4-7"})
    assert cpus.numa_nodes(two) == {0: [0, 1, 2, 3], 1: [4, 5, 6, 7]}
    assert cpus.memory_node([5, 6], two) == 1 and cpus.memory_node([0], two) == 0
    assert cpus.memory_node([3, 4], two) is None  # across nodes: none is theirs
    assert cpus.memory_node([8], two) is None  # not a CPU of any node
    assert cpus.memory_node([0, 1], _topology(tmp_path / "one", {0: "0-7"})) is None  # nothing to choose
    assert cpus.memory_node([0], tmp_path / "none") is None  # no nodes listed
    monkeypatch.setattr(cpus, "NODES", two)  # the default root, as the guest's host reads it
    assert cpus.memory_node([6, 7]) == 1
    image = vm_image.Image(directory=tmp_path, host_key="", packages=(), install_dirs=(), seconds=0)
    argv = vm_qemu.qemu_argv(image, tmp_path, name="g", accel="tcg", ssh_port=2222, cpus=2,
                             memory_mb=1024, memory_node=1)
    assert argv[argv.index("-machine") + 1] == "q35,memory-backend=mem0"
    assert argv[argv.index("-object") + 1] == "memory-backend-ram,id=mem0,size=1024M,host-nodes=1,policy=bind"
    plain = vm_qemu.qemu_argv(image, tmp_path, name="g", accel="tcg", ssh_port=2222, cpus=2, memory_mb=1024)
    assert "-object" not in plain and plain[plain.index("-machine") + 1] == "q35"


def test_a_guest_on_a_tap_network_takes_its_address_from_the_kernels_command_line(tmp_path: Path) -> None:
    """Issue 57, item 9: qemu's NIC on the bridged namespace's tap, and the guest's address and
    gateway on the kernel's command line, which the guest's init reads (user-mode's otherwise)."""
    image = vm_image.Image(directory=tmp_path, host_key="", packages=(), install_dirs=(), seconds=0)
    tap = netns.Namespace("teiten-vm-g-abcdef", "teiabcdef", "10.213.0.9", "10.213.0.10", 29)
    tap.tap = "tap0"
    argv = vm_qemu.qemu_argv(image, tmp_path, name="g", accel="tcg", ssh_port=22, cpus=1,
                             memory_mb=512, tap=tap)
    assert argv[argv.index("-netdev") + 1] == "tap,id=n0,ifname=tap0,script=no,downscript=no"
    assert " teiten.ip=10.213.0.10/29 teiten.gateway=10.213.0.9 " in argv[argv.index("-append") + 1]
    assert argv[argv.index("-append") + 1].endswith(" init=/sbin/teiten-init")
    user = vm_qemu.qemu_argv(image, tmp_path, name="g", accel="tcg", ssh_port=2222, cpus=1, memory_mb=512)
    assert user[user.index("-netdev") + 1] == "user,id=n0,hostfwd=tcp:127.0.0.1:2222-:22"
    assert "teiten.ip=" not in user[user.index("-append") + 1]
    init = vm_image.init_script([Path("/opt/pg/bin")])
    assert 'teiten.ip=*) address="${word#teiten.ip=}"' in init and "address=10.0.2.15/24" in init
    assert 'ip addr add "$address" dev eth0' in init and 'ip route add default via "$gateway"' in init


def test_a_guest_with_a_wal_disk_has_a_second_virtio_drive_mounted_before_its_init(tmp_path: Path) -> None:
    """Issue 57, item 9: ``initdb.waldir`` gives the guest a raw second disk (vdb), formatted ext4
    here by mkfs on the file; the kernel's command line ends with ``init=/bin/sh -- -c "..."``,
    which mounts it for the guest's account and then runs the image's own init."""
    image = vm_image.Image(directory=tmp_path, host_key="", packages=(), install_dirs=(), seconds=0)
    disk = tmp_path / "wal.raw"
    argv = vm_qemu.qemu_argv(image, tmp_path, name="g", accel="tcg", ssh_port=2222, cpus=1,
                             memory_mb=512, wal_disk=disk)
    drives = [argv[i + 1] for i, a in enumerate(argv) if a == "-drive"]
    assert drives == [f"file={tmp_path / vm_qemu.DISK},if=virtio,format=qcow2",
                      f"file={disk},if=virtio,format=raw"]
    append = argv[argv.index("-append") + 1]
    kernel, init = append.split(" -- ")  # the kernel's words, then init's arguments
    assert kernel.endswith(" init=/bin/sh") and "teiten-init" not in kernel
    assert init == ('-c "mkdir -p /var/lib/teiten-wal; mount -t ext4 /dev/vdb /var/lib/teiten-wal '
                    '&& chown teiten /var/lib/teiten-wal; exec /sbin/teiten-init"')
    # The initramfs reads every word of the command line: none of the script's is one of its own.
    initramfs_words = {"ro", "rw", "debug", "break", "noresume", "fastboot", "forcefsck", "fsckfix"}
    assert not initramfs_words & set(init.split())
    plain = vm_qemu.qemu_argv(image, tmp_path, name="g", accel="tcg", ssh_port=2222, cpus=1, memory_mb=512)
    assert plain.count("-drive") == 1 and " -- " not in plain[plain.index("-append") + 1]

    vm_qemu.make_wal_disk(disk, 64 << 20)  # real mkfs.ext4 on a sparse file: no root, no loop device
    assert disk.stat().st_size == 64 << 20 and disk.stat().st_blocks * 512 < 64 << 20
    label = subprocess.run(["blkid", "-o", "export", str(disk)], capture_output=True, text=True, timeout=30)
    assert "TYPE=ext4" in label.stdout and "LABEL=teiten-wal" in label.stdout, label
    with pytest.raises(FileExistsError):
        vm_qemu.make_wal_disk(disk, 64 << 20)  # never over a file that is there


def test_initdb_waldir_goes_with_a_guest_of_one_node_and_not_with_an_ssh_host() -> None:
    """A VM guest's ``initdb.waldir`` is a directory here (its WAL disk's file), and the guest's
    report says where its WAL was; a guest with standbys, and an ssh host, refuse it in one line."""
    spec = ServerSpec(name="g", install="17", initdb={"waldir": "/srv/wal"}, vm={"wal_disk": "2GB"})
    assert VmPlace.on(spec).vm is not None and VmPlace.on(spec).vm.wal_disk == 2 << 30  # type: ignore[union-attr]
    with pytest.raises(ValidationError, match="a WAL disk, and this server has several nodes"):
        ServerSpec(name="g", install="17", initdb={"waldir": "/srv/wal"}, vm={}, replicas=1)
    with pytest.raises(ValidationError, match="'initdb.waldir' cannot be combined with 'ssh'"):
        ServerSpec(name="g", install="17", initdb={"waldir": "/srv/wal"}, ssh="db1")
    seen = {"host": {"vm": {"network": "tap", "address": "10.213.0.10", "wal_disk": True}}}
    assert ("server.vm.wal", "server.vm.wal.disk", {}) in vm_kind.KIND.facts(seen)
    seen["host"]["vm"]["wal_disk"] = False
    assert ("server.vm.wal", "server.vm.wal.data", {}) in vm_kind.KIND.facts(seen)
    del seen["host"]["vm"]["wal_disk"]  # a store from before the WAL disk: not said
    assert [key for key, _text, _values in vm_kind.KIND.facts(seen)] == ["server.vm.network"]
