"""The code that touches the server account's files does so only through teiten.safefs
(issue 34): a static reading of ``servers/``, ``monitors/``, ``leftovers``, ``paths`` and
``oscache`` for calls that write, chown, chmod, remove, list or open a path.

A call is accepted when it goes through ``safefs`` (the module, or a ``safefs.Dir`` held in
a variable of one of the names below), is descriptor-relative (``dir_fd=``, ``os.f*``), runs
on an ssh host (where no account boundary exists), or its line says why its path is not one
the server account can write, with a ``# safe: <reason>`` comment on it or
within the three lines above."""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src" / "teiten"
FILES = sorted([*SRC.glob("servers/*.py"), *SRC.glob("monitors/*.py"),
                SRC / "leftovers.py", SRC / "paths.py", SRC / "oscache.py"])
OPERATIONS = {"write_text", "write_bytes", "read_text", "read_bytes", "open", "unlink", "rmdir",
              "rmtree", "chown", "chmod", "lchown", "mkdir", "makedirs", "rename",
              "symlink_to", "symlink", "touch", "remove", "mkdtemp", "iterdir", "glob", "rglob",
              "copyfile", "copytree", "move", "mkfifo", "hardlink_to"}
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
        if name not in OPERATIONS:
            continue
        if receiver.startswith(("safefs", "self.ssh")) or receiver in DIR_NAMES:
            continue
        if any(k.arg == "dir_fd" for k in node.keywords):
            continue
        statement = lines[max(node.lineno - 4, 0): (node.end_lineno or node.lineno)]
        if any("# safe:" in line for line in statement):
            continue
        found.append(f"{path.relative_to(SRC)}:{node.lineno}: {ast.unparse(node)[:100]}")
    return found


def test_server_paths_are_touched_only_through_safefs() -> None:
    found = [call for path in FILES for call in _unsafe_calls(path)]
    assert not found, "file operations outside teiten.safefs (use it, or say '# safe: why'):\n" \
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
