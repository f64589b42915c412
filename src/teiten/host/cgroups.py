"""One cgroup layer for cgroup v1 and v2: a group per server that holds it to some CPUs (cpuset),
and to a memory and an I/O limit, for every process it forks.

- **v2** (the unified hierarchy, Debian 11+ and Ubuntu 21.10+ by default): teiten's groups live
  in ``<cgroup2 mount>/teiten/``, a group of its own beside systemd's slices. The controllers a
  limit needs are enabled down to it (``cgroup.subtree_control``; the root cgroup and
  ``teiten/`` hold no process of teiten's, so the kernel's no-internal-process rule allows it).
  A server's group is ``teiten/teiten-<label>``: ``cpuset.cpus``, ``memory.max`` with
  ``memory.swap.max`` 0 (a limit that may swap is no limit), ``io.max``.
- **v1** (the legacy and hybrid hierarchies): one group per controller, beside teiten's own
  (``/sys/fs/cgroup/cpuset/<teiten's>/teiten-<label>``, and so on for ``memory`` and ``blkio``):
  ``cpuset.cpus`` and ``cpuset.mems``, ``memory.limit_in_bytes`` (and the swap limit where the
  kernel counts swap), ``blkio.throttle.*_device``.

Only root makes groups. The server's programs are started through :meth:`Group.wrap`: a shell
running as root writes its own pid into the group's ``cgroup.procs`` (v2 lets only a writer of
the common ancestor's ``cgroup.procs`` move a process, so the server account could not), then
drops to the account with ``setpriv`` and becomes the program; everything it forks stays in the
group, and no process can leave it. No file of a group is handed to the server account.

``TEITEN_CGROUPS=off`` makes teiten use none (CPU affinity then, and no memory or I/O limit).
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from teiten.host.procs import RunAs
from teiten.model.errors import UserError

# Where the v1 cpuset hierarchy is mounted ($TEITEN_CPUSET_ROOT, for a machine that mounts it elsewhere).
CPUSET_ROOT = Path(os.environ.get("TEITEN_CPUSET_ROOT", "/sys/fs/cgroup/cpuset"))
V1_ROOT = Path("/sys/fs/cgroup")
PARENT = "teiten"  # v2: the group that holds teiten's groups, under the hierarchy's root


@dataclass(frozen=True)
class IoLimit:
    """Throttling of one block device (``major:minor``), in bytes and operations per second."""

    device: str
    read_bps: int | None = None
    write_bps: int | None = None
    read_iops: int | None = None
    write_iops: int | None = None


@dataclass(frozen=True)
class Limits:
    """What a group holds its processes to; None: not limited."""

    cpus: Sequence[int] | None = None
    memory_bytes: int | None = None
    io: Sequence[IoLimit] = ()

    def controllers(self) -> list[str]:
        """The v2 controllers these limits need."""
        return [name for name, wanted in (("cpuset", self.cpus is not None),
                                          ("memory", self.memory_bytes is not None),
                                          ("io", bool(self.io))) if wanted]


def _v1_name(controller: str) -> str:
    return "blkio" if controller == "io" else controller


@dataclass
class Group:
    """A server's group: the directories that are it (one on v2, one per controller on v1)."""

    version: int
    dirs: list[Path]
    limits: Limits
    mechanism: str = field(init=False)

    def __post_init__(self) -> None:
        self.mechanism = "cgroup-v2" if self.version == 2 else "cpuset-cgroup"

    def wrap(self, argv: list[str], *, run_as: RunAs | None) -> tuple[list[str], None]:
        """``argv`` to be run as root: it joins the group, then runs as ``run_as``."""
        procs_files = [str(d / "cgroup.procs") for d in self.dirs]
        drop = (["setpriv", f"--reuid={run_as.uid}", f"--regid={run_as.gid}", "--clear-groups",
                 "--"] if run_as is not None else [])
        # $0 is "sh"; each file up to "--" is a cgroup.procs to join; the rest is the program.
        script = ('p=$$; while [ "$1" != -- ]; do echo "$p" > "$1" || exit 1; shift; done; '
                  'shift; exec "$@"')
        return ["/bin/sh", "-c", script, "sh", *procs_files, "--", *drop, *argv], None

    def pids(self) -> list[int]:
        """The processes in the group now."""
        try:
            # safe: files of the kernel (/sys, /proc, the cgroup filesystem)
            return [int(p) for p in (self.dirs[0] / "cgroup.procs").read_text().split()]
        except (OSError, ValueError):
            return []

    def usage(self) -> dict[str, float]:
        """What the group's processes have used so far of what it limits: ``read_ios``,
        ``write_ios``, ``read_bytes``, ``write_bytes`` on the limited devices (the I/O they
        issued themselves: v1 does not count the kernel's writeback of their dirty pages, v2
        does) and ``memory_bytes`` now (page cache included)."""
        devices = {io.device for io in self.limits.io}
        out: dict[str, float] = {}
        for d in self.dirs:
            try:
                if self.version == 2:
                    out.update(_v2_usage(d, devices, self.limits))
                elif "blkio" in d.parts:
                    out.update(_v1_io_usage(d, devices))
                elif "memory" in d.parts:
                    # safe: a file of the cgroup filesystem
                    out["memory_bytes"] = float((d / "memory.usage_in_bytes").read_text())
            except (OSError, ValueError):
                continue
        return out

    def close(self) -> None:
        """Remove the group (the kernel refuses while a process is still in it)."""
        for d in self.dirs:
            with contextlib.suppress(OSError):
                # safe: a cgroup of root's (the cgroup filesystem has no links)
                d.rmdir()


