"""Each kind of workload owns its options model: which model an entry is read with, the one-line
refusal of another workload's option, the workloads' registries, and the JSON Schema."""

from __future__ import annotations

import json
from typing import Any

import pytest
import yaml

from teiten import workloads
from teiten.model.errors import SpecError, UserError
from teiten.spec import (
    AccesslogSpec,
    BookstoreSpec,
    FreezeSpec,
    FulltextSpec,
    IotSpec,
    PgbenchSpec,
    ScriptSpec,
    TpccSpec,
    json_schema,
    load_text,
)
from teiten.spec.workloads import BUILTIN_WORKLOADS, KINDS, PGBENCH_WORKLOADS, kind_of
from teiten.workloads import BUILTINS, apps, statements

HEAD = 'study: s\nservers:\n  - {name: a, install: "17"}\nworkloads:\n'


def workloads_of(*lines: str) -> list[Any]:
    return list(load_text(HEAD + "".join(f"  - {line}\n" for line in lines), "study.yaml").study.workloads)


def error_of(line: str) -> str:
    with pytest.raises(SpecError) as info:
        load_text(HEAD + f"  - {line}\n", "study.yaml")
    return str(info.value)


# ------------------------------------------------------------------ which model reads an entry

@pytest.mark.parametrize(("raw", "kind"), [
    ("pgecons-read", "PgbenchSpec"), ("tpcc", "TpccSpec"), ("freeze", "FreezeSpec"),
    ("nosuch", "PgbenchSpec"),  # refused by the registry, with a did-you-mean
    ({"name": "bookstore", "mix": "browsing"}, "BookstoreSpec"),
    ({"name": "tpcc", "script": "a.pgbench"}, "ScriptSpec"),  # a script of one's own, named tpcc
    ({"name": "mix", "scripts": []}, "ScriptSpec"), ({"script": "a.pgbench"}, "ScriptSpec"),
    ({"name": "tpcc", "script": None}, "TpccSpec"), ({"fillfactor": 80}, "ScriptSpec"),
    ({"name": 5}, "PgbenchSpec"), (5, "PgbenchSpec"),
])
def test_the_kind_is_read_from_the_raw_entry(raw: object, kind: str) -> None:
    assert kind_of(raw) == kind


def test_every_form_of_today_is_read_with_its_kinds_model() -> None:
    found = workloads_of("pgecons-read", "{name: pgecons-update, fillfactor: 90, scale: 3}",
                         "{script: my.pgbench, weight: 2}",
                         "{name: mix, scripts: [{builtin: tpcb-like}, {script: b.pgbench}]}",
                         "tpcc", "{name: bookstore, think_time: 100ms, rampup: 2s}",
                         "{name: iot, period: 40d, models: jsonb}", "fulltext",
                         "{name: accesslog, workers: [0, 2]}", "{name: freeze, frozen: 50}")
    assert [type(w) for w in found] == [PgbenchSpec, PgbenchSpec, ScriptSpec, ScriptSpec, TpccSpec,
                                        BookstoreSpec, IotSpec, FulltextSpec, AccesslogSpec,
                                        FreezeSpec]
    assert [w.key for w in found] == ["pgecons-read", "pgecons-update", "my", "mix", "tpcc",
                                      "bookstore", "iot", "fulltext", "accesslog", "freeze"]
    assert all(w.script is None and w.scripts is None for w in found if not isinstance(w, ScriptSpec))
    bookstore, iot, freeze = found[5], found[6], found[9]
    assert (bookstore.think_time, bookstore.rampup) == (0.1, 2.0)
    assert (iot.period, iot.models) == (40 * 86400.0, ["jsonb"])
    assert freeze.frozen == [50]


def test_an_option_left_empty_is_still_accepted() -> None:
    (read,) = workloads_of("{name: pgecons-read, warehouses: null}")
    assert isinstance(read, PgbenchSpec)


# ------------------------------------------------------------------ another workload's option

REFUSED = {
    "an app's option on a pgbench workload": (
        "{name: pgecons-read, warehouses: 2}",
        "study.yaml:5: 'warehouses' is an option of the tpcc workload, not of 'pgecons-read'; "
        "remove it"),
    "an option of two apps on a script": (
        "{script: x.pgbench, rampup: 5}",
        "study.yaml:5: 'rampup' is an option of the tpcc and bookstore workloads, not of 'x'; "
        "remove it"),
    "a suite's option on an app": (
        "{name: tpcc, cache: [warm]}",
        "study.yaml:5: 'cache' is an option of the iot and fulltext and accesslog and freeze "
        "workloads, not of 'tpcc'; remove it"),
    "an unknown name with another workload's option": (
        "{name: nosuch, frozen: [0]}",
        "study.yaml:5: 'frozen' is an option of the freeze workload, not of 'nosuch'; remove it"),
    "pgbench's fillfactor on a suite": (
        "{name: iot, fillfactor: 80}",
        "study.yaml:5: 'fillfactor' is pgbench's -F; the iot workload sets its own fillfactors "
        "(see its README); remove it"),
    # Accepted and ignored before each kind had its own options; now refused, saying what to do.
    "pgbench's scale on an app": (
        "{name: tpcc, scale: 5}",
        "study.yaml:5: 'scale' is pgbench's -s; the tpcc workload sizes its data with its own "
        "options (see its README); remove it"),
    "a weight without a script": (
        "{name: select-only, weight: 2}",
        "study.yaml:5: 'weight' weighs a script of your own ({script: file.pgbench, weight: 2}) "
        "or an entry of 'scripts'; remove it"),
    "modifies_data on a suite": (
        "{name: freeze, modifies_data: false}",
        "study.yaml:5: 'modifies_data' does not apply: the freeze workload's data is restored "
        "before every trial; remove it"),
    "no name and no script": (
        "{fillfactor: 80}", "study.yaml:5: workloads[0]: a workload needs a 'name' (or a 'script')"),
    "a mix without a name": (
        "{scripts: [{builtin: tpcb-like}]}",
        "study.yaml:5: workloads[0]: a mix of 'scripts' needs a 'name'"),
    "a number": (
        "5", "study.yaml:5: workloads[0]: write a workload name such as pgecons-read, or a mapping "
        "such as {name: pgecons-update, fillfactor: 80} or {script: my.pgbench} (got 5)"),
}


