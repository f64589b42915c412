"""The command line fits a person's habits (issue 56, item 5), through the real CLI:
``teiten study list`` fits the terminal (COLUMNS, else the terminal's own width, else 80 in a pipe)
and never cuts a name; ``teiten completion bash`` completes in a real bash (its function called as
bash's programmable completion calls it), ``teiten completion zsh`` in a real interactive zsh
driven through a pseudo-terminal, Tab pressed."""

from __future__ import annotations

import fcntl
import os
import pty
import select
import shlex
import shutil
import struct
import subprocess
import termios
import time
from pathlib import Path

import pytest
from tests.conftest import ROOT, TEITEN, TEST_HOME, run_cli
from tests.requirements import missing

from teiten import spec, studies


def _descriptions() -> dict[str, str]:
    return {n: " ".join(spec.load_file(studies.path_of(n)).study.description.strip().split("\n")[0].split())
            for n in studies.names()}


def _listed(text: str) -> dict[str, str]:
    """The names and their (wrapped) texts of 'teiten study list', each text joined again."""
    found: dict[str, list[str]] = {}
    for line in text.splitlines():
        if line.startswith(" "):
            found[list(found)[-1]].append(line.strip())
        else:
            name, _, first = line.partition(" ")
            found[name] = [first.strip()] if first.strip() else []
    return {name: " ".join(parts) for name, parts in found.items()}


@pytest.mark.parametrize("columns", [60, 120, 30])
def test_study_list_fits_the_width_columns_gives(columns: int) -> None:
    done = run_cli("study", "list", env={"COLUMNS": str(columns)}, check=True)
    lines = done.stdout.splitlines()
    assert max(len(line) for line in lines) <= columns, done.stdout
    assert _listed(done.stdout) == _descriptions()  # every name whole, every word kept
    if columns >= 60:  # the texts beside the names, not under them
        assert lines[0].startswith("history ") and all(not line[:21].strip() or line[20] == " "
                                                       for line in lines)


def test_study_list_in_a_pipe_without_columns_is_80_wide() -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    env.update(TEITEN_HOME=str(TEST_HOME), PYTHONPATH=str(ROOT / "src"))
    done = subprocess.run([*TEITEN, "study", "list"], env=env, capture_output=True, text=True,
                          timeout=120, check=True)
    assert max(len(line) for line in done.stdout.splitlines()) == 80
    assert _listed(done.stdout) == _descriptions()


class Terminal:
    """A program on a pseudo-terminal ``columns`` wide, in a session of its own whose controlling
    terminal the pty is, as a terminal's shell is."""

    def __init__(self, argv: list[str], env: dict[str, str], columns: int) -> None:
        self.fd, child = pty.openpty()
        fcntl.ioctl(child, termios.TIOCSWINSZ, struct.pack("HHHH", 40, columns, 0, 0))
        self.proc = subprocess.Popen(argv, env=env, stdin=child, stdout=child, stderr=child,
                                     start_new_session=True,
                                     preexec_fn=lambda: fcntl.ioctl(0, termios.TIOCSCTTY, 0))
        os.close(child)
        self.out = bytearray()

    def wait_for(self, text: str | None, seconds: float = 60) -> str:
        """What it wrote, once ``text`` is in it (None: once it has ended), or after ``seconds``."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline and (text is None or text not in self.text()):
            if select.select([self.fd], [], [], 0.1)[0]:
                try:
                    chunk = os.read(self.fd, 65536)
                except OSError:  # EIO: it ended
                    chunk = b""
                if not chunk:
                    break
                self.out.extend(chunk)
        return self.text()

    def text(self) -> str:
        return self.out.decode(errors="replace").replace("\r\n", "\n")

    def type(self, text: bytes) -> None:
        os.write(self.fd, text)

    def close(self) -> None:
        self.proc.kill()
        self.proc.wait(timeout=60)
        os.close(self.fd)


def test_study_list_on_a_terminal_fits_its_width() -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    env.update(TEITEN_HOME=str(TEST_HOME), PYTHONPATH=str(ROOT / "src"))
    term = Terminal([*TEITEN, "study", "list"], env, 70)
    try:
        text = term.wait_for(None)
    finally:
        term.close()
    assert max(len(line) for line in text.splitlines()) == 70, text
    assert _listed(text) == _descriptions()


# -- completion -----------------------------------------------------------------------------

def _teiten_env(tmp_path: Path) -> dict[str, str]:
    """A PATH whose ``teiten`` is this checkout's, as the guide's ``source <(teiten completion ...)``
    finds it."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    (bin_dir / "teiten").write_text(f'#!/bin/sh\nexec {shlex.join(TEITEN)} "$@"\n', encoding="utf-8")
    (bin_dir / "teiten").chmod(0o755)
    return {"PATH": f"{bin_dir}:{os.environ['PATH']}", "PYTHONPATH": str(ROOT / "src"),
            "TEITEN_HOME": str(TEST_HOME), "HOME": str(tmp_path)}


