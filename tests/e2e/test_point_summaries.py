"""Each point's summary kept in the store (issue 35, item 2), read through the view
``teiten_points`` with plain SQL: it says what ``teiten report`` and ``teiten gate`` print.

(a) A store whose truth is known (tests/truestores.py: pg18 10% slower at one point), written
without summaries, as a store of a study finished before teiten kept them: the view is there and
empty; ``teiten store summarize`` fills it, and each row is the report's ratio and TPS tables'
and the gate's row for that point. (b) The store of the same real study as written by commit
9d2c785 (schema 5, tests/golden/store-9d2c785): migrated, summarized, and each row is what that
commit's report printed. (c) A real run keeps its rows when it finishes, with the testbed it was
named and a finished_at with its offset; a bad name, and another testbed on resume, are refused.
(d) ``teiten results --format bmf`` validates against the JSON Schema of Bencher's format and
``--format openmetrics`` parses with prometheus_client's parser. (e) A study that ``teiten clean``
finishes is summarized too. (f) A build recorded with its git commit is named by it. (g) The
latency percentiles of a workload that took them reach BMF and OpenMetrics as the report prints them.
"""

from __future__ import annotations

import json
import math
import re
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from prometheus_client.openmetrics.parser import text_string_to_metric_families
from tests.conftest import run_cli
from tests.truestores import Truth, build

from teiten.host import fingerprint

GOLDEN = Path(__file__).resolve().parent.parent / "golden"
# Bencher Metric Format's JSON Schema, as bencher.dev/docs/reference/bencher-metric-format gives it.
BMF_SCHEMA = json.loads((GOLDEN / "bmf.schema.json").read_text())
ISO_WITH_OFFSET = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d([+-]\d\d:\d\d)$")


def _view(store: Path) -> list[dict[str, Any]]:
    conn = sqlite3.connect(f"file:{store}?mode=ro", uri=True)
    conn.row_factory = sqlite3.Row
    try:
        return [dict(r) for r in conn.execute(
            "SELECT * FROM teiten_points ORDER BY workload, clients, server")]
    finally:
        conn.close()


def _printed(row: dict[str, Any]) -> dict[str, Any]:
    """A compared server's row of the view as the report's ratio table prints it."""
    return {"server": row["server"], "baseline": row["baseline"],
            "ratio_pct": round(row["ratio_pct"], 1), "estimate_pct": round(row["estimate_pct"], 1),
            "ratio_ci_low_pct": round(row["low_pct"], 1),
            "ratio_ci_high_pct": round(row["high_pct"], 1),
            "ratio_ci_level_pct": math.floor(row["level_pct"] * 10 + 1e-4) / 10,
            "ratio_ci_method": row["method"], "verdict": row["verdict"],
            "verdict_reason": row["verdict_reason"] or None, "margin_pct": row["margin_pct"]}


def _tps_printed(row: dict[str, Any]) -> dict[str, Any]:
    return {"server": row["server"], "tps_median": round(row["value"], 1),
            "tps_ci_low": round(row["low"], 1), "tps_ci_high": round(row["high"], 1),
            "n_ok": row["n_ok"], "n_failed": row["n_failed"]}


def _tables(tables: list[dict[str, Any]], kind: str) -> dict[tuple[str, str, int], dict[str, Any]]:
    return {(r["workload"], r["server"], r["clients"]): r for t in tables if t["kind"] == kind
            for r in t["rows"]}


def _report_tables(store: Path, out: Path) -> list[dict[str, Any]]:
    run_cli("report", "--store", str(store), "--out", str(out), check=True)
    return json.loads((out / "tables.json").read_text())["tables"]


def _assert_as_reported(rows: list[dict[str, Any]], tables: list[dict[str, Any]]) -> None:
    """Every row of the view says what the report's TPS and ratio tables say at its point."""
    ratios, tps = _tables(tables, "ratio"), _tables(tables, "tps")
    compared = [r for r in rows if r["baseline"] is not None]
    assert len(compared) == len(ratios) and len(rows) == len(tps), (len(rows), len(tps))
    for row in rows:
        at = (row["workload"], row["server"], row["clients"])
        assert _tps_printed(row) == {k: tps[at][k] for k in _tps_printed(row)}, at
        if row["baseline"] is not None:
            assert _printed(row) == {k: ratios[at][k] for k in _printed(row)}, at
        else:  # the baseline's own row: its median, no ratio
            assert row["estimate_pct"] is None and row["verdict"] is None


