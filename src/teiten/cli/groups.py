"""``teiten --help`` by group (issue 56, item 5): the commands in the groups a person looks for
them in, each group with one example, instead of argparse's one block of 22.

:data:`GROUPS` is the table; :func:`grouped_help` lays the top-level help out from it with
argparse's own formatter (so the width follows COLUMNS and the terminal as every other --help),
and scripts/make-reference.py writes the reference's list of commands from it. Every command is
in exactly one group (tests/unit/test_cli_groups.py). Standard library only: --help imports this.
"""

from __future__ import annotations

import argparse
import textwrap
from typing import NamedTuple


class Group(NamedTuple):
    key: str       # the group's name, the heading in --help
    title: str     # what its commands are about, beside the name
    commands: tuple[str, ...]
    example: str   # one command line, as a user types it (each parses: test_cli_groups)


GROUPS: tuple[Group, ...] = (
    Group("run", "a study, from its plan to its report",
          ("study", "schema", "plan", "run", "scaleup", "resume"),
          "teiten run my-study.yaml --store results.db"),
    Group("inspect", "a study's trials and reports", ("results", "show", "report", "compare"),
          "teiten report --store results.db --out report/"),
    Group("history", "builds over time, and CI", ("timeline", "gate", "bisect"),
          "teiten gate --store ci.db --baseline previous --candidate new"),
    Group("installs", "the PostgreSQL to run", ("installs", "install", "fetch-source"),
          "teiten install 17 18.6"),
    Group("stores", "where results are kept", ("studies", "store", "clean"),
          "teiten store copy results.db postgresql://bench@db1/perf"),
    Group("system", "this machine, a server, the shell", ("system", "probe", "completion"),
          "teiten system check"),
)

USAGE = "%(prog)s [-h] [--version] [-v] COMMAND ..."
EPILOG = ("'teiten COMMAND --help' says more of each command; docs/reference/commands.md holds "
          "them all, docs/guide/ what they are for.")


def subcommands(parser: argparse.ArgumentParser) -> argparse._SubParsersAction:
    """The action that holds a parser's commands."""
    return next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))


def grouped_help(parser: argparse.ArgumentParser) -> str:
    """The top-level --help: usage, description, each group's commands and example, the options,
    then the epilog (argparse's own layout, only the commands' block split)."""
    formatter = parser._get_formatter()
    formatter.add_usage(parser.usage, parser._actions, parser._mutually_exclusive_groups)
    formatter.add_text(parser.description)
    listed = {choice.dest: choice for choice in subcommands(parser)._choices_actions}
    for group in GROUPS:
        formatter.start_section(f"{group.key} ({group.title})")
        formatter.add_arguments([listed[name] for name in group.commands])
        formatter._add_item(_example, [formatter, group.example])
        formatter.end_section()
    formatter.start_section(parser._optionals.title)
    formatter.add_arguments(parser._optionals._group_actions)
    formatter.end_section()
    formatter.add_text(parser.epilog)
    return formatter.format_help()


def _example(formatter: argparse.HelpFormatter, command: str) -> str:
    """``example: COMMAND`` at the section's indent, a command too long for the width going on
    under the command's start (argparse's text would wrap it under ``example:``, like a command)."""
    indent = " " * formatter._current_indent
    return "\n".join(textwrap.wrap(f"example: {command}", max(formatter._width - len(indent), 30),
                                   initial_indent=indent, subsequent_indent=indent + " " * 9,
                                   break_on_hyphens=False, break_long_words=False)) + "\n\n"
