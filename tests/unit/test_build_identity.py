"""What identifies a source build: its key (installs.source_key.build_key: a commit's hash
makes two installs of two commits, and a build without one keeps the key earlier teitens
gave it), and the "build" object a study stores for each server (record.build_of)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from teiten.installs import Install
from teiten.installs.manifest import METADATA
from teiten.installs.source_key import build_key
from teiten.run.record import build_of

ARGS = ["--without-icu"]
COMMIT = "3540e3bab18d2562017732a60db42126f17ca69a"


def test_a_build_without_a_commit_keeps_its_key() -> None:
    before = {"source": "d" * 64, "configure": ARGS, "preset": None, "compiler": "gcc 12"}
    assert build_key("d" * 64, ARGS, None, "gcc 12") == \
        hashlib.sha256(json.dumps(before, sort_keys=True).encode()).hexdigest()


def test_two_commits_of_one_tree_are_two_builds() -> None:
    one = build_key("d" * 64, ARGS, None, "gcc 12", COMMIT)
    other = build_key("d" * 64, ARGS, None, "gcc 12", "f" * 40)
    assert len({one, other, build_key("d" * 64, ARGS, None, "gcc 12")}) == 3


def _install(tmp_path: Path, origin: str, info: dict[str, object]) -> Install:
    (tmp_path / "bin").mkdir()
    (tmp_path / METADATA).write_text(json.dumps(info))
    return Install(bindir=tmp_path / "bin", version="15.18", major=15, origin=origin)


def test_a_build_of_a_commit_stores_its_key_and_commit(tmp_path: Path) -> None:
    git = {"repo": "/src/pg", "ref": "main", "commit": COMMIT, "subject": "Import",
           "committed_at": "2026-01-01T12:00:00+09:00", "position": 1, "tree": "e" * 40}
    inst = _install(tmp_path, "source", {"origin": "source", "key": "k" * 64, "git": git})
    assert build_of(inst) == {"key": "k" * 64, "git": git}


def test_a_source_directory_stores_its_key_alone(tmp_path: Path) -> None:
    inst = _install(tmp_path, "source", {"origin": "source", "key": "k" * 64})
    assert build_of(inst) == {"key": "k" * 64}


def test_other_installs_store_no_build(tmp_path: Path) -> None:
    assert build_of(_install(tmp_path, "pypi", {"origin": "pypi", "key": "x"})) is None
    assert build_of(None) is None