def test_a_store_summarized_later_says_what_the_report_and_the_gate_print(tmp_path: Path) -> None:
    store = build(tmp_path / "a.db", Truth(blocks=12, cv=0.01, ratio={("pgecons-update", 2): 0.90}))
    assert _view(store) == [], "the view is there, and empty for a study finished without rows"
    done = run_cli("store", "summarize", "--store", str(store), check=True)
    assert done.stdout == "study 1 (truth): 12 point summaries\n"
    rows = _view(store)
    _assert_as_reported(rows, _report_tables(store, tmp_path / "report"))
    assert {(r["workload"], r["clients"]) for r in rows if r["verdict"] == "slower"} == {
        ("pgecons-update", 2)}
    assert {r["verdict"] for r in rows if r["baseline"]} == {"slower", "no-difference"}
    # The gate prints each point's cell from the same figures.
    gate = run_cli("gate", "--store", str(store), "--baseline", "pg17", "--candidate", "pg18")
    assert gate.returncode == 1, gate.stderr
    for row in (r for r in rows if r["baseline"]):
        p = _printed(row)
        cell = (f"{p['estimate_pct']}% [{p['ratio_ci_low_pct']}–{p['ratio_ci_high_pct']}, "
                f"{p['ratio_ci_level_pct']:g}%]")
        line = next(x for x in gate.stdout.splitlines()
                    if x.split()[:2] == [row["workload"], str(row["clients"])])
        assert cell in line, (cell, line)
    # Who, where, when: the machine's identity hashed, the study's time with its offset.
    assert {r["testbed"] for r in rows} == {fingerprint.testbed_key({"cpu_model": "test", "logical_cpus": 2})}
    assert {r["time"] for r in rows} == {"2026-11-26T00:02:00+00:00"}
    assert {(r["server"], r["build"], r["version"]) for r in rows} == {
        ("pg17", "17.7", "17.7"), ("pg18", "18.1", "18.1")}
    assert rows[0]["benchmark"] == "truth/pgecons-read/clients=1"
    again = run_cli("store", "summarize", "--store", str(store), check=True)
    assert again.stdout == "study 1 (truth): already summarized\n"


def test_a_store_of_schema_5_is_summarized_as_its_own_commit_reported(tmp_path: Path) -> None:
    store = tmp_path / "legacy.db"
    shutil.copy(GOLDEN / "store-9d2c785" / "legacy.db", store)
    run_cli("studies", "--store", str(store), check=True)  # opened: migrated
    assert _view(store) == []
    run_cli("store", "summarize", "--store", str(store), check=True)
    rows = _view(store)
    before = json.loads((GOLDEN / "store-9d2c785" / "tables.json").read_text())["tables"]
    _assert_as_reported(rows, before)
    assert {r["margin_pct"] for r in rows if r["baseline"]} == {4.0}, "the study's margin"


STUDY = """
study: kept
servers:
  - {name: base, install: "18"}
  - {name: cand, install: "18", settings: {work_mem: 8MB}}
workloads: [select-only]
scale: 1
clients: [1]
duration: 1s
repetitions: 2
seed: 3
"""


def test_a_run_keeps_its_summaries_with_its_testbed(pg18, workdir: Path) -> None:  # noqa: ANN001
    (workdir / "s.yaml").write_text(STUDY)
    store = workdir / "r.db"
    bad = run_cli("run", str(workdir / "s.yaml"), "--store", str(store), "--testbed", "ci box")
    assert bad.returncode == 2
    assert bad.stderr == ("teiten: error: --testbed 'ci box': a testbed name is 1 to 64 letters, "
                          "digits, '.', '_' or '-', starting with a letter or digit, e.g. ci-box-1\n")
    assert not store.exists(), "nothing is made"
    run_cli("run", str(workdir / "s.yaml"), "--store", str(store), "--testbed", "ci-box-1",
            "--report", str(workdir / "report"), check=True)
    rows = _view(store)
    assert [(r["server"], r["baseline"], r["testbed"]) for r in rows] == [
        ("base", None, "ci-box-1"), ("cand", "base", "ci-box-1")]
    with sqlite3.connect(store) as conn:
        finished, spec = conn.execute("SELECT finished_at, spec_json FROM studies").fetchone()
    assert json.loads(spec)["testbed"] == "ci-box-1"
    listed = run_cli("studies", "--store", str(store), "--format", "json", check=True).stdout
    assert [s["testbed"] for s in json.loads(listed)] == ["ci-box-1"]
    assert {r["time"] for r in rows} == {finished} and ISO_WITH_OFFSET.match(finished), finished
    assert all(r["value"] > 0 and r["threads"] == 1 and r["version"].startswith("18.") for r in rows)
    _assert_as_reported(rows, json.loads((workdir / "report" / "tables.json").read_text())["tables"])
    # One study stays on one testbed: resumed under another name, it is refused, as it was.
    other = run_cli("resume", "--store", str(store), "--retry-failed", "--no-report",
                    "--testbed", "elsewhere")
    assert other.returncode == 2
    assert other.stderr == (f"teiten: error: study 1 of {store} runs on the testbed ci-box-1, not "
                            "elsewhere: one study stays on one machine; resume it on ci-box-1 (or "
                            "give no --testbed or TEITEN_TESTBED)\n")
    assert _view(store) == rows


