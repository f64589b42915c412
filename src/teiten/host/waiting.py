"""Bounded waits. Every wait names what it waits for and gives up after a timeout."""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Callable, Iterator
from typing import TypeVar

from teiten.model.errors import TeitenError

T = TypeVar("T")


PROGRESS = logging.getLogger("teiten.progress")


def _minutes(seconds: float) -> str:
    minutes, rest = divmod(round(seconds), 60)
    return f"{minutes} min {rest:02d} s" if minutes else f"{rest} s"


@contextlib.contextmanager
def telling(what: str, about_s: float, *, every_s: float = 60.0) -> Iterator[None]:
    """Say that ``what`` (a long step: an image build) begins and about how long it takes,
    then how long it has taken every ``every_s`` seconds, and when it is done: no silent
    minutes (printed at the default level, as "teiten: ...")."""
    PROGRESS.warning("%s (the first time only; about %s)...", what, _minutes(about_s))
    started = time.monotonic()
    stop = threading.Event()

    def tick() -> None:
        while not stop.wait(every_s):
            PROGRESS.warning("%s: %s so far", what, _minutes(time.monotonic() - started))

    ticker = threading.Thread(target=tick, name="telling", daemon=True)
    ticker.start()
    try:
        yield
    finally:
        stop.set()
        ticker.join()
    PROGRESS.warning("%s: done in %s", what, _minutes(time.monotonic() - started))


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
