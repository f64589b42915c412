"""Ctrl-C and SIGTERM while teiten works (issue 33, item 8).

Outside a run, the first signal stops the command at once (nothing half-made is kept: see
``_main``). During a run, whose servers and clusters must be stopped and removed, it:

1. says at once what it interrupted and what it now does ("interrupted during trial 3 of 12
   (pg17 pgecons-read clients=4 rep=1): stopping the servers and removing what this run made"),
   then raises KeyboardInterrupt, which the runner's ``finally`` blocks turn into servers
   stopped and clusters removed, the cut-short trial back to planned and the study left
   interrupted (``teiten resume`` goes on);
2. on a second signal meanwhile, says that it is still doing so and lets it finish: a second
   Ctrl-C does not leave clusters behind;
3. on a third, stops at once, and says that ``teiten clean --store ...`` removes what is left
   (as it does after ``kill -9``).
"""

from __future__ import annotations

import contextlib
import signal
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from types import FrameType


@dataclass
class _State:
    store: str = ""   # the store of the run under way; empty outside a run
    doing: str = ""   # what the run does now
    count: int = 0    # signals received during this run
    forced: bool = False  # a third signal cut the cleanup short


_state = _State()


def install() -> None:
    """Take Ctrl-C and SIGTERM. A shell starts background jobs with SIGINT ignored, and Python
    keeps it ignored: setting it here makes 'kill -INT' stop a run cleanly wherever it started."""
    signal.signal(signal.SIGINT, _on_signal)
    signal.signal(signal.SIGTERM, _on_signal)


@contextlib.contextmanager
def running(store: str) -> Iterator[None]:
    """The block runs a study into ``store``: a signal stops it as the module says."""
    _state.store, _state.doing, _state.count = store, "the servers' setup", 0
    yield
    # Reset only when the run ended by itself: after a signal the process is on its way out,
    # and a later Ctrl-C is still answered with a line, never with a traceback.
    _state.store, _state.doing, _state.count = "", "", 0


def doing(what: str) -> None:
    """What the run does now, for the line a signal prints ("trial 3 of 12 (...)"). A run that
    starts another trial after a signal lost the KeyboardInterrupt its handler raised (Python
    ignores an exception raised in a finalizer or a garbage collection the signal landed in):
    it is raised again here, so that a Ctrl-C stops the run at the next trial at the latest."""
    if _state.store:
        if _state.count:
            raise KeyboardInterrupt
        _state.doing = what


def _say(line: str) -> None:
    with contextlib.suppress(OSError, ValueError):  # a closed or broken stderr stops nothing
        print(f"teiten: {line}", file=sys.stderr, flush=True)


def _on_signal(signum: int, frame: FrameType | None) -> None:
    store = _state.store
    if not store:
        raise KeyboardInterrupt
    _state.count += 1
    if _state.count == 1:
        _say(f"interrupted during {_state.doing}: stopping the servers and removing what this "
             "run made (Ctrl-C again does not cut that short)")
        raise KeyboardInterrupt
    if _state.count == 2:
        _say("still stopping the servers and removing what this run made; it ends by itself "
             f"(Ctrl-C once more stops at once, and 'teiten clean --store {store}' removes the rest)")
        return
    _say(f"stopping at once: 'teiten clean --store {store}' removes what this run left")
    _state.forced = True
    raise KeyboardInterrupt


def forced() -> bool:
    """A third signal cut the run's own cleanup short."""
    return _state.forced
