"""The layout of the package keeps the flow of data (issue 17): no import against it, no cycle,
no import hidden inside a function, the model at the bottom, and no module of code too long."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
SRC = ROOT / "src" / "teiten"


def test_no_import_runs_against_the_flow_and_there_is_no_cycle() -> None:
    done = subprocess.run([sys.executable, str(ROOT / "scripts" / "import-graph.py"), "--check"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Against the flow (0)" in done.stdout and "Import cycles" in done.stdout


def test_the_model_wing_imports_nothing_of_teitens_but_itself() -> None:
    """model/ (the results, the stored study's typed record, the errors) is the bottom floor."""
    modules = sorted((SRC / "model").glob("*.py"))
    assert {p.stem for p in modules} >= {"results", "studyrecord", "errors"}
    for path in modules:
        tree = ast.parse(path.read_text())
        imported = [n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)]
        imported += [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
        outside = [m for m in imported if m.startswith("teiten") and not m.startswith("teiten.model")]
        assert not outside, (path.name, outside)


def _teiten_imports(path: Path) -> list[str]:
    tree = ast.parse(path.read_text())
    found = [n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)]
    found += [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
    return [m for m in found if m == "teiten" or m.startswith("teiten.")]


def test_the_catalogue_imports_nothing_of_teitens() -> None:
    """docs/DESIGN.md and messages/__init__.py: the report and the CLI both word from it."""
    for path in sorted((SRC / "messages").glob("*.py")):
        assert not _teiten_imports(path), path.name


def test_a_kind_of_servers_folder_is_entered_through_nothing() -> None:
    """docs/DESIGN.md, 'A server kind': the study files load servers/KEY/spec.py, which runs
    the folder's __init__.py first; it imports nothing, and spec.py nothing above spec/."""
    kinds = sorted(p for p in (SRC / "servers").iterdir() if (p / "kind.py").exists())
    assert {p.name for p in kinds} >= {"docker", "external", "local", "ssh", "vm"}
    for folder in kinds:
        assert not _teiten_imports(folder / "__init__.py"), folder.name
        if (folder / "spec.py").exists():
            above = [m for m in _teiten_imports(folder / "spec.py")
                     if not m.startswith(("teiten.spec", "teiten.host", "teiten.model"))]
            assert not above, (folder.name, above)


def test_at_most_eight_modules_lie_loose_at_the_top_of_the_package() -> None:
    """Every module belongs to a wing whose name says what it is for (issue 55): the top of
    src/teiten holds the package's own files only."""
    loose = sorted(p.name for p in SRC.glob("*.py"))
    assert len(loose) <= 8, loose


def test_no_module_of_code_is_over_500_lines() -> None:
    long = {str(p.relative_to(SRC)): n for p in SRC.rglob("*.py")
            if (n := len(p.read_text().splitlines())) > 500}
    assert not long, f"split these by responsibility (docs/STYLE.md, 'Layout'): {long}"


def test_the_design_documents_rank_table_is_the_checkers() -> None:
    """The table of ranks in docs/DESIGN.md lists every area of RANKS in scripts/import-graph.py
    at its rank, and no other (its rank 0 had left out studyrecord, trust and client_account)."""
    text = (ROOT / "scripts" / "import-graph.py").read_text()
    ranks = ast.literal_eval(text.split("RANKS = ", 1)[1].split("\n}\n", 1)[0] + "\n}")
    table = (ROOT / "docs" / "DESIGN.md").read_text().split("| rank | areas |", 1)[1]
    listed: dict[str, float] = {}
    for row in table.split("\n\n", 1)[0].splitlines()[2:]:
        cells = row.split("|")
        for level, areas in zip(cells[1].split(","), cells[2].split(";"), strict=True):
            listed |= {a.strip(" `"): float(level) for a in areas.split(",")}
    assert listed == {area: float(rank) for area, rank in ranks.items()}