def test_bmf_and_openmetrics_carry_the_views_figures(tmp_path: Path) -> None:
    store = build(tmp_path / "b.db", Truth(blocks=10, cv=0.02, ratio={("pgecons-read", 4): 1.2}))
    refused = run_cli("results", "--store", str(store), "--format", "bmf")
    assert refused.returncode == 2
    assert refused.stderr == (f"teiten: error: study 1 (truth) of {store} has no point summaries; "
                              f"'teiten store summarize --store {store} --study-id 1' computes them\n")
    run_cli("store", "summarize", "--store", str(store), check=True)
    rows = {(r["workload"], r["clients"], r["server"]): r for r in _view(store)}
    bmf = json.loads(run_cli("results", "--store", str(store), "--format", "bmf", check=True).stdout)
    jsonschema.validate(bmf, BMF_SCHEMA)
    assert len(bmf) == len(rows)
    for (w, c, server), r in rows.items():
        measures = bmf[f"truth/{w}/clients={c}/{server}"]
        assert measures["throughput"] == {"value": r["value"], "lower_value": r["low"],
                                          "upper_value": r["high"]}
        if r["baseline"]:
            assert measures["ratio_estimate"] == {"value": r["estimate_pct"], "lower_value": r["low_pct"],
                                                  "upper_value": r["high_pct"]}
        else:
            assert set(measures) == {"throughput"}
    text = run_cli("results", "--store", str(store), "--format", "openmetrics", check=True).stdout
    families = {f.name: f for f in text_string_to_metric_families(text)}
    # Every family says what it is (HELP) and in what unit (UNIT, the suffix of its name: the
    # parser refuses any other); the verdict alone has no unit.
    assert {n: f.unit for n, f in families.items()} == {
        "teiten_tps": "tps", "teiten_low_tps": "tps", "teiten_high_tps": "tps",
        "teiten_ratio_estimate_pct": "pct", "teiten_ratio_low_pct": "pct", "teiten_ratio_high_pct": "pct",
        "teiten_ratio_of_medians_pct": "pct", "teiten_verdict": ""}
    assert all(f.documentation for f in families.values())
    assert [ln.split()[2] for ln in text.splitlines() if ln.startswith("# HELP")] == list(families)
    for name, column in (("teiten_ratio_estimate_pct", "estimate_pct"),
                         ("teiten_ratio_of_medians_pct", "ratio_pct"), ("teiten_low_tps", "low")):
        assert {(s.labels["workload"], int(s.labels["clients"]), s.labels["server"]): s.value
                for s in families[name].samples} == {
            k: r[column] for k, r in rows.items() if r[column] is not None}
    for sample in families["teiten_tps"].samples:
        r = rows[(sample.labels["workload"], int(sample.labels["clients"]), sample.labels["server"])]
        assert sample.value == r["value"] and sample.labels["testbed"] == r["testbed"]
        assert sample.labels["testbed_name"] == "test"  # the truth store's machine: its CPU model
        assert sample.labels["build"] == r["build"] and sample.timestamp.sec == 1795651320
    judged = {(s.labels["workload"], int(s.labels["clients"])): s.labels["verdict"]
              for s in families["teiten_verdict"].samples}
    assert judged == {(w, c): r["verdict"] for (w, c, _), r in rows.items() if r["baseline"]}
    assert judged[("pgecons-read", 4)] == "faster"


