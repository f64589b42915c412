"""The stored study as a typed record (issue 37, item 5): what teiten.run.record and the run write
into spec_json reads back as typed fields, an older store's missing keys read as their
defaults, and no module of the analysis or the report reads a stored spec by its keys."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from teiten.model.results import ServerRecord, StudyResults
from teiten.model.studyrecord import (
    AutoDecision,
    AutoRule,
    Grant,
    GuardRun,
    Joined,
    Omitted,
    Placement,
    Resolved,
    StoredRun,
    StudyRecord,
)

SRC = Path(__file__).resolve().parent.parent.parent / "src" / "teiten"

WRITTEN = {  # as teiten.run.record.create and the runner write it
    "study": {"study": "s", "clients": [1, 4], "duration": 2.0, "repetitions": "auto",
              "scale": 10, "order": "random-blocks", "seed": 7, "description": "d",
              "margin_pct": 3, "tenants": [["a", "b"]], "environments": True,
              "auto_repetitions": {"target_pct": 4}},
    "pgbench": {"ref": "18", "version": "18.1", "bindir": "/x/bin"},
    "workloads": [{"key": "read", "scripts": [["builtin:select-only", 1]]},
                  {"key": "tpch", "suite": "tpch-like"}],
    "omitted": [{"server": "kvm", "reason": "no kvm"}],
    "noise_guard": {"max_foreign_cpus": 0.5, "enabled": False},
    "beside_others": True, "testbed": "rack-3",
    "quiet_check": {"cpus": 0.1},
    "joined_by": [{"study": "o", "store": "o.db", "pid": 12, "since": "t", "trial": "x"}],
    "runs": [{"started": "t0", "wall_s": 30.0, "clusters_loaded": 2, "trials_run": 1,
              "seconds": {"start": 0.8, "trials": 20.0}},
             {"started": "t1", "wall_s": 5, "clusters_loaded": 0, "seconds": {}}],
    "auto_decisions": [{"decision": "stop", "trials": 4}],
    "more_blocks": [{"after": 8, "blocks": 4}],
    "guard_runs": [{"since": "t0", "enabled": False}, {"since": "t1", "enabled": True}, {"since": "t2"}],
}


def test_what_a_study_stored_reads_back_typed() -> None:
    r = StudyRecord.from_json(WRITTEN)
    p = r.parameters
    assert (p.clients, p.repetitions, p.scale, p.order, p.seed, p.description) == (
        (1, 4), "auto", 10, "random-blocks", 7, "d")
    assert (p.margin_pct, p.tenants, p.environments) == (3.0, (("a", "b"),), True)
    assert p.fields["auto_repetitions"] == {"target_pct": 4}
    assert [(w.key, w.scripts, w.suite) for w in r.workloads] == [
        ("read", (("builtin:select-only", 1),), None), ("tpch", (), "tpch-like")]
    assert r.omitted == (Omitted("kvm", "no kvm"),)
    assert r.joined_by == (Joined("o", "o.db", 12, "t", "x"),)
    assert (r.beside_others, r.testbed, r.guard_enabled()) == (True, "rack-3", False)
    assert r.quiet_check == {"cpus": 0.1}
    assert r.runs == (StoredRun(30.0, 2, 1, {"start": 0.8, "trials": 20.0}),
                      StoredRun(5.0, 0, None, {}))  # a run kept before its trials were counted
    assert r.auto_decisions == ({"decision": "stop", "trials": 4},)
    assert r.more_blocks == (Grant(8, 4),) and r.granted_until() == 12
    assert r.guard_runs == (GuardRun("t0", False), GuardRun("t1", True))  # one without enabled: left out
    assert (r.guarded("t0"), r.guarded("t1"), r.guarded(None), r.guard_mixed()) == (False, True, None, True)
    assert r.pgbench == Resolved("18", "18.1", bindir="/x/bin")
    assert p.auto_repetitions == AutoRule(target_pct=4) and p.settles


def test_an_older_store_lacks_keys_and_reads_their_defaults() -> None:
    r = StudyRecord.from_json({"study": {"clients": [1], "duration": 5, "repetitions": 3,
                                         "scale": 1, "order": "sequential", "seed": 1},
                               "workloads": [{"key": "w", "scripts": [["f.sql", 2]]}]})
    assert r.parameters.margin_pct is None and r.parameters.tenants == ()
    assert r.parameters.repetitions == 3 and r.parameters.duration_s == 5.0
    assert (r.omitted, r.joined_by, r.runs, r.auto_decisions, r.more_blocks, r.guard_runs) == (
        (), (), (), (), (), ())
    assert r.granted_until() is None and not r.guard_mixed()
    assert (r.beside_others, r.testbed, r.noise_guard, r.guard_enabled()) == (
        False, None, None, False)
    assert (r.pgbench, r.parameters.auto_repetitions) == (None, AutoRule())


def test_a_malformed_stored_study_says_what_does_not_fit() -> None:
    with pytest.raises(TypeError, match="where a number belongs"):
        StudyRecord.from_json({"study": {"scale": [1]}})
    with pytest.raises(TypeError, match="where a list belongs"):
        StudyRecord.from_json({"omitted": "kvm"})
    with pytest.raises(ValueError, match="reason"):  # pydantic's ValidationError names the field
        StudyRecord.from_json({"omitted": [{"server": "kvm"}]})


def test_a_stored_server_reads_back_typed() -> None:
    spec = {"name": "pg17-2cores", "install": "17", "cores": 2, "profile": "pgecons",
            "replicas": 1, "replication": "sync", "synchronous_commit": "remote_apply",
            "pgpool": {"mode": "streaming"}, "limits": {"memory": "2GB"},
            "placement": {"cpus": "0-1", "cores": 2, "client_cpus": "any"},
            "resolved": {"version": "17.11", "build": {"key": "k"}}}
    setup = ServerRecord("pg17-2cores", 0, "local", spec).setup
    assert (setup.version, setup.build, setup.placement) == ("17.11", {"key": "k"},
                                                            Placement("0-1", 2, "any"))
    assert (setup.replicas, setup.replication, setup.synchronous_commit, setup.pgpool) == (
        1, "sync", "remote_apply", True)
    assert (setup.profile, setup.limits) == ("pgecons", {"memory": "2GB"})
    assert (setup.install, setup.resolved) == ("17", Resolved(version="17.11", build={"key": "k"}))
    plain = ServerRecord("a", 0, "local", {"name": "a"}).setup
    assert (plain.version, plain.placement, plain.replicas, plain.replication, plain.pgpool) == (
        None, None, 0, "async", False)


def test_the_record_follows_its_study() -> None:
    study = StudyResults(1, "s", "s.yaml", "", WRITTEN, 0, "finished", "t0", None, {}, "0", (), ())
    assert study.record.testbed == "rack-3"
    assert study.record is study.record  # read once


def _spec_reads(tree: ast.AST) -> list[int]:
    """Lines where a stored spec (an attribute ``spec``) is read by key: ``x.spec[...]``,
    ``x.spec.get(...)`` and the like; passing it whole (``kinds.stored(kind, row.spec)``,
    ``{**study.spec}``) is not reading it."""
    return [node.lineno for node in ast.walk(tree)
            if isinstance(node, ast.Subscript | ast.Attribute) and _is_spec(node.value)]


def _is_spec(node: ast.AST) -> bool:
    return isinstance(node, ast.Attribute) and node.attr == "spec"


def test_no_module_of_the_analysis_or_the_report_reads_a_stored_spec_by_key() -> None:
    reads = {str(path.relative_to(SRC)): lines
             for area in ("analysis", "report") for path in sorted((SRC / area).rglob("*.py"))
             if (lines := _spec_reads(ast.parse(path.read_text())))}
    assert reads == {}, f"read StudyResults.record or ServerRecord.setup instead: {reads}"


def test_the_rule_sees_a_read() -> None:
    assert _spec_reads(ast.parse("a = study.spec['study']\nb = row.spec.get('x')\n")) == [1, 2]
    assert _spec_reads(ast.parse("k = kinds.stored(row.kind, row.spec)\nd = {**s.spec}\n")) == []


def test_the_last_auto_decision_reads_typed() -> None:
    r = StudyRecord.from_json({"auto_decisions": [
        {"blocks": 3, "decision": "add", "trials": 4, "widest_pct": 7.5, "to_decide": 2, "where": "w"},
        {"blocks": 4, "decision": "ceiling", "widest_pct": None, "ceiling": 6}]})
    assert r.last_decision() == AutoDecision(4, "ceiling", ceiling=6)  # a key it lacks: its default
    assert r.auto_decisions[0]["where"] == "w"  # the body as stored, for the report
    assert StudyRecord.from_json({}).last_decision() is None
    with pytest.raises(ValueError, match="blocks"):
        StudyRecord.from_json({"auto_decisions": [{"decision": "stop"}]}).last_decision()
