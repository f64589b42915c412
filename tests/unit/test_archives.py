"""teiten.installs.archives: a tarball unpacks the same under tarfile's "data" filter (Python 3.11.4+)
and under teiten's own rules where the filter is missing (Debian 12's python3, 3.11.2): the same
files, modes and links, and the same members refused. Real tarballs, real files."""

from __future__ import annotations

import io
import json
import os
import shutil
import stat
import subprocess
import tarfile
from collections.abc import Callable
from pathlib import Path

import pytest
from tests.requirements import missing

from teiten.installs import archives

ROOT = Path(__file__).resolve().parents[2]
DEBIAN_PYTHON = Path("/usr/bin/python3")


def _member(name: str, kind: bytes = tarfile.REGTYPE, *, mode: int = 0o644, data: bytes = b"",
            link: str = "") -> tuple[tarfile.TarInfo, bytes]:
    info = tarfile.TarInfo(name)
    info.type, info.mode, info.linkname, info.size = kind, mode, link, len(data)
    info.uid, info.gid, info.uname, info.gname = 4242, 4242, "nobody-here", "nogroup-here"
    info.mtime = 1_700_000_000
    return info, data


def _tarball(path: Path, members: list[tuple[tarfile.TarInfo, bytes]]) -> Path:
    with tarfile.open(path, "w:gz") as tar:
        for info, data in members:
            tar.addfile(info, io.BytesIO(data) if info.isreg() else None)
    return path


GOOD = [
    _member("pg/", tarfile.DIRTYPE, mode=0o777),
    _member("pg/bin/", tarfile.DIRTYPE, mode=0o700),
    _member("pg/bin/postgres", mode=0o4775, data=b"#!/bin/sh\n"),  # setuid, group-writable
    _member("pg/share/", tarfile.DIRTYPE, mode=0o755),
    _member("pg/share/readonly.txt", mode=0o444, data=b"text"),
    _member("pg/share/odd.txt", mode=0o071, data=b"odd"),  # exec for others, not the owner
    _member("pg/bin/pg_ctl", tarfile.SYMTYPE, link="postgres"),
    _member("pg/lib", tarfile.SYMTYPE, link="share"),
    _member("pg/bin/copy", tarfile.LNKTYPE, mode=0o4775, link="pg/bin/postgres"),
    _member("/pg/absolute.txt", data=b"abs"),  # extracted without its leading slash
]
BAD = {
    "up": _member("pg/../../escape.txt", data=b"x"),
    "symlink-out": _member("pg/out", tarfile.SYMTYPE, link="../../etc"),
    "symlink-absolute": _member("pg/abs", tarfile.SYMTYPE, link="/etc/passwd"),
    "hardlink-out": _member("pg/hard", tarfile.LNKTYPE, link="../outside"),
    "fifo": _member("pg/fifo", tarfile.FIFOTYPE),
    "device": _member("pg/dev", tarfile.CHRTYPE),
}


def _tree(root: Path) -> dict[str, str]:
    """Every entry under ``root``: its kind, mode and content or link target."""
    out = {}
    for path in sorted(root.rglob("*")):
        st = path.lstat()
        rel = str(path.relative_to(root))
        if stat.S_ISLNK(st.st_mode):
            out[rel] = f"link -> {os.readlink(path)}"
        elif stat.S_ISDIR(st.st_mode):
            out[rel] = f"dir {stat.S_IMODE(st.st_mode):o}"
        else:
            out[rel] = (f"file {stat.S_IMODE(st.st_mode):o} {path.read_bytes()!r} "
                        f"owner {st.st_uid == os.getuid()} mtime {int(st.st_mtime)}")
    return out


def _extract(tarball: Path, dest: Path, stream: bool) -> None:
    dest.mkdir()
    with tarfile.open(tarball, "r|gz" if stream else "r:gz") as tar:
        archives.extract_all(tar, dest)


def _without_filter(monkeypatch: pytest.MonkeyPatch) -> None:
    """This Python as Debian 12's 3.11.2 is: no tarfile.data_filter."""
    if hasattr(tarfile, "data_filter"):
        monkeypatch.delattr(tarfile, "data_filter")


