"""A report table is its own folder (issue 55, item 3): teiten/tables/KEY/ holds its figures
(``__init__.py``), its table (``table.py``) and its words (``texts.yaml``), and its ``ORDER`` in
that folder registers it; the monitor that measures what it shows may live there too
(``monitor.py``). Deleting the folder of S7's scale-out table from a copy of the source
tree leaves a teiten that imports every module and reports the golden replication store with
every other table, its words and its data as before, and without that table; deleting the
limits table's folder takes its monitor and words with it; no module outside a table's folder
names it."""

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
from teiten.messages import texts
from teiten.monitors import registry
print(" ".join(tables.in_order()))
print(" ".join(k.name for k in registry.KINDS))
print(registry.label("limit_read_iops"), len(texts()))
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
    assert listed.stdout.splitlines()[0].split() == [k for k in tables.in_order() if k != "scale_out"]

    md, csvs, kinds = _report(whole, tmp_path / "a", lang)
    md_less, csvs_less, kinds_less = _report(less, tmp_path / "b", lang)
    heading = {"en": "replication scale-out", "ja": "レプリケーションのスケールアウト"}[lang]
    assert "scaleout" in kinds and "load" in kinds and heading in md
    # the folder's table, the strengths of each method beside it and its figure go together
    # (issue 57, items 2 and 3)
    assert "scaleout-strengths" in kinds and "-scaleout.svg" in md
    assert kinds_less == kinds - {"scaleout", "scaleout-strengths"} and heading not in md_less
    assert "-scaleout.svg" not in md_less
    gone = {name for name in csvs if name.endswith(("-scaleout.csv", "-scaleout-strengths.csv"))}
    assert gone and set(csvs_less) == set(csvs) - gone
    assert all(csvs_less[name] == rows for name, rows in csvs.items() if name not in gone)


def test_a_table_s_monitor_goes_with_its_folder(tmp_path: Path) -> None:
    """The limits table's folder holds the monitor that measures what it shows: without the
    folder, teiten has neither, and its metrics have no words (teiten show prints their names)."""
    from teiten.messages import texts
    from teiten.monitors import registry

    assert "limits" in [k.name for k in registry.KINDS]
    assert registry.label("limit_read_iops") != "limit_read_iops"
    less = _tree(tmp_path / "less", "limits")
    listed = _run(less, "-c", CHECK, str(less))
    assert listed.returncode == 0, listed.stderr[-3000:]
    keys, monitors, words = listed.stdout.splitlines()
    assert keys.split() == [k for k in tables.in_order() if k != "limits"]
    assert monitors.split() == [k.name for k in registry.KINDS if k.name != "limits"]
    label, count = words.split()
    ours = sum(1 for line in (SRC / "tables" / "limits" / "texts.yaml").read_text().splitlines()
               if line and line[0] not in " #")
    assert label == "limit_read_iops" and int(count) == len(texts()) - ours


def test_no_module_outside_a_table_s_folder_names_it() -> None:
    """The core reaches a table only through teiten.analysis.tables and report/parts.py, which
    name none: a table's key appears in no module outside its folder."""
    keys = tables.in_order()
    assert {"rtt", "scale_out", "load_parts", "percentiles", "limits"} <= set(keys)
    for path in SRC.rglob("*.py"):
        inside = path.relative_to(SRC).parts
        text = path.read_text(encoding="utf-8")
        for key in keys:
            if inside[:2] != ("tables", key):
                assert f"tables.{key}" not in text and f"tables/{key}" not in text, (path, key)
