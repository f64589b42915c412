"""Where the cluster's files go: WAL in a directory of the user's choice, the workload's
relations in a tablespace elsewhere; both survive restores and are cleaned up after, while
the user's directories themselves stay."""

from __future__ import annotations

import json
import re
from pathlib import Path

from tests.conftest import clusters_snapshot, run_cli

CHECK = """SELECT count(*) AS placed FROM pg_tables
 WHERE tablename IN ('pgbench_accounts', 'pgbench_branches') AND tablespace = 'teiten_data' \\gset
SELECT count(*) AS indexed FROM pg_indexes
 WHERE indexname = 'pgbench_accounts_pkey' AND tablespace = 'teiten_data' \\gset
\\if :placed + :indexed != 3
SELECT 1 / 0;
\\endif
"""


def test_separate_wal_and_tablespace(pg18, workdir: Path) -> None:
    wal, space = workdir / "waldisk", workdir / "datadisk"
    wal.mkdir()
    space.mkdir()
    (wal / "keep.txt").write_text("the user's file")
    (workdir / "check.pgbench").write_text(CHECK)
    (workdir / "layout.yaml").write_text(f"""
study: layout
servers:
  - name: pg18
    install: "18"
    initdb: {{waldir: {wal}}}
    tablespace: {space}
workloads:
  - {{name: placed, scripts: [{{builtin: tpcb-like, weight: 9}}, {{script: check.pgbench}}]}}
scale: 1
clients: [2]
duration: 2s
repetitions: 3
""")
    store = workdir / "layout.db"
    done = run_cli("run", str(workdir / "layout.yaml"), "--store", str(store), "--no-report")
    assert done.returncode == 0, done.stderr
    rows = json.loads(run_cli("results", "--store", str(store), "--format", "json").stdout)
    # Every trial after the first restored the snapshot, tablespace and WAL included.
    assert [r["status"] for r in rows] == ["ok"] * 3, [r["error"] for r in rows]
    shown = json.loads(run_cli("show", rows[-1]["trial_id"], "--store", str(store), "--format",
                               "json").stdout)
    assert set(shown["details"]["devices"]) == {"data", "wal"}
    statements = {s["script_index"] for s in shown["statements"]}
    assert statements == {0, 1}
    text = run_cli("show", rows[-1]["trial_id"], "--store", str(store)).stdout
    assert re.search(r"; latency [\d,]+\.\d{2,3} ms \(stddev [\d,]+\.\d{2,3}\)", text), text  # rounded
    # teiten's subdirectories are gone; the user's directories and files stay.
    assert sorted(p.name for p in wal.iterdir()) == ["keep.txt"]
    assert list(space.iterdir()) == []
    assert clusters_snapshot("layout") == set()
