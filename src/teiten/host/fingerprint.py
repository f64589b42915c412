"""The machine and software a result came from, stored with every study.

Two results are only comparable when these match where it matters (pyperf's checked
metadata): the report flags studies whose fingerprints differ. Beside the identity, what
decides how noisy the machine is, as pyperf's ``system show`` reads it: the CPU frequency
governor, turbo boost, SMT, transparent huge pages, ASLR and whether it is a virtual machine
(:func:`tuning`); a change of these is reported, never a new machine.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
from collections.abc import Mapping
from pathlib import Path

import psutil

import teiten


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _os_name() -> str:
    try:
        for line in Path("/etc/os-release").read_text().splitlines():
            if line.startswith("PRETTY_NAME="):
                return line.split("=", 1)[1].strip().strip('"')
    except OSError:
        pass
    return platform.system()


NOT_EXPOSED = "not exposed"  # the kernel does not say (no cpufreq in most virtual machines)


def _read(path: Path) -> str | None:
    try:
        return path.read_text().strip()
    except OSError:
        return None


def tuning(root: Path = Path("/")) -> dict[str, str]:
    """How the machine is tuned for steady figures, read from ``root``'s /sys and /proc."""
    cpu = root / "sys" / "devices" / "system" / "cpu"
    governors = sorted({g for g in (_read(p) for p in cpu.glob("cpu[0-9]*/cpufreq/scaling_governor"))
                        if g})
    no_turbo, boost = _read(cpu / "intel_pstate" / "no_turbo"), _read(cpu / "cpufreq" / "boost")
    turbo = ({"0": "on", "1": "off"}.get(no_turbo or "") or {"1": "on", "0": "off"}.get(boost or "")
             or NOT_EXPOSED)
    smt = {"on": "on", "off": "off", "forceoff": "off", "notsupported": "not supported"}.get(
        _read(cpu / "smt" / "control") or "", NOT_EXPOSED)
    thp_line = _read(root / "sys" / "kernel" / "mm" / "transparent_hugepage" / "enabled") or ""
    thp = thp_line.split("[", 1)[1].split("]", 1)[0] if "[" in thp_line else NOT_EXPOSED
    aslr = {"0": "off (0)", "1": "partial (1)", "2": "full (2)"}.get(
        _read(root / "proc" / "sys" / "kernel" / "randomize_va_space") or "", NOT_EXPOSED)
    return {"cpu_governor": ", ".join(governors) or NOT_EXPOSED, "turbo": turbo, "smt": smt,
            "thp": thp, "aslr": aslr, "virtualization": _virtualization(root)}


def _virtualization(root: Path) -> str:
    """A virtual machine (with its maker where the firmware says), a container, both, or
    none."""
    container = (root / ".dockerenv").exists() or (root / "run" / ".containerenv").exists()
    flags = next((line for line in (_read(root / "proc" / "cpuinfo") or "").splitlines()
                  if line.startswith("flags")), "")
    hypervisor = _read(root / "sys" / "hypervisor" / "type")
    vm = None
    if " hypervisor" in flags or hypervisor:
        maker = " ".join(dict.fromkeys(v for v in (
            hypervisor, _read(root / "sys" / "class" / "dmi" / "id" / "sys_vendor"),
            _read(root / "sys" / "class" / "dmi" / "id" / "product_name")) if v))
        vm = f"virtual machine ({maker})" if maker else "virtual machine"
    if container:
        return f"container in a {vm}" if vm else "container"
    return vm or "none"


def filesystem_of(path: Path) -> dict[str, str]:
    """The mount holding ``path``: device, mount point and filesystem type."""
    target = os.path.realpath(path if path.exists() else path.parent)
    best = None
    for part in psutil.disk_partitions(all=True):
        mp = part.mountpoint
        if (target == mp or target.startswith(mp.rstrip("/") + "/")) and (
                best is None or len(mp) > len(best.mountpoint)):
            best = part
    if best is None:
        return {}
    return {"device": best.device, "mountpoint": best.mountpoint, "fstype": best.fstype}


