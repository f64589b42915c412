"""Saying how far a long phase is (issue 56, item 2: no silent phase longer than 5 seconds).

:class:`Line` is one line of progress on a stream: on a terminal drawn again in place, in a log
or a pipe a line of its own (downloads draw theirs with it: teiten.installs.transfer).

While a command that runs a study holds a :func:`ticking` block, a thread watches stderr and
speaks only when nothing else has: on a terminal, after ``QUIET_S`` without a word, it draws
the current phase (what :func:`phase` named, what :func:`progress` last said of it, and the
seconds it has lasted) in one line, redrawn every ``REDRAW_S`` and erased before anything else
is written; in a pipe or a log, after ``EVERY_S`` without a line, it writes that phase as a line
of its own (the first after ``QUIET_S``, as a download's; then one every ``EVERY_S``, drawn a
tick early so that no silence is longer), once the input is checked: until a phase that is not
``checking`` begins, a pipe gets nothing of it, so that bad input still gets its error alone in
one line (on a terminal the line drawn is wiped before the error). :func:`pause` keeps it
quiet (a trial's measured window, which has its own lines) until :func:`resume`. Outside a
ticking block, phase and progress cost nothing and say nothing (the library, the tests)."""

from __future__ import annotations

import contextlib
import logging
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TextIO

QUIET_S = 2.0
EVERY_S = 5.0
REDRAW_S = 0.25
_TICK_S = 0.1
COMMANDS = ("run", "resume", "scaleup", "bisect")  # the commands that tick, from their start


class Line:
    """One line of progress on ``stream`` (default: stderr)."""

    def __init__(self, stream: TextIO | None = None):
        self.out: TextIO = stream if stream is not None else sys.stderr
        # The redraw's own control characters go to the stream under one that shows them escaped
        # (the CLI's, teiten.cli.terminal, which keeps it as ``stream``); the text, which may
        # name a registry's file or a user's server, goes through it.
        self.raw: TextIO = getattr(self.out, "stream", self.out)
        self.tty = self.out.isatty()
        self.every = REDRAW_S if self.tty else EVERY_S  # how often it is drawn while it lasts

    def draw(self, text: str, *, end: str = "") -> None:
        """``text`` drawn over the last on a terminal (``end`` "\\n" keeps it), else a line of
        its own."""
        if self.tty:
            self.raw.write("\r")
            self.out.write(text)
            self.raw.write(f"\x1b[K{end}")
        else:
            self.out.write(f"{text}\n")
        self.out.flush()
        self.raw.flush()

    def erase(self) -> None:
        """The line drawn on a terminal, wiped (the cursor back at its start)."""
        if self.tty:
            self.raw.write("\r\x1b[K")
            self.raw.flush()


@dataclass
class _Phase:
    what: str
    began: float
    detail: str = ""


class _Ticker:
    def __init__(self, line: Line, clock: Callable[[], float]):
        self.line, self.clock = line, clock
        self.lock = threading.RLock()
        self.phases: list[_Phase] = []
        self.quiet_since = clock()  # the last write of anyone else
        self.said = -1.0  # the last line (or draw) of its own (none yet)
        self.drawn = False  # a line of its own stands on the terminal, the cursor at its end
        self.paused = False
        self.checked = False  # a phase past the input's checks has begun: a pipe hears it
        self.stop = threading.Event()

    def other_writes(self) -> None:
        """Someone else writes (the lock held): the drawn line goes first."""
        if self.drawn:
            self.line.erase()
            self.drawn = False
        self.quiet_since = self.clock()

    def tick(self) -> None:
        with self.lock:
            if self.paused or not self.phases or not (self.line.tty or self.checked):
                return
            now = self.clock()
            if self.line.tty:
                due = now - self.quiet_since >= QUIET_S and now - self.said >= REDRAW_S
            else:  # the first after QUIET_S of silence, as a download's; then one a tick before
                quiet = now - max(self.quiet_since, self.said)  # EVERY_S, so that none is longer
                due = quiet >= EVERY_S - _TICK_S or (quiet >= QUIET_S and self.said < 0)
            if due:
                self.line.draw(self.text(now))
                self.said, self.drawn = now, self.line.tty

    def text(self, now: float) -> str:
        """The phases inside the outermost (which stands for the command while no other is
        named), what the innermost said of itself, and how long it has lasted."""
        inner = self.phases[-1]
        detail = f": {inner.detail}" if inner.detail else ""
        return (f"teiten: {': '.join(p.what for p in self.phases[1:] or self.phases)}{detail} "
                f"({now - inner.began:.0f} s)")

    def loop(self) -> None:
        while not self.stop.wait(_TICK_S):
            self.tick()


