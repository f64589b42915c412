"""The host's steal as the noise guard counts it (issue 53: the noise of a virtual machine whose
host is busy, which no process here shows): the share of all CPU time the host took over a
trial's window, read from the real /proc/stat; a trial over noise_guard.max_steal_pct (2% by
default) is disturbed, with a reason the report words in en and ja; a quiet check over the limit
is not quiet, and the busy line names the host; what teiten stored before reads as not stolen."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from teiten import messages
from teiten.host.guard import STEAL_PCT, ForeignLoad, Program, Rule, disturbance, who
from teiten.model.errors import MachineBusy
from teiten.model.results import PlannedTrial
from teiten.monitors.foreign import ForeignMeter
from teiten.run.busy import BusyWatch
from teiten.spec import load_text

STUDY = """
study: s
servers: [{name: a, install: "17"}]
workloads: [select-only]
"""

STOLEN_EN = ("the host of this virtual machine took 4.6% of the CPU time over the trial's 3 s "
             "window (steal; the noise guard's limit is 2%, noise_guard.max_steal_pct)")
STOLEN_JA = ("この仮想マシンのホストが試行の 3 秒の測定区間に CPU 時間の 4.6% を奪いました（steal。"
             "ノイズガードの上限は 2%、noise_guard.max_steal_pct）")


def _stat_steal_s() -> float:
    """The machine's stolen seconds so far, from /proc/stat's cpu line read here without psutil."""
    fields = Path("/proc/stat").read_text().splitlines()[0].split()
    return float(fields[8]) / os.sysconf("SC_CLK_TCK")


def test_the_meter_reads_the_hosts_steal_from_proc_stat() -> None:
    """A real window of the meter gives the steal as a percentage within what /proc/stat's own
    counters say over a window that encloses it."""
    before = _stat_steal_s()
    meter = ForeignMeter(lambda: [])
    meter.start()
    time.sleep(0.5)
    found = meter.stop()
    stolen = _stat_steal_s() - before
    assert found.steal_pct is not None and 0.0 <= found.steal_pct <= 100.0
    # The meter's window lies inside the enclosing one: it cannot have seen more stolen seconds
    # (its share of all the CPUs' time, over a window of their number times its length; a
    # reading's pass and the rounding to a hundredth of a percent allowed for).
    seen = found.steal_pct / 100 * found.window_s * os.cpu_count()
    assert seen <= stolen + 0.01 + 0.0001 * found.window_s * os.cpu_count()
    assert ForeignLoad.from_json(found.to_json()) == found


def test_a_window_over_the_steal_limit_is_disturbed_and_said_in_en_and_ja() -> None:
    rule = Rule()
    assert rule.steal_pct == STEAL_PCT == 2.0
    stolen = ForeignLoad(3.0, 0.03, steal_pct=4.6, programs=(Program("python3", 8, 1, 0.03),))
    assert rule.stolen(stolen) and not rule.quiet(stolen, 0.25)
    said = disturbance(stolen, rule)
    assert said == STOLEN_EN
    assert messages.reason(said, "ja") == STOLEN_JA
    assert messages.reason(said, "en") == STOLEN_EN
    # The host is named first; an idle program is not named beside it.
    assert who(stolen, rule=rule) == ("the host of this virtual machine, which took 4.6% of the CPU "
                                      "time (steal; the noise guard allows 2%, noise_guard.max_steal_pct)")
    assert who(stolen, "ja", rule) == ("この仮想マシンのホスト（CPU 時間の 4.6% を steal として奪いました。"
                                       "ノイズガードの上限は 2%、noise_guard.max_steal_pct）")
    assert who(stolen) == "python3 (pid 8) 0.0 CPUs"  # without the rule: the programs, as before
    # At the limit, or with no steal read (what teiten stored before), a window is quiet.
    for quiet in (ForeignLoad(3.0, 0.03, steal_pct=2.0), ForeignLoad.from_json(
            {"window_s": 3.0, "cpu_s": 0.03, "top": [], "memory": {}})):
        assert not rule.stolen(quiet) and rule.quiet(quiet, 0.25) and disturbance(quiet, rule) is None
    # Foreign CPU over its limit is still the reason first, and names the host beside the programs.
    both = ForeignLoad(3.0, 1.5, steal_pct=4.6, programs=(Program("stress-ng", 10, 3, 1.5),))
    assert disturbance(both, rule) == (
        "processes outside the trial used 0.50 CPUs over its 3 s window (the noise guard's limit is "
        "0.25): the host of this virtual machine, which took 4.6% of the CPU time (steal; the noise "
        "guard allows 2%, noise_guard.max_steal_pct), stress-ng (3 processes) 0.5 CPUs")


def test_the_study_sets_the_steal_limit_and_bad_ones_are_refused() -> None:
    guard = load_text(STUDY + "noise_guard: {max_steal_pct: 5}\n", "<test>").study.noise_guard
    assert Rule.of(guard.model_dump()).steal_pct == 5.0
    assert not Rule.of(guard.model_dump()).stolen(ForeignLoad(3.0, 0.0, steal_pct=4.6))
    assert Rule.of({"enabled": True, "max_foreign_cpus": 0.25, "repeats": 2}).steal_pct == 2.0
    for bad in ("0", "-1", "101"):
        with pytest.raises(Exception, match="max_steal_pct"):
            load_text(STUDY + f"noise_guard: {{max_steal_pct: {bad}}}\n", "<test>")


def test_a_busy_spell_of_steal_stops_the_study_naming_the_host() -> None:
    """The busy watch counts a stolen trial as it counts a disturbed one, and its stop line
    names the host and the limit to raise."""
    lines: list[str] = []
    watch = BusyWatch(Rule(), 0.0, lambda: [], lines.append, "/x.db", first_block=0,
                      last=ForeignLoad(3.0, 0.0, steal_pct=7.5))
    trial = PlannedTrial("9", 9, "a", "select-only", 1, 1, repetition=2, duration_s=3.0)
    with pytest.raises(MachineBusy) as stop:
        for _ in range(3):
            watch.after(trial, "disturbed", None)
    assert "the host of this virtual machine, which took 7.5% of the CPU time" in str(stop.value)
    assert "noise_guard.max_steal_pct" in str(stop.value)
