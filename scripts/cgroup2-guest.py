#!/usr/bin/env python3
"""A core sweep in a guest booted with a cgroup-v2-only Debian 12 (issue 38, item 3): every
server process is confined to its cpuset, checked from /proc while the study runs.

This machine mounts cgroup v1 (the suite's test of confinement checks v1 here); Debian 12 and
Ubuntu boot with the unified hierarchy only, where teiten makes its groups under
/sys/fs/cgroup/teiten. The guest is made from Debian's packages with mmdebstrap (systemd, the
Debian kernel, python3), teiten is installed into it from a wheel of this checkout, `teiten
system setup` and `teiten install 17` run inside it as a user would, then qemu boots it (under
emulation, TCG: Debian's kernel does not boot under -accel kvm here; this is a functional check,
never a measurement). In the guest a oneshot unit runs the study and a watcher that reads
/proc/PID/status (Cpus_allowed_list) and /proc/PID/cgroup of every postgres process every
0.2 s; the results come back on the serial console.

Usage (root; needs mmdebstrap, qemu-system-x86, e2fsprogs and the network to Debian and PyPI):
    python3 scripts/cgroup2-guest.py [WORKDIR]     (default .cache/cgroup2-guest; about 15 min)
Prints the check's lines and exits 0 when every sample was inside its server's cpuset.
"""

from __future__ import annotations

import glob
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ["linux-image-amd64", "systemd-sysv", "udev", "kmod", "python3", "python3-venv",
            "ca-certificates", "procps", "util-linux"]
STUDY = """\
study: guest-cores
servers: [{name: pg17, install: "17"}]
workloads: [select-only]
cores: [1, 2]
clients: [2]
scale: 1
duration: 5s
repetitions: 1
"""
CHECK = r"""#!/bin/sh
# Runs once at boot (teiten-check.service): the study, a watcher of /proc, then power off.
exec > /dev/ttyS0 2>&1
echo "GUEST cgroup: $(stat -fc %T /sys/fs/cgroup) controllers: $(cat /sys/fs/cgroup/cgroup.controllers)"
echo "GUEST cpus: $(nproc)"
(
  while [ ! -e /root/done ]; do
    for pid in $(pgrep -x postgres); do
      cpus=$(awk '/^Cpus_allowed_list/ {print $2}' /proc/$pid/status 2>/dev/null)
      group=$(cut -d: -f3 /proc/$pid/cgroup 2>/dev/null)
      [ -n "$cpus" ] && echo "SAMPLE $pid $cpus $group"
    done
    sleep 0.2
  done
) > /root/samples.txt &
cd /root
/opt/teiten/bin/teiten run cores.yaml --store cores.db --no-report --noise-guard off
echo "GUEST teiten exit $?"
touch /root/done
sleep 1
/opt/teiten/bin/python - <<'EOF'
import json, sqlite3
conn = sqlite3.connect("/root/cores.db")
for trial, server, body in conn.execute(
        "SELECT d.trial_id, t.server, d.body FROM details d JOIN trials t USING (study_id, trial_id) "
        "WHERE d.kind = 'placement'"):
    p = json.loads(body)
    print("PLACEMENT", json.dumps({"trial": trial, "server": server, "cpus": p["cpus"],
                                   "mechanism": p["mechanism"], "cgroup": p["cgroup"],
                                   "escaped": p["watch"]["escaped"],
                                   "processes": p["watch"]["processes"]}))
EOF
sort -u -k2,4 /root/samples.txt | sed -n '1,400p'
echo "GUEST end"
systemctl poweroff
"""


def run(argv: list[str], **kw: object) -> None:
    print("+", " ".join(argv), flush=True)
    subprocess.run(argv, check=True, **kw)  # type: ignore[call-overload]


