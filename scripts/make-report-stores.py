#!/usr/bin/env python3
"""Make the small fixture stores of tests/golden/report-stores/: one per shape of report
the built-in studies give, each a built-in study made small (scale 1, 1-2 s runs, two
repetitions), run for real by `teiten run`. tests/unit/test_report_language.py renders
them in English and Japanese. Run it again when a study's shape changes:

    .venv/bin/python scripts/make-report-stores.py [NAME ...]

It uses TEITEN_HOME (default .cache/teiten-test, the tests' cache) for its installs and
leaves nothing else behind. It takes about 25 minutes on two cores.
"""

from __future__ import annotations

import copy
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "tests" / "golden" / "report-stores"
TEITEN = ROOT / ".venv" / "bin" / "teiten"
SMALL = {"scale": 1, "clients": [1, 2], "duration": "1s", "repetitions": 2}

# name -> (built-in study, changes to it); the name is the fixture's file name.
STORES: dict[str, tuple[str, dict[str, Any]]] = {
    "quick": ("quick-fixed-point", {**SMALL, "repetitions": "auto",
                                    "auto_repetitions": {"floor": 5, "ceiling": 5}}),
    "cores": ("s2-cores", SMALL),
    "checksums": ("s3-checksums", SMALL),
    "bookstore": ("s4-bookstore", {
        "workloads": [{"name": "bookstore", "mix": "shopping", "items": 1000, "customers": 2880,
                       "think_time": "100ms", "rampup": "1s"}],
        "clients": [4, 16], "duration": "2s", "repetitions": 2}),
    "scaleup": ("s4-scaleup", {**SMALL, "profile": {"points": [{"clients": 2}]}}),
    "environments": ("s5-environments", SMALL),
    "parallel": ("s6-parallel", {
        "workloads": [{"name": "accesslog", "rows_per_day": 3000, "days": 3, "workers": [0, 2],
                       "layouts": ["single", "partitioned", "partitioned-unpruned"],
                       "cache": ["warm"]}],
        "repetitions": 2}),
    "replication": ("s7-replication", {**SMALL, "servers": [
        {"name": "single", "install": "18", "pgpool": True},
        {"name": "native-2", "install": "18", "replicas": 1, "replication": "native", "pgpool": True},
        {"name": "sync-2", "install": "18", "replicas": 1, "replication": "sync",
         "synchronous_commit": "remote_apply", "pgpool": True}]}),
    "iot": ("s8-iot-json", {
        "workloads": [{"name": "iot", "devices": 2, "interval": "1h", "period": "40d", "query_days": 7,
                       "models": ["rdb", "json", "jsonb", "hybrid-jsonb"], "indexes": ["btree", "brin"],
                       "cache": ["warm"]}],
        "repetitions": 2}),
    "fulltext": ("s9-fulltext", {
        "workloads": [{"name": "fulltext", "documents": 1500, "doc_chars": 200,
                       "methods": ["none", "pg_trgm", "pg_bigm", "pgroonga", "bigram", "tsvector", "rum"],
                       "cache": ["warm"]}],
        "repetitions": 2}),
    "freeze": ("s10-freeze", {
        "workloads": [{"name": "freeze", "rows": 20000, "frozen": [0, 50, 100], "cache": ["warm", "cold"]}],
        "repetitions": 2}),
    "tpcc": ("s11-tpcc", {
        "workloads": [{"name": "tpcc", "warehouses": 1, "all_warehouses": True, "rampup": "1s"}],
        "clients": [1, 2], "duration": "2s", "repetitions": 2}),
    "versions": ("quick-fixed-point", {**SMALL, "workloads": ["select-only"], "servers": [
        {"name": "pg9.6", "install": "maven:9.6"}, {"name": "pg13", "install": "maven:13"},
        {"name": "pg17", "install": "17"}, {"name": "pg18", "install": "18"}]}),
    "percentiles": ("quick-fixed-point", {**SMALL, "workloads": [
        {"name": "at-500", "scripts": [{"builtin": "select-only"}], "rate": 500,
         "latency_limit_ms": 5, "percentiles": True}], "servers": [
        {"name": "pg17", "install": "17"}, {"name": "pg18", "install": "18"}]}),
    # Two studies of one shape for `teiten compare` (the test compares them).
    "compare-a": ("quick-fixed-point", {**SMALL, "workloads": ["select-only"],
                                        "servers": [{"name": "pg17", "install": "17"}]}),
    "compare-b": ("quick-fixed-point", {**SMALL, "workloads": ["select-only"],
                                        "servers": [{"name": "pg18", "install": "18"}]}),
}


def study_text(builtin: str, changes: dict[str, Any]) -> str:
    data = yaml.safe_load((ROOT / "src" / "teiten" / "studies" / f"{builtin}.yaml").read_text())
    data = copy.deepcopy(data)
    data.update(copy.deepcopy(changes))
    if data.get("repetitions") != "auto":
        data.pop("auto_repetitions", None)
    data["study"] = f"{data['study']}-small"
    data.pop("description", None)  # a changed copy: the report says what it ran
    return yaml.safe_dump(data, sort_keys=False, allow_unicode=True)


def make(name: str) -> Path:
    builtin, changes = STORES[name]
    env = {**os.environ, "TEITEN_HOME": os.environ.get("TEITEN_HOME", str(ROOT / ".cache" / "teiten-test")),
           "TEITEN_NOISE_GUARD": "off"}
    OUT.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="teiten-fixture-") as tmp:
        work = Path(tmp)
        (work / "study.yaml").write_text(study_text(builtin, changes))
        store = work / "store.db"
        done = subprocess.run([str(TEITEN), "run", str(work / "study.yaml"), "--store", str(store),
                               "--no-report"], env=env, cwd=work, check=False)
        if done.returncode != 0:
            sys.exit(f"{name}: teiten run exited {done.returncode}")
        conn = sqlite3.connect(store)
        conn.execute("PRAGMA journal_mode=DELETE")  # everything in the one file
        conn.close()
        target = OUT / f"{name}.db"
        shutil.copyfile(store, target)
    shrink(target)
    return target


def shrink(path: Path) -> None:
    """Leave out the statistics views' deltas (kept for `teiten show`; no report reads
    them: half of a store's size), in one file without a journal."""
    conn = sqlite3.connect(path)
    try:
        with conn:
            conn.execute("DELETE FROM details WHERE kind = 'stats'")
        conn.execute("PRAGMA journal_mode=DELETE")
        conn.execute("VACUUM")
    finally:
        conn.close()


def main(names: list[str]) -> None:
    for name in names or list(STORES):
        if name not in STORES:
            sys.exit(f"no fixture {name!r}; choose from {', '.join(STORES)}")
        path = make(name)
        print(f"{name}: {path} ({path.stat().st_size // 1024} kB)", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