@pytest.mark.parametrize(("env", "says"), [
    ("box/1", "TEITEN_TESTBED='box/1': a testbed name is 1 to 64 letters"),
])
def test_a_bad_testbed_in_the_environment_is_one_line(workdir: Path, env: str, says: str,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    (workdir / "s.yaml").write_text(STUDY)
    monkeypatch.setenv("TEITEN_TESTBED", env)
    done = run_cli("run", str(workdir / "s.yaml"), "--store", str(workdir / "r.db"))
    assert done.returncode == 2 and done.stderr.startswith(f"teiten: error: {says}"), done.stderr
    assert len(done.stderr.splitlines()) == 1 and not (workdir / "r.db").exists()


def test_a_study_that_clean_finishes_is_summarized(tmp_path: Path) -> None:
    """A run whose directories could not be removed leaves its study running with every trial
    done; 'teiten clean' finishes it once nothing is left, and keeps its summaries then."""
    store = build(tmp_path / "c.db", Truth(blocks=3, cv=0.02))
    with sqlite3.connect(store) as conn:
        conn.execute("UPDATE studies SET state = 'running', finished_at = NULL")
    done = run_cli("clean", "--store", str(store), check=True)
    assert "teiten: study 1 is finished" in done.stderr
    rows = _view(store)
    assert len(rows) == 12 and all(ISO_WITH_OFFSET.match(r["time"]) for r in rows)
    assert {r["verdict"] for r in rows if r["baseline"]} == {"cannot-tell"}  # 3 blocks: too few


def test_a_build_from_git_is_named_by_its_commit(tmp_path: Path) -> None:
    """Where 'teiten install' recorded a server's build (its key and git commit, in the server's
    resolved install), the rows carry it and the view's build is the commit; elsewhere NULL."""
    store = build(tmp_path / "g.db", Truth(blocks=3, cv=0.02))
    git = {"commit": "4f2a9c1e" * 5, "subject": "Speed up the lock manager", "position": 812,
           "committed_at": "2026-11-20T09:15:00+09:00", "repo": "/src/postgresql", "ref": "master"}
    with sqlite3.connect(store) as conn:
        [spec] = conn.execute("SELECT spec_json FROM servers WHERE name = 'pg18'").fetchone()
        spec = json.loads(spec)
        spec["resolved"]["build"] = {"key": "src-18-ab12cd", "git": git}
        conn.execute("UPDATE servers SET spec_json = ? WHERE name = 'pg18'", (json.dumps(spec),))
    run_cli("store", "summarize", "--store", str(store), check=True)
    found = {(r["server"], r["build"], r["build_key"], r["git_commit"], r["git_subject"],
              r["git_position"], r["committed_at"]) for r in _view(store)}
    assert found == {("pg17", "17.7", None, None, None, None, None),
                     ("pg18", git["commit"], "src-18-ab12cd", git["commit"], git["subject"], 812,
                      "2026-11-20T09:15:00+09:00")}


def test_bmf_and_openmetrics_carry_the_latency_percentiles_the_report_shows(tmp_path: Path) -> None:
    """A golden store whose workload took latency percentiles (pgbench's transaction log):
    summarized again, each point's p50 ... p99.9 in BMF (``latency_p50`` ... measures) and in
    OpenMetrics (the summary ``teiten_latency_ms``, a sample per quantile) are what the
    report's percentiles table prints; a point of a workload without them has none."""
    store = tmp_path / "p.db"
    shutil.copy(GOLDEN / "report-stores" / "percentiles.db", store)
    run_cli("store", "summarize", "--store", str(store), "--study-id", "1", check=True)
    tables = _report_tables(store, tmp_path / "report")
    printed = _tables(tables, "percentiles")
    assert len(printed) == 4 and len(_view(store)) == 4
    names = ("p50", "p90", "p95", "p99", "p999")
    bmf = json.loads(run_cli("results", "--store", str(store), "--format", "bmf", check=True).stdout)
    jsonschema.validate(bmf, BMF_SCHEMA)
    text = run_cli("results", "--store", str(store), "--format", "openmetrics", check=True).stdout
    families = {f.name: f for f in text_string_to_metric_families(text)}
    latency = families["teiten_latency_ms"]
    assert (latency.type, latency.unit) == ("summary", "ms") and latency.documentation
    quantiles = {(s.labels["workload"], int(s.labels["clients"]), s.labels["server"], s.labels["quantile"]):
                 s.value for s in latency.samples}
    assert len(quantiles) == 4 * len(names)
    for (w, server, c), row in printed.items():
        measures = bmf[f"quick-fixed-point-small/{w}/clients={c}/{server}"]
        for name, q in zip(names, ("0.5", "0.9", "0.95", "0.99", "0.999"), strict=True):
            shown = row[f"{name}_ms"]
            assert round(measures[f"latency_{name}"]["value"], 3) == shown, (w, c, server, name)
            assert round(quantiles[(w, c, server, q)], 3) == shown, (w, c, server, name)
    # The truth store's workloads took none: no latency figure.
    plain = build(tmp_path / "t.db", Truth(blocks=3, cv=0.02))
    run_cli("store", "summarize", "--store", str(plain), check=True)
    assert "latency" not in run_cli("results", "--store", str(plain), "--format", "openmetrics",
                                    check=True).stdout
    assert not any(k.startswith("latency") for m in json.loads(run_cli(
        "results", "--store", str(plain), "--format", "bmf", check=True).stdout).values() for k in m)