def machine(data_dir: Path) -> dict[str, object]:
    """CPU model and count, memory, kernel, OS, and the filesystem of the data directory."""
    mem = psutil.virtual_memory()
    try:
        affinity = len(os.sched_getaffinity(0))
    except AttributeError:
        affinity = os.cpu_count() or 0
    return {
        "hostname": platform.node(),
        "cpu_model": _cpu_model(),
        "cpu_logical": psutil.cpu_count(logical=True),
        "cpu_physical": psutil.cpu_count(logical=False),
        "cpu_usable": affinity,
        "memory_bytes": mem.total,
        "kernel": platform.release(),
        "os": _os_name(),
        "arch": platform.machine(),
        "data_filesystem": filesystem_of(data_dir),
        "python": platform.python_version(),
        "teiten": teiten.__version__,
        **tuning(),
    }


# The machine's identity: fields whose difference makes TPS figures incomparable (another
# machine). The filesystem type of the data directory counts where both fingerprints have it.
IDENTITY = ("cpu_model", "cpu_logical", "memory_bytes", "arch")
# Its software: the same machine after an upgrade. Results over the years span such changes,
# so a difference here is said beside the numbers, not refused.
SOFTWARE = ("kernel", "os")
# How the machine was tuned: said beside the numbers when it changed, like the software.
TUNING = ("cpu_governor", "turbo", "smt", "thp", "aslr", "virtualization")


def _fstype(found: Mapping[str, object]) -> object:
    """The filesystem type of a fingerprint's data directory (None where it lacks one)."""
    filesystem = found.get("data_filesystem")
    return filesystem.get("fstype") if isinstance(filesystem, Mapping) else None


def differences(a: Mapping[str, object], b: Mapping[str, object]) -> list[str]:
    """The identity fields on which two fingerprints differ: not the same machine."""
    found = [k for k in IDENTITY if a.get(k) != b.get(k)]
    fs_a, fs_b = _fstype(a), _fstype(b)
    if fs_a and fs_b and fs_a != fs_b:
        found.append("data_filesystem")
    return found


def software_changes(a: Mapping[str, object], b: Mapping[str, object]) -> list[str]:
    """How the software (and the tuning) of the same machine changed from ``a`` to ``b``:
    "kernel 6.1.0-18 → 6.1.0-25" for each field that differs; the tuning only where both
    fingerprints have it (older stores do not)."""
    return [f"{k} {a.get(k) or '?'} → {b.get(k) or '?'}" for k in (*SOFTWARE, *TUNING)
            if a.get(k) != b.get(k) and (k in SOFTWARE or (k in a and k in b))]


def testbed_name(found: Mapping[str, object], name: str | None = None) -> str:
    """The testbed in words, for a reader beside the stable :func:`testbed_key`: the user's
    name for the machine, else its host name, CPU model and count, memory in GiB and, where it
    is one, that it is a container or a virtual machine ("vm: Intel(R) Xeon(R) Processor, 2
    CPUs, 24 GiB"). Only what the fingerprint recorded."""
    if name:
        return name
    memory = found.get("memory_bytes")
    parts = [str(found["cpu_model"]) if found.get("cpu_model") else None,
             f"{found['cpu_logical']} CPUs" if found.get("cpu_logical") else None,
             f"{round(memory / 2**30)} GiB" if isinstance(memory, int | float) else None,
             str(found["virtualization"]) if found.get("virtualization") not in (None, "none") else None]
    said = ", ".join(p for p in parts if p) or "unknown machine"
    return f"{found['hostname']}: {said}" if found.get("hostname") else said


def testbed_key(found: Mapping[str, object], name: str | None = None) -> str:
    """The testbed a study ran on (docs/DESIGN.md, "Results others read"): the user's name for
    the machine, else 12 hex digits of a SHA-256 over its identity fields (CPU model, logical
    CPUs, memory, architecture), so that one machine keeps one key across studies, upgrades and
    retuning (those are recorded beside it). Memory counts in whole GiB, rounded: the kernel's
    own reservations move the total by a few MiB from one kernel to the next."""
    if name:
        return name
    memory = found.get("memory_bytes")
    identity = {k: found.get(k) for k in IDENTITY}
    identity["memory_bytes"] = round(memory / 2**30) if isinstance(memory, int | float) else memory
    return hashlib.sha256(json.dumps(identity, sort_keys=True).encode()).hexdigest()[:12]
