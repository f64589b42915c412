"""The machine around each timed step (issue 36, item 5): what the reader is told. A step of
at least a second shows its CPU busy, I/O wait and the data device's %util beside its time;
a shorter one is left out of the table (its shares rest on a few 10 ms ticks) and counted in a
note; the S6 speed-up table carries the three shares beside each workers count; en and ja."""

from __future__ import annotations

import pytest

from teiten.analysis.model import StepFigures, SuiteResults
from teiten.report.columns import SPEEDUP_COLUMNS, STEP_COLUMNS
from teiten.report.suite_tables import speedup_table, system_table
from teiten.words.context import Context


def _step(variant: str, step: str, seconds: float, **extra: float) -> StepFigures:
    return StepFigures(server="pg18", variant=variant, step=step, param=None, seconds=seconds,
                       values=(seconds,), extra=dict(extra), labels={"device": "vda"})


IO_BOUND = {"window_s": 4.2, "cpu_busy_pct": 12.4, "cpu_iowait_pct": 61.0, "device_util_pct": 98.6,
            "read_mb_s": 310.25, "write_mb_s": 0.0}
CPU_BOUND = {"window_s": 2.1, "cpu_busy_pct": 99.2, "cpu_iowait_pct": 0.2, "device_util_pct": 1.4,
             "read_mb_s": 0.5, "write_mb_s": 0.04}
SHORT = {"window_s": 0.05, "cpu_busy_pct": 50.0, "cpu_iowait_pct": 0.0, "device_util_pct": 0.0,
         "read_mb_s": 0.0, "write_mb_s": 0.0}


@pytest.mark.parametrize("lang", ["en", "ja"])
def test_steps_of_a_second_show_the_machine_and_shorter_ones_are_counted(lang: str) -> None:
    res = SuiteResults("accesslog", ("workers",), ("pg18",), ("workers=0", "workers=2"), (
        _step("workers=0", "aggregate", 4.1, **IO_BOUND),
        _step("workers=2", "aggregate", 2.0, **CPU_BOUND),
        _step("workers=2", "count", 0.04, **SHORT)))
    table = system_table(res, Context(lang=lang))
    assert table is not None and table.shown
    assert [label for label, _ in table.rows] == ["pg18 · workers=0 · aggregate",
                                                  "pg18 · workers=2 · aggregate"]
    assert [c.text for c in table.rows[0][1]] == ["4.10 s", "12%", "61%", "99%", "310.2", "0.0"]
    assert [c.text for c in table.rows[1][1]] == ["2.00 s", "99%", "0%", "1%", "0.5", "0.0"]
    if lang == "en":
        assert table.heading == "The machine during each step: CPU and data device"
        assert [c.label for c in table.columns] == ["Time", "CPU busy", "CPU I/O wait",
                                                    "Device %util", "Read MB/s", "Write MB/s"]
        assert table.notes[1:] == ("Data device: vda.",
                                   "1 shorter steps not shown; their figures are in the steps' data.")
        assert "A step whose device is near 100% while CPUs idle is held back by I/O." in table.notes[0]
    else:
        assert table.heading == "各ステップ中のマシン: CPU とデータデバイス"
        assert table.notes[1:] == ("データデバイス: vda。",
                                   "これより短い 1 ステップは表示していない。値はステップのデータにある。")


def test_no_step_of_a_second_shows_no_table_and_unmeasured_steps_give_none() -> None:
    short = SuiteResults("freeze", (), ("pg18",), ("",), (_step("", "insert", 0.3, **SHORT),))
    table = system_table(short, Context())
    assert table is not None and not table.shown and table.rows == ()
    unmeasured = SuiteResults("freeze", (), ("pg18",), ("",), (_step("", "insert", 3.0),))
    assert system_table(unmeasured, Context()) is None


@pytest.mark.parametrize("lang", ["en", "ja"])
def test_the_speedup_table_says_where_more_workers_stopped_helping(lang: str) -> None:
    res = SuiteResults("accesslog", ("workers",), ("pg18",), ("workers=0", "workers=2"), (
        _step("workers=0", "aggregate", 4.0, **CPU_BOUND),
        _step("workers=2", "aggregate", 3.9, **IO_BOUND)))
    table = speedup_table(res, Context(lang=lang))
    assert table is not None
    (_, serial), (_, parallel) = table.rows
    assert [c.text for c in serial[3:]] == ["99%", "0%", "1%"]
    assert [c.text for c in parallel] == ["3.90 s", "1.03×", "0 / 0", "12%", "61%", "99%"]
    assert len(table.notes) == 2
    short = SuiteResults("accesslog", ("workers",), ("pg18",), ("workers=0",),
                         (_step("workers=0", "aggregate", 0.2, **SHORT),))
    found = speedup_table(short, Context(lang=lang))
    assert found is not None and [c.text for c in found.rows[0][1][3:]] == ["—"] * 3


def test_the_data_carries_the_machine_beside_each_step() -> None:
    assert STEP_COLUMNS[-7:] == ("window_s", "cpu_busy_pct", "cpu_iowait_pct", "device",
                                 "device_util_pct", "read_mb_s", "write_mb_s")
    assert SPEEDUP_COLUMNS[-3:] == ("cpu_busy_pct", "cpu_iowait_pct", "device_util_pct")


def test_show_prints_the_machine_beside_a_step_of_a_second() -> None:
    from teiten.cli.show import _step_line
    from teiten.model.shown import steps

    long = {"name": "vacuum freeze", "param": "50%", "seconds": 4.2, "rows": None,
            "extra": {"pages": 1000, **IO_BOUND, "device": "vda"}}
    assert _step_line(steps([long])[0]) == (
        "  vacuum freeze [50%] · 4200.00 ms · CPU busy 12%, I/O wait 61%, "
        "vda 99% util, read 310.2 MB/s, write 0.0 MB/s")
    short = {"name": "insert", "param": None, "seconds": 0.05, "rows": 10,
             "extra": {**SHORT, "device": "vda"}}
    assert _step_line(steps([short])[0]) == "  insert · 50.00 ms · 10 rows"
