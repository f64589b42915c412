"""The code that touches the server account's files does so only through teiten.host.safefs
(issue 34): a static reading of ``servers/``, ``monitors/``, ``leftovers``, ``paths`` and
``oscache`` for calls that write, chown, chmod, remove, list or open a path.

A call is accepted when it goes through ``safefs`` (the module, or a ``safefs.Dir`` held in
a variable of one of the names below), is descriptor-relative (``dir_fd=``, on a ``.fd``),
is a program run as the server account (``run_as=``), runs on an ssh host (where no account
boundary exists), or its line says why its path is not one the server account can write,
with a ``# safe: <reason>`` comment on it or within the three lines above."""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src" / "teiten"
FILES = sorted([*SRC.glob("servers/**/*.py"), *SRC.glob("monitors/*.py"),
                *(SRC / f"{name}.py" for name in ("run/leftovers", "host/paths", "host/oscache", "host/netns",
                                                   "run/runlock", "host/cpus", "host/privileges"))])
OPERATIONS = {"write_text", "write_bytes", "read_text", "read_bytes", "open", "unlink", "rmdir",
              "rmtree", "chown", "chmod", "lchown", "mkdir", "makedirs", "rename",
              "symlink_to", "symlink", "touch", "remove", "mkdtemp", "iterdir", "glob", "rglob",
              "copyfile", "copytree", "move", "mkfifo", "hardlink_to", "scandir", "listdir",
              "readlink", "walk"}
# Programs that open or write what they are given by name, started by teiten.
PROGRAMS = {"cp", "rm", "mv", "ln", "chown", "chmod", "tar", "rsync", "fincore"}
DIR_NAMES = {"directory", "top", "dst", "sub", "parent", "made", "run", "old", "where"}


def _unsafe_calls(path: Path) -> list[str]:
    source = path.read_text()
    lines = source.splitlines()
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        if isinstance(func, ast.Name):
            name, receiver = func.id, ""
        elif isinstance(func, ast.Attribute):
            name, receiver = func.attr, ast.unparse(func.value)
        else:
            continue
        program = node.args and isinstance(node.args[0], ast.List) and node.args[0].elts and \
            isinstance(node.args[0].elts[0], ast.Constant) and node.args[0].elts[0].value in PROGRAMS
        if name not in OPERATIONS and not (name in ("run", "spawn") and program):
            continue
        if node.args and ast.unparse(node.args[0]).endswith(".fd"):
            continue  # on a descriptor safefs opened
        if receiver.startswith(("safefs", "self.ssh")) or receiver in DIR_NAMES:
            continue
        if receiver.endswith(".ssh"):
            continue  # a host's command channel (teiten.host.remote.Ssh): the file is on that host
        if any(k.arg == "dir_fd" for k in node.keywords) or (program and any(
                k.arg == "run_as" for k in node.keywords)):
            continue  # descriptor-relative, or a program run as the server account itself
        statement = lines[max(node.lineno - 4, 0): (node.end_lineno or node.lineno)]
        if any("# safe:" in line for line in statement):
            continue
        found.append(f"{path.relative_to(SRC)}:{node.lineno}: {ast.unparse(node)[:100]}")
    return found


def test_server_paths_are_touched_only_through_safefs() -> None:
    found = [call for path in FILES for call in _unsafe_calls(path)]
    assert not found, "file operations outside teiten.host.safefs (use it, or say '# safe: why'):\n" \
        + "\n".join(found)


def test_the_reading_finds_a_plain_write(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text("from pathlib import Path\n"
                      "def f(data: Path) -> None:\n"
                      "    (data / 'teiten-runtime.conf').write_text('port = 1')\n"
                      "    safefs.write_text(data / 'x', 'y')\n"
                      "    data.chmod(0o700)  # safe: a directory of root's\n")
    global SRC
    saved, SRC = SRC, tmp_path
    try:
        assert [c.split(":")[1] for c in _unsafe_calls(sample)] == ["3"]
    finally:
        SRC = saved
