"""Several pgbench at once (load clients, one per replication node): each process's
figures kept apart (teiten.tables.load_parts), in the Markdown and HTML reports and in the
CSV and JSON exports, with S7's and S11's tables exported beside them."""

from __future__ import annotations

import csv
import json
from dataclasses import replace
from pathlib import Path

import pytest
from tests.unit.report_fixture import report_data

from teiten.model.details import LOAD
from teiten.model.results import PlannedTrial, Status, TrialRecord
from teiten.report import write_report
from teiten.tables.load_parts import load_parts
from teiten.tables.rtt import RttBound, RttRow
from teiten.tables.scale_out import ScaleOut, ScaleOutRow


def _part(client: str, node: str, tps: float, latency: float, started: float) -> dict[str, object]:
    return {"client": client, "node": node, "tps": tps, "transactions": int(tps * 2),
            "latency_ms_avg": latency, "returncode": 0, "started_at": started, "errors": []}


def _trial(trial_id: str, workload: str, status: Status) -> TrialRecord:
    return TrialRecord(PlannedTrial(trial_id, int(trial_id[1:]), "db1", workload, 2, 1, 1, 1.0),
                       study_id=1, study="s", status=status)


TRIALS = [_trial("t1", "w", "ok"), _trial("t2", "w", "ok"), _trial("t3", "w", "failed"),
          _trial("t4", "other", "ok")]
STORED = {
    "t1": {"parts": [_part("here", "db1", 300.0, 6.0, 100.0), _part("c2", "db1", 100.0, 20.0, 100.004)],
           "skew_s": 0.004},
    "t2": {"parts": [_part("here", "db1", 500.0, 4.0, 200.0), _part("c2", "db1", 100.0, 19.0, 200.010)],
           "skew_s": 0.010},
    "t3": {"parts": [_part("here", "db1", 9999.0, 1.0, 0.0), _part("c2", "db1", 1.0, 1.0, 0.0)],
           "skew_s": 9.0},
    "t4": {"parts": [_part("here", "db1", 1.0, 1.0, 0.0)], "skew_s": 0.0},
}
LOADS = {trial_id: LOAD.read(stored) for trial_id, stored in STORED.items()}  # as the store reads them


def test_each_process_is_the_median_over_the_ok_repetitions() -> None:
    rows = load_parts("w", TRIALS, LOADS)
    assert [(r.client, r.node) for r in rows] == [("c2", "db1"), ("here", "db1")]
    c2, here = rows
    assert (here.tps, here.latency_ms) == (400.0, 5.0)
    assert (c2.tps, c2.latency_ms) == (100.0, 19.5)
    # shares: t1 300/400 and 100/400, t2 500/600 and 100/600; the failed t3 counts nowhere
    assert here.share == pytest.approx((0.75 + 500 / 600) / 2)
    assert c2.share == pytest.approx((0.25 + 100 / 600) / 2)
    assert here.skew_ms == pytest.approx(7.0) and c2.skew_ms == pytest.approx(7.0)


def test_a_single_pgbench_gives_no_table() -> None:
    assert load_parts("other", TRIALS, LOADS) == ()
    assert load_parts("w", TRIALS, {}) == ()


def _with_topology() -> object:
    data = report_data("en")
    read = data.sections[0]
    parts = tuple(replace(r, server="pg17") for r in load_parts("w", TRIALS, LOADS))
    scale = ScaleOut((ScaleOutRow("pg17", "sync (remote_apply)", 2, False, 2, 1234.56, 617.28,
                                  504.0, 0.61, 3.4),), same_machine=("pg17",))
    rtt = (RttBound("pg18", 0.25, 3.0, (RttRow(2, 1500.0, 2666.67, 56.25, 40.0),)),)
    sections = (replace(read, tables=(("rtt", rtt), *read.tables, ("scale_out", scale), ("load_parts", parts))),
                *data.sections[1:])
    return replace(data, sections=sections)


def test_the_reports_show_each_pgbench(tmp_path: Path) -> None:
    md = (write_report(_with_topology(), tmp_path)["markdown"]).read_text()
    assert "### Each pgbench of the trials that ran several at once" in md
    assert "| pg17 | 2 | here | db1 | 400.0 | 5.000 | 79.2% | 7 |" in md
    assert "| pg17 | 2 | c2 | db1 | 100.0 | 19.500 | 20.8% | 7 |" in md


