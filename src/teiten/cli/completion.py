"""``teiten completion bash|zsh`` (issue 56, item 5): a completion script made from the command
line's own parser, so that it names every command, subcommand, option and choice argparse knows,
and nothing it does not.

Made from the parser rather than with argcomplete: argcomplete is a dependency, runs teiten (a
Python start and its imports) at every Tab and hooks into every start of the program; the script
this prints completes in the shell alone, at once. What it costs: it matches the teiten that
printed it, so a guide's ``source <(teiten completion bash)`` in ~/.bashrc makes it again at each
shell's start (a start of teiten that imports only the parser: main.py dispatches this command
before the others' imports).

Values: an option's or argument's choices; the built-in studies (and study files) where a study
is asked for; directories for a DIR; files for the rest, but nothing for numbers.
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import teiten

# The arguments that name a study: (command path, dest) -> "study" (a built-in name or a study
# file) or "builtin" (a built-in name only). tests/unit/test_cli_groups.py checks each exists.
STUDY_ARGS = {("run", "study"): "study", ("plan", "study"): "study", ("bisect", "study"): "study",
              ("study", "show", "name"): "builtin"}


def builtin_studies() -> list[str]:
    """The built-in studies' names, read from the package's directory without importing it
    (teiten.studies imports the study files' schema, and pydantic with it)."""
    return sorted(p.stem for p in (Path(teiten.__file__).parent / "studies").glob("*.yaml"))


def nodes(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()
          ) -> list[tuple[tuple[str, ...], argparse.ArgumentParser]]:
    """Every parser under ``parser`` with its command path, depth first."""
    out = [(path, parser)]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                out += nodes(sub, (*path, name))
    return out


def _subs(parser: argparse.ArgumentParser) -> list[tuple[str, str]]:
    return [(c.dest, _short(c.help)) for a in parser._actions if isinstance(a, argparse._SubParsersAction)
            for c in a._choices_actions]


def _short(text: str | None) -> str:
    """A help text cut to what a completion menu shows: its first clause, at most 60 characters."""
    text = " ".join((text or "").replace("%%", "%").split())
    text = re.split(r"[;(]| \(|: ", text, maxsplit=1)[0].strip().rstrip(",")
    return text if len(text) <= 60 else text[:59].rstrip() + "…"


def value_kind(path: tuple[str, ...], action: argparse.Action) -> str:
    """What a value of ``action`` completes with: ``choices:a,b``, ``study``, ``builtin``,
    ``dirs``, ``files`` or ``none``."""
    if action.choices is not None:
        return "choices:" + ",".join(map(str, action.choices))
    if not action.option_strings and (*path, action.dest) in STUDY_ARGS:
        return STUDY_ARGS[(*path, action.dest)]
    if action.type is int or action.metavar in ("N", "ID|NAME", "TRIAL_ID", "CONNINFO", "NAME"):
        return "none"
    return "dirs" if action.metavar == "DIR" else "files"


def _options(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    return [a for a in parser._actions if a.option_strings]


def _positionals(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    return [a for a in parser._actions
            if not a.option_strings and not isinstance(a, argparse._SubParsersAction)]


def bash(parser: argparse.ArgumentParser) -> str:
    """The bash script: ``_teiten`` walks the words before the cursor to the command they name
    (skipping options and their values, ``--opt=value`` too), then offers that command's
    subcommands, its options (after a ``-``) or the value the option or argument before wants."""
    node_cases, value_cases = [], []
    for path, p in nodes(parser):
        key = " ".join(path)
        subs = " ".join(name for name, _ in _subs(p))
        opts = " ".join(s for a in _options(p) for s in a.option_strings)
        valued = " ".join(s for a in _options(p) if a.nargs != 0 for s in a.option_strings)
        pos = " ".join(value_kind(path, a) for a in _positionals(p))
        node_cases.append(f'        "{key}") subs="{subs}" opts="{opts}" valued="{valued}" pos="{pos}" ;;')
        value_cases += [f'        "{key} {s}") kind="{value_kind(path, a)}" ;;'
                        for a in _options(p) if a.nargs != 0 for s in a.option_strings]
    return _BASH.format(names=" ".join(builtin_studies()), nodes="\n".join(node_cases),
                        values="\n".join(value_cases))


_BASH = """\
# bash completion for teiten, made by 'teiten completion bash' from its command line.
# Load it from ~/.bashrc with:  source <(teiten completion bash)

_teiten_studies="{names}"

_teiten_node() {{  # the subcommands, options, options taking a value, and arguments of "$1"
    case "$1" in
{nodes}
        *) subs="" opts="" valued="" pos="" ;;
    esac
}}

_teiten_value() {{  # what a value of option "$2" of command "$1" completes with
    case "$1 $2" in
{values}
        *) kind="files" ;;
    esac
}}

_teiten() {{
    local cur="${{COMP_WORDS[COMP_CWORD]}}" path="" want="" n=0 i w subs opts valued pos kind
    local -a kinds
    for ((i = 1; i < COMP_CWORD; i++)); do
        w="${{COMP_WORDS[i]}}"
        if [[ -n $want ]]; then  # the value of the option before ('=' when --opt=value was split)
            [[ $w == "=" ]] || want=""
            continue
        fi
        _teiten_node "$path"
        case "$w" in
            --*=*) ;;
            -*) [[ " $valued " == *" $w "* ]] && want="$w" ;;
            *) if [[ " $subs " == *" $w "* ]]; then path="${{path:+$path }}$w" n=0; else n=$((n + 1)); fi ;;
        esac
    done
    _teiten_node "$path"
    if [[ -z $want && $cur == "=" && " $valued " == *" ${{COMP_WORDS[COMP_CWORD - 1]}} "* ]]; then
        want="${{COMP_WORDS[COMP_CWORD - 1]}}"
    fi
    [[ $cur == "=" ]] && cur=""
    if [[ -n $want ]]; then
        _teiten_value "$path" "$want"
    elif [[ $cur == -* ]]; then
        COMPREPLY=($(compgen -W "$opts" -- "$cur"))
        return
    elif [[ -n $subs ]]; then
        COMPREPLY=($(compgen -W "$subs" -- "$cur"))
        return
    else
        kinds=($pos)
        ((${{#kinds[@]}})) || kinds=(none)
        ((n < ${{#kinds[@]}})) || n=$((${{#kinds[@]}} - 1))
        kind="${{kinds[n]}}"
    fi
    case "$kind" in
        choices:*) w="${{kind#choices:}}"; COMPREPLY=($(compgen -W "${{w//,/ }}" -- "$cur")) ;;
        builtin|study) COMPREPLY=($(compgen -W "$_teiten_studies" -- "$cur")) ;;
        dirs) compopt -o filenames 2>/dev/null; COMPREPLY=($(compgen -d -- "$cur")) ;;
        none) compopt +o default 2>/dev/null; COMPREPLY=() ;;
        *) COMPREPLY=() ;;  # files: bash's own completion (complete -o default)
    esac
}}

complete -o default -F _teiten teiten
"""


def _quote(text: str) -> str:
    """``text`` inside single quotes in zsh."""
    return text.replace("'", "'\\''")


def _zsh_action(kind: str) -> str:
    if kind.startswith("choices:"):
        return "(" + " ".join(kind.removeprefix("choices:").split(",")) + ")"
    return {"study": "_teiten_study_or_file", "builtin": "_teiten_builtin_study", "dirs": "_files -/",
            "none": " ", "files": "_files"}[kind]


def _metavar(action: argparse.Action) -> str:
    """The name of an option's or argument's value, as a zsh message (its colons escaped)."""
    name = action.metavar if isinstance(action.metavar, str) else action.dest
    return name.replace(":", "\\:")


def _zsh_spec(path: tuple[str, ...], action: argparse.Action) -> list[str]:
    """``_arguments`` specs of one option: one per spelling, each excluding the others."""
    help_ = _short(action.help).replace("\\", "\\\\").replace("[", "\\[").replace("]", "\\]")
    names = action.option_strings
    out = []
    for name in names:
        exclude = f"({' '.join(names)})" if len(names) > 1 else ""
        repeat = "*" if isinstance(action, argparse._AppendAction) else ""
        if action.nargs == 0:
            out.append(f"{exclude}{repeat}{name}[{help_}]")
        else:
            metavar = _metavar(action)
            eq = "=" if name.startswith("--") else "+"
            out.append(f"{exclude}{repeat}{name}{eq}[{help_}]:{metavar}:"
                       f"{_zsh_action(value_kind(path, action))}")
    return [f"'{_quote(s)}'" for s in out]


def zsh(parser: argparse.ArgumentParser) -> str:
    """The zsh script: one function per command, ``_arguments`` with its options and arguments;
    a command with subcommands describes them and hands the rest of the line to the chosen one."""
    functions = []
    for path, p in nodes(parser):
        name = "_teiten" + "".join("_" + re.sub(r"\W", "_", part) for part in path)
        specs = [s for a in _options(p) for s in _zsh_spec(path, a)]
        subs = _subs(p)
        if subs:
            described = " ".join(f"'{_quote(n)}:{_quote(h)}'" for n, h in subs)
            body = (f"    local curcontext=$curcontext state state_descr line\n    typeset -A opt_args\n"
                    f"    _arguments -C -s : \\\n        {' '.join(specs)} \\\n"
                    "        '1:command:->command' '*::argument:->argument'\n"
                    "    case $state in\n"
                    f"        command) local -a commands=({described})\n"
                    f"            _describe -t commands '{' '.join(('teiten', *path))} command' commands ;;\n"
                    f"        argument) local next={name}_${{words[1]//-/_}}\n"
                    "            (( $+functions[$next] )) && $next ;;\n"
                    "    esac")
        else:
            args = []
            for i, a in enumerate(_positionals(p), 1):
                optional = ":" if a.nargs == "?" else ""
                where = "*" if a.nargs in ("*", "+") else str(i)
                metavar = _metavar(a)
                args.append(f"'{_quote(f'{where}:{optional}{metavar}:{_zsh_action(value_kind(path, a))}')}'")
            body = f"    _arguments -s : \\\n        {' '.join([*specs, *args])}"
        functions.append(f"{name}() {{\n{body}\n}}\n")
    return _ZSH.format(names=" ".join(builtin_studies()), functions="\n".join(functions))


_ZSH = """\
#compdef teiten
# zsh completion for teiten, made by 'teiten completion zsh' from its command line.
# Load it from ~/.zshrc, after compinit, with:  source <(teiten completion zsh)

_teiten_builtin_study() {{
    local -a names=({names})
    _describe -t studies 'built-in study' names
}}

_teiten_study_or_file() {{
    _alternative 'studies:built-in study:_teiten_builtin_study' 'files:study file:_files -g "*.(yaml|yml)"'
}}

{functions}
if [[ $zsh_eval_context[-1] == loadautofunc ]]; then
    _teiten "$@"
else
    compdef _teiten teiten
fi
"""


def cmd_completion(parser: argparse.ArgumentParser, shell: str) -> int:
    print(bash(parser) if shell == "bash" else zsh(parser), end="")
    return 0
