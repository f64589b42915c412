"""Tenants (issue 23): what a study may ask, the plan's points, and how a group's trial is read
as one trial per tenant, each compared with itself alone."""

from __future__ import annotations

import pytest

from teiten.analysis.inputs import StudyData
from teiten.analysis.tenants import apart, pairs, tenant_name
from teiten.model.details import LOAD
from teiten.model.errors import SpecError
from teiten.model.results import LoadFigures, PlannedTrial, ServerRecord, StudyResults, TrialRecord
from teiten.run.plan import plan
from teiten.spec import load_text

HEAD = """\
study: t
servers:
  - {name: g1, install: "18"}
  - {name: g2, install: "18"}
  - {name: g3, install: "18"}
workloads: [tpcb-like]
clients: [1, 4]
repetitions: 2
"""


def test_a_group_is_a_point_of_every_block_beside_its_servers() -> None:
    study = load_text(HEAD + "tenants: [[g1, g2], [g1, g2, g3]]\n", "t.yaml").study
    assert study.points() == ["g1", "g2", "g3", "g1+g2", "g1+g2+g3"]
    trials = plan(study)
    assert len(trials) == 5 * 2 * 2
    for rep in (1, 2):
        block = {(t.server, t.clients) for t in trials if t.repetition == rep}
        assert block == {(s, c) for s in study.points() for c in (1, 4)}


@pytest.mark.parametrize(("line", "message"), [
    ("tenants: [[g1, g9]]", "'tenants' names server 'g9', which is not in 'servers' (g1, g2, g3)"),
    ("tenants: [[g1, g1]]", "'tenants' lists server 'g1' twice in one group"),
    ("tenants: [[g1]]", "a group of 'tenants' loads two servers or more at once; [g1] has 1"),
    ("tenants: [[g1, g2]]\ncores: [1, 2]", "'tenants' names servers, and the 'cores' axis renames"),
    ("tenants: [[g1, g2], [g1, g2]]", "'tenants' lists the group g1+g2 twice; list each group once"),
    ("tenants: [[g1, g2]]\nrepetitions: auto", "with 'tenants', give a number of repetitions"),
])
def test_a_group_that_cannot_run_is_refused(line: str, message: str) -> None:
    with pytest.raises(SpecError) as info:
        head = HEAD.replace("repetitions: 2\n", "") if "repetitions" in line else HEAD
        load_text(head + line + "\n", "t.yaml")
    assert message in str(info.value), str(info.value)


def _trial(tid: str, server: str, rep: int, tps: float, status: str = "ok") -> TrialRecord:
    return TrialRecord(
        PlannedTrial(tid, 0, server, "w", 1, 1, rep, 1.0), study_id=1, study="t", status=status,  # type: ignore[arg-type]
        figures=LoadFigures(tps, int(tps), 0, 1.0, 1.0, 0.1, 2.0, "18.1") if status == "ok" else None)


def test_a_group_trial_becomes_one_trial_per_tenant_from_its_parts() -> None:
    spec = {"study": {"tenants": [["g1", "g2"]]}}
    servers = tuple(ServerRecord(n, i, "local", {"name": n}, None) for i, n in enumerate(["g1", "g2"]))
    trials = (_trial("a1", "g1", 1, 900.0), _trial("b1", "g2", 1, 800.0),
              _trial("x1", "g1+g2", 1, 1000.0), _trial("x2", "g1+g2", 2, 0.0, "failed"))
    study = StudyResults(1, "t", "t.yaml", "", spec, 0, "finished", "t0", None, {}, "0",
                         servers, trials)
    loads = {"x1": LOAD.read({"parts": [
        {"client": "here", "node": "g1", "tps": 600.0, "transactions": 600, "latency_ms_avg": 1.5},
        {"client": "here", "node": "g2", "tps": 400.0, "transactions": 400, "latency_ms_avg": 2.5}]})}
    data = apart(StudyData(study, metrics={"x1": {"cpu_user": 80.0, "wal_bytes": 5.0}},
                           loads=loads))
    names = [s.name for s in data.study.servers]
    assert names == ["g1", "g2", "g1 (with g2)", "g2 (with g1)"]
    by_id = {t.trial_id: t for t in data.study.trials}
    assert "x1" not in by_id
    assert by_id["x1/g1"].planned.server == "g1 (with g2)" and by_id["x1/g1"].tps == 600.0
    assert by_id["x1/g2"].figures is not None and by_id["x1/g2"].figures.latency_ms_avg == 2.5
    assert by_id["x1/g2"].planned.repetition == 1, "in the block of the group's trial"
    assert by_id["x2/g1"].status == "failed" and by_id["x2/g1"].figures is None
    assert data.metrics["x1/g1"] == {"cpu_user": 80.0}, "the machine's CPU, not one server's WAL"
    assert pairs(study.record.parameters) == [("g1", "g1 (with g2)"), ("g2", "g2 (with g1)")]
    assert tenant_name("g2", ["g1", "g2", "g3"]) == "g2 (with g1+g3)"


def test_a_group_trial_says_how_each_server_started() -> None:
    from teiten.analysis.cycle import start_key, started_from
    from teiten.model.cycles import start as stored_start

    start = stored_start({"tenants": {"g1": {"data": "restored", "restore": "reflink clone", "after": "changed",
                                "server": "restarted"}, "g2": {"data": "as loaded"}}})
    assert started_from(start) == ("g1: data restored from the snapshot by reflink clone; server "
                                   "restarted; g2: data as loaded")
    assert start_key(start) == "reflink"


def test_a_group_whose_optional_server_is_not_here_is_left_out_with_it() -> None:
    from teiten.run.check import without_missing_optionals

    text = HEAD.replace('{name: g3, install: "18"}', '{name: g3, install: "/nonexistent/bin", '
                        'optional: true}') + "tenants: [[g1, g2], [g2, g3]]\n"
    loaded, omitted = without_missing_optionals(load_text(text, "t.yaml"), [])
    assert loaded.study.tenants == [["g1", "g2"]]
    assert [name for name, _ in omitted] == ["g3", "g2+g3"]
    assert omitted[1][1] == "tenants group without g3"