def build(work: Path) -> tuple[Path, Path, Path]:
    rootfs, image = work / "rootfs", work / "guest.img"
    if not (rootfs / "opt" / "teiten" / "bin" / "teiten").exists():
        shutil.rmtree(rootfs, ignore_errors=True)
        run(["mmdebstrap", "--variant=minbase", "--include=" + ",".join(PACKAGES), "bookworm",
             str(rootfs), "http://deb.debian.org/debian"])
        # This machine reaches the registries through a TLS proxy: its CAs, as a company's has.
        for crt in glob.glob("/usr/local/share/ca-certificates/*.crt"):
            shutil.copy(crt, rootfs / "usr/local/share/ca-certificates/")
        run(["chroot", str(rootfs), "update-ca-certificates"], stdout=subprocess.DEVNULL)
        if Path("/etc/pip.conf").exists():
            shutil.copy("/etc/pip.conf", rootfs / "etc/pip.conf")
        shutil.copy("/etc/resolv.conf", rootfs / "etc/resolv.conf")
        dist = work / "dist"
        shutil.rmtree(dist, ignore_errors=True)
        run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "-w", str(dist), str(ROOT)])
        wheel = next(dist.glob("teiten-*.whl"))
        shutil.copy(wheel, rootfs / "tmp" / wheel.name)
        mounts = ["proc", "sys", "dev"]
        for m in mounts:
            run(["mount", "--bind", f"/{m}", str(rootfs / m)])
        try:
            inside = ["chroot", str(rootfs), "/usr/bin/env", "-i", "HOME=/root", "LANG=C.UTF-8",
                      "PATH=/usr/sbin:/usr/bin:/sbin:/bin",
                      "PIP_CERT=/etc/ssl/certs/ca-certificates.crt",
                      "SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt"]
            run([*inside, "python3", "-m", "venv", "/opt/teiten"])
            run([*inside, "/opt/teiten/bin/pip", "install", "--quiet", f"/tmp/{wheel.name}"])
            run([*inside, "/opt/teiten/bin/teiten", "system", "setup"])
            run([*inside, "/opt/teiten/bin/teiten", "install", "17"])
        finally:
            for m in reversed(mounts):
                subprocess.run(["umount", "-l", str(rootfs / m)], check=False)
    (rootfs / "root" / "cores.yaml").write_text(STUDY)
    check = rootfs / "root" / "check.sh"
    check.write_text(CHECK)
    check.chmod(0o755)
    unit = rootfs / "etc/systemd/system/teiten-check.service"
    unit.write_text("[Unit]\nDescription=teiten cgroup v2 check\nAfter=multi-user.target\n\n"
                    "[Service]\nType=oneshot\nExecStart=/root/check.sh\n\n"
                    "[Install]\nWantedBy=multi-user.target\n")
    wants = rootfs / "etc/systemd/system/multi-user.target.wants"
    wants.mkdir(parents=True, exist_ok=True)
    link = wants / "teiten-check.service"
    if not link.is_symlink():
        link.symlink_to("/etc/systemd/system/teiten-check.service")
    # No login prompt on the console: agetty would hang up the check's writes to it.
    getty = rootfs / "etc/systemd/system/serial-getty@ttyS0.service"
    if not getty.is_symlink():
        getty.symlink_to("/dev/null")
    (rootfs / "etc/fstab").write_text("/dev/vda / ext4 rw 0 1\n")
    (rootfs / "etc/hostname").write_text("teiten-guest\n")
    (rootfs / "root/done").unlink(missing_ok=True)
    image.unlink(missing_ok=True)
    run(["mkfs.ext4", "-q", "-F", "-d", str(rootfs), str(image), "4G"])
    kernel = sorted(rootfs.glob("boot/vmlinuz-*"))[-1]
    initrd = sorted(rootfs.glob("boot/initrd.img-*"))[-1]
    return image, kernel, initrd


def boot(image: Path, kernel: Path, initrd: Path, log: Path) -> str:
    # -cpu max: numpy's and psycopg's wheels use instructions qemu's default model lacks.
    argv = ["qemu-system-x86_64", "-accel", "tcg", "-cpu", "max", "-m", "3072", "-smp", "2",
            "-nographic", "-no-reboot", "-kernel", str(kernel), "-initrd", str(initrd),
            "-append", "root=/dev/vda rw console=ttyS0 systemd.unified_cgroup_hierarchy=1 quiet",
            "-drive", f"file={image},format=raw,if=virtio", "-nic", "none"]
    began = time.monotonic()
    with log.open("w") as out:
        subprocess.run(argv, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                       timeout=3600, check=False)
    print(f"guest ran {time.monotonic() - began:.0f} s; its console: {log}")
    return log.read_text(errors="replace")


def judge(console: str) -> int:
    lines = [line.strip() for line in console.splitlines()]
    for line in lines:
        if line.startswith("GUEST"):
            print(line)
    placements = [json.loads(line.split(" ", 1)[1]) for line in lines if line.startswith("PLACEMENT")]
    samples = [line.split() for line in lines if line.startswith("SAMPLE")]
    bad = []
    for p in placements:
        print(f"placement: {p['server']} on CPUs {p['cpus']} by {p['mechanism']} ({p['cgroup']}); "
              f"{p['processes']} processes watched, escaped {p['escaped']}")
        if p["mechanism"] != "cgroup-v2" or p["escaped"]:
            bad.append(f"{p['server']}: {p['mechanism']}, escaped {p['escaped']}")
    groups = {Path(p["cgroup"]).name: p["cpus"] for p in placements}
    confined = 0
    for _, pid, cpus, *group in samples:
        name = Path(group[0]).name if group else ""
        if name in groups:
            confined += 1
            if cpus != groups[name]:
                bad.append(f"pid {pid} in {name} may run on {cpus}, not {groups[name]}")
    print(f"samples from /proc: {len(samples)}, of server processes in a teiten group: {confined}")
    if not placements or not confined:
        bad.append("no placement or no sample of a confined server process")
    for b in bad:
        print("BAD", b)
    print("cgroup v2 check:", "ok" if not bad else "failed")
    return 0 if not bad else 1


def main() -> int:
    if os.geteuid() != 0:
        print("run as root (mmdebstrap, chroot, mount)", file=sys.stderr)
        return 2
    work = Path(sys.argv[1] if len(sys.argv) > 1 else ROOT / ".cache" / "cgroup2-guest").absolute()
    work.mkdir(parents=True, exist_ok=True)
    began = time.monotonic()
    image, kernel, initrd = build(work)
    print(f"guest image made in {time.monotonic() - began:.0f} s")
    return judge(boot(image, kernel, initrd, work / "console.log"))


if __name__ == "__main__":
    sys.exit(main())
