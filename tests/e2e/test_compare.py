"""One report across studies, and the guard against comparing different machines."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from tests.conftest import run_cli

STUDY = """
study: {name}
servers: [{{name: {server}, install: "{install}"}}]
workloads: [select-only]
scale: 1
clients: [1, 2]
duration: 1s
repetitions: 1
"""


def _run(workdir: Path, name: str, server: str, install: str) -> Path:
    study = workdir / f"{name}.yaml"
    study.write_text(STUDY.format(name=name, server=server, install=install))
    store = workdir / f"{name}.db"
    done = run_cli("run", str(study), "--store", str(store), "--no-report")
    assert done.returncode == 0, done.stderr
    return store


def test_compare_two_years_and_refuse_mixed_machines(pg17, pg18, workdir: Path) -> None:
    old = _run(workdir, "year2025", "pg17", "17")
    new = _run(workdir, "year2026", "pg18", "18")
    out = workdir / "cmp"
    done = run_cli("compare", "--store", str(old), "--store", str(new), "--out", str(out),
                   "--degradation", "pg17:pg18")
    assert done.returncode == 0, done.stderr
    md = (out / "report.md").read_text()
    assert "pg17" in md and "pg18" in md and "year2025 + year2026" in md
    assert "pg18 / pg17" in md  # the first study's first server is the baseline
    # A store from another machine: same data, another CPU model in its fingerprint.
    with sqlite3.connect(new) as conn:
        fp = json.loads(conn.execute("SELECT fingerprint FROM studies").fetchone()[0])
        fp["cpu_model"] = "Some Other CPU"
        conn.execute("UPDATE studies SET fingerprint = ?", (json.dumps(fp),))
    refused = run_cli("compare", "--store", str(old), "--store", str(new), "--out",
                      str(workdir / "cmp2"))
    assert refused.returncode == 2
    assert refused.stderr.strip() == (
        "teiten: error: the studies ran on machines that differ in cpu_model; their numbers "
        "are not comparable (add --allow-mixed to compare anyway)")
    assert not (workdir / "cmp2").exists()
    allowed = run_cli("compare", "--store", str(old), "--store", str(new), "--out",
                      str(workdir / "cmp3"), "--allow-mixed")
    assert allowed.returncode == 0, allowed.stderr
    assert "differ in cpu_model" in (workdir / "cmp3" / "report.md").read_text().replace("\\_", "_")


def test_compare_needs_two_studies(pg17, workdir: Path) -> None:
    store = _run(workdir, "single", "pg17", "17")
    done = run_cli("compare", "--store", str(store), "--out", str(workdir / "x"))
    assert done.returncode == 2
    assert "compare needs two studies" in done.stderr
