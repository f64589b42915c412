"""A download read whole, saying how far it is when it takes a while (issue 56, item 2: no silent
phase longer than 5 seconds): after ``QUIET_S`` without its end, a line on stderr with the bytes
read, of how many, and the rate; on a terminal the line is drawn again in place (every
``REDRAW_S``), in a log or a pipe a new line every ``EVERY_S``; and, where it said anything, a
last line with the size and the time it took. A download done sooner says nothing."""

from __future__ import annotations

import http.client
import sys
import time
from collections.abc import Callable
from typing import IO, TextIO

QUIET_S = 2.0
EVERY_S = 5.0
REDRAW_S = 0.25
BLOCK = 1 << 16


def _size(n: float) -> str:
    return f"{n / 1e6:.1f} MB" if n >= 1e6 else f"{n / 1e3:.0f} kB" if n >= 1e3 else f"{n:.0f} B"


def read_all(resp: IO[bytes], what: str, *, stream: TextIO | None = None,
             clock: Callable[[], float] = time.monotonic) -> bytes:
    """The body of ``resp`` (an HTTP response), ``what`` named in the lines it says; a body cut
    short of its Content-Length raises http.client.IncompleteRead, as ``resp.read()`` does."""
    out = stream if stream is not None else sys.stderr
    # The redraw's own control characters go to the stream under one that shows them escaped
    # (the CLI's, teiten.cli.terminal, which keeps it as ``stream``); the text, which names a
    # registry's file, goes through it.
    raw: TextIO = getattr(out, "stream", out)
    tty = out.isatty()
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
        if now - start < QUIET_S or (said is not None and now - said < (REDRAW_S if tty else EVERY_S)):
            continue
        of = f" of {_size(total)} ({100 * got // total}%)" if total else ""
        line = f"teiten: downloading {what}: {_size(got)}{of}, {_size(got / (now - start))}/s"
        _say(out, raw, line, tty, end="")
        said = now
    if total is not None and got < total:  # the connection closed early, as read() would say
        raise http.client.IncompleteRead(b"".join(chunks), total - got)
    if said is not None:
        took = max(clock() - start, 1e-9)
        line = f"teiten: downloaded {what}: {_size(got)} in {took:.1f} s ({_size(got / took)}/s)"
        _say(out, raw, line, tty, end="\n")
    return b"".join(chunks)


def _say(out: TextIO, raw: TextIO, line: str, tty: bool, *, end: str) -> None:
    """``line`` drawn over the last on a terminal, else a line of its own."""
    if tty:
        raw.write("\r")
        out.write(line)
        raw.write(f"\x1b[K{end}")
    else:
        out.write(f"{line}\n")
    out.flush()
    raw.flush()
