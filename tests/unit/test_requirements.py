"""TEITEN_REQUIRE_ALL=1 (set by .ci/run) turns environment skips into failures: proved on a
tiny test session that lacks a made-up tool, with and without the switch; and every plain
skip left in the suite is one that no machine here can satisfy."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from tests.requirements import SWITCH

pytest_plugins = ["pytester"]

TESTS = Path(__file__).resolve().parent.parent

TINY = """
import pytest
from tests.requirements import missing

@pytest.fixture
def frobnicator():
    missing("no frobnicator in a fixture")

def test_in_the_body():
    missing("no frobnicator here")

def test_in_a_fixture(frobnicator):
    pass

@pytest.mark.requires("the frobnicator is too old")
def test_marked():
    pass

@pytest.mark.requires(None)
def test_marked_and_here():
    pass

@pytest.mark.skipif(True, reason="no machine here can do this")
def test_plain_skip():
    pass
"""

MODULE_MARK = """
import pytest

pytestmark = pytest.mark.requires("no frobnicator for the module")

def test_one():
    pass

def test_two():
    pass
"""


def _run(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch,
         switch: str | None) -> pytest.RunResult:
    if switch is None:
        monkeypatch.delenv(SWITCH, raising=False)
    else:
        monkeypatch.setenv(SWITCH, switch)
    pytester.makepyfile(test_tiny=TINY, test_module_mark=MODULE_MARK)
    return pytester.runpytest("-p", "tests.requirements", "-p", "no:cacheprovider", "-rsfE")


@pytest.mark.parametrize("switch", [None, "0", ""])
def test_without_the_switch_missing_tools_skip(pytester: pytest.Pytester,
                                               monkeypatch: pytest.MonkeyPatch,
                                               switch: str | None) -> None:
    result = _run(pytester, monkeypatch, switch)
    result.assert_outcomes(passed=1, skipped=6)
    skipped = [line for line in result.outlines if line.startswith("SKIPPED")]
    assert sorted(line.split(": ", 1)[1] for line in skipped) == [
        "no frobnicator for the module", "no frobnicator for the module", "no frobnicator here",
        "no frobnicator in a fixture", "no machine here can do this", "the frobnicator is too old"]
    assert not [line for line in skipped if "requirements.py" in line], "shown at the test"
    assert result.ret == pytest.ExitCode.OK


def test_with_the_switch_missing_tools_fail(pytester: pytest.Pytester,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    result = _run(pytester, monkeypatch, "1")
    # A failing mark or fixture is an error of the test's setup; the plain skip stays a skip.
    result.assert_outcomes(passed=1, skipped=1, failed=1, errors=4)
    said = result.stdout.str()
    for reason in ("no frobnicator here", "no frobnicator in a fixture",
                   "the frobnicator is too old", "no frobnicator for the module"):
        assert f"{SWITCH}=1 (set by .ci/run) turns this skip into a failure: {reason}" in said
    result.stdout.fnmatch_lines(["SKIPPED*no machine here can do this*"], consecutive=False)
    assert result.ret == pytest.ExitCode.TESTS_FAILED


# The plain skips that stay skips, with or without the switch: what no machine here can
# satisfy (it runs the tests as root).
PLAIN_SKIPS = {
    "e2e/test_bad_input.py": 1,  # a mode-000 file, which root reads anyway
    "e2e/test_first_hour.py": 1,  # creating an account, which only root can
    "e2e/test_plan_warnings.py": 1,  # mounting a small tmpfs, which only root can
    "integration/test_cgroups.py": 1,  # making cgroups, which only root can
    "integration/test_git_export.py": 1,  # a repository of another account, which only root makes
    "integration/test_external_passwords.py": 1,  # the client account, which matters only to root
    "integration/test_traversal_grants.py": 1,  # ACL grants, which only root makes
    "integration/test_old_source.py": 1,  # a source of a release before 9.6, which no machine here reaches
    "integration/test_packaging.py": 1,  # a tree without .git (an unpacked sdist): no git ls-files
    "unit/test_setup_system.py": 1,  # the server and client accounts, which matter only to root
    "burners.py": 1,  # a machine already busy: every trial is rightly disturbed (tests of the guard)
    "requirements.py": 1,  # missing() itself
}
PLAIN = re.compile(r"pytest\.skip\(|\bskipif\(|importorskip\(")


def test_every_other_skip_goes_through_the_switch() -> None:
    found = {}
    for path in sorted(TESTS.rglob("*.py")):
        if path == Path(__file__).resolve():
            continue
        code = "\n".join(line.split("#")[0] for line in path.read_text().splitlines()
                         if not line.lstrip().startswith(("#", '"""')))
        if count := len(PLAIN.findall(code)):
            found[str(path.relative_to(TESTS))] = count
    assert found == PLAIN_SKIPS, ("a skip for something `make system` provides must use "
                                  "tests.requirements.missing() or the requires mark")
