"""The command line as a user reads it (issue 22): every option of every command says what it
does in --help, and -v works before or after the subcommand."""

from __future__ import annotations

import argparse

import pytest

from teiten.cli.main import build_parser


def _parsers() -> list[tuple[str, argparse.ArgumentParser]]:
    top = build_parser()
    out = [("teiten", top)]
    for action in top._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, parser in action.choices.items():
                out.append((name, parser))
                out += [(f"{name} {n}", p) for a in parser._actions
                        if isinstance(a, argparse._SubParsersAction) for n, p in a.choices.items()]
    return out


def test_every_option_and_argument_has_help_text() -> None:
    missing = [(name, a.option_strings or a.dest) for name, parser in _parsers()
               for a in parser._actions
               if a.help is None and not isinstance(a, argparse._SubParsersAction)]
    assert missing == []


@pytest.mark.parametrize("argv", [
    ["-v", "results", "--store", "x.db"], ["results", "-v", "--store", "x.db"],
    ["results", "--store", "x.db", "--verbose"], ["study", "list", "-v"]])
def test_verbose_before_or_after_the_subcommand(argv: list[str]) -> None:
    assert build_parser().parse_args(argv).verbose is True


def test_quiet_unless_asked_and_resume_takes_a_language() -> None:
    assert build_parser().parse_args(["results", "--store", "x.db"]).verbose is False
    assert build_parser().parse_args(["resume", "--store", "x.db", "--lang", "ja"]).lang == "ja"
