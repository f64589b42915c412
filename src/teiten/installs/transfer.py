"""A download read whole, saying how far it is when it takes a while (issue 56, item 2: no silent
phase longer than 5 seconds): after ``QUIET_S`` without its end, a line on stderr with the bytes
read, of how many, and the rate; on a terminal the line is drawn again in place (every
``REDRAW_S``), in a log or a pipe a new line every ``EVERY_S`` (teiten.host.ticker's Line); and,
where it said anything, a last line with the size and the time it took. A download done sooner
says nothing."""

from __future__ import annotations

import http.client
import sys
import time
from collections.abc import Callable
from typing import IO, TextIO

from teiten.host.ticker import EVERY_S, QUIET_S, REDRAW_S, Line

__all__ = ["EVERY_S", "QUIET_S", "REDRAW_S", "read_all"]

BLOCK = 1 << 16


def _size(n: float) -> str:
    return f"{n / 1e6:.1f} MB" if n >= 1e6 else f"{n / 1e3:.0f} kB" if n >= 1e3 else f"{n:.0f} B"


def read_all(resp: IO[bytes], what: str, *, stream: TextIO | None = None,
             clock: Callable[[], float] = time.monotonic) -> bytes:
    """The body of ``resp`` (an HTTP response), ``what`` named in the lines it says; a body cut
    short of its Content-Length raises http.client.IncompleteRead, as ``resp.read()`` does."""
    line = Line(stream if stream is not None else sys.stderr)
    length = getattr(resp, "length", None)
    total = length if isinstance(length, int) and length > 0 else None
    chunks: list[bytes] = []
    got = 0
    start = clock()
    said: float | None = None
    read = getattr(resp, "read1", resp.read)  # what has come, not a whole block's waiting
    while block := read(BLOCK):
        chunks.append(block)
        got += len(block)
        now = clock()
        if now - start < QUIET_S or (said is not None and now - said < line.every):
            continue
        of = f" of {_size(total)} ({100 * got // total}%)" if total else ""
        line.draw(f"teiten: downloading {what}: {_size(got)}{of}, {_size(got / (now - start))}/s")
        said = now
    if total is not None and got < total:  # the connection closed early, as read() would say
        raise http.client.IncompleteRead(b"".join(chunks), total - got)
    if said is not None:
        took = max(clock() - start, 1e-9)
        line.draw(f"teiten: downloaded {what}: {_size(got)} in {took:.1f} s ({_size(got / took)}/s)",
                  end="\n")
    return b"".join(chunks)

