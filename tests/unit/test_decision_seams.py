"""Analysis decides, the report renders (issue 55, item 2): the commands that only decide
(``teiten gate``, ``bisect``, ``store summarize``) word their figures from ``teiten.words`` and never
import the report; analysis asks no kind of server or workload module; and neither analysis, the
words nor the report name a kind, suite, application or stored metric as a string literal; the
report reads no store (analysis's gatherers do).

What is left to move behind a feature's own registration (issue 55, item 3) is listed in
PENDING, exactly: a new import or literal fails, and so does an entry that no longer occurs, so
that the list only shrinks.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

from teiten.monitors import registry
from teiten.servers import kinds
from teiten.workloads import statements
from teiten.workloads.apps import APPS

SRC = Path(__file__).resolve().parent.parent.parent / "src" / "teiten"
DECIDING = ("cli/gate.py", "cli/bisect.py", "cli/stores.py")
FORBIDDEN_TO_ANALYSIS = ("teiten.servers.kinds", "teiten.workloads", "teiten.features")

PENDING: set[tuple[str, str]] = set()


def _modules(tree: ast.AST) -> Iterator[str]:
    """Every teiten module or name an import in ``tree`` names (``from a import b`` gives a.b)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            yield node.module
            yield from (f"{node.module}.{a.name}" for a in node.names)


def _names() -> dict[str, set[str]]:
    """The names the core must not write: each kind of server, suite, application and stored
    metric, as their registries give them."""
    # Not "tenants": a group of servers is no kind of the registry, and the word is the study
    # file's key of groups and the key of each member's start in a group's cycle, which analysis
    # reads as the store keeps them (a comparison with a group's kind: test_extension_seams).
    return {"kind": {k.name for k in kinds.KINDS},
            "suite": set(statements.SUITE_NAMES), "app": set(APPS),
            "metric": {m.name for kind in registry.KINDS for m in kind.metrics}}


def _literals(tree: ast.Module) -> Iterator[str]:
    """The string constants of ``tree`` that are not docstrings."""
    docstrings = {id(body[0].value) for node in ast.walk(tree)
                  if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
                  and (body := node.body) and isinstance(body[0], ast.Expr)
                  and isinstance(body[0].value, ast.Constant)}
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
            yield node.value


def found_in(path: Path, where: str, names: dict[str, set[str]]) -> set[tuple[str, str]]:
    tree = ast.parse(path.read_text())
    out: set[tuple[str, str]] = set()
    if where.startswith("analysis/"):
        out |= {(where, f"import {forbidden}") for m in _modules(tree)
                for forbidden in FORBIDDEN_TO_ANALYSIS if m == forbidden or m.startswith(forbidden + ".")}
    for text in _literals(tree):
        out |= {(where, f"{what} {text!r}") for what, known in names.items() if text in known}
    return out


def found() -> set[tuple[str, str]]:
    names = _names()
    return {hit for area in ("analysis", "words", "report") for path in sorted((SRC / area).rglob("*.py"))
            for hit in found_in(path, str(path.relative_to(SRC)), names)}


def test_the_commands_that_only_decide_never_import_the_report() -> None:
    for name in DECIDING:
        imported = sorted(m for m in _modules(ast.parse((SRC / name).read_text()))
                          if m == "teiten.report" or m.startswith("teiten.report."))
        assert not imported, f"{name} imports the report ({imported}): word it from teiten.words"


def test_analysis_and_the_report_name_no_feature_and_ask_no_kind() -> None:
    now = found()
    new = sorted(now - PENDING)
    assert not new, f"name a feature through its registration, not in the core: {new}"
    gone = sorted(PENDING - now)
    assert not gone, f"moved behind a registration: take these off PENDING: {gone}"


def store_reads(tree: ast.AST) -> Iterator[str]:
    """The calls of a method of the store (``store.trials(...)``, ``old_store.study(...)``) in
    ``tree``: any call on a name that holds a store, of a method the Store class defines."""
    from teiten.store import Store

    methods = {name for name, value in vars(Store).items() if callable(value) or isinstance(value, classmethod)}
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and isinstance(node.func.value, ast.Name) and "store" in node.func.value.id.lower() \
                and node.func.attr in methods:
            yield f"{node.func.value.id}.{node.func.attr}()"


def test_the_report_reads_no_store() -> None:
    """The store's readers are analysis's (teiten.analysis.gather): the report is given what it
    renders, and names a store only to say where the figures came from."""
    for path in [*sorted((SRC / "report").rglob("*.py")), *sorted((SRC / "tables").glob("*/table.py"))]:
        tree = ast.parse(path.read_text())
        reads = sorted(store_reads(tree))
        where = path.relative_to(SRC)
        assert not reads, f"{where} reads the store ({reads}): read it in teiten.analysis.gather"
        imported = sorted(m for m in _modules(tree) if m.startswith("teiten.store")
                          and m not in ("teiten.store", "teiten.store.Store"))
        assert not imported, f"{path.relative_to(SRC)} imports the store's modules: {imported}"


def test_the_scan_sees_what_it_forbids(tmp_path: Path) -> None:
    sample = tmp_path / "x.py"
    sample.write_text('"""Mentions \'iot\' in a docstring, which is allowed."""\n'
                      "from teiten.servers import kinds\nfrom teiten.workloads.apps import APPS\n"
                      "def f(row):\n    return row.kind == 'docker' or row.metrics['cpu_steal']\n")
    names = _names()
    assert found_in(sample, "analysis/x.py", names) == {
        ("analysis/x.py", "import teiten.servers.kinds"), ("analysis/x.py", "import teiten.workloads"),
        ("analysis/x.py", "kind 'docker'"), ("analysis/x.py", "metric 'cpu_steal'")}
    assert found_in(sample, "report/x.py", names) == {
        ("report/x.py", "kind 'docker'"), ("report/x.py", "metric 'cpu_steal'")}
    assert sorted(store_reads(ast.parse("rows = store.trials(1)\nx = other_store.details_of_kind(1, 'p')\n"
                                        "y = store.address.absolute()\nz = study.trials\n"))) == [
        "other_store.details_of_kind()", "store.trials()"]
    bad = tmp_path / "gate.py"
    bad.write_text("from teiten.report import gate as words\n")
    assert [m for m in _modules(ast.parse(bad.read_text())) if m.startswith("teiten.report")]
