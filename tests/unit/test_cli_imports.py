"""``teiten --help`` answers at once (issue 38, item 5): it imports none of the analysis, the
report, the runner, numpy, pydantic or psycopg, checked with Python's -X importtime on the real
command line. The time itself is bench/cli_imports.py's to print, not a test's to assert."""

from __future__ import annotations

import pytest
from bench.cli_imports import heavy, imports


@pytest.mark.parametrize("argv", [["--help"], ["run", "--help"], ["compare", "--help"],
                                  ["--version"], ["completion", "bash"]])
def test_help_imports_nothing_heavy(argv: list[str]) -> None:
    found = imports(argv)
    assert any(name == "teiten.cli.main" for name, _ in found), found[-5:]
    assert heavy(found) == [], f"teiten {' '.join(argv)} imported {heavy(found)}"


def test_a_command_still_imports_what_it_runs_with() -> None:
    """The check can fail: 'teiten plan' imports pydantic (its study) and the runner's kin."""
    assert "pydantic" in heavy(imports(["plan", "--format", "json"]))