def _bash_completes(env: dict[str, str], *lines: tuple[str, ...]) -> list[list[str]]:
    """What ``_teiten`` offers for each line of words (the last one being completed), called as
    bash's programmable completion calls it, in a real bash that loaded the script as the guide
    says (``source <(teiten completion bash)``)."""
    program = ["source <(teiten completion bash)", "complete -p teiten"]
    for words in lines:
        program += [f"COMP_WORDS=({shlex.join(words)}); COMP_CWORD={len(words) - 1}; COMPREPLY=()",
                    "_teiten", "printf '%s ' \"${COMPREPLY[@]}\"; echo '|'"]
    done = subprocess.run(["bash", "--norc", "--noprofile", "-c", "\n".join(program)], env=env,
                          capture_output=True, text=True, timeout=120, check=True)
    assert done.stderr == "", done.stderr
    loaded, *offered = done.stdout.splitlines()
    assert loaded == "complete -o default -F _teiten teiten"
    return [line.removesuffix("|").split() for line in offered]


def test_bash_completes_commands_options_choices_and_studies(tmp_path: Path) -> None:
    script = run_cli("completion", "bash", check=True).stdout
    assert subprocess.run(["bash", "-n"], input=script, text=True, check=False).returncode == 0
    cases: list[tuple[tuple[str, ...], list[str]]] = [
        (("teiten", "ru"), ["run"]),
        (("teiten", "run", "--st"), ["--store"]),
        (("teiten", "study", ""), ["list", "show"]),
        (("teiten", "re"), ["report", "results", "resume"]),
        (("teiten", "-v", "st"), ["store", "studies", "study"]),
        (("teiten", "study", "show", "s1"), [n for n in studies.names() if n.startswith("s1")]),
        (("teiten", "run", "quick"), ["quick-fixed-point"]),
        # Choices, after an option with a value (--store x.db) too, and as --lang=j.
        (("teiten", "results", "--store", "x.db", "--format", ""), ["bmf", "csv", "json", "openmetrics",
                                                                   "table"]),
        (("teiten", "run", "--lang", "=", "j"), ["ja"]),
        (("teiten", "completion", ""), ["bash", "zsh"]),
        (("teiten", "store", "copy", "--"), ["--help", "--study-id", "--verbose"]),
        # Files are bash's own (complete -o default): nothing offered, for bash to list them.
        (("teiten", "report", "--store", ""), []),
    ]
    got = _bash_completes(_teiten_env(tmp_path), *(words for words, _ in cases))
    assert [sorted(g) for g in got] == [sorted(want) for _, want in cases]


def _zsh() -> str:
    found = shutil.which("zsh")
    if found is None:
        missing("no zsh; make system installs it")
    return found


def test_zsh_completes_in_a_real_interactive_zsh(tmp_path: Path) -> None:
    zsh = _zsh()
    script = run_cli("completion", "zsh", check=True).stdout
    assert subprocess.run([zsh, "-n"], input=script, text=True, check=False).returncode == 0
    (tmp_path / ".zshrc").write_text(  # as the guide says
        "PS1='ready> '\nautoload -U compinit && compinit -u -d $ZDOTDIR/.zcompdump\n"
        "source <(teiten completion zsh)\n", encoding="utf-8")
    env = {**_teiten_env(tmp_path), "ZDOTDIR": str(tmp_path), "TERM": "dumb"}
    for typed, shown in ((b"teiten ru\t", "teiten run "), (b"teiten run --st\t", "teiten run --store="),
                         (b"teiten study show quick\t", "teiten study show quick-fixed-point "),
                         (b"teiten results --format o\t", "teiten results --format openmetrics "),
                         # Two subcommands: listed with what each does.
                         (b"teiten study \t", "show  -- print a built-in study file")):
        term = Terminal([zsh, "-i"], env, 100)
        try:
            term.wait_for("ready> ", 30)
            term.type(typed)
            text = term.wait_for(shown, 30)
        finally:
            term.close()
        assert shown in text, (typed, text)
    assert "list  -- list the built-in studies" in text, text
