"""The cgroup layer (issue 38, item 3) on this machine's hierarchy, as root: a group holds a
program started through it, as the server account, to its CPUs, its memory (past the limit the
kernel kills it) and its write bandwidth, and closing it leaves nothing. The v2 path is checked
in a guest booted with a cgroup-v2-only Debian (bench/cgroup2_guest.py)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.conftest import TEST_HOME
from tests.requirements import missing

from teiten.host import cgroups, privileges
from teiten.host.procs import RunAs


@pytest.fixture
def account() -> RunAs:
    if os.geteuid() != 0:
        pytest.skip("only root makes cgroups (teiten uses CPU affinity otherwise)")
    found = privileges.server_account()
    assert found is not None
    return found


@pytest.fixture
def scratch(account: RunAs) -> Iterator[Path]:
    """A directory on this machine's disk that the account may write (not a tmpfs)."""
    TEST_HOME.mkdir(parents=True, exist_ok=True)
    where = Path(tempfile.mkdtemp(prefix="cgroups-", dir=TEST_HOME))
    os.chown(where, account.uid, account.gid)
    yield where
    shutil.rmtree(where)


def _device(path: Path) -> str:
    dev = os.stat(path).st_dev
    return f"{os.major(dev)}:{os.minor(dev)}"


def _run(group: cgroups.Group | None, argv: list[str], account: RunAs) -> subprocess.CompletedProcess[str]:
    if group is None:
        argv = ["setpriv", f"--reuid={account.uid}", f"--regid={account.gid}", "--clear-groups", "--",
                *argv]
    else:
        argv, run_as = group.wrap(argv, run_as=account)
        assert run_as is None  # root starts it, to join the group; it drops to the account itself
    return subprocess.run(argv, capture_output=True, text=True, timeout=120)


def test_a_group_holds_its_program_to_cpus_memory_and_write_bandwidth(
        account: RunAs, scratch: Path) -> None:
    device = _device(scratch)
    if device.startswith("0:"):
        missing(f"{scratch} is on no block device ({device}): no I/O limit to check")
    limits = cgroups.Limits(cpus=[0], memory_bytes=64 << 20,
                            io=[cgroups.IoLimit(device, write_bps=1 << 20)])
    label = f"layer-{os.getpid()}"
    group = cgroups.create(label, limits)
    assert group is not None, "root makes a group on v1 or v2"
    assert group.mechanism == cgroups.mechanism(limits)
    try:
        seen = _run(group, ["sh", "-c", "id -u; grep Cpus_allowed_list /proc/self/status; "
                            "cat /proc/self/cgroup"], account)
        assert seen.returncode == 0, seen.stderr
        lines = seen.stdout.splitlines()
        assert lines[0] == str(account.uid)  # the account runs it, not root
        assert lines[1].split() == ["Cpus_allowed_list:", "0"]
        joined = [line for line in lines[2:] if line.endswith(cgroups.group_name(label))]
        assert len(joined) == len(group.dirs), seen.stdout  # every hierarchy's group
        assert group.pids() == []  # it ended

        # Memory: 200 MiB written in a group of 64 MiB is killed; the same outside is not.
        # The interpreter itself, not "python3" on root's PATH: that may be a shim in root's
        # home (pyenv's), which the account cannot run.
        hungry = [os.path.realpath(sys.executable), "-c", "b = b'x' * (200 << 20); print('survived')"]
        assert _run(None, hungry, account).stdout.strip() == "survived"
        killed = _run(group, hungry, account)
        assert killed.returncode == -9 and "survived" not in killed.stdout, killed

        # Writes: 3 MiB of direct I/O at 1 MiB/s take more than 2 s (a busy disk only slows
        # them more); the bound is the kernel's, so this cannot pass by luck.
        began = time.monotonic()
        wrote = _run(group, ["dd", "if=/dev/zero", f"of={scratch / 'f'}", "bs=1M", "count=3",
                             "oflag=direct"], account)
        assert wrote.returncode == 0, wrote.stderr
        assert time.monotonic() - began > 2.0
    finally:
        group.close()
    assert cgroups.groups(label) == []


def test_cpus_alone_fall_back_to_affinity_where_cgroups_are_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TEITEN_CGROUPS", "off")
    assert cgroups.create("off", cgroups.Limits(cpus=[0])) is None
    assert cgroups.mechanism(cgroups.Limits(cpus=[0])) is None
