"""A snapshot and a restore leave nothing for the kernel to write back later (issue 24: nothing
may run beside a trial's measured window). Without syncfs a copy's data stays dirty in the page
cache for up to 30 s, and is written back while the next trial is measured. On this machine's
disk (the test cache, in the checkout), with 192 MB of data: after take and after restore, the
machine's dirty pages (/proc/meminfo) are far below the data copied."""

from __future__ import annotations

import os
import uuid
from pathlib import Path

import pytest
from tests.conftest import TEST_HOME

from teiten.host import paths
from teiten.servers import snapshot

# alone: it reads the machine's dirty page cache (/proc/meminfo).
pytestmark = pytest.mark.alone

SIZE = 192 << 20


def _dirty() -> int:
    """Bytes of the machine's page cache waiting to be written back (Dirty + Writeback)."""
    found = {}
    for line in Path("/proc/meminfo").read_text().splitlines():
        name, _, value = line.partition(":")
        found[name] = int(value.split()[0]) << 10
    return found["Dirty"] + found["Writeback"]


def _write(path: Path, seed: int) -> None:
    block = os.urandom(1 << 20)
    with open(path, "wb") as f:
        for i in range(SIZE >> 20):
            f.write(bytes([seed, i & 0xFF]) + block[2:])


def test_take_and_restore_write_their_copy_back_before_they_return() -> None:
    root = paths.make_owned(TEST_HOME / "work" / f"settle-{uuid.uuid4().hex[:8]}", "settle test")
    try:
        data, saved = root / "data", root / "snapshot"
        data.mkdir()
        _write(data / "16384", 1)
        (data / "PG_VERSION").write_text("17\n")
        snapshot.settle(data)
        before = _dirty()  # what the rest of the machine keeps dirty meanwhile
        known = snapshot.take(data, saved)
        assert _dirty() < before + SIZE // 2, (
            f"{(_dirty() - before) >> 20} MB more dirty after a snapshot of {SIZE >> 20} MB")
        _write(data / "16384", 2)  # a trial changed the table
        snapshot.settle(data)
        before = _dirty()
        _, copied = snapshot.restore(saved, data, known)
        assert copied >= SIZE
        assert _dirty() < before + SIZE // 2, (
            f"{(_dirty() - before) >> 20} MB more dirty after restoring {copied >> 20} MB")
        assert (data / "16384").read_bytes()[:2] == bytes([1, 0])
    finally:
        paths.remove_owned(root)
