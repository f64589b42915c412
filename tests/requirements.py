"""Environment skips that CI turns into failures (issue 17, item 7).

A test that needs something this kind of machine has after ``make system`` (perf, sshd,
Pgpool-II, network namespaces, the system's PostgreSQL 15 and its extensions, chromium,
2 CPUs, apt-get, PyPI) says so with ``missing(reason)`` in its body or fixture, or with
the mark ``pytest.mark.requires(why_not)`` (``why_not`` is None when everything is here).
Both skip, except when the environment variable ``TEITEN_REQUIRE_ALL`` is ``1`` (``.ci/run``
sets it): then they fail, so that a machine lacking a tool cannot turn the suite green by
skipping. Skips that no machine here can satisfy stay plain ``pytest.skip``/``skipif``.

tests/conftest.py loads this module's hooks; another session can load them with
``-p tests.requirements``. (PYTEST_DONT_REWRITE: conftest imports it before pytest could.)
"""

from __future__ import annotations

import os
from typing import NoReturn

import pytest

SWITCH = "TEITEN_REQUIRE_ALL"
MARK = "requires"


def required() -> bool:
    """Whether environment skips are failures (TEITEN_REQUIRE_ALL=1)."""
    return os.environ.get(SWITCH) == "1"


def missing(reason: str) -> NoReturn:
    """Skip the test (or fixture) because ``reason`` says what this machine lacks; fail
    instead under TEITEN_REQUIRE_ALL=1."""
    __tracebackhide__ = True
    if required():
        pytest.fail(f"{SWITCH}=1 (set by .ci/run) turns this skip into a failure: {reason}",
                    pytrace=False)
    pytest.skip(reason)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", f"{MARK}(why_not): the test needs something `make system` provides; why_not "
        f"is None when it is here, else what is missing (a skip, a failure under {SWITCH}=1)")


@pytest.hookimpl(tryfirst=True)  # before the fixtures of the test are set up
def pytest_runtest_setup(item: pytest.Item) -> None:
    for mark in item.iter_markers(MARK):
        why_not = mark.args[0] if mark.args else mark.kwargs["why_not"]
        if why_not and not required():
            # Reported at the test, as skipif's skips are (not at this line). The argument is
            # pytest's own (private, pytest >= 7), the one its skipif mark uses.
            raise pytest.skip.Exception(str(why_not), _use_item_location=True)
        if why_not:
            missing(str(why_not))