@pytest.mark.parametrize("case", list(REFUSED))
def test_an_option_of_another_workload_is_refused_on_one_line(case: str) -> None:
    line, expected = REFUSED[case]
    assert error_of(line) == expected


def test_the_line_is_the_options_own() -> None:
    with pytest.raises(SpecError) as info:
        load_text(HEAD + "  - name: tpcc\n    warehouses: 2\n    think_time: 1s\n", "study.yaml")
    assert str(info.value).startswith("study.yaml:7: 'think_time' is an option of the bookstore")


# ------------------------------------------------------------------ the registries agree

def test_the_spec_names_every_registered_workload() -> None:
    assert tuple(BUILTINS) == PGBENCH_WORKLOADS
    built_in = (*BUILTINS, *apps.APPS, *statements.SUITE_NAMES)
    assert BUILTIN_WORKLOADS[:len(built_in)] == built_in  # then any other kind's, in KINDS's order
    assert tuple(name for model in KINDS for name in model.names) == BUILTIN_WORKLOADS
    for model in KINDS:  # each options model's kind of workload runs the names it takes
        found = workloads.kind(model.kind)
        assert found.name == model.kind and set(model.names) <= set(found.names), model.__name__
    assert {n for model in KINDS for n in workloads.kind(model.kind).names} == set(BUILTIN_WORKLOADS)


@pytest.mark.parametrize("kind", [k for k in KINDS if k.kind != "pgbench"], ids=lambda k: k.__name__)
def test_each_model_holds_its_workloads_options(kind: type) -> None:
    (name,) = kind.names
    defaults = workloads.kind(kind.kind).defaults(name)
    own = set(kind.model_fields) - {"name", "modifies_data"}
    assert own == set(defaults)


def test_a_kind_the_study_files_do_not_know_is_refused() -> None:
    with pytest.raises(UserError, match="knows no kind of workload 'nosuch'"):
        workloads.kind("nosuch")
    with pytest.raises(UserError, match="knows no kind of workload 'base'"):
        workloads.kind("base")  # a module of the package, but no kind


# ------------------------------------------------------------------ the JSON Schema

def test_each_workload_lists_only_its_own_options_in_the_schema() -> None:
    defs = json.loads(json_schema())["$defs"]
    for kind in KINDS:
        assert set(defs[kind.__name__]["properties"]) == set(kind.model_fields), kind.__name__
    assert "warehouses" in defs["TpccSpec"]["properties"]
    assert "think_time" not in defs["TpccSpec"]["properties"]
    assert defs["FreezeSpec"]["properties"]["name"]["const"] == "freeze"


def _admits(member: dict[str, Any], entry: dict[str, Any]) -> bool:
    """Whether a workload model's JSON Schema admits an entry, on what tells the models apart:
    the keys each one has, the names it takes and the keys it requires."""
    name = member["properties"]["name"]
    name = name.get("anyOf", [name])[0]
    if "const" in name and entry.get("name") != name["const"]:
        return False
    if "enum" in name and entry.get("name") not in name["enum"]:
        return False
    if not set(entry) <= set(member["properties"]) or not set(member.get("required", [])) <= set(entry):
        return False
    if "anyOf" in member and not any(set(r["required"]) <= set(entry) for r in member["anyOf"]):
        return False
    return not ("not" in member and set(member["not"]["required"]) <= set(entry))


def test_the_schema_refuses_what_the_loader_refuses() -> None:
    defs = json.loads(json_schema())["$defs"]
    members = [defs[kind.__name__] for kind in KINDS]
    for line, _ in REFUSED.values():
        entry = yaml.safe_load(line)
        assert not isinstance(entry, dict) or not any(_admits(m, entry) for m in members), line
    for line in ("{name: tpcc, warehouses: 2}", "{name: tpcc, script: a.pgbench}", "{name: freeze}",
                 "{name: pgecons-update, fillfactor: 80}", "{name: mix, scripts: []}"):
        entry = yaml.safe_load(line)
        assert [m["title"] for m in members if _admits(m, entry)] == [kind_of(entry)], line


def test_a_stored_workload_comes_back_of_its_kind_as_stored_before_kinds_were_named() -> None:
    loaded = load_text(HEAD + "".join(f"  - {w}\n" for w in (
        "pgecons-read", "{name: tpcc, warehouses: 3}", "{name: freeze, frozen: [0, 50]}")), "study.yaml")
    for w in workloads.resolve(loaded):
        stored = json.loads(json.dumps(w.to_json()))
        assert "kind" not in stored  # known by its app or suite field, as every store has it
        back = workloads.from_json(stored)
        assert type(back) is type(w) and back == w
