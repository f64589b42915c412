"""The POSIX shell scripts that ssh servers run on their host (``*.sh`` beside this file),
each sent as it is with ``sh -c SCRIPT sh ARG...``: values go in as arguments, never into
the text. Each file's header says what it does and what arguments it takes."""

from __future__ import annotations

from functools import cache
from importlib.resources import files


@cache
def script(name: str) -> str:
    """The text of the script ``name`` (e.g. ``"make_owned.sh"``), read once."""
    return (files("teiten.servers") / "scripts" / name).read_text(encoding="utf-8")  # safe: teiten's own file