def _csv(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as fh:
        return list(csv.DictReader(fh))


def test_the_exports_carry_each_pgbench_s7_and_the_rtt_bound(tmp_path: Path) -> None:
    written = write_report(_with_topology(), tmp_path)
    tables = tmp_path / "tables"
    load = _csv(tables / "pgecons-read-load.csv")
    assert [(r["load_client"], r["tps"], r["share_pct"], r["skew_ms"]) for r in load] == [
        ("c2", "100.0", "20.8", "7.0"), ("here", "400.0", "79.2", "7.0")]
    (s7,) = _csv(tables / "pgecons-read-scaleout.csv")
    assert (s7["method"], s7["pgpool"], s7["nodes"], s7["total_tps"], s7["per_node_tps"],
            s7["lag_bytes_max"], s7["skew_ms"]) == ("sync (remote_apply)", "0", "2", "1234.6",
                                                    "617.3", "504", "3.4")
    (rtt,) = _csv(tables / "pgecons-read-rtt.csv")
    assert (rtt["server"], rtt["rtt_ms"], rtt["clients"], rtt["ceiling_tps"],
            rtt["of_ceiling_pct"], rtt["network_pct"]) == ("pg18", "0.25", "2", "2666.7",
                                                           "56.2", "40.0")
    doc = json.loads(written["json"].read_text())
    kinds = {t["kind"] for t in doc["tables"] if t["workload"] == "pgecons-read"}
    assert {"load", "scaleout", "rtt"} <= kinds
    html = (tmp_path / "report.html").read_text()
    assert "tables/pgecons-read-load.csv" in html and "each pgbench" in html


def test_nodes_on_hosts_of_one_running_kernel_are_one_machine() -> None:
    from teiten.tables.scale_out import one_machine

    def node(name: str, boot_id: str | None) -> dict[str, object]:
        return {"node": name, "ssh": f"{name}.example", **({"boot_id": boot_id} if boot_id else {})}

    assert one_machine({})  # every node on this machine, or on the one ssh host
    assert one_machine({"nodes": [node("node0", "k1"), node("node1", "k1")]})  # namespaces, containers
    assert not one_machine({"nodes": [node("node0", "k1"), node("node1", "k2")]})
    # a host that said nothing of its kernel is not assumed to be the others'
    assert not one_machine({"nodes": [node("node0", None), node("node1", None)]})


@pytest.mark.parametrize(("lang", "shared", "expected"), [
    ("en", ("pg17", "pg18"), "Every node of a server runs on one machine (this one, or its ssh "
     "host, or ssh hosts of one running kernel) and shares its CPUs, so the total cannot grow "
     "with the number of nodes here: this run shows the method and that it works, not the "
     "scaling (METHODS S7 used one machine per node)."),
    ("en", ("pg17",), "pg17: every node runs on one machine (this one, or its ssh host, or ssh "
     "hosts of one running kernel) and shares its CPUs, so its total cannot grow with the "
     "number of nodes: it shows the method, not the scaling. The other servers' nodes ran on "
     "machines of their own (ssh hosts with different running kernels)."),
    ("ja", ("pg17",), "pg17: 全ノードが 1 台（このマシン、ssh ホスト、または同じカーネルで動く複数の "
     "ssh ホスト）の CPU を共有するため、合計はノード数とともに伸びない（方式の確認であり、スケールの"
     "測定ではない）。他のサーバのノードはそれぞれ別のマシン（カーネルの異なる ssh ホスト）で動いた。"),
    ("en", (), None),
])
def test_the_s7_table_says_which_servers_shared_one_machine(
        lang: str, shared: tuple[str, ...], expected: str | None) -> None:
    from teiten.tables.scale_out.table import scale_out_table
    from teiten.words.context import Context

    rows = tuple(ScaleOutRow(name, "async", 2, False, 2, 1000.0, 500.0, 0.0, 0.1, 3.0)
                 for name in ("pg17", "pg18"))
    notes = scale_out_table(ScaleOut(rows, same_machine=shared), Context(lang)).notes
    machine = [n for n in notes if "one machine" in n or "1 台" in n]
    assert machine == ([expected] if expected else [])
