"""The core never branches on a kind (issue 37): the runner, the measured window, the plan, the
checks, the analysis and the report reach server kinds, workloads and monitors through their
registries and base modules only, and never compare a stored kind, suite or app with a literal
name.

What is left to move (the workloads' and monitors' own report parts, issue 37 items 3 and 4) is
listed in PENDING, exactly: a new import or comparison fails, and so does an entry that no
longer occurs, so that the list only shrinks.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

from teiten.servers import kinds
from teiten.spec.servers import PLACE_KEYS as PLACES

SRC = Path(__file__).resolve().parent.parent.parent / "src" / "teiten"
CORE = ["run/runner.py", "run/window.py", "run/plan.py", "run/check.py", "analysis", "report"]

# The modules of each extensible area that the core may import: registries, base modules, and
# what every kind shares (settings profiles, the read-back of settings, standbys' rules).
ALLOWED = {
    "teiten.servers": {"base", "kind", "kinds", "profiles", "pg_settings", "replication"},
    "teiten.workloads": {"base", "statements", "apps"},
    "teiten.monitors": {"base", "registry"},
}
# Fields whose value names a kind, suite or app, as the store keeps them.
NAMED_FIELDS = {"suite", "app"}
SERVER_KINDS = {k.name for k in kinds.KINDS} | {"tenants"}

PENDING: set[tuple[str, str]] = set()


def core_files() -> Iterator[Path]:
    for name in CORE:
        path = SRC / name
        yield from sorted(path.rglob("*.py")) if path.is_dir() else [path]


def _module(path: Path) -> str:
    parts = list(path.relative_to(SRC.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported(tree: ast.AST, module: str) -> Iterator[str]:
    """Every teiten module an import in ``tree`` names (``from a import b`` gives a.b: b may be
    a module)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = module.split(".")[: len(module.split(".")) - node.level + 1]
                base = ".".join([*up, *([node.module] if node.module else [])])
            yield from (f"{base}.{a.name}" for a in node.names)


def concrete(name: str) -> str | None:
    """The concrete kind, workload or monitor module ``name`` reaches, or None."""
    for area, allowed in ALLOWED.items():
        if name.startswith(area + "."):
            first = name.removeprefix(area + ".").split(".")[0]
            if first not in allowed and _is_module(area, first):
                return ".".join(name.split(".")[: area.count(".") + 2 + _depth(area, name)])
    return None


def _is_module(area: str, first: str) -> bool:
    folder = SRC.parent.joinpath(*area.split("."))
    return (folder / f"{first}.py").exists() or (folder / first).is_dir()


def _depth(area: str, name: str) -> int:
    """How many levels below the area's module the import reaches a module (a package's own)."""
    parts = name.split(".")
    folder = SRC.parent.joinpath(*parts[: area.count(".") + 2])
    depth = 0
    for part in parts[area.count(".") + 2:]:
        if not ((folder / f"{part}.py").exists() or (folder / part).is_dir()):
            break
        folder, depth = folder / part, depth + 1
    return depth


def literal_comparisons(tree: ast.AST) -> Iterator[str]:
    """Comparisons of a suite or app field, or of a kind field with a server kind's name, with
    a string literal."""
    for node in ast.walk(tree):
        if not isinstance(node, ast.Compare):
            continue
        sides = [node.left, *node.comparators]
        names = {_field(side) for side in sides}
        literals = {e.value for side in sides for e in ([side] + list(getattr(side, "elts", [])))
                    if isinstance(e, ast.Constant) and isinstance(e.value, str)}
        if literals and (names & NAMED_FIELDS or ("kind" in names and literals & SERVER_KINDS)):
            yield ast.unparse(node)


def _field(node: ast.AST) -> str | None:
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant):
        return str(node.slice.value)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get" \
            and node.args and isinstance(node.args[0], ast.Constant):
        return str(node.args[0].value)
    return None


def found() -> set[tuple[str, str]]:
    out: set[tuple[str, str]] = set()
    for path in core_files():
        tree = ast.parse(path.read_text())
        where = str(path.relative_to(SRC))
        out |= {(where, f"import {m}") for name in imported(tree, _module(path))
                if (m := concrete(name))}
        out |= {(where, text) for text in literal_comparisons(tree)}
    return out


def test_the_core_reaches_kinds_only_through_registries() -> None:
    now = found()
    new = sorted(now - PENDING)
    assert not new, f"the core branches on a kind: go through a registry or a base module: {new}"
    gone = sorted(PENDING - now)
    assert not gone, f"moved behind a registry: take these off PENDING: {gone}"


def test_the_scan_sees_what_it_forbids() -> None:
    tree = ast.parse("from teiten.servers import docker, kinds\nimport teiten.monitors.system\n"
                     "from teiten.workloads.fulltext import strengths\nfrom teiten.servers.base import Server\n"
                     "if row.kind == 'ssh' or spec['suite'] in ('iot', 'x') or s.get('app') != 'tpcc':\n"
                     "    pass\nif finding.kind == 'peak':\n    pass\n")
    imports = {m for name in imported(tree, "teiten.report.x") if (m := concrete(name))}
    assert imports == {"teiten.servers.docker", "teiten.monitors.system",
                       "teiten.workloads.fulltext.strengths"}
    assert sorted(literal_comparisons(tree)) == [
        "row.kind == 'ssh'", "s.get('app') != 'tpcc'", "spec['suite'] in ('iot', 'x')"]


def test_every_server_kind_is_registered_once_with_its_own_name() -> None:
    names = [k.name for k in kinds.KINDS]
    assert len(set(names)) == len(names) and all(names)
    assert sorted(str(k.field) for k in kinds.KINDS) == sorted([*PLACES, "None"]), \
        "one kind per place a study's server can run, and one default"
