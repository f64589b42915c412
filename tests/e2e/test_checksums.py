"""Page checksums as a server option, read back from each cluster and recorded: off and on
for 17 (off by default) and 18 (on by default, so false must mean off); an optional server
whose install is missing is left out, and the report says so."""

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
  - {name: no-vector, install: no-such-build, initdb: {data_checksums: true}, optional: true}
workloads: [select-only]
scale: 1
clients: [1]
duration: 1s
repetitions: 1
""")
    planned = run_cli("plan", str(workdir / "sums.yaml"), "--format", "json")
    assert {t["server"] for t in json.loads(planned.stdout)} == {
        "pg17-default", "pg17-on", "pg18-default", "pg18-off"}
    assert "optional server no-vector left out" in planned.stderr
    done = run_cli("run", str(workdir / "sums.yaml"), "--store", str(workdir / "sums.db"),
                   "--report", str(workdir / "report"))
    assert done.returncode == 0, done.stderr
    assert "teiten: note: optional server no-vector left out: install 'no-such-build' is unknown" \
        in done.stdout
    report = (workdir / "report" / "report.md").read_text()
    recorded = dict(re.findall(r"^### (\S+)\n\n(?:\|.*\n)*?\| Data checksums \| (\w+) \|", report, re.M))
    assert recorded == {"pg17-default": "off", "pg17-on": "on", "pg18-default": "on",
                        "pg18-off": "off"}
    assert "The optional server no-vector was left out: install 'no-such-build' is unknown" in report
    rows = run_cli("results", "--store", str(workdir / "sums.db")).stdout
    assert "no-vector" not in rows
