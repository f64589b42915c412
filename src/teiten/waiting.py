"""Bounded waits. Every wait names what it waits for and gives up after a timeout."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

from teiten.errors import TeitenError

T = TypeVar("T")


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
