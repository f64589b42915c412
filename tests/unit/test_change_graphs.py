"""A change point of a line of versions names the differential flame graph from the version
before to the version after (issue 19), where both were profiled; none is made up where
they were not. Analysis chooses the graph (analysis.history.graphed) and the report's drawer
draws it: the report no longer patches analysis's change points after the fact (issue 55)."""

from __future__ import annotations

import shutil
from dataclasses import replace
from pathlib import Path

import pytest

from teiten.analysis.gather import study_data
from teiten.analysis.history import graphed
from teiten.analysis.inputs import ReportOptions
from teiten.analysis.model import ChangePoint, History
from teiten.analysis.summary import report_data
from teiten.features import FEATURES
from teiten.host.flamegraphs import tool
from teiten.model.details import ProfileDetails
from teiten.report import outdir
from teiten.report.activity import profile_links
from teiten.report.build import ChangeDrawer
from teiten.report.history_tables import change_notes
from teiten.store import Store
from teiten.words.context import Context

STORE = Path(__file__).resolve().parent.parent / "golden" / "report-stores" / "versions.db"
FOLDED = {"pg13": "postgres;exec_simple_query;ExecScan 70\npostgres;PostgresMain;pq_getbyte 30\n",
          "pg17": "postgres;exec_simple_query;ExecScan 40\npostgres;PostgresMain;pq_getbyte 60\n"}


@pytest.fixture
def store(tmp_path: Path) -> Store:
    copy = tmp_path / "versions.db"
    shutil.copy(STORE, copy)
    return Store.open(copy)


def test_a_change_between_profiled_versions_gets_its_differential_graph(
        store: Store, tmp_path: Path) -> None:
    if tool("inferno-diff-folded") is None or tool("inferno-flamegraph") is None:
        pytest.fail("inferno is missing: make system builds it (teiten system setup --for flamegraphs)")
    sid = store.studies()[0].id
    data = report_data(study_data(store, sid, FEATURES), ReportOptions(store_path="s", generated_at="t"))
    sec = next(s for s in data.sections if s.workload == "select-only")
    change = ChangePoint(2, "pg13", "13", "pg17", "17", 0.8, (0.7, 0.9), 0.95, 0.01)
    trials = store.study_results(sid).trials
    profiled = {t.planned.server: t.trial_id for t in trials
                if t.planned.workload == "select-only" and t.planned.clients == 1}
    profiles = {profiled[s]: ProfileDetails(folded=text) for s, text in FOLDED.items()}

    with outdir.opened(tmp_path) as out:
        [c] = graphed((change,), "select-only", ChangeDrawer(trials, profiles, out))
    found = replace(data, sections=(replace(sec, history=History((), (), (c,), 0.05)),))
    assert c.graph == "flamegraphs/change-pg13-to-pg17-select-only-c1.svg"
    assert c.graph_clients == 1, "the change's own client count was not profiled: the one that was"
    svg = (tmp_path / c.graph).read_text()
    assert svg.startswith("<?xml") and "ExecScan" in svg and "pg13 → pg17" in svg
    note = change_notes(found.sections[0].history, Context("en"))[-1]  # type: ignore[arg-type]
    assert note.endswith(f"Differential flame graph of the change at 1 client: {c.graph}"), note
    assert any(href == c.graph for _, href in profile_links(found.sections[0], "ja"))

    assert graphed((change,), "select-only", None) == (change,), "no drawer (a compare report): no graph"
    with outdir.opened(tmp_path / "none") as out:
        [unprofiled] = graphed((change,), "select-only", ChangeDrawer(trials, {}, out))
    assert unprofiled.graph is None and unprofiled.graph_clients is None
    assert not (tmp_path / "none" / "flamegraphs").exists()
