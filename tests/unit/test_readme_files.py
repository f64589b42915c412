"""Every study file a README or docs/ command names exists (issue 54 item 10: the History and CI
examples ran `pgecons-ci.yaml`, which was neither a file nor a built-in). A file named with a
directory must be in the checkout; a bare name must be one the same documents make first
(`teiten study show s2-cores > my-study.yaml`) or a built-in study; and the example study
files under docs/examples/ load as study files."""

from __future__ import annotations

import re
from pathlib import Path

from tests.conftest import ROOT

from teiten.spec import load_text

DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
BUILT_IN = ROOT / "src" / "teiten" / "studies"
YAML = re.compile(r"(?<![\w./~-])([\w./~-]+\.ya?ml)\b")


def _commands() -> list[tuple[Path, str]]:
    """Each line of a fenced block that runs teiten, without its comment."""
    found = []
    for doc in DOCUMENTS:
        for block in re.findall(r"```[a-z]*\n(.*?)```", doc.read_text(encoding="utf-8"), re.S):
            for line in block.splitlines():
                command = line.split(" #", 1)[0]
                if re.search(r"(^|\s|\))teiten ", command):
                    found.append((doc, command))
    return found


def test_the_commands_name_study_files_that_exist() -> None:
    commands = _commands()
    assert len(commands) > 30  # the extraction found the README's commands
    made = {m for _, c in commands for m in re.findall(r">\s*([\w.-]+\.ya?ml)", c)}
    missing = []
    for doc, command in commands:
        for name in YAML.findall(command):
            if "/" in name or name.startswith("~"):
                ok = (ROOT / name).is_file()
            else:
                ok = name in made or (BUILT_IN / name).is_file()
            if not ok:
                missing.append(f"{doc.relative_to(ROOT)}: {name} in: {command.strip()}")
    assert not missing, "\n".join(missing)


def test_the_example_studies_load() -> None:
    examples = sorted((ROOT / "docs" / "examples").glob("*.yaml"))
    assert examples
    for path in examples:
        loaded = load_text(path.read_text(encoding="utf-8"), str(path))
        assert loaded.study.study == path.stem
    ci = load_text((ROOT / "docs" / "examples" / "pgecons-ci.yaml").read_text(), "ci").study
    assert ci.repetitions == "auto" and ci.margin_pct == 10  # what the README says of it
    assert [s.name for s in ci.servers] == ["previous", "new"]  # what its gate line names
