"""The machine and software a result came from, stored with every study.

Two results are only comparable when these match where it matters (pyperf's checked
metadata): the report flags studies whose fingerprints differ.
"""

from __future__ import annotations

import os
import platform
from pathlib import Path
from typing import Any

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


def machine(data_dir: Path) -> dict[str, Any]:
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
    }


# The machine's identity: fields whose difference makes TPS figures incomparable (another
# machine). The filesystem type of the data directory counts where both fingerprints have it.
IDENTITY = ("cpu_model", "cpu_logical", "memory_bytes", "arch")
# Its software: the same machine after an upgrade. Results over the years span such changes,
# so a difference here is said beside the numbers, not refused.
SOFTWARE = ("kernel", "os")


def differences(a: dict[str, Any], b: dict[str, Any]) -> list[str]:
    """The identity fields on which two fingerprints differ: not the same machine."""
    found = [k for k in IDENTITY if a.get(k) != b.get(k)]
    fs_a, fs_b = ((f.get("data_filesystem") or {}).get("fstype") for f in (a, b))
    if fs_a and fs_b and fs_a != fs_b:
        found.append("data_filesystem")
    return found


def software_changes(a: dict[str, Any], b: dict[str, Any]) -> list[str]:
    """How the software of the same machine changed from ``a`` to ``b``: "kernel 6.1.0-18 →
    6.1.0-25" for each field that differs."""
    return [f"{k} {a.get(k) or '?'} → {b.get(k) or '?'}" for k in SOFTWARE if a.get(k) != b.get(k)]