@pytest.mark.parametrize("stream", [False, True], ids=["file", "stream"])
def test_unpacks_alike_with_and_without_the_data_filter(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, stream: bool) -> None:
    tarball = _tarball(tmp_path / "good.tar.gz", GOOD)
    with monkeypatch.context() as m:
        _without_filter(m)
        _extract(tarball, tmp_path / "by-hand", stream)
    by_hand = _tree(tmp_path / "by-hand")
    if hasattr(tarfile, "data_filter"):  # a Python from 3.11.4 on: the filter's own result
        _extract(tarball, tmp_path / "filtered", stream)
        assert by_hand == _tree(tmp_path / "filtered")
    assert by_hand["pg/bin/postgres"].startswith("file 755 ")  # no setuid, no group write
    assert by_hand["pg/share/readonly.txt"].startswith("file 644 ")
    assert by_hand["pg/share/odd.txt"].startswith("file 640 ")  # 071: exec bits dropped, owner rw
    assert by_hand["pg/absolute.txt"].startswith("file 644 b'abs' owner True mtime 1700000000")
    assert by_hand["pg/bin/pg_ctl"] == "link -> postgres"


@pytest.mark.parametrize("case", sorted(BAD))
def test_refuses_what_the_data_filter_refuses(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, case: str) -> None:
    tarball = _tarball(tmp_path / "bad.tar.gz", [GOOD[0], BAD[case]])
    attempts: list[Callable[[], None]] = []
    if hasattr(tarfile, "data_filter"):
        attempts.append(lambda: _extract(tarball, tmp_path / "filtered", False))

    def by_hand() -> None:
        with monkeypatch.context() as m:
            _without_filter(m)
            _extract(tarball, tmp_path / "by-hand", False)

    attempts.append(by_hand)
    for attempt in attempts:
        with pytest.raises(tarfile.TarError):
            attempt()
    assert not (tmp_path.parent / "escape.txt").exists() and not (tmp_path / "outside").exists()


def test_debian_12s_own_python_unpacks_it_as_the_data_filter_does(tmp_path: Path) -> None:
    """The real interpreter of the README's promise: /usr/bin/python3 (3.11.2 on Debian 12,
    without tarfile.data_filter) unpacks the tarball with teiten.installs.archives into the same tree
    as this Python, and refuses a member that climbs out."""
    if not DEBIAN_PYTHON.exists():
        missing("no /usr/bin/python3 (Debian's own python3 package)")
    tarball = _tarball(tmp_path / "good.tar.gz", GOOD)
    bad = _tarball(tmp_path / "bad.tar.gz", [GOOD[0], BAD["up"]])
    script = ("import sys, tarfile; sys.path.insert(0, sys.argv[1]); from teiten.installs import archives\n"
              "with tarfile.open(sys.argv[2], 'r|gz') as tar:\n"
              "    try:\n        archives.extract_all(tar, sys.argv[3])\n"
              "    except tarfile.TarError as exc:\n        sys.exit(f'refused: {exc}')\n"
              "print(hasattr(tarfile, 'data_filter'))")
    (tmp_path / "debian").mkdir()
    done = subprocess.run([str(DEBIAN_PYTHON), "-I", "-c", script, str(ROOT / "src"), str(tarball),
                           str(tmp_path / "debian")], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    _extract(tarball, tmp_path / "here", True)
    assert _tree(tmp_path / "debian") == _tree(tmp_path / "here")
    (tmp_path / "debian-bad").mkdir()
    refused = subprocess.run([str(DEBIAN_PYTHON), "-I", "-c", script, str(ROOT / "src"), str(bad),
                              str(tmp_path / "debian-bad")], capture_output=True, text=True, timeout=60)
    assert refused.returncode == 1 and refused.stderr.startswith("refused: "), refused.stderr
    print(json.dumps({"debian python has data_filter": done.stdout.strip()}))
    shutil.rmtree(tmp_path / "debian")