class _Watched:
    """stderr while a ticker runs: a write by anyone first wipes the ticker's line."""

    def __init__(self, inner: TextIO, ticker: _Ticker):
        self.inner, self.ticker = inner, ticker
        self.stream = getattr(inner, "stream", inner)  # what Line writes its controls to

    def write(self, text: str) -> int:
        with self.ticker.lock:
            self.ticker.other_writes()
            return self.inner.write(text)

    def __getattr__(self, name: str) -> object:
        return getattr(self.inner, name)


_current: _Ticker | None = None


@contextlib.contextmanager
def ticking(what: str | None = None, *, clock: Callable[[], float] = time.monotonic) -> Iterator[None]:
    """For the block, stderr watched and the current phase said when it is silent (see the
    module's text), the block itself a phase named ``what`` (what is said while no other
    phase is); a ticking block inside another is the same one."""
    global _current
    if _current is not None:
        with phase(what, checking=True) if what else contextlib.nullcontext():
            yield
        return
    inner = sys.stderr
    ticker = _Ticker(Line(inner), clock)
    watched = _Watched(inner, ticker)
    handlers = [h for h in logging.getLogger().handlers  # logging's lines wipe it too
                if isinstance(h, logging.StreamHandler) and h.stream is inner]
    sys.stderr = watched
    for h in handlers:
        h.setStream(watched)
    _current = ticker
    thread = threading.Thread(target=ticker.loop, name="teiten-ticker", daemon=True)
    thread.start()
    try:
        with phase(what, checking=True) if what else contextlib.nullcontext():
            yield
    finally:
        ticker.stop.set()
        thread.join()
        with ticker.lock:
            if ticker.drawn:
                ticker.line.erase()
        _current = None
        sys.stderr = inner
        for h in handlers:
            h.setStream(inner)


@contextlib.contextmanager
def phase(what: str, *, checking: bool = False) -> Iterator[None]:
    """The block is a phase named ``what`` (inside the phase that holds it); ``checking``: one
    that checks the input, whose error must stand alone (see the module's text)."""
    ticker = _current
    if ticker is None:
        yield
        return
    with ticker.lock:
        ticker.phases.append(_Phase(what, ticker.clock()))
        ticker.checked = ticker.checked or not checking
    try:
        yield
    finally:
        with ticker.lock:
            ticker.phases.pop()


def active() -> bool:
    """Whether a ticking block holds (what only feeds it can be left out otherwise)."""
    return _current is not None


def progress(detail: str) -> None:
    """How far the current phase is (a program's progress line, rows loaded)."""
    ticker = _current
    if ticker is not None and ticker.phases and detail.strip():
        with ticker.lock:
            ticker.phases[-1].detail = detail.strip()


@contextlib.contextmanager
def polling(detail: Callable[[], str | None], every_s: float = 1.0) -> Iterator[None]:
    """While the block runs, ``detail()`` every ``every_s`` in a thread of its own, what it
    returns told as how far the current phase is (a load's tables, a build log's last line)."""
    stop = threading.Event()

    def poll() -> None:
        while not stop.wait(every_s):
            if said := detail():
                progress(said)

    thread = threading.Thread(target=poll, name="teiten-polling", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()


def pause() -> None:
    """Quiet until :func:`resume`: what runs has lines of its own (a trial)."""
    if _current is not None:
        with _current.lock:
            _current.paused = True


def resume() -> None:
    ticker = _current
    if ticker is not None:
        with ticker.lock:
            ticker.paused = False
            ticker.quiet_since = ticker.clock()
