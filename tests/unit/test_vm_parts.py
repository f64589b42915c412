"""The small parts of the VM guest machinery that need no qemu: what the console's last line
is, the kernel's CPU lists, this machine's Debian sources, and the libraries and packages of an
install (real ldd and dpkg on this machine's files). The guest itself: tests/integration/test_vm_guest.py."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from teiten.errors import ServerError
from teiten.servers import rootfs, vm_qemu

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
