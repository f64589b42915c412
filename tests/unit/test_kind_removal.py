"""A kind is its own modules and one line of a registry (issues 37 and 55): teiten without a kind
of server's folder (teiten/servers/KEY/) and its key in PLACE_KINDS, or without a workload's
modules and its names in the registry's import and entry, type-checks (mypy, with the
project's settings), imports every module, loads study files, and refuses the kind's study-file
key as one it does not know. Done here for the VM and Docker server kinds and the sysbench
workload, on a copy of the source tree."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import teiten

SRC = Path(teiten.__file__).parent
PYPROJECT = SRC.parent.parent / "pyproject.toml"

# kind: (its own files, relative to src/teiten; the registry lines without it: file, old, new)
KINDS: dict[str, tuple[tuple[str, ...], tuple[tuple[str, str, str], ...]]] = {
    "vm": (("servers/vm",), (("spec/servers.py", ', "vm")', ")"),)),
    "docker": (("servers/docker",), (("spec/servers.py", '"docker", ', ""),)),
    "sysbench": (("workloads/sysbench", "drivers/sysbench.py", "drivers/sysbench_output.py",
                  "spec/sysbench.py", "messages/texts.sysbench.yaml"),
                 (("spec/workloads.py", "from teiten.spec.sysbench import SysbenchSpec\n", ""),
                  ("spec/workloads.py", "    SysbenchSpec,\n", ""))),
}

# Each study uses the kind (the first must be refused without it); the last uses none.
STUDIES = {
    "vm": "servers: [{name: a, install: '17', vm: {vcpus: 1}}]\nworkloads: [pgecons-read]\n",
    "docker": "servers: [{name: a, install: '17', docker: {}}]\nworkloads: [pgecons-read]\n",
    "sysbench": "servers: [{name: a, install: '17'}]\nworkloads: [{name: sysbench, tables: 2}]\n",
}
# What the refusal names: the kind's key, or the sysbench option a pgbench workload does not have.
REFUSED = {"vm": "study.yaml:2: unknown key 'vm'", "docker": "study.yaml:2: unknown key 'docker'",
           "sysbench": "study.yaml:3: unknown key 'tables'"}
PLAIN = "servers: [{name: a, install: '17', ssh: u@h}]\nworkloads: [pgecons-read, pgecons-update]\n"

CHECK = """
import importlib, pkgutil, sys
import teiten
assert teiten.__file__.startswith(sys.argv[1]), teiten.__file__
for found in pkgutil.walk_packages(teiten.__path__, "teiten."):
    if found.name != "teiten.__main__":
        importlib.import_module(found.name)
from teiten.model.errors import UserError
from teiten.servers import kinds
from teiten.spec import json_schema, load_text
load_text("study: plain\\n" + sys.argv[3], "plain.yaml")
print("kinds", *sorted(k.name for k in kinds.KINDS))
print("schema", sys.argv[4] in json_schema())
try:
    load_text("study: s\\n" + sys.argv[2], "study.yaml")
except UserError as exc:
    print("refused", exc)
"""


def without(kind: str, into: Path) -> Path:
    """A copy of teiten's source without ``kind``: its files gone, its registry lines out."""
    top = into / "teiten"
    shutil.copytree(SRC, top, ignore=shutil.ignore_patterns("__pycache__"))
    files, lines = KINDS[kind]
    for name in files:
        path = top / name
        assert path.exists(), f"{kind}: {name} is not in the tree: update KINDS"
        shutil.rmtree(path) if path.is_dir() else path.unlink()
    for name, old, new in lines:
        text = (top / name).read_text()
        assert text.count(old) == 1, f"{kind}: {name} must hold {old!r} once, as its registration"
        (top / name).write_text(text.replace(old, new))
    return into


@pytest.fixture(scope="module")
def mypy_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One cache for the three runs of mypy: the modules they share are checked once."""
    return tmp_path_factory.mktemp("mypy-cache")


@pytest.mark.parametrize("kind", list(KINDS))
def test_teiten_works_without_the_kind(kind: str, tmp_path: Path, mypy_cache: Path) -> None:
    tree = without(kind, tmp_path)
    typed = subprocess.run([sys.executable, "-m", "mypy", "--config-file", str(PYPROJECT),
                            "--cache-dir", str(mypy_cache), "teiten"], cwd=tree,
                           capture_output=True, text=True, timeout=600, check=False)
    assert typed.returncode == 0, f"without {kind}: {typed.stdout[-3000:]}"
    done = subprocess.run([sys.executable, "-c", CHECK, str(tree), STUDIES[kind], PLAIN, kind],
                          env={"PYTHONPATH": str(tree), "PATH": "/usr/bin:/bin"},
                          capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    out = dict(line.split(" ", 1) for line in done.stdout.splitlines())
    assert kind not in out["kinds"].split()
    assert out["schema"] == "False", f"the JSON Schema still names {kind}"
    assert out["refused"].startswith(REFUSED[kind]), out["refused"]


def test_the_whole_tree_has_every_kind() -> None:
    """The same check on the whole tree: every kind's study loads (the test sees a removal)."""
    from teiten.servers import kinds
    from teiten.spec import load_text

    assert {"vm", "docker"} <= {k.name for k in kinds.KINDS}
    for study in STUDIES.values():
        load_text("study: s\n" + study, "study.yaml")
    for kind, (files, lines) in KINDS.items():
        assert all((SRC / name).exists() for name in files), kind
        assert all((SRC / name).read_text().count(old) == 1 for name, old, _ in lines), kind
