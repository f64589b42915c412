"""What reaches the terminal is shown, never obeyed: control characters in names teiten does
not control (a file's, a setting's value) are written as \\xNN. Light on purpose: the command
line imports it before it knows which command runs (``teiten --help`` imports nothing else)."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from typing import TextIO

# Every C0 control but newline and tab, DEL and the C1 controls, shown as \\xNN.
_CONTROLS = {c: f"\\x{c:02x}" for c in [*range(0x20), 0x7F, *range(0x80, 0xA0)] if c not in (9, 10)}


def visible(text: str, *, lines: bool = True) -> str:
    """``text`` with its control characters shown rather than obeyed (newlines too, unless
    ``lines``)."""
    shown = text.translate(_CONTROLS)
    return shown if lines else shown.replace("\n", "\\n")


class _Visible:
    """A text stream that shows the control characters written to it (see :func:`visible`)."""

    def __init__(self, stream: TextIO):
        self.stream = stream

    def write(self, text: str) -> int:
        self.stream.write(visible(text))
        return len(text)

    def __getattr__(self, name: str) -> object:
        return getattr(self.stream, name)


@contextlib.contextmanager
def visible_streams() -> Iterator[None]:
    """stdout and stderr as :class:`_Visible` streams, for the time of the block."""
    saved = sys.stdout, sys.stderr
    if not isinstance(sys.stdout, _Visible):
        sys.stdout = _Visible(sys.stdout)
    if not isinstance(sys.stderr, _Visible):
        sys.stderr = _Visible(sys.stderr)
    try:
        yield
    finally:
        sys.stdout, sys.stderr = saved
