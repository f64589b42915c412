"""The meter around each timed statement (issue 36, item 5), on this machine's own counters: a
step that keeps one CPU busy reads at least that CPU's share, and a step that writes and
fsyncs 64 MB to the data device reads at least those bytes on it. Other load on the machine
only adds to both, so the test holds on a busy machine."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid

from tests.conftest import TEST_HOME

from teiten.monitors.system import StepMeter, device_of

MB = 1 << 20


def test_a_step_that_burns_a_cpu_and_writes_reads_as_such() -> None:
    where = TEST_HOME / "work" / f"meter-{uuid.uuid4().hex[:8]}"
    where.mkdir(parents=True)
    device = device_of(where)
    assert device is not None, f"no block device found under {where}"
    meter = StepMeter(device)
    before = meter.read()
    # One CPU busy for 1.5 s in a child, while this process writes and fsyncs 64 MB.
    burner = subprocess.Popen([sys.executable, "-c", "import time\nt = time.monotonic()\n"
                               "while time.monotonic() - t < 1.5: pass"])
    try:
        with (where / "written").open("wb") as f:
            for _ in range(64):
                f.write(os.urandom(MB))
            f.flush()
            os.fsync(f.fileno())
    finally:
        burner.wait(timeout=60)
    got = meter.figures(before, meter.read())
    (where / "written").unlink()
    where.rmdir()
    cpus = os.cpu_count() or 1
    assert got["device"] == device
    assert isinstance(got["window_s"], float) and got["window_s"] >= 1.5
    busy = got["cpu_busy_pct"]
    assert isinstance(busy, float) and busy >= 0.9 * 100 / cpus * 1.5 / got["window_s"]
    # Each share is rounded to 0.01 on its own (99.68 busy and 0.32 iowait: 100.00 in all).
    assert 0 <= got["cpu_iowait_pct"] <= 100 - got["cpu_busy_pct"] + 0.01
    assert isinstance(got["write_mb_s"], float) and got["write_mb_s"] * got["window_s"] >= 0.95 * 64 * MB / 1e6
    assert 0 < got["device_util_pct"] <= 100


def test_no_device_gives_the_cpu_alone() -> None:
    meter = StepMeter(None)
    got = meter.figures(meter.read(), meter.read())
    assert set(got) == {"window_s", "cpu_busy_pct", "cpu_iowait_pct"}
