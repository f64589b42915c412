"""A trial's stored cycle, typed (what ``teiten.servers.base.Cycle`` writes): the seconds of
each phase the runner and the server timed, and how the state the trial started from was made.
Read from the stored JSON by the fields' names (:func:`cycle`, :func:`start`): a phase or key a
record does not name is left out, one the store lacks takes its default."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from pydantic import TypeAdapter


@dataclass(frozen=True)
class Seconds:
    """Seconds per timed phase: the runner's begin, load, end and collect, and inside them
    what the server timed (restore, start, prewarm, checkpoint; stop, and the stop of a server
    an interrupted trial left running)."""

    begin: float = 0.0
    restore: float = 0.0
    start: float = 0.0
    prewarm: float = 0.0
    checkpoint: float = 0.0
    stop_leftover: float = 0.0
    load: float = 0.0
    end: float = 0.0
    stop: float = 0.0
    collect: float = 0.0


@dataclass(frozen=True)
class Start:
    """How a trial's starting state was made: its data (restored, and how and after what, or
    left as it was) and its server; a group of tenants: each server's, by name."""

    data: str | None = None
    restore: str | None = None
    after: str | None = None
    runs_before: int | None = None  # trials: {restore: first}: runs whose changes it started on
    server: str | None = None
    tenants: dict[str, Start] | None = None


@dataclass(frozen=True)
class Cycle:
    seconds: Seconds = field(default_factory=Seconds)
    start: Start = field(default_factory=Start)


_CYCLE = TypeAdapter(Cycle)
_START = TypeAdapter(Start)


def cycle(stored: Mapping[str, object]) -> Cycle:
    """A stored cycle (``{"seconds": ..., "start": ...}``) as its record."""
    return _CYCLE.validate_python({k: v for k, v in stored.items() if v is not None})


def start(stored: Mapping[str, object]) -> Start:
    """A stored starting state as its record."""
    return _START.validate_python(dict(stored))
