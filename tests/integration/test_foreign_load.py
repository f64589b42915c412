"""The foreign-load meter on real processes: a CPU burner outside the trial is counted, the same
burner inside the trial's trees is not, a burner born inside the window counts whole, a burner
reaped inside the window counts only its time inside it, and a quiet window stays quiet.

Another test suite may run on this 2-CPU machine at the same time, so no test assumes the rest
of the machine is idle: a figure is compared with another meter over the same window, with the
burner's own times read from psutil, or with the machine's busy time from /proc/stat.
"""

from __future__ import annotations

import os
import select
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager

import psutil
import pytest

from teiten.host.guard import Consumer, ForeignLoad
from teiten.monitors.foreign import ForeignMeter, quiet_check

# alone: it measures foreign CPU load within a tenth of a second.
pytestmark = pytest.mark.alone

WINDOW_S = 1.5
SLACK_S = 0.15  # readings of two meters, or of psutil and a meter, are a few ms apart


@contextmanager
def burner() -> Iterator[subprocess.Popen[bytes]]:
    """A child of this pytest process that keeps one CPU busy until the test kills it."""
    proc = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        yield proc
    finally:
        proc.kill()
        proc.wait(timeout=10)


def _cpu_s(pid: int) -> float:
    t = psutil.Process(pid).cpu_times()
    return t.user + t.system


def _idle_s() -> float:
    """CPU seconds the whole machine spent idle (or waiting for I/O, which is idle too)."""
    # Not user + system: the kernel samples those at each tick, and a ping-pong load like
    # pgbench's (sleep, wake, work a little, sleep) slips between ticks: /proc/stat showed 0.43
    # busy CPUs where the processes' own times (exact, from the scheduler) added up to 0.75.
    # Idle time without a tick (NO_HZ) is measured, not sampled.
    t = psutil.cpu_times()
    return t.idle + t.iowait


def _consumer(load: ForeignLoad, pid: int) -> Consumer | None:
    return next((c for c in load.top if c.pid == pid), None)


def _measure(*meters: ForeignMeter) -> list[ForeignLoad]:
    for m in meters:
        m.start()
    time.sleep(WINDOW_S)
    return [m.stop() for m in meters]


def test_a_burner_outside_the_trial_is_counted() -> None:
    with burner() as b:
        time.sleep(0.2)  # past the interpreter's start-up
        before = _cpu_s(b.pid)
        (load,) = _measure(ForeignMeter(lambda: []))
        burned = _cpu_s(b.pid) - before
        name = psutil.Process(b.pid).name()
    print(f"burner outside: cpus={load.cpus:.2f} burner={burned / load.window_s:.2f} top={load.top}")
    assert abs(load.window_s - WINDOW_S) < 0.2
    assert load.cpus >= 0.5
    found = _consumer(load, b.pid)
    assert found is not None, load.top
    assert found.name == name[:15] and "python" in found.name
    assert abs(found.cpu_s - burned) < SLACK_S
    assert load.cpu_s >= found.cpu_s
    assert load.top == tuple(sorted(load.top, key=lambda c: c.cpu_s, reverse=True))


def test_a_burner_in_the_trials_trees_is_not_counted() -> None:
    with burner() as b:
        time.sleep(0.2)
        before = _cpu_s(b.pid)
        everyone, as_root, as_descendant = _measure(
            ForeignMeter(lambda: []),                 # the burner is foreign
            ForeignMeter(lambda: [b.pid]),            # the burner is a root of the trial
            ForeignMeter(lambda: [os.getpid()]))      # the burner descends from the trial's root
        burned = _cpu_s(b.pid) - before
    print(f"burner ours: all={everyone.cpus:.2f} root={as_root.cpus:.2f} "
          f"descendant={as_descendant.cpus:.2f} burner={burned / everyone.window_s:.2f}")
    assert burned > 0.3 * WINDOW_S, "the burner hardly ran: the machine is overloaded"
    assert _consumer(everyone, b.pid) is not None
    for load in (as_root, as_descendant):
        assert _consumer(load, b.pid) is None, load.top
        # The rest of the machine is the same in every meter: only the burner is missing.
        assert load.cpu_s <= everyone.cpu_s - burned + SLACK_S
        # The trial's own CPU holds it (the relative rule reads what the trial left idle).
        assert load.own_cpu_s is not None and load.own_cpu_s >= burned - SLACK_S
        assert load.capacity == len(os.sched_getaffinity(0))
    assert as_root.own_cpu_s is not None and abs(as_root.own_cpu_s - burned) < SLACK_S
    assert everyone.own_cpu_s == 0.0  # no root: nothing is the trial's


