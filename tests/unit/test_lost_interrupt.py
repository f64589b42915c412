"""A Ctrl-C whose KeyboardInterrupt Python swallowed (the signal landed while a finalizer ran,
where an exception is only printed as "Exception ignored") still stops the run: the next trial
the run starts raises it again (teiten.cli.interrupts.doing). A full suite run once saw a run
go on through all its ten trials after the Ctrl-C that should have stopped it after the first."""

from __future__ import annotations

import os
import signal
import sys

import pytest

from teiten.cli import interrupts


class _Finalized:
    """An object whose finalizer is running when SIGINT arrives."""

    def __del__(self) -> None:
        os.kill(os.getpid(), signal.SIGINT)
        sum(range(10_000))  # bytecode boundaries: the handler runs (and raises) in here


def test_an_interrupt_swallowed_by_a_finalizer_stops_the_run_at_the_next_trial(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(interrupts, "_state", interrupts._State())  # noqa: SLF001
    swallowed: list[type[BaseException] | None] = []  # what Python ignored ("Exception ignored in")
    monkeypatch.setattr(sys, "unraisablehook", lambda u: swallowed.append(u.exc_type))
    before = signal.getsignal(signal.SIGINT)
    interrupts.install()
    try:
        with pytest.raises(KeyboardInterrupt), interrupts.running("s.db"):
            interrupts.doing("trial 1 of 10 (pg17 select-only clients=1 rep=1)")
            doomed = _Finalized()
            del doomed  # the handler's KeyboardInterrupt is raised in __del__ and ignored there
            assert capsys.readouterr().err.startswith(
                "teiten: interrupted during trial 1 of 10 (pg17 select-only clients=1 rep=1): ")
            assert swallowed == [KeyboardInterrupt]  # Python ignored it: the run would go on
            interrupts.doing("trial 2 of 10 (pg17 select-only clients=1 rep=2)")  # raises it again
            pytest.fail("the second trial started after a Ctrl-C")
    finally:
        signal.signal(signal.SIGINT, before)
    assert not interrupts.forced()
