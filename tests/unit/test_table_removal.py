"""A report table is its own folder (issue 55, item 3): teiten/tables/KEY/ holds its figures
(``__init__.py``), its table (``table.py``) and its words (``texts.yaml``), and its ``ORDER`` in
that folder registers it. Deleting the folder of S7's scale-out table from a copy of the source
tree leaves a teiten that imports every module and reports the golden replication store with
every other table, its words and its data as before, and without that table; no module outside
a table's folder names it."""

from __future__ import annotations

import csv
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import teiten
from teiten.analysis import tables

SRC = Path(teiten.__file__).parent
STORE = SRC.parent.parent / "tests" / "golden" / "report-stores" / "replication.db"

CHECK = """
import importlib, pkgutil, sys
import teiten
assert teiten.__file__.startswith(sys.argv[1]), teiten.__file__
for found in pkgutil.walk_packages(teiten.__path__, "teiten."):
    if found.name != "teiten.__main__":
        importlib.import_module(found.name)
from teiten.analysis import tables
print(" ".join(tables.in_order()))
"""


def _tree(into: Path, without: str | None) -> Path:
    top = into / "teiten"
    shutil.copytree(SRC, top, ignore=shutil.ignore_patterns("__pycache__"))
    if without is not None:
        shutil.rmtree(top / "tables" / without)
    return into


def _run(tree: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, *args], env={"PYTHONPATH": str(tree), "PATH": "/usr/bin:/bin"},
                          capture_output=True, text=True, timeout=300, check=False)


def _report(tree: Path, out: Path, lang: str) -> tuple[str, dict[str, list[list[str]]], set[str]]:
    store = out.parent / f"{out.name}.db"
    shutil.copyfile(STORE, store)  # a store opened is checkpointed: never the golden file itself
    done = _run(tree, "-m", "teiten", "report", "--store", str(store), "--out", str(out), "--lang", lang)
    assert done.returncode == 0, done.stderr[-3000:]
    csvs = {p.name: list(csv.reader(p.open())) for p in sorted((out / "tables").glob("*.csv"))}
    kinds = {t["kind"] for t in json.loads((out / "tables.json").read_text())["tables"]}
    return (out / "report.md").read_text(), csvs, kinds


@pytest.mark.parametrize("lang", ["en", "ja"])
def test_teiten_reports_without_a_table_s_folder(lang: str, tmp_path: Path) -> None:
    whole, less = _tree(tmp_path / "whole", None), _tree(tmp_path / "less", "scale_out")
    listed = _run(less, "-c", CHECK, str(less))
    assert listed.returncode == 0, listed.stderr[-3000:]
    assert listed.stdout.split() == [k for k in tables.in_order() if k != "scale_out"]

    md, csvs, kinds = _report(whole, tmp_path / "a", lang)
    md_less, csvs_less, kinds_less = _report(less, tmp_path / "b", lang)
    heading = {"en": "replication scale-out", "ja": "レプリケーションのスケールアウト"}[lang]
    assert "scaleout" in kinds and "load" in kinds and heading in md
    assert kinds_less == kinds - {"scaleout"} and heading not in md_less
    gone = {name for name in csvs if name.endswith("-scaleout.csv")}
    assert gone and set(csvs_less) == set(csvs) - gone
    assert all(csvs_less[name] == rows for name, rows in csvs.items() if name not in gone)


def test_no_module_outside_a_table_s_folder_names_it() -> None:
    """The core reaches a table only through teiten.analysis.tables and report/parts.py, which
    name none: a table's key appears in no module outside its folder."""
    keys = tables.in_order()
    assert {"scale_out", "load_parts", "percentiles", "limits"} <= set(keys)
    for path in SRC.rglob("*.py"):
        inside = path.relative_to(SRC).parts
        text = path.read_text(encoding="utf-8")
        for key in keys:
            if inside[:2] != ("tables", key):
                assert f"tables.{key}" not in text and f"tables/{key}" not in text, (path, key)