def test_a_burner_born_inside_the_window_counts_whole() -> None:
    foreign, ours = ForeignMeter(lambda: []), ForeignMeter(lambda: [os.getpid()])
    foreign.start()
    ours.start()
    time.sleep(0.2)
    with burner() as b:
        time.sleep(WINDOW_S)
        outside, inside = foreign.stop(), ours.stop()
        burned = _cpu_s(b.pid)  # its whole life, start-up included
    print(f"burner born in window: cpus={outside.cpus:.2f} (ours: {inside.cpus:.2f}) "
          f"burner={burned / outside.window_s:.2f}")
    found = _consumer(outside, b.pid)
    assert found is not None, outside.top
    assert burned - SLACK_S < found.cpu_s <= burned + 0.02
    # Not in the trial's tree at start, in it at stop: the trial's, all of its life.
    assert _consumer(inside, b.pid) is None, inside.top
    assert inside.cpu_s <= outside.cpu_s - found.cpu_s + SLACK_S
    assert inside.own_cpu_s is not None and inside.own_cpu_s >= burned - SLACK_S


# A parent that runs a child that runs a burner: the child kills the burner after the given
# seconds, reaps it, prints its CPU seconds (from wait4) and exits; the parent reaps the child,
# passes the line on and sleeps until the test kills it.
CHILD = """import os, subprocess, sys, time
g = subprocess.Popen([sys.executable, "-c", "while True: pass"])
time.sleep(float(sys.argv[1]))
g.kill()
_, _, ru = os.wait4(g.pid, 0)
print(ru.ru_utime + ru.ru_stime, flush=True)
"""
PARENT = """import subprocess, sys, time
print(subprocess.run([sys.executable, "-c", sys.argv[1], sys.argv[2]], stdout=subprocess.PIPE,
                     text=True, check=True).stdout.strip(), flush=True)
time.sleep(60)
"""


def test_a_burner_reaped_inside_the_window_counts_its_time_inside_it() -> None:
    parent = subprocess.Popen([sys.executable, "-c", PARENT, CHILD, "1.8"], stdout=subprocess.PIPE,
                              text=True)
    try:
        deadline = time.monotonic() + 10
        while len(psutil.Process(parent.pid).children(recursive=True)) < 2:
            assert time.monotonic() < deadline, "the burner did not start within 10 s"
            time.sleep(0.02)
        time.sleep(0.6)  # the burner's time before the window: its parents' share must not hold it
        burner_pid = max(psutil.Process(parent.pid).children(recursive=True), key=lambda p: p.pid).pid
        meter, mine = ForeignMeter(lambda: []), ForeignMeter(lambda: [parent.pid])
        burned_before = _cpu_s(burner_pid)
        meter.start()
        mine.start()
        time.sleep(WINDOW_S)  # the burner is killed and reaped inside it
        load, own = meter.stop(), mine.stop()
        ready, _, _ = select.select([parent.stdout], [], [], 10)
        assert ready, "the child did not report the burner's CPU within 10 s"
        assert parent.stdout is not None
        burned = float(parent.stdout.readline())
    finally:
        parent.kill()
        parent.wait(timeout=10)
    print(f"burner reaped in window: cpus={load.cpus:.2f} burner before={burned_before:.2f} "
          f"after={burned:.2f} top={load.top}")
    assert _consumer(load, burner_pid) is None  # gone at the end: its time is its grandparent's
    found = _consumer(load, parent.pid)
    assert found is not None, load.top
    # Its grandchild's life inside the window, not its whole life; the same as the trial's own.
    assert abs(found.cpu_s - (burned - burned_before)) < SLACK_S
    assert own.own_cpu_s is not None and abs(own.own_cpu_s - (burned - burned_before)) < SLACK_S


def test_a_quiet_window_is_quiet() -> None:
    cpus = len(psutil.cpu_times(percpu=True))  # the CPUs online
    began, idle = time.monotonic(), _idle_s()
    (load,) = _measure(ForeignMeter(lambda: [os.getpid()]))
    busy_cpus = cpus - (_idle_s() - idle) / (time.monotonic() - began)
    print(f"quiet window: cpus={load.cpus:.2f}, machine busy={busy_cpus:.2f} top={load.top}")
    # The meter never finds more than the machine did. Another suite may keep the machine
    # busy: only when it did not is the window expected to be quiet.
    assert load.cpus <= busy_cpus + 0.15
    if busy_cpus < 0.3:
        assert load.cpus < 0.5
    assert set(load.memory) >= {"swap_in_pages", "swap_out_pages"}
    assert all(v >= 0 for v in load.memory.values())


def test_json_round_trip_and_quiet_check() -> None:
    load = quiet_check(1.0)
    print(f"quiet_check(1.0): window={load.window_s:.3f} cpus={load.cpus:.2f} top={load.top}")
    assert abs(load.window_s - 1.0) < 0.1
    assert ForeignLoad.from_json(load.to_json()) == load
    made = ForeignLoad(2.0, 1.5, (Consumer(42, "stress-ng", 1.25), Consumer(7, "cron", 0.25)),
                       {"psi_some_ms": 3.5, "swap_in_pages": 0.0})
    assert made.cpus == 0.75
    assert ForeignLoad.from_json(made.to_json()) == made
    assert ForeignLoad(0.0, 0.0).cpus == 0.0