def _v2_usage(group: Path, devices: set[str], limits: Limits) -> dict[str, float]:
    out: dict[str, float] = {}
    if limits.io:
        names = {"rios": "read_ios", "wios": "write_ios", "rbytes": "read_bytes", "wbytes": "write_bytes"}
        out = dict.fromkeys(names.values(), 0.0)
        # safe: a file of the cgroup filesystem
        for line in (group / "io.stat").read_text().splitlines():
            device, *fields = line.split()
            if device in devices:
                for field_text in fields:
                    key, _, value = field_text.partition("=")
                    if key in names:
                        out[names[key]] += float(value)
    if limits.memory_bytes is not None:
        # safe: a file of the cgroup filesystem
        out["memory_bytes"] = float((group / "memory.current").read_text())
    return out


def _v1_io_usage(group: Path, devices: set[str]) -> dict[str, float]:
    out = dict.fromkeys(("read_ios", "write_ios", "read_bytes", "write_bytes"), 0.0)
    for name, kind in (("blkio.throttle.io_serviced", "ios"), ("blkio.throttle.io_service_bytes", "bytes")):
        # safe: a file of the cgroup filesystem
        for line in (group / name).read_text().splitlines():
            parts = line.split()
            if len(parts) == 3 and parts[0] in devices and parts[1] in ("Read", "Write"):
                out[f"{parts[1].lower()}_{kind}"] += float(parts[2])
    return out


def block_device(path: Path) -> Path | None:
    """The kernel's directory of the block device that holds ``path`` (``/sys/devices/.../vda``
    or ``.../vda/vda1``, a partition), or None when none does (tmpfs, an overlay)."""
    try:
        dev = os.stat(path).st_dev
        # safe: files of the kernel
        found = Path(f"/sys/dev/block/{os.major(dev)}:{os.minor(dev)}").resolve()
    except OSError:
        return None
    return found if found.exists() else None


def disk_of(path: Path) -> str | None:
    """The whole disk (``major:minor``) that holds ``path``, as a limit names it (a partition's
    disk); None when no block device does."""
    found = block_device(path)
    if found is None:
        return None
    try:
        # safe: files of the kernel
        return ((found.parent if (found / "partition").exists() else found) / "dev").read_text().strip()
    except OSError:
        return None


def group_name(label: str) -> str:
    return "teiten-" + re.sub(r"[^A-Za-z0-9_.-]", "_", label)


def disabled() -> bool:
    return os.environ.get("TEITEN_CGROUPS", "").lower() in ("off", "0", "no")


def v2_root() -> Path | None:
    """Where the unified hierarchy is mounted, when its controllers can be used here (a hybrid
    machine mounts one with no controller: they are all v1's)."""
    try:
        # safe: files of the kernel
        mounts = Path("/proc/self/mountinfo").read_text().splitlines()
    except OSError:
        return None
    for line in mounts:
        fields = line.split(" - ", 1)
        if len(fields) == 2 and fields[1].split()[0] == "cgroup2":
            root = Path(fields[0].split()[4])
            try:
                # safe: files of the kernel
                if (root / "cgroup.controllers").read_text().split():
                    return root
            except OSError:
                continue
    return None


def _own_v1(controller: str) -> Path | None:
    """teiten's own v1 group of ``controller``, when it can create children there."""
    try:
        # safe: files of the kernel
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return None
    name = _v1_name(controller)
    for line in lines:
        _, controllers, path = line.split(":", 2)
        if name in controllers.split(","):
            mount = CPUSET_ROOT if name == "cpuset" else V1_ROOT / name
            base = mount / path.lstrip("/")
            probe = "cpuset.cpus" if name == "cpuset" else "cgroup.procs"
            if (base / probe).is_file() and os.access(base, os.W_OK):
                return base
    return None


def mechanism(limits: Limits) -> str | None:
    """What :func:`create` would use for ``limits`` here: "cgroup-v2", "cpuset-cgroup" (v1), or
    None (not root, TEITEN_CGROUPS=off, or the controllers are not there)."""
    if disabled() or os.geteuid() != 0:
        return None
    root = v2_root()
    if root is not None:
        # safe: files of the kernel
        available = set((root / "cgroup.controllers").read_text().split())
        if set(limits.controllers()) <= available:
            return "cgroup-v2"
    if all(_own_v1(c) is not None for c in limits.controllers()):
        return "cpuset-cgroup"
    return None


