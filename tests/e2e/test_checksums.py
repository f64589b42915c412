"""Page checksums as a server option, read back from each cluster and recorded: off and on
for 17 (off by default) and 18 (on by default, so false must mean off); under the pgecons
profile every version gets them off unless the study says (as PGECons ran them), under the
default profile the version's own default; an optional server whose install is missing is
left out, and the report says so. How the servers differ is printed before the first trial
and opens the report."""

from __future__ import annotations

import json
import re
from pathlib import Path

from tests.conftest import run_cli


def test_checksums_recorded_for_17_and_18(pg17, pg18, workdir: Path) -> None:
    (workdir / "sums.yaml").write_text("""
study: sums
servers:
  - {name: pg17-default, install: "17"}
  - {name: pg17-on, install: "17", initdb: {data_checksums: true}}
  - {name: pg18-default, install: "18"}
  - {name: pg18-off, install: "18", initdb: {data_checksums: false}}
  - {name: pg18-own, install: "18", profile: default}
  - {name: no-vector, install: no-such-build, initdb: {data_checksums: true}, optional: true}
workloads: [select-only]
scale: 1
clients: [1]
duration: 1s
repetitions: 1
""")
    planned = run_cli("plan", str(workdir / "sums.yaml"), "--format", "json")
    assert {t["server"] for t in json.loads(planned.stdout)} == {
        "pg17-default", "pg17-on", "pg18-default", "pg18-off", "pg18-own"}
    assert ("teiten: note: the study compares initdb.data_checksums (— / on / — / off / —); "
            "install (17 / 17 / 18 / 18 / 18); profile (pgecons / pgecons / pgecons / pgecons / "
            "default); the rest of how its servers differ") in planned.stderr
    assert "optional server no-vector left out" in planned.stderr
    done = run_cli("run", str(workdir / "sums.yaml"), "--store", str(workdir / "sums.db"),
                   "--report", str(workdir / "report"))
    assert done.returncode == 0, done.stderr
    assert "teiten: note: optional server no-vector left out: install 'no-such-build' is unknown" \
        in done.stderr
    assert done.stdout == f"{workdir / 'report' / 'report.html'}\n", "stdout: the report's path alone"
    report = (workdir / "report" / "report.md").read_text()
    recorded = dict(re.findall(r"^### (\S+)\n\n(?:\|.*\n)*?\| Data checksums \| (\w+) \|", report, re.M))
    assert recorded == {"pg17-default": "off", "pg17-on": "on", "pg18-default": "off",
                        "pg18-off": "off", "pg18-own": "on"}
    # Before the first trial, the run says how the servers differ, read back from each.
    before = done.stderr.split("[", 1)[0]
    assert "teiten:   data_checksums: off / on / off / off / on (declared by the study)" in before
    assert re.search(r"teiten:   version: (17\.\d+) / \1 / (18\.\d+) / \2 / \2 \(declared by the "
                     r"study\)", before)
    # ... and so does the report, first: declared rows first, then a version's defaults.
    first = report.split("## Trial status", 1)[0]
    assert ("| data\\_checksums | off | on | off | off | on | declared by the study |" in first)
    assert re.search(r"\| effective\\_io\\_concurrency \| 1 \| 1 \| 16 \| 16 \| 16 \| "
                     r"a default of the version \|", first)
    assert "The optional server no-vector was left out: install 'no-such-build' is unknown" in report
    rows = run_cli("results", "--store", str(workdir / "sums.db")).stdout
    assert "no-vector" not in rows
