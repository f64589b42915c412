"""Cloud-style limits on a server (issue 36, item 3), through the real ``teiten run``: a cluster
held by a cgroup of its own to a memory limit and a write-IOPS limit swept over two values,
beside one without limits, on pgecons-update at 1 client (each commit waits for its WAL to be
written: the write limit bounds it). What its cgroup counted stays within each limit, the update
TPS follows the limit, nothing of the groups is left, and the report names the limits; what
needs a cgroup is refused before anything is made where none can be had."""

from __future__ import annotations

import csv
import json
import statistics
from pathlib import Path
from typing import Any

import pytest
from tests.conftest import run_cli
from tests.studyrun import run_study

from teiten.host import cgroups

STUDY = """\
study: limits-e2e
servers:
  - {name: free, install: "18"}
  - {name: held, install: "18", limits: {memory: 512MB, write_iops: [60, 240]}}
workloads: [pgecons-update]
scale: 1
clients: [1]
duration: 2s
repetitions: 2
seed: 3
"""
HELD = {"held-write_iops-60": 60, "held-write_iops-240": 240}


@pytest.fixture(scope="module")
def finished(pg18) -> dict[str, Any]:  # noqa: ANN001
    return run_study("limits-e2e", STUDY, work="e2e-limits",
                     key=lambda r: (r["server"], r["repetition"]), timeout=900)


def test_the_study_runs_one_server_per_swept_value(finished: dict[str, Any]) -> None:
    assert finished["run"].returncode == 0, finished["run"].stderr
    assert {s for s, _ in finished["trials"]} == {"free", *HELD}
    assert {t["status"] for t in finished["trials"].values()} == {"ok"}


def test_what_the_group_counted_stays_within_each_limit(finished: dict[str, Any]) -> None:
    metrics, details = finished["metrics"], finished["details"]
    for (server, _), trial in finished["trials"].items():
        tid = trial["trial_id"]
        if server == "free":
            assert (tid, "limit_write_iops") not in metrics  # not limited: nothing counted
            continue
        writes = metrics[(tid, "limit_write_iops")]
        assert 0 < writes <= 1.05 * HELD[server], (server, writes)
        assert 0 < metrics[(tid, "limit_memory_peak_bytes")] <= 512 << 20
        held = details[(tid, "limits")]
        assert held["devices"] == [cgroups.disk_of(finished["work"])]
        assert held["cgroup"] in ("v1", "v2")
        assert ("flusher" in held["counted"]) == (held["cgroup"] == "v1")


def test_update_tps_follows_the_write_limit(finished: dict[str, Any]) -> None:
    tps = {name: statistics.median(t["tps"] for (s, _), t in finished["trials"].items() if s == name)
           for name in ("free", *HELD)}
    # One commit waits for at least one write of its WAL: at most about one transaction per
    # write the limit allows, and more with a higher limit.
    assert tps["held-write_iops-60"] <= 60 * 1.1, tps
    assert tps["held-write_iops-60"] < tps["held-write_iops-240"] < tps["free"], tps


def test_no_group_is_left(finished: dict[str, Any]) -> None:
    assert not [g for g in cgroups.groups("teiten-") if "limits-e2e" in g.name or "held" in g.name]


def test_the_servers_table_names_the_limits(finished: dict[str, Any]) -> None:
    md = finished["md"]
    assert "| Limits (cgroup) | memory 512.0 MB, write 60 IOPS |" in md
    assert "| Limits (cgroup) | memory 512.0 MB, write 240 IOPS |" in md
    ja = finished["work"] / "ja"
    run_cli("report", "--store", str(finished["store"]), "--out", str(ja), "--lang", "ja", check=True)
    assert "| 制限（cgroup） | メモリ 512.0 MB、書き込み 60 IOPS |" in (ja / "report.md").read_text()


def test_the_report_gives_each_limits_use_as_a_share_of_it(finished: dict[str, Any]) -> None:
    """The 2020 report's "IOPS as a % of the provisioned limit": each number the median of what
    the group counted in the trials, in the table, its CSV and tables.json alike."""
    with (finished["work"] / "report" / "tables" / "pgecons-update-limits.csv").open() as fh:
        rows = list(csv.DictReader(fh))
    assert [(r["server"], r["limit"], r["limit_value"]) for r in rows] == [
        (s, limit, str(v)) for s, value in HELD.items()
        for limit, v in (("memory", 512 << 20), ("write_iops", value))]
    md = finished["md"]
    assert "### Use of the limits (METHODS S11)" in md
    for r in rows:
        tids = [t["trial_id"] for (s, _), t in finished["trials"].items() if s == r["server"]]
        metric = {"memory": "limit_memory_peak_bytes", "write_iops": "limit_write_iops"}[r["limit"]]
        used = statistics.median(finished["metrics"][(tid, metric)] for tid in tids)
        assert float(r["used"]) == pytest.approx(used, abs=0.06)
        assert float(r["used_pct"]) == pytest.approx(100 * used / int(r["limit_value"]), abs=0.06)
        if r["limit"] == "write_iops":
            assert float(r["used_pct"]) <= 105.0
            name = r["server"].replace("_", "\\_")  # as Markdown escapes it
            assert (f"| {name} | 1 | write IOPS | {r['limit_value']} | "
                    f"{float(r['used']):,.1f} | {float(r['used_pct']):.1f}% |") in md
    tables = json.loads((finished["work"] / "report" / "tables.json").read_text())
    assert any(t["name"] == "pgecons-update-limits" for t in tables["tables"])
    html = (finished["work"] / "report" / "report.html").read_text()
    assert 'data-table="pgecons-update-limits"' in html


@pytest.mark.parametrize(("server", "env", "says"), [
    ('{name: held, install: "18", limits: {write_iops: 100}}', {"TEITEN_CGROUPS": "off"},
     "server held: 'limits' need a cgroup of their own"),
    ('{name: held, ssh: db1, install: "18", limits: {memory: 1GB}}', {},
     "'limits' cannot be combined with 'ssh'"),
    ('{name: held, install: "18", limits: {memory: 1XB}}', {}, "cannot read '1XB' as a size"),
])
def test_what_cannot_be_limited_is_refused_before_anything_is_made(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, server: str, env: dict[str, str],
        says: str) -> None:
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    study = tmp_path / "s.yaml"
    study.write_text(f"study: limits-bad\nservers:\n  - {server}\nworkloads: [pgecons-read]\n"
                     "scale: 1\nclients: [1]\nduration: 1s\nrepetitions: 1\n")
    done = run_cli("run", str(study), "--store", str(tmp_path / "r.db"))
    assert done.returncode == 2, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and says in done.stderr, done.stderr
    assert not (tmp_path / "r.db").exists()
