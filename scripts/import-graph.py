#!/usr/bin/env python3
"""The import graph of src/teiten: edges between folders, imports against the flow, cycles, and
imports inside functions.

Usage: python3 scripts/import-graph.py [--edges] [--check]

The flow of data (docs/DESIGN.md, "Layers and the import rule") ranks each folder or top-level
module; an import from a lower rank to a higher one runs against the flow. Two areas of one rank
above the base may not import each other.
`--check` exits 1 when anything is against the flow, in a cycle, or imported inside a function without a reason
written on the line (`# late: ...`).
"""

from __future__ import annotations

import ast
import fnmatch
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent / "src"
PACKAGE = "teiten"

# Rank of each area along spec -> plan -> (installs, servers, workloads, monitors) -> store -> analysis
# -> report.
# The store and the model sit low because everything writes or reads them; the server interface sits below the
# workloads that drive it; the runner and the CLI sit on top of everything, and nothing imports them.
RANKS = {
    "model": 0, "messages": 0,
    "host": 0.5,
    "spec": 1,
    "installs": 2, "studies": 2, "store": 2,
    "monitors": 3,
    "servers": 4,
    "drivers": 5,
    "workloads": 6,
    "analysis": 8,
    "features": 8.25,
    "words": 8.5,
    "report": 9,
    "run": 10,
    "cli": 11, "__main__": 12, "__init__": 12,
}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


# A module that lives in one wing and stands on the floor of another: a kind of server's study-file
# key (teiten/servers/KEY/spec.py) is read with the study files, so it counts as `spec` and may
# import nothing above it.
# A table of a workload's section (teiten/tables/KEY/) makes its figures in its __init__.py, on
# analysis's floor, draws them in its table.py, on the report's, and may measure them in its
# monitor.py, on the monitors'.
ELSEWHERE = {"servers.*.spec": "spec", "tables.*.table": "report", "tables.*.monitor": "monitors",
             "tables": "analysis",
             "tables.*": "analysis"}


def area(module: str) -> str:
    parts = module.split(".")
    inner = ".".join(parts[1:])
    for pattern, other in ELSEWHERE.items():
        if fnmatch.fnmatchcase(inner, pattern):
            return other
    return parts[1] if len(parts) > 1 else "__init__"


def resolve(module: str, is_package: bool, node: ast.ImportFrom | ast.Import, known: set[str]) -> list[str]:
    """The teiten modules that one import statement names."""
    targets: list[str] = []
    if isinstance(node, ast.Import):
        names = [alias.name for alias in node.names]
    else:
        if node.level:
            base = module.split(".")
            base = base if is_package else base[:-1]
            base = base[: len(base) - (node.level - 1)]
            prefix = ".".join(base + ([node.module] if node.module else []))
        else:
            prefix = node.module or ""
        names = [f"{prefix}.{alias.name}" for alias in node.names] + [prefix]
        # `from teiten.x import y`: y is a module when teiten.x.y exists, else a name inside teiten.x.
        names = [n for n in names if n in known] or [prefix]
        if len(names) > 1 and prefix in names:
            names.remove(prefix)
    for name in names:
        while name and name not in known:
            name = name.rpartition(".")[0]
        if name.startswith(PACKAGE + ".") and name != module:
            targets.append(name)
    return targets


def collect() -> tuple[dict[str, set[str]], list[tuple[str, str, int, str]]]:
    files = {module_name(p): p for p in ROOT.joinpath(PACKAGE).rglob("*.py")}
    known = set(files)
    top: dict[str, set[str]] = defaultdict(set)
    late: list[tuple[str, str, int, str]] = []
    for module, path in sorted(files.items()):
        source = path.read_text()
        tree = ast.parse(source)
        lines = source.splitlines()
        is_package = path.name == "__init__.py"
        inside: set[int] = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                for sub in ast.walk(node):
                    if isinstance(sub, ast.Import | ast.ImportFrom):
                        inside.add(id(sub))
        for node in ast.walk(tree):
            if not isinstance(node, ast.Import | ast.ImportFrom):
                continue
            if isinstance(node, ast.ImportFrom) and node.module == "__future__":
                continue
            for target in resolve(module, is_package, node, known):
                if id(node) in inside:
                    late.append((module, target, node.lineno, lines[node.lineno - 1]))
                elif not _type_checking_only(tree, node):
                    top[module].add(target)
    return top, late


def _type_checking_only(tree: ast.Module, node: ast.AST) -> bool:
    for stmt in tree.body:
        if (isinstance(stmt, ast.If) and "TYPE_CHECKING" in ast.unparse(stmt.test)
                and any(sub is node for sub in ast.walk(stmt))):
            return True
    return False


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found: list[list[str]] = []
    counter = [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(set(graph) | {w for ws in graph.values() for w in ws}):
        if v not in index:
            visit(v)
    return found


def main(argv: list[str]) -> int:
    top, late = collect()
    area_edges: dict[tuple[str, str], int] = defaultdict(int)
    against: list[str] = []
    for module, targets in sorted(top.items()):
        for target in sorted(targets):
            a, b = area(module), area(target)
            if a == b:
                continue
            area_edges[(a, b)] += 1
            ra, rb = RANKS[a], RANKS[b]
            if ra < rb or (ra == rb and ra > 0):
                against.append(f"  {module} -> {target}  ({a} rank {ra} -> {b} rank {rb})")
    if "--edges" in argv:
        print("Imports between areas (count of module pairs):")
        for (a, b), n in sorted(area_edges.items()):
            print(f"  {a} -> {b}: {n}")
    print(f"Against the flow ({len(against)}):")
    print("\n".join(against) or "  none")
    every: dict[str, set[str]] = defaultdict(set, {m: set(t) for m, t in top.items()})
    for module, target, _, _ in late:
        every[module].add(target)
    loops = cycles(every)
    print(f"Import cycles, counting imports inside functions ({len(loops)}):")
    for comp in loops:
        print("  " + " <-> ".join(comp))
    if not loops:
        print("  none")
    unexplained = [item for item in late if "# late:" not in item[3]]
    print(f"Imports inside functions ({len(late)}, {len(unexplained)} without a '# late:' reason):")
    for module, target, line, _ in late:
        print(f"  {module}:{line} -> {target}")
    if "--check" in argv and (against or loops or unexplained):
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