def create(label: str, limits: Limits) -> Group | None:
    """A new group named after ``label`` holding ``limits``, or None where no group can be
    made (the caller then uses CPU affinity, and refuses a memory or I/O limit). An error
    writing a limit the kernel refuses (a CPU it lacks, a device it does not know) is a
    :class:`UserError` that says which."""
    kind = mechanism(limits)
    if kind is None:
        return None
    made: list[Path] = []
    group = Group(2 if kind == "cgroup-v2" else 1, made, limits)
    try:
        if kind == "cgroup-v2":
            made.append(_make_v2(label, limits))
        else:
            for controller in limits.controllers():
                base = _own_v1(controller)
                assert base is not None
                made.append(base / group_name(label))
                # safe: a cgroup of root's: the cgroup filesystem has no links
                made[-1].mkdir(exist_ok=True)
                _limit_v1(controller, base, made[-1], limits)
    except OSError as exc:
        group.close()
        if limits.memory_bytes is None and not limits.io:
            return None  # CPUs alone: affinity does
        raise UserError(f"cannot hold {label} to its limits with a cgroup: {exc}") from exc
    return group


def _write(path: Path, text: str) -> None:
    # safe: a file of the cgroup filesystem (no links there), in a group of root's
    path.write_text(text)


def _make_v2(label: str, limits: Limits) -> Path:
    root = v2_root()
    assert root is not None
    wanted = limits.controllers()
    parent = root / PARENT
    # safe: cgroups of root's: the cgroup filesystem has no links
    parent.mkdir(exist_ok=True)
    for level in (root, parent):
        # safe: files of the kernel
        enabled = set((level / "cgroup.subtree_control").read_text().split())
        missing = [c for c in wanted if c not in enabled]
        if missing:
            _write(level / "cgroup.subtree_control", " ".join(f"+{c}" for c in missing))
    group = parent / group_name(label)
    # safe: a cgroup of root's
    group.mkdir(exist_ok=True)
    if limits.cpus is not None:
        _write(group / "cpuset.cpus", ",".join(str(c) for c in sorted(limits.cpus)))
    if limits.memory_bytes is not None:
        _write(group / "memory.max", str(limits.memory_bytes))
        if (group / "memory.swap.max").exists():
            _write(group / "memory.swap.max", "0")
    for io in limits.io:
        parts = [f"{key}={value}" for key, value in (("rbps", io.read_bps), ("wbps", io.write_bps),
                                                     ("riops", io.read_iops), ("wiops", io.write_iops))
                 if value is not None]
        _write(group / "io.max", f"{io.device} {' '.join(parts)}")
    return group


def _limit_v1(controller: str, base: Path, group: Path, limits: Limits) -> None:
    if controller == "cpuset":
        assert limits.cpus is not None
        _write(group / "cpuset.cpus", ",".join(str(c) for c in sorted(limits.cpus)))
        # safe: files of the kernel
        _write(group / "cpuset.mems", (base / "cpuset.mems").read_text())
    elif controller == "memory":
        _write(group / "memory.limit_in_bytes", str(limits.memory_bytes))
        if (group / "memory.memsw.limit_in_bytes").exists():  # swap is counted: none allowed
            _write(group / "memory.memsw.limit_in_bytes", str(limits.memory_bytes))
    else:
        for io in limits.io:
            for name, value in (("read_bps", io.read_bps), ("write_bps", io.write_bps),
                                ("read_iops", io.read_iops), ("write_iops", io.write_iops)):
                if value is not None:
                    _write(group / f"blkio.throttle.{name}_device", f"{io.device} {value}")


def groups(label_prefix: str) -> list[Path]:
    """teiten's groups whose names start with ``label_prefix`` (every hierarchy's)."""
    bases = [root / PARENT for root in [v2_root()] if root is not None]
    bases += [b for b in (_own_v1(c) for c in ("cpuset", "memory", "io")) if b is not None]
    # safe: cgroups of root's
    return [group for base in bases for group in base.glob(group_name(label_prefix) + "*")]


def remove_stale(label_prefix: str) -> list[str]:
    """Remove the empty groups a killed run left, whose names start with ``label_prefix``."""
    removed: list[str] = []
    for group in groups(label_prefix):
        with contextlib.suppress(OSError):
            # safe: a cgroup of root's (the cgroup filesystem has no links)
            group.rmdir()
            removed.append(group.name)
    return removed


def describe(kind: str | None) -> str:
    """How a server was held to its CPUs, for messages."""
    return {"cgroup-v2": "a cgroup v2 cpuset", "cpuset-cgroup": "a cgroup v1 cpuset",
            "affinity": "CPU affinity (taskset)"}.get(kind or "affinity", str(kind))
