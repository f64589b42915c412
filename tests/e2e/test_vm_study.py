"""The vm kind end to end (issue 36 item 2; METHODS S5, 2014: the host against a guest, and two
guests at once): the study's own PostgreSQL 17 in qemu guests teiten builds (cached) and boots,
under qemu's emulation (``accelerator: tcg``), their vCPU threads pinned (read back from the
host while the study runs), loaded alone and as tenants, one reached through loopback port forwards
of qemu's user-mode network, the other at its address on a tap network (issue 57, item 9: qemu
in a network namespace of its own, opened on a bridge there; pgbench from here straight to it;
its WAL on a virtual disk of its own, whose file is in the study's ``initdb.waldir`` here);
and a guest under kvm, which on these machines does not boot (the console stops at SeaBIOS):
an optional one is left out, a required one refuses the study before its first trial, each in
one line naming the accelerator. Real mmdebstrap, qemu, sshd, PostgreSQL and pgbench; the
real CLI."""

from __future__ import annotations

import contextlib
import os
import shutil
import sqlite3
import subprocess
import time
from contextlib import closing
from typing import Any

import psutil
import pytest
from tests.conftest import TEST_HOME, run_cli, start_cli

from teiten.servers.vm import qemu as vm_qemu

NEEDED = ("mmdebstrap", "qemu-system-x86_64", "qemu-img", "mkfs.ext4", "ssh", "ssh-keygen")
WHY_NOT = next((f"{p} is not installed (make system)" for p in NEEDED if shutil.which(p) is None),
               None) or (None if os.geteuid() == 0 else "building a guest needs root")
pytestmark = [pytest.mark.slow, pytest.mark.requires(WHY_NOT)]

STUDY = """\
study: vm-e2e
servers:
  - {{name: host, install: "17"}}
  - {{name: vme1, install: "17", vm: {{memory: 1GB, accelerator: tcg, cpus: "{cpu0}", network: user}}}}
  - {{name: vme2, install: "17", vm: {{memory: 1GB, accelerator: tcg, cpus: "{cpu1}", wal_disk: 1GB}},
      initdb: {{waldir: "{wal}"}}}}  # tap, its WAL on a disk of its own
  - {{name: vmkvm, install: "17", vm: {{memory: 1GB}}, optional: true}}
tenants:
  - [vme1, vme2]
workloads: [select-only]
scale: 1
clients: [1]
duration: 2s
repetitions: 1
"""


def _guests(pid: int) -> dict[str, psutil.Process]:
    """The qemu processes that the teiten run ``pid`` started, by guest name."""
    found = {}
    for child in psutil.Process(pid).children(recursive=True):
        try:
            argv = child.cmdline()
        except psutil.Error:
            continue
        if argv[:1] == ["qemu-system-x86_64"] and "-name" in argv:
            found[argv[argv.index("-name") + 1].split(",")[0]] = child
    return found


@pytest.fixture(scope="module")
def finished() -> dict[str, Any]:
    work = TEST_HOME / "work" / "e2e-vm"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    cpus = sorted(os.sched_getaffinity(0))
    (work / "wal").mkdir()
    (work / "s.yaml").write_text(STUDY.format(cpu0=cpus[0], cpu1=cpus[-1], wal=work / "wal"))
    run = start_cli("run", str(work / "s.yaml"), "--store", str(work / "r.db"), "--report",
                    str(work / "report"))
    pinned: dict[str, list[tuple[str, set[int]]]] = {}
    qemus: dict[str, int] = {}
    namespaces: dict[str, set[str]] = {}  # the network namespaces teiten made, by guest
    while run.poll() is None:  # read the vCPU threads' CPUs from here while the study runs
        for name, proc in _guests(run.pid).items():
            if not name.startswith("vme"):
                continue  # the kvm guest's boot, at the check
            with_vcpus = [(n, c) for _, n, c in vm_qemu.thread_affinities(proc.pid)
                          if n.startswith("CPU ")]
            if with_vcpus:
                pinned[name], qemus[name] = with_vcpus, proc.pid
            with contextlib.suppress(OSError):
                own = os.stat(f"/proc/{proc.pid}/ns/net").st_ino != os.stat("/proc/self/ns/net").st_ino
                namespaces.setdefault(name, set()).update(_teitens(name) if own else ["(this one)"])
        time.sleep(0.5)
    out, err = run.communicate()
    return {"work": work, "returncode": run.returncode, "stdout": out, "stderr": err,
            "pinned": pinned, "qemus": qemus, "cpus": cpus, "namespaces": namespaces}


def _teitens(guest: str) -> list[str]:
    """The network namespaces teiten made for guest ``guest``."""
    listed = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, timeout=15).stdout
    return [line.split()[0] for line in listed.splitlines() if line.startswith(f"teiten-vm-{guest}-")]


