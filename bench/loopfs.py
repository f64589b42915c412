"""A loop-mounted XFS made with reflink=1, for the reflink-clone restore (tests and
bench.snapshot). Needs root and mkfs.xfs (xfsprogs, which make system installs)."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


def why_not() -> str | None:
    """What this machine lacks to mount one (None: nothing)."""
    if os.geteuid() != 0:
        return "mounting a loop-mounted XFS needs root"
    if shutil.which("mkfs.xfs") is None:
        return "mkfs.xfs is missing (apt-get install xfsprogs; make system installs it)"
    return None


@contextmanager
def reflink_xfs(where: Path, size_mb: int) -> Iterator[Path]:
    """An XFS of ``size_mb`` MiB with reflinks, mounted at ``where/mnt`` (its image is
    ``where/xfs.img``, a sparse file); unmounted and removed afterwards."""
    image, mount = where / "xfs.img", where / "mnt"
    mount.mkdir(parents=True)
    with open(image, "wb") as f:
        f.truncate(size_mb << 20)
    try:
        subprocess.run(["mkfs.xfs", "-q", "-m", "reflink=1", str(image)], check=True, timeout=120)
        subprocess.run(["mount", "-o", "loop", str(image), str(mount)], check=True, timeout=60)
        try:
            os.chmod(mount, 0o755)
            yield mount
        finally:
            done = subprocess.run(["umount", str(mount)], capture_output=True, text=True,
                                  timeout=120)
            if done.returncode != 0:  # still open somewhere: detach it all the same, then say so
                subprocess.run(["umount", "-l", str(mount)], check=True, timeout=60)
                raise RuntimeError(f"the XFS at {mount} was still in use: {done.stderr.strip()}")
    finally:
        image.unlink(missing_ok=True)
        mount.rmdir()
