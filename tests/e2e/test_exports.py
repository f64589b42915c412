"""Every figure in every export (issue 21, item 3): 'teiten results' carries each workload's
headline figures (tpcc's NOPM and TPM, the bookstore's BT/s, a statement workload's steps and
sizes) in JSON and CSV, and they agree with the report's tables.json. Real stores of real
runs (tests/golden/report-stores, made by scripts/make-report-stores.py), the real CLI."""

from __future__ import annotations

import csv
import io
import json
import shutil
import statistics
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.conftest import TEST_HOME, run_cli

GOLDEN = Path(__file__).resolve().parent.parent / "golden" / "report-stores"
# Copies: opening a store turns on its write-ahead log, and closing it checkpoints into the
# file, which would change the tracked golden stores under a reader (another test's copy).
STORES = TEST_HOME / "work" / "exports-stores"


@pytest.fixture(scope="module", autouse=True)
def _copies() -> Iterator[None]:
    shutil.rmtree(STORES, ignore_errors=True)
    STORES.mkdir(parents=True)
    for name in ("tpcc", "bookstore", "iot"):
        for suffix in (".db", ".db-wal", ".db-shm"):
            if (GOLDEN / f"{name}{suffix}").is_file():
                shutil.copyfile(GOLDEN / f"{name}{suffix}", STORES / f"{name}{suffix}")
    yield
    shutil.rmtree(STORES, ignore_errors=True)


def _results(store: str) -> list[dict]:
    return json.loads(run_cli("results", "--store", str(STORES / store), "--format", "json",
                              check=True).stdout)


def _tables(store: str, out: Path) -> dict[str, dict]:
    run_cli("report", "--store", str(STORES / store), "--out", str(out), check=True)
    return {t["kind"]: t for t in json.loads((out / "tables.json").read_text())["tables"]}


@pytest.mark.parametrize(("store", "app"), [("tpcc.db", "tpcc"), ("bookstore.db", "bookstore")])
def test_an_application_workloads_figures_are_in_the_results(store: str, app: str,
                                                             tmp_path: Path) -> None:
    rows = [r for r in _results(store) if r["status"] == "ok"]
    assert rows and all(r["app_tps"] > 0 and r["window_s"] > 0 for r in rows)
    if app == "tpcc":
        assert all(r["nopm"] > 0 and r["tpm"] > r["nopm"] for r in rows)
    else:
        assert all(r["nopm"] is None and r["tpm"] is None for r in rows)
    table = _tables(store, tmp_path)["app"]
    for want in (t for t in table["rows"] if t["type"] == "all"):
        mine = [r for r in rows if (r["server"], r["clients"]) == (want["server"], want["clients"])]
        assert round(statistics.median(r["app_tps"] for r in mine), 1) == want["tps"]
        if app == "tpcc":
            assert round(statistics.median(r["nopm"] for r in mine), 1) == want["nopm"]
            assert round(statistics.median(r["tpm"] for r in mine), 1) == want["tpm"]
    text = run_cli("results", "--store", str(STORES / store), "--format", "csv", check=True).stdout
    got = list(csv.DictReader(io.StringIO(text)))
    assert [float(r["app_tps"]) for r in got if r["status"] == "ok"] == [r["app_tps"] for r in rows]


def test_a_statement_workloads_steps_and_sizes_are_in_the_results(tmp_path: Path) -> None:
    rows = _results("iot.db")
    assert all(r["steps"] and r["sizes"] for r in rows)
    tables = _tables("iot.db", tmp_path)
    for want in tables["steps"]["rows"]:
        mine = [st["seconds"] for r in rows if (r["server"], r["variant"]) == (want["server"],
                                                                               want["variant"])
                for st in [s for s in r["steps"] if (s["name"], s["param"]) ==
                           (want["step"], want["param"])][want["occurrence"] - 1:][:1]]
        assert mine and round(statistics.median(mine), 6) == want["seconds_median"], want
    for want in tables["sizes"]["rows"]:
        sizes = {json.dumps(r["sizes"], sort_keys=True) for r in rows
                 if (r["server"], r["variant"]) == (want["server"], want["variant"])}
        assert len(sizes) == 1
        assert sum(json.loads(sizes.pop()).values()) == want["table_bytes"] + want["index_bytes"]
    text = run_cli("results", "--store", str(STORES / "iot.db"), "--format", "csv", check=True).stdout
    first = next(csv.DictReader(io.StringIO(text)))
    assert first["steps"].startswith("load[2 devices x 960 steps]=") and "; index[" in first["steps"]
    assert first["sizes"].startswith("iot_")
