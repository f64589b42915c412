"""Two tests at a time, except those that must have the machine to themselves.

``make test`` runs the suite on pytest-xdist workers (``-n``, each module on one worker, so a
module's finished study is made once). Most tests start their own clusters on ports they pick,
in directories of their own, under a machine lock of their own worker: they do not see each
other. A test marked ``alone`` does: it turns the noise guard on, measures CPU or compares TPS
between configurations, or looks at the machine's processes as a whole. It runs with no other
test running, through a readers-writer lock of the run (two ``flock`` files): every test holds
the lock shared while it runs (setup, call and teardown), an ``alone`` test holds it exclusive,
and a gate in front of it lets a waiting ``alone`` test in before the next shared one, so that
it is not starved. Outside xdist (``pytest tests/...`` by hand) nothing is locked.

The order of the modules (run with ``--no-loadscope-reorder``, so that xdist hands them out
in the collection's order): first every module without an ``alone`` test, the longest first by
``tests/durations.json`` (each module's seconds, measured on a quiet run: the longest first
leaves short ones to fill the end), then the modules with one, the longest first. So no ``alone``
test waits for a long test of another worker to end while the others stop at the gate: they
run at the end, when what is left beside them is short. A module not in the file counts as its
area's usual length. ``TEITEN_TEST_DURATIONS=write`` rewrites the file from the run.

At the end the controller prints the time per area (unit, integration, e2e; the sum of the
tests' durations, as ``--durations`` counts them) beside the wall time.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import tempfile
import time
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path

import pytest

_TOTALS: dict[str, float] = defaultdict(float)
_MODULES: dict[str, float] = defaultdict(float)  # seconds per module, for durations.json
DURATIONS = Path(__file__).with_name("durations.json")
USUAL_S = {"e2e": 60.0, "integration": 20.0, "unit": 2.0}  # a module not yet in the file
_STARTED = time.monotonic()


LOCKS = "TEITEN_TEST_LOCKS"  # the run's lock directory, made by the controller for its workers


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "alone: runs with no other test running (it measures the "
                            "machine, or looks at its processes as a whole)")
    if not hasattr(config, "workerinput") and getattr(config.option, "numprocesses", None):
        # The controller, before it starts its workers (they inherit the environment).
        os.environ[LOCKS] = tempfile.mkdtemp(prefix="teiten-test-run-")


def _locks(config: pytest.Config) -> tuple[Path, Path] | None:
    """The gate and the readers-writer lock of this run, None outside an xdist worker (a
    pytest that a test runs in a subprocess inherits the variable, not a worker's input)."""
    where = os.environ.get(LOCKS)
    if not hasattr(config, "workerinput") or not where:
        return None
    return Path(where) / "gate", Path(where) / "rw"


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    locks = _locks(item.config)
    if locks is None:
        yield
        return
    alone = item.get_closest_marker("alone") is not None
    gate, rw = (os.open(path, os.O_CREAT | os.O_RDWR, 0o600) for path in locks)
    try:
        fcntl.flock(gate, fcntl.LOCK_EX)
        fcntl.flock(rw, fcntl.LOCK_EX if alone else fcntl.LOCK_SH)
        if not alone:
            fcntl.flock(gate, fcntl.LOCK_UN)
        yield
    finally:
        os.close(rw)  # closing releases the locks
        os.close(gate)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Under xdist (every worker orders its collection the same way): the modules without an
    alone test first, then those with one, each part the longest first."""
    if not hasattr(config, "workerinput"):
        return
    try:
        # safe: a file of this checkout
        known: dict[str, float] = json.loads(DURATIONS.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        known = {}
    modules: dict[str, list[pytest.Item]] = {}
    for item in items:
        modules.setdefault(item.nodeid.split("::", 1)[0], []).append(item)

    def key(module: str) -> tuple[bool, float, str]:
        alone = any(i.get_closest_marker("alone") is not None for i in modules[module])
        parts = module.split("/")
        usual = USUAL_S.get(parts[1], 20.0) if len(parts) > 2 else 20.0
        return alone, -known.get(module, usual), module

    items[:] = [item for module in sorted(modules, key=key) for item in modules[module]]


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """In the controller (and a run without workers): each phase's duration, by area."""
    parts = report.nodeid.split("/")
    area = parts[1] if len(parts) > 2 and parts[0] == "tests" else "other"
    _TOTALS[area] += report.duration
    _MODULES[report.nodeid.split("::", 1)[0]] += report.duration


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if not _TOTALS or hasattr(terminalreporter.config, "workerinput"):
        return
    areas = ", ".join(f"{area} {seconds / 60:.1f} min" for area, seconds in sorted(
        _TOTALS.items(), key=lambda kv: -kv[1]))
    wall = time.monotonic() - _STARTED
    terminalreporter.write_line(f"time per area (the tests' own durations): {areas}; "
                                f"wall {wall / 60:.1f} min")


def pytest_sessionfinish(session: pytest.Session) -> None:
    if os.environ.get("TEITEN_TEST_DURATIONS") == "write" and _MODULES \
            and not hasattr(session.config, "workerinput"):
        merged = {**json.loads(DURATIONS.read_text(encoding="utf-8")),
                  **{m: round(s, 1) for m, s in _MODULES.items()}}
        DURATIONS.write_text(json.dumps(dict(sorted(merged.items())), indent=0) + "\n",
                             encoding="utf-8")


def pytest_unconfigure(config: pytest.Config) -> None:
    where = os.environ.get(LOCKS)
    if where and not hasattr(config, "workerinput") and getattr(config.option, "numprocesses", None):
        shutil.rmtree(where, ignore_errors=True)
