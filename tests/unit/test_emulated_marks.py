"""Every figure of an emulated server is marked where it is printed or exported (issue 54, item
7): a VM guest under qemu's tcg measured 147 TPS against its host's 7,420, and only the report's
warnings said that the figure was an emulation's. A store whose truth is known (a local server
and a tcg guest three times as slow) is reported in en and ja, summarized and exported: the
answer, the findings, the TPS, latency and summary tables, their CSV and JSON, BMF and
OpenMetrics all mark the guest, and a store without an emulated server is marked nowhere."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from tests.conftest import run_cli
from tests.truestores import build_study

STUDY = """
study: emu
servers:
  - {name: host, install: "17"}
  - {name: guest, install: "17", vm: {accelerator: tcg, vcpus: 1}}
workloads: [pgecons-read]
scale: 1
clients: [1, 2]
duration: 1s
repetitions: 8
seed: 1
"""
# What the guest said of itself when it ran under tcg (servers/vm/server.py, VmHost.describe).
GUEST = {"host": {"vm": {"accelerator": "tcg", "emulated": True, "vcpus": 1, "memory_bytes": 1 << 30,
                         "network": "qemu user-mode, loopback port forwards"}}}

SAID = {
    "en": ["- pgecons-read: guest (emulated) against host: 66.7% slower at 1 client (ratio to baseline 33.3%, "
           "97.6% CI 33.3–33.4%); 66.7% slower at 2 clients (ratio to baseline 33.3%, 97.6% CI 33.3–33.4%).",
           "- guest (emulated) is 66.7% slower than host at 1 client: ratio to baseline 33.3% "
           "(97.6% CI 33.3–33.4%).",
           "| Clients | host | guest (emulated) | Ratio to baseline: "
           "guest (emulated) / host | Smallest detectable difference: guest (emulated) |",
           "| Clients | host | guest (emulated) | Latency ratio: "
           "guest (emulated) / host |",
           "| guest (emulated) | 17.7 | 2474.5 |",
           "| guest (emulated) | pgecons-read | 1 | 1 | ok | 2471.0 |"],
    "ja": ["- pgecons-read: guest（エミュレーション） (host 比): クライアント数 1 で 66.7% 低速 (基準比 33.3%、"
           "97.6% 信頼区間 33.3–33.4%)、クライアント数 2 で 66.7% 低速 (基準比 33.3%、97.6% 信頼区間 "
           "33.3–33.4%)。",
           "- guest（エミュレーション） は host よりクライアント数 1 で 66.7% 低速です: "
           "基準比 33.3%（97.6% 信頼区間 33.3–33.4%）。",
           "| クライアント数 | host | guest（エミュレーション） | 基準比: guest（エミュレーション） / host | "
           "検出可能な最小差: guest（エミュレーション） |",
           "| クライアント数 | host | guest（エミュレーション） | 基準比: guest（エミュレーション） / host |",
           "| guest（エミュレーション） | 17.7 | 2474.5 |",
           "| guest（エミュレーション） | pgecons-read | 1 | 1 | 成功 | 2471.0 |"],
}


def _tps(trial: object) -> float:
    return (7420.0 if trial.server == "host" else 2470.0) + trial.repetition  # type: ignore[attr-defined]


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = build_study(tmp_path_factory.mktemp("emu") / "s.db", STUDY, _tps,
                       descriptions={"guest": {"version": "17.7", **GUEST}})
    run_cli("store", "summarize", "--store", str(path), check=True)
    return path


@pytest.mark.parametrize("lang", ["en", "ja"])
def test_the_answer_findings_and_tables_mark_the_emulated_server(store: Path, tmp_path: Path,
                                                                 lang: str) -> None:
    run_cli("report", "--store", str(store), "--out", str(tmp_path / "r"), "--lang", lang, check=True)
    md = (tmp_path / "r" / "report.md").read_text()
    for line in SAID[lang]:
        assert line in md, line
    # Every line that names the guest names it marked: never as a measurement.
    mark = "guest (emulated)" if lang == "en" else "guest（エミュレーション）"
    bare = [ln for ln in md.splitlines() if "guest" in ln and mark not in ln
            and "qemu" not in ln and "vm." not in ln and "Server guest" not in ln
            and "サーバー guest" not in ln and "サーバ guest" not in ln]
    assert [ln for ln in bare if "|" in ln and "%" in ln] == [], bare
    html = (tmp_path / "r" / "report.html").read_text()
    assert mark in html
    # The charts' legends and hover texts too: each chart names the guest marked, never bare.
    for kind in ("tps", "latency", "ratio"):
        svg = (tmp_path / "r" / "charts" / f"pgecons-read-{kind}.svg").read_text()
        assert mark in svg and ">guest<" not in svg and ">guest /" not in svg, kind


def test_the_csv_and_json_carry_an_emulated_column(store: Path, tmp_path: Path) -> None:
    run_cli("report", "--store", str(store), "--out", str(tmp_path / "r"), check=True)
    tables = tmp_path / "r" / "tables"
    for kind in ("tps", "ratio", "latency", "summary", "trials"):
        [path] = [p for p in tables.glob("*.csv") if p.stem == kind or p.stem.endswith(f"-{kind}")]
        with path.open(newline="") as f:
            rows = list(csv.DictReader(f))
        assert rows and list(rows[0])[-1] == "emulated", path.name
        marks = {r["server"]: r["emulated"] for r in rows}
        assert marks["guest"] == "1", (kind, rows)
        if kind != "ratio":
            assert marks["host"] == "0", (kind, rows)
    doc = json.loads((tmp_path / "r" / "tables.json").read_text())
    ratio = next(t for t in doc["tables"] if t["kind"] == "ratio")
    assert {r["emulated"] for r in ratio["rows"]} == {1}


def test_bmf_and_openmetrics_mark_the_emulated_figures(store: Path) -> None:
    bmf = json.loads(run_cli("results", "--store", str(store), "--format", "bmf", check=True).stdout)
    assert sorted(bmf) == ["emu/pgecons-read/clients=1/guest (emulated)",
                           "emu/pgecons-read/clients=1/host",
                           "emu/pgecons-read/clients=2/guest (emulated)",
                           "emu/pgecons-read/clients=2/host"]
    assert bmf["emu/pgecons-read/clients=1/host"]["throughput"]["value"] == 7424.5  # the median of 7421..7428
    text = run_cli("results", "--store", str(store), "--format", "openmetrics", check=True).stdout
    samples = [ln for ln in text.splitlines() if ln.startswith("teiten_tps{")]
    assert len(samples) == 4
    assert all(('emulated="true"' in ln) == ('server="guest"' in ln) for ln in samples), samples
    verdicts = [ln for ln in text.splitlines() if ln.startswith("teiten_verdict{")]
    assert verdicts and all('emulated="true"' in ln for ln in verdicts)


def test_a_study_without_an_emulated_server_is_marked_nowhere(tmp_path: Path) -> None:
    path = build_study(tmp_path / "s.db", STUDY, _tps, descriptions={"guest": {
        "version": "17.7", "host": {"vm": {**GUEST["host"]["vm"], "accelerator": "kvm", "emulated": False}}}})
    run_cli("store", "summarize", "--store", str(path), check=True)
    run_cli("report", "--store", str(path), "--out", str(tmp_path / "r"), check=True)
    md = (tmp_path / "r" / "report.md").read_text()
    assert "(emulated)" not in md and "pgecons-read: guest against host: " in md
    text = run_cli("results", "--store", str(path), "--format", "openmetrics", check=True).stdout
    assert "emulated" not in text
    bmf = json.loads(run_cli("results", "--store", str(path), "--format", "bmf", check=True).stdout)
    assert "emu/pgecons-read/clients=1/guest" in bmf
