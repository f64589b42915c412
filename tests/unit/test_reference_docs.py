"""docs/reference/ is what the code says (issue 56, item 1): scripts/make-reference.py makes every
command's arguments and help and the study file's schema again, in memory, and each committed file
must be the same, so that a changed option or field fails here until the reference is made again.
The script lays the help out itself, so the files are the same under Python 3.11 and 3.13 (whose
argparse writes ``-j, --jobs JOBS`` where 3.11 writes ``-j JOBS, --jobs JOBS``)."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("make_reference", ROOT / "scripts" / "make-reference.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_committed_reference_is_what_the_code_says(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", os.environ.get("COLUMNS", "80"))  # the script sets 100; undone after
    script = _script()
    made = script.documents()
    assert {p.name for p in made} == {"commands.md", "study-file.md"}
    stale = [str(p.relative_to(ROOT)) for p, text in made.items()
             if not p.is_file() or p.read_text(encoding="utf-8") != text]
    assert not stale, (f"stale: {', '.join(stale)}; make them again with "
                       f"'PYTHONPATH=src python3 {script.SCRIPT}' and commit them")


def test_the_reference_holds_every_command_and_every_field(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", os.environ.get("COLUMNS", "80"))
    script = _script()
    commands = script.commands_md()
    for command in ("## teiten run", "## teiten store copy", "## teiten system setup", "## teiten study show",
                    "## teiten gate", "## teiten bisect"):
        assert command + "\n" in commands, command
    run = commands.split("## teiten run\n", 1)[1].split("\n## ", 1)[0]
    assert "| `[study]` |" in run and "| `--store STORE` |" in run, run
    schema = script.study_file_md()
    for field in ("`servers`", "`repetitions`", "`margin_pct`", "`noise_guard`", "`install`", "`delay`"):
        assert f"| {field} |" in schema, field
