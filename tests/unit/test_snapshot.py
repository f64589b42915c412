"""Restoring a snapshot gives back the same tree, whatever happened to the copy."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from teiten.servers import snapshot


def _tree(root: Path) -> dict[str, tuple[str, bytes | str, int]]:
    out: dict[str, tuple[str, bytes | str, int]] = {}
    for dirpath, dirs, files in os.walk(root):
        for name in dirs + files:
            path = Path(dirpath) / name
            rel = str(path.relative_to(root))
            st = path.lstat()
            if path.is_symlink():
                out[rel] = ("link", os.readlink(path), 0)
            elif path.is_dir():
                out[rel] = ("dir", b"", stat.S_IMODE(st.st_mode))
            else:
                out[rel] = ("file", path.read_bytes(), stat.S_IMODE(st.st_mode))
    return out


def _make(root: Path) -> None:
    (root / "base" / "1").mkdir(parents=True)
    (root / "base" / "1" / "16384").write_bytes(b"heap" * 5000)
    (root / "base" / "1" / "16385").write_bytes(b"index" * 100)
    (root / "pg_wal").mkdir()
    (root / "pg_wal" / "000000010000000000000001").write_bytes(b"\0" * 4096)
    (root / "PG_VERSION").write_text("17\n")
    (root / "global").mkdir()
    (root / "global" / "1262").write_bytes(b"untouched" * 1000)
    (root / "postmaster.opts").write_text("x")
    (root / "postmaster.opts").chmod(0o600)
    (root / "link").symlink_to("base")


def test_restore_undoes_every_kind_of_change(tmp_path: Path) -> None:
    data, snap = tmp_path / "data", tmp_path / "snap"
    data.mkdir()
    _make(data)
    known = snapshot.take(data, snap)
    original = _tree(data)
    # What a server does to a data directory between two trials, and more.
    with (data / "base" / "1" / "16384").open("r+b") as f:
        f.seek(100)
        f.write(b"XXXX")  # same size, new content
    (data / "base" / "1" / "16385").write_bytes(b"shorter")
    (data / "base" / "1" / "16386").write_bytes(b"new relation")
    (data / "pg_wal" / "000000010000000000000001").rename(
        data / "pg_wal" / "000000010000000000000002")  # WAL recycling
    (data / "PG_VERSION").chmod(0o644)
    (data / "postmaster.opts").unlink()
    (data / "newdir").mkdir()
    (data / "link").unlink()
    (data / "link").symlink_to("pg_wal")
    known, copied = snapshot.restore(snap, data, known)
    assert _tree(data) == original
    assert copied == sum(len(v[1]) for v in original.values() if v[0] == "file") - 9000
    # A second restore right away copies nothing: nothing changed.
    known, copied = snapshot.restore(snap, data, known)
    assert copied == 0
    assert _tree(data) == original


def test_untouched_files_are_not_copied_again(tmp_path: Path) -> None:
    data, snap = tmp_path / "data", tmp_path / "snap"
    data.mkdir()
    _make(data)
    known = snapshot.take(data, snap)
    (data / "PG_VERSION").write_text("18\n")
    known, copied = snapshot.restore(snap, data, known)
    assert copied == len("17\n")
    assert (data / "PG_VERSION").read_text() == "17\n"
