"""`teiten fetch-source` when apt cannot download a source (issue 54, item 12: "15.20 could not
be downloaded" said no reason). The mirror is a real one on loopback: a flat apt repository
served over HTTP on 127.0.0.1 that lists postgresql-15 15.99-1 and 15.98-1 but holds none of
their files, read by the real apt-get through an APT_CONFIG of the test's own (its own sources,
lists and cache: the machine's apt is not touched). With the mirror up, each version fails with
the HTTP status and the URL apt tried; with the mirror gone, with apt's network error; both exit
1, one line each, and the last line names every reason. A release apt does not list is bad
input: exit 2, one line naming the releases it does list, and nothing downloaded.
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from tests.conftest import run_cli

pytestmark = pytest.mark.requires(None if shutil.which("apt-get") else "fetch-source needs apt-get")

EMPTY_MD5, EMPTY_SHA256 = hashlib.md5(b"").hexdigest(), hashlib.sha256(b"").hexdigest()  # noqa: S324


def _stanza(version: str) -> str:
    upstream = version.rsplit("-", 1)[0]
    files = [f"postgresql-15_{version}.dsc", f"postgresql-15_{upstream}.orig.tar.bz2"]
    return (f"Package: postgresql-15\nBinary: postgresql-15\nVersion: {version}\n"
            "Maintainer: Nobody <nobody@example.org>\nArchitecture: any\nFormat: 3.0 (quilt)\n"
            "Directory: .\nFiles:\n" + "".join(f" {EMPTY_MD5} 0 {f}\n" for f in files)
            + "Checksums-Sha256:\n" + "".join(f" {EMPTY_SHA256} 0 {f}\n" for f in files) + "\n")


class _Quiet(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - the base's name
        pass


@dataclass
class Mirror:
    url: str
    apt_config: Path
    server: ThreadingHTTPServer

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def mirror(tmp_path: Path) -> Iterator[Mirror]:
    repo = tmp_path / "repo"
    repo.mkdir()
    sources = "".join(_stanza(v) for v in ("15.99-1", "15.98-1")).encode()
    (repo / "Sources").write_bytes(sources)
    (repo / "Release").write_text(
        "Origin: teiten-test\nLabel: teiten-test\nSuite: test\nCodename: test\n"
        "Date: Wed, 01 Jan 2025 00:00:00 UTC\n"
        f"SHA256:\n {hashlib.sha256(sources).hexdigest()} {len(sources)} Sources\n")
    server = ThreadingHTTPServer(("127.0.0.1", 0), partial(_Quiet, directory=str(repo)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/"
    apt = tmp_path / "apt"
    for d in ("lists/partial", "cache/archives/partial", "parts"):
        (apt / d).mkdir(parents=True)
    (apt / "sources.list").write_text(f"deb-src [trusted=yes] {url} ./\n")
    config = apt / "apt.conf"
    config.write_text("\n".join([
        f'Dir::Etc::SourceList "{apt / "sources.list"}";',
        f'Dir::Etc::SourceParts "{apt / "parts"}";',
        f'Dir::State::Lists "{apt / "lists"}";',
        f'Dir::Cache "{apt / "cache"}";',
        'APT::Sandbox::User "root";',
        'Acquire::Languages "none";', ""]))
    env = {"APT_CONFIG": str(config), "PATH": "/usr/sbin:/usr/bin:/sbin:/bin"}
    done = subprocess.run(["apt-get", "update", "-qq"], env=env, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    found = subprocess.run(["apt-cache", "showsrc", "postgresql-15"], env=env,
                           capture_output=True, text=True, timeout=60).stdout
    assert "Version: 15.99-1" in found and "Version: 15.98-1" in found, found
    m = Mirror(url, config, server)
    yield m
    m.stop()


def _fetch(mirror: Mirror, what: str, dest: Path) -> subprocess.CompletedProcess[str]:
    return run_cli("fetch-source", what, str(dest), env={"APT_CONFIG": str(mirror.apt_config)},
                   timeout=300)


def _said(stderr: str, needle: str) -> list[str]:
    return [line for line in stderr.splitlines() if needle in line]


def test_a_file_the_mirror_lacks_is_said_with_its_http_status_and_url(mirror: Mirror,
                                                                       tmp_path: Path) -> None:
    done = _fetch(mirror, "15", tmp_path / "src")
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr and done.stdout == ""
    assert _said(done.stderr, "could not be downloaded") == [
        "teiten: postgresql-15 15.99-1 could not be downloaded: 404 File not found "
        f"({mirror.url}./postgresql-15_15.99-1.dsc); trying an older one",
        "teiten: postgresql-15 15.98-1 could not be downloaded: 404 File not found "
        f"({mirror.url}./postgresql-15_15.98-1.dsc)"]
    last = done.stderr.strip().splitlines()[-1]
    assert last == ("teiten: error: apt-get source postgresql-15 could download no version: 15.99-1: 404 "
                    f"File not found ({mirror.url}./postgresql-15_15.99-1.dsc); 15.98-1: 404 File "
                    f"not found ({mirror.url}./postgresql-15_15.98-1.dsc)")
    assert [p.name for p in (tmp_path / "src").iterdir()] == []  # nothing half-downloaded


def test_a_mirror_that_does_not_answer_is_said_with_the_network_error(mirror: Mirror,
                                                                       tmp_path: Path) -> None:
    mirror.stop()
    done = _fetch(mirror, "15.99", tmp_path / "src")
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr
    port = mirror.url.rsplit(":", 1)[1].rstrip("/")
    assert _said(done.stderr, "could not be downloaded") == [
        f"teiten: postgresql-15 15.99-1 could not be downloaded: Could not connect to "
        f"127.0.0.1:{port} (127.0.0.1). - connect (111: Connection refused) "
        f"({mirror.url}./postgresql-15_15.99-1.dsc)"]  # the release asked for, and no other


def test_a_release_apt_does_not_list_is_bad_input(mirror: Mirror, tmp_path: Path) -> None:
    done = _fetch(mirror, "15.97", tmp_path / "src")
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip().splitlines() == [
        "teiten: error: apt knows no source of PostgreSQL 15.97: its postgresql-15 has 15.99, 15.98; "
        "give one of them, or 15 for the newest it can download"]
    assert done.stdout == ""
