"""The ticker (issue 56, item 2: no silent phase longer than 5 seconds) on a made-up clock: in a
pipe, the current phase's line after 2 s of silence, then one every 5 s, never sooner after
anyone else's line; on a terminal one line drawn in place after 2 s of silence and wiped before
anyone else writes; quiet while paused; procs.run handing a real program's stderr lines over
as they come; and an image build's log telling how far it is."""

from __future__ import annotations

import io
import sys
import time
from pathlib import Path

import pytest

from teiten.host import procs, ticker, waiting


class _Stream(io.StringIO):
    def __init__(self, tty: bool):
        super().__init__()
        self.tty = tty

    def isatty(self) -> bool:
        return self.tty


class _Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def _ticker(tty: bool) -> tuple[ticker._Ticker, ticker._Watched, _Stream, _Clock]:
    stream, clock = _Stream(tty), _Clock()
    made = ticker._Ticker(ticker.Line(stream), clock)
    made.phases.append(ticker._Phase("run s", clock()))
    made.checked = True  # the input is checked: a pipe hears it
    return made, ticker._Watched(stream, made), stream, clock


def _at(made: ticker._Ticker, clock: _Clock, t: float) -> None:
    clock.now = 100.0 + t
    made.tick()


def test_in_a_pipe_a_line_after_2_s_of_silence_then_every_5_s() -> None:
    made, watched, stream, clock = _ticker(tty=False)
    made.phases.append(ticker._Phase("loading the data", clock()))
    made.phases[-1].detail = "50000 of 100000 tuples (50%) done"
    _at(made, clock, 1.9)
    assert stream.getvalue() == ""
    _at(made, clock, 2.0)
    assert stream.getvalue() == "teiten: loading the data: 50000 of 100000 tuples (50%) done (2 s)\n"
    for t in (3.0, 5.0, 6.8):
        _at(made, clock, t)
    assert stream.getvalue().count("\n") == 1, "at most one line every 5 s (a tick before)"
    _at(made, clock, 6.9)
    assert stream.getvalue().count("\n") == 2
    clock.now = 108.0
    watched.write("teiten: something else\n")  # anyone's line counts as said
    _at(made, clock, 12.8)
    assert stream.getvalue().count("\n") == 3
    _at(made, clock, 12.9)
    assert stream.getvalue().splitlines()[-1] == ("teiten: loading the data: 50000 of 100000 tuples (50%) "
                                                  "done (13 s)")


def test_the_outermost_phase_is_said_alone_only() -> None:
    made, _, stream, clock = _ticker(tty=False)
    _at(made, clock, 2.0)
    assert stream.getvalue() == "teiten: run s (2 s)\n"


def test_on_a_terminal_one_line_drawn_in_place_and_wiped_before_other_output() -> None:
    made, watched, stream, clock = _ticker(tty=True)
    _at(made, clock, 1.0)
    assert stream.getvalue() == ""
    _at(made, clock, 2.0)
    _at(made, clock, 2.1)  # sooner than REDRAW_S: not drawn again
    _at(made, clock, 2.3)
    assert stream.getvalue() == "\rteiten: run s (2 s)\x1b[K" * 2
    watched.write("[....] 1/1 pg17 ...\n")
    assert stream.getvalue().endswith("\x1b[K\r\x1b[K[....] 1/1 pg17 ...\n")
    assert not made.drawn


def test_while_the_input_is_checked_a_pipe_hears_nothing_and_a_terminal_sees_a_line_wiped() -> None:
    """Bad input's error stands alone in a log (one line), whatever the checks took."""
    for tty in (False, True):
        made, watched, stream, clock = _ticker(tty)
        made.checked = False
        _at(made, clock, 30.0)
        watched.write("teiten: error: no such study file\n")
        assert stream.getvalue().replace("\r\x1b[K", "").endswith(
            "teiten: error: no such study file\n" if tty else "")
        assert stream.getvalue().startswith("\rteiten: run s (30 s)" if tty else "teiten: error")


def test_a_phase_past_the_checks_opens_the_pipe(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "stderr", _Stream(tty=False))
    with ticker.ticking("run"):
        current = ticker._current
        assert current is not None
        with ticker.phase("checking the study", checking=True):
            assert not current.checked
        with ticker.phase("getting the installs"):
            assert current.checked


def test_paused_it_says_nothing() -> None:
    made, _, stream, clock = _ticker(tty=False)
    made.paused = True
    _at(made, clock, 30.0)
    assert stream.getvalue() == ""


def test_outside_a_ticking_block_phases_cost_nothing() -> None:
    assert ticker._current is None
    with ticker.phase("initdb"):
        ticker.progress("anything")
    ticker.pause()
    ticker.resume()


def test_a_programs_stderr_lines_come_as_they_are_written() -> None:
    heard: list[str] = []
    done = procs.run([sys.executable, "-c", "import sys; print('a', file=sys.stderr); print('b'); "
                      "print('c', file=sys.stderr)"], timeout=60, lines=heard.append)
    assert heard == ["a", "c"]
    assert done.stderr == "a\nc\n" and done.stdout == "b\n"


def test_an_image_build_under_a_ticking_command_is_a_phase_with_its_logs_last_line(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    log = tmp_path / "build.log"
    log.write_text("I: running apt-get update...\nI: extracting archives...\n\n")
    monkeypatch.setattr(sys, "stderr", _Stream(tty=False))
    with ticker.ticking("run"), waiting.telling("building the VM guest of /x/bin", 370.0, log=log):
        current = ticker._current
        assert current is not None
        assert [p.what for p in current.phases] == ["run", "building the VM guest of /x/bin"]
        deadline = time.monotonic() + 10
        while current.phases[-1].detail != "I: extracting archives..." and time.monotonic() < deadline:
            time.sleep(0.1)
        assert current.phases[-1].detail == "I: extracting archives..."
    assert ticker._current is None and sys.stderr.__class__ is _Stream
