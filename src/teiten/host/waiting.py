"""Bounded waits. Every wait names what it waits for and gives up after a timeout."""

from __future__ import annotations

import contextlib
import logging
import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

from teiten.host import ticker
from teiten.model.errors import TeitenError

T = TypeVar("T")


PROGRESS = logging.getLogger("teiten.progress")


def _minutes(seconds: float) -> str:
    minutes, rest = divmod(round(seconds), 60)
    return f"{minutes} min {rest:02d} s" if minutes else f"{rest} s"


@contextlib.contextmanager
def telling(what: str, about_s: float, *, every_s: float = 60.0, log: Path | None = None
            ) -> Iterator[None]:
    """Say that ``what`` (a long step: an image build) begins and about how long it takes,
    then how far it is, and when it is done: no silent minutes (printed at the default level,
    as "teiten: ..."). Under a ticking command it is a phase of the ticker (teiten.host.ticker:
    said every 5 s in a log, drawn in place on a terminal), with the last line of ``log`` (the
    build's output: its steps) as how far it is; else how long it has taken, every
    ``every_s``."""
    PROGRESS.warning("%s (the first time only; about %s)...", what, _minutes(about_s))
    started = time.monotonic()
    ticking = ticker.active()

    def said() -> str | None:
        if not ticking:
            PROGRESS.warning("%s: %s so far", what, _minutes(time.monotonic() - started))
            return None
        return _last_line(log) if log is not None else None

    with ticker.phase(what), ticker.polling(said, 1.0 if ticking else every_s):
        yield
    PROGRESS.warning("%s: done in %s", what, _minutes(time.monotonic() - started))


def _last_line(path: Path, *, width: int = 100) -> str:
    """The last line written to ``path`` (a build's log, in a directory of root's), cut to
    ``width``; empty when there is none."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return ""
    with os.fdopen(fd, "rb") as f:
        f.seek(max(0, os.fstat(fd).st_size - 4096))
        lines = [line.strip() for line in f.read().decode("utf-8", "replace").splitlines()]
    last = next((line for line in reversed(lines) if line), "")
    return last if len(last) <= width else last[: width - 1] + "…"


class WaitTimeout(TeitenError):
    """A bounded wait ran out of time."""


def wait_until(
    predicate: Callable[[], T | None],
    *,
    timeout: float,
    what: str,
    interval: float = 0.05,
    error: type[TeitenError] = WaitTimeout,
) -> T:
    """Call ``predicate`` until it returns something truthy and return that.

    Raises ``error`` naming ``what`` when ``timeout`` seconds pass first.
    """
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise error(f"timed out after {timeout:g} s waiting for {what}")
        time.sleep(interval)
