"""``teiten --help`` by group (issue 56, item 5): every command is in exactly one group, each
group's example is a command line teiten accepts, the real --help prints the groups in the
terminal's width, and the completion script's tables name arguments that exist."""

from __future__ import annotations

import argparse
import os
import shlex

from tests.conftest import run_cli

from teiten import studies
from teiten.cli import completion
from teiten.cli.groups import GROUPS, subcommands
from teiten.cli.main import build_parser


def test_every_command_is_in_exactly_one_group() -> None:
    grouped = [name for group in GROUPS for name in group.commands]
    assert sorted(grouped) == sorted(subcommands(build_parser()).choices)
    assert len(grouped) == len(set(grouped))
    assert [g.key for g in GROUPS] == ["run", "inspect", "history", "installs", "stores", "system"]


def test_each_example_is_a_command_line_teiten_accepts() -> None:
    for group in GROUPS:
        argv = shlex.split(group.example)
        assert argv[0] == "teiten", group
        args = build_parser().parse_args(argv[1:])
        assert args.command in group.commands, group


def test_help_prints_each_group_with_its_commands_and_example() -> None:
    done = run_cli("--help", env={"COLUMNS": "72"}, check=True)
    lines = done.stdout.splitlines()
    assert lines[0] == "usage: teiten [-h] [--version] [-v] COMMAND ..."
    assert max(len(line) for line in lines) <= 72
    headings = [line for line in lines if line and not line.startswith(" ") and line.endswith(":")]
    assert headings == [f"{g.key} ({g.title}):" for g in GROUPS] + ["options:"]
    for group in GROUPS:
        block = done.stdout.split(f"{group.key} ({group.title}):\n", 1)[1].split("\n\n", 1)[0]
        listed = [line.split()[0] for line in block.splitlines() if line.startswith("  ")
                  and not line.startswith("   ")]
        assert listed == [*group.commands, "example:"], (group.key, block)
        assert f"example: {group.example}" in " ".join(block.split()), block
    # The commands' own --help is argparse's, not the groups.
    sub = run_cli("run", "--help", check=True).stdout
    assert "usage: teiten run" in sub and "example:" not in sub


def test_the_completion_tables_name_arguments_that_exist() -> None:
    found = dict(completion.nodes(build_parser()))
    for (*path, dest), kind in completion.STUDY_ARGS.items():
        parser = found[tuple(path)]
        assert any(a.dest == dest and not a.option_strings for a in parser._actions), (path, dest)
        assert kind in ("study", "builtin")
    assert completion.builtin_studies() == studies.names()


def test_each_value_kind_is_one_the_scripts_know() -> None:
    kinds = {completion.value_kind(path, a) for path, p in completion.nodes(build_parser())
             for a in p._actions if a.nargs != 0 and not isinstance(a, argparse._SubParsersAction)}
    assert {k for k in kinds if not k.startswith("choices:")} <= {"study", "builtin", "dirs", "files", "none"}
    assert "choices:bash,zsh" in kinds and "dirs" in kinds and "none" in kinds


def test_completion_needs_no_home() -> None:
    """A shell's start runs it: it writes nothing and works where TEITEN_HOME cannot be made."""
    done = run_cli("completion", "bash", env={"TEITEN_HOME": os.devnull + "/x"})
    assert done.returncode == 0, done.stderr
    assert "complete -o default -F _teiten teiten" in done.stdout