def test_the_guests_run_alone_and_as_tenants_and_leave_nothing(finished: dict[str, Any]) -> None:
    assert finished["returncode"] == 0, finished["stderr"]
    with closing(sqlite3.connect(finished["work"] / "r.db")) as conn:
        trials = conn.execute("SELECT server, status, tps FROM trials ORDER BY server").fetchall()
    assert [(s, st) for s, st, _ in trials] == [
        ("host", "ok"), ("vme1", "ok"), ("vme1+vme2", "ok"), ("vme2", "ok")], trials
    assert all(tps > 0 for _, _, tps in trials)
    cpus = finished["cpus"]
    assert finished["pinned"] == {"vme1": [("CPU 0/TCG", {cpus[0]})],
                                  "vme2": [("CPU 0/TCG", {cpus[-1]})]}, finished["pinned"]
    assert not any(psutil.pid_exists(pid) and "qemu" in psutil.Process(pid).name()
                   for pid in finished["qemus"].values())
    assert not list((TEST_HOME / "vm").glob("guest-vme*")), "the guests' directories are removed"
    assert not list((finished["work"] / "wal").iterdir()), "the WAL disk's file is removed"


def test_the_tap_guest_ran_in_a_namespace_of_its_own_which_is_gone(finished: dict[str, Any]) -> None:
    assert finished["returncode"] == 0, finished["stderr"]
    seen = finished["namespaces"]
    assert seen["vme1"] == {"(this one)"}, seen  # user-mode: qemu in this machine's network
    [namespace] = seen["vme2"]
    assert namespace.startswith("teiten-vm-vme2-"), seen
    assert namespace not in subprocess.run(["ip", "netns", "list"], capture_output=True, text=True,
                                           timeout=15).stdout
    assert "tei" + namespace.rsplit("-", 1)[1] not in subprocess.run(
        ["ip", "-o", "link"], capture_output=True, text=True, timeout=15).stdout


def test_a_guest_under_kvm_that_does_not_boot_is_left_out_in_one_line(finished: dict[str, Any]) -> None:
    [line] = [ln for ln in finished["stdout"].splitlines() + finished["stderr"].splitlines()
              if "optional server vmkvm left out" in ln]
    assert "-accel kvm" in line and "the console's last line: " in line, line
    assert "accelerator: tcg" in line


def test_the_report_names_the_kind_and_says_the_guests_were_emulated(finished: dict[str, Any]) -> None:
    report = finished["work"] / "report"
    md = (report / "report.md").read_text()
    assert "| Kind | vm (a qemu guest teiten builds from the study's install and boots on this machine) |" in md
    for name in ("vme1", "vme2"):
        assert (f"Server {name} ran in a guest that qemu emulated (accelerator: tcg): emulated: "
                "not a measurement of a VM.") in md
        # Every figure of a guest is marked where it is printed (issue 54, item 7): the tables' columns.
        assert f"| {name} (emulated) |" in md or f" {name} (emulated) " in md
    # Which network each guest used, and where the tap guest was (issue 57, item 9).
    assert ("| Guest network | qemu user-mode network, reached through loopback port forwards (adds "
            "to every round trip) |") in md
    # The one guest on a tap network, alone and as a tenant (the report's "vme2 (with vme1)").
    [tap] = {ln for ln in md.splitlines() if ln.startswith("| Guest network | tap device on a bridge")}
    address = tap.split("the guest at ")[1].split()[0]
    assert address.startswith(("10.213.", "172.29.213.", "192.168.213.")), tap
    # Where each guest's WAL was: vme2's on a virtual disk of its own (initdb.waldir), vme1's not.
    assert "| Guest WAL | own virtual disk (vdb, virtio), its file in initdb.waldir on this machine |" in md
    assert "| Guest WAL | in the data directory, on the guest's one disk (vda) |" in md
    tps = next((report / "tables").glob("*-tps.csv")).read_text().splitlines()
    assert tps[0].endswith(",emulated")
    # The guests alone and beside each other (tenants): every one of their figures marked.
    assert {ln.split(",")[1]: ln.rsplit(",", 1)[1] for ln in tps[1:]} == {
        "host": "0", "vme1": "1", "vme2": "1", "vme1 (with vme2)": "1", "vme2 (with vme1)": "1"}
    run_cli("report", "--store", str(finished["work"] / "r.db"), "--lang", "ja", "--out",
            str(finished["work"] / "ja"), check=True)
    ja = (finished["work"] / "ja" / "report.md").read_text()
    assert "エミュレーションであり、VM の測定ではありません。" in ja
    assert ("| ゲストのネットワーク | ネットワーク名前空間内のブリッジ上の tap デバイス（virtio-net）、"
            f"ゲストのアドレスは {address} |") in ja
    assert "| ゲストのネットワーク | qemu のユーザーモードネットワーク" in ja
    assert ("| ゲストの WAL | 専用の仮想ディスク（vdb、virtio）、そのファイルはこのマシンの "
            "initdb.waldir に置く |") in ja
    assert "vm（teiten が試験のインストールから作り、このマシンで起動する qemu ゲスト）" in ja


def test_a_required_guest_under_kvm_refuses_the_study_before_its_first_trial(tmp_path: Any) -> None:
    (tmp_path / "k.yaml").write_text(
        "study: vm-kvm\nservers:\n  - {name: vmk, install: \"17\", vm: {memory: 1GB}}\n"
        "workloads: [select-only]\nscale: 1\nclients: [1]\nduration: 1s\nrepetitions: 1\n")
    done = run_cli("run", str(tmp_path / "k.yaml"), "--store", str(tmp_path / "k.db"))
    assert done.returncode == 2, done.stderr
    [line] = done.stderr.strip().splitlines()
    assert "server vmk" in line and "-accel kvm" in line and "accelerator: tcg" in line, line
    assert not (tmp_path / "k.db").exists()
