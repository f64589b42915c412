"""A server's programs leave the page cache before every start (teiten.host.oscache.evict_programs),
so that where they land in memory is drawn again for every trial: checked with the kernel's own
count of cached pages (fincore), on a copy of a real install's programs that no running server
maps."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from teiten.host import oscache
from teiten.installs import Install


def _resident(files: list[Path]) -> int:
    """Bytes of ``files`` in the page cache, as the kernel counts them (fincore, util-linux)."""
    done = subprocess.run(["fincore", "--bytes", "--noheadings", "--raw", "--output", "RES",
                           *map(str, files)], capture_output=True, text=True, check=True)
    return sum(int(n) for n in done.stdout.split())


def test_an_installs_programs_and_libraries_leave_the_page_cache(pg17: Install, tmp_path: Path) -> None:
    bindir, libdir = tmp_path / "pg" / "bin", tmp_path / "pg" / "lib"
    bindir.mkdir(parents=True)
    libdir.mkdir()
    copied = [Path(shutil.copy2(pg17.binary("postgres"), bindir)),
              Path(shutil.copy2(pg17.binary("pg_ctl"), bindir))]
    (bindir / "postmaster").symlink_to("postgres")  # a link is passed over, never followed
    plpgsql = next(pg17.bindir.parent.glob("lib/**/plpgsql.so"), None)
    if plpgsql is not None:
        copied.append(Path(shutil.copy2(plpgsql, libdir)))
    for path in copied:
        with path.open("rb+") as f:
            os.fsync(f.fileno())  # clean, as an install's files are: dirty pages are not dropped
        path.read_bytes()  # in the page cache now
    assert _resident(copied) > 0

    done = oscache.evict_programs(bindir)

    assert done == {"names": len(copied) + 1, "not_evicted_files": 0}
    assert _resident(copied) == 0


def test_an_install_that_cannot_be_walked_is_said_and_not_fatal(tmp_path: Path) -> None:
    done = oscache.evict_programs(tmp_path / "gone" / "bin")
    assert done == {"names": 0, "not_evicted_files": 0}
