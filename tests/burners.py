"""A real run with the noise guard on and a CPU burner beside the trials a test chooses: the
harness of the tests of the guard (tests/e2e/test_noise_guard.py, test_repeat_order.py). The
burner is a Python busy loop, no child of teiten, started when the progress line announces a
chosen trial and killed when it announces that trial's end."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import psutil
import pytest
from tests.conftest import ROOT, TEST_HOME

START = re.compile(r"\] +\d+/\d+ (\S+) (\S+) clients=(\d+) rep=(\d+) \.\.\.")
END = re.compile(r"rep=\d+: ")


@dataclass
class Burned:
    """What the run printed and the pids of the burners, in the order they ran."""

    lines: list[str] = field(default_factory=list)
    pids: list[int] = field(default_factory=list)

    @property
    def text(self) -> str:
        return "".join(self.lines)


def skip_when_busy(limit: float) -> None:
    """A machine already busier than the guard's ``limit``: every trial is rightly disturbed,
    and no burner of the test's can be singled out."""
    busy = psutil.cpu_percent(interval=2) / 100 * (psutil.cpu_count() or 1)
    if busy > limit:
        pytest.skip(f"the machine is already busy ({busy:.1f} CPUs used by other processes): the "
                    "guard rightly marks every trial, so this test cannot choose which")


def _burner_program(where: Path) -> str:
    """Python under a name of its own (a link, ``cpu-burner``): the noise guard names a program
    by its process name and sums a process with its parent of the same name (issue 53, item
    6), and under pytest-xdist the test's own process is a python3 too."""
    link = where / "cpu-burner"
    if not link.exists():
        link.symlink_to(sys.executable)
    return str(link)


def run_beside_burner(study: Path, store: Path, report: Path,
                      chosen: Callable[[str, str, int, int], bool]) -> Burned:
    """``teiten run`` of ``study`` with the guard on; a burner beside every trial for which
    ``chosen(server, workload, clients, repetition)`` is true (the first run of that point only,
    not its repeat). Asserts the run exits 0."""
    env = dict(os.environ, TEITEN_HOME=str(TEST_HOME), PYTHONPATH=str(ROOT / "src"),
               TEITEN_NOISE_GUARD="on")
    run = subprocess.Popen([sys.executable, "-m", "teiten", "run", str(study), "--store", str(store),
                            "--report", str(report)],
                           env=env, text=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    burner: subprocess.Popen[bytes] | None = None
    seen: set[tuple[str, str, int, int]] = set()
    out = Burned()
    try:
        assert run.stderr is not None
        for line in run.stderr:
            out.lines.append(line)
            start = START.search(line)
            if start and burner is None:
                point = (start[1], start[2], int(start[3]), int(start[4]))
                if chosen(*point) and point not in seen:
                    seen.add(point)
                    burner = subprocess.Popen([_burner_program(store.parent), "-c", "while True: pass"])
                    out.pids.append(burner.pid)
            elif burner is not None and END.search(line):
                burner.kill()
                burner.wait()
                burner = None
        assert run.wait(timeout=600) == 0, out.text
    finally:
        if burner is not None and burner.poll() is None:
            burner.kill()
            burner.wait()
        if run.poll() is None:
            run.kill()
            run.wait()
    return out
