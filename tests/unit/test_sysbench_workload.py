"""The sysbench workload as a study file gives it and the store keeps it: its options model
(teiten.spec.sysbench), its workload with every default (teiten.workloads.sysbench), stored
with its kind and read back as one, and its words in en and ja."""

from __future__ import annotations

import json
from typing import Any

import pytest

from teiten import workloads
from teiten.messages import tr
from teiten.model.errors import SpecError
from teiten.spec import json_schema, load_text
from teiten.spec.sysbench import TESTS, SysbenchSpec
from teiten.spec.workloads import BUILTIN_WORKLOADS, kind_of
from teiten.workloads.sysbench import SysbenchWorkload

HEAD = 'study: s\nservers:\n  - {name: a, install: "17"}\nworkloads:\n'


def _resolved(entry: str) -> Any:
    loaded = load_text(HEAD + f"  - {entry}\n", "study.yaml")
    (spec,) = loaded.study.workloads
    (found,) = workloads.resolve(loaded)
    return spec, found


def _error(entry: str) -> str:
    with pytest.raises(SpecError) as info:
        load_text(HEAD + f"  - {entry}\n", "study.yaml")
    return str(info.value)


def test_a_bare_name_is_the_read_only_test_with_sysbench_s_defaults() -> None:
    spec, found = _resolved("sysbench")
    assert isinstance(spec, SysbenchSpec) and kind_of("sysbench") == "SysbenchSpec"
    assert isinstance(found, SysbenchWorkload) and found.key == "sysbench"
    assert dict(found.options) == {"test": "oltp_read_only", "tables": 1, "table_size": 10000}
    assert found.sysbench_args() == ["oltp_read_only", "--tables=1", "--table-size=10000"]
    assert not found.modifies_data and found.sql_loaded and found.drives_one_server
    assert found.database == "teiten_sysbench" and found.present_table() == ("sbtest1", "sysbench prepare")
    assert found.pgbench_option("percentiles") is None and "sysbench" in BUILTIN_WORKLOADS


@pytest.mark.parametrize("test", TESTS)
def test_every_test_but_the_readers_changes_the_data(test: str) -> None:
    _, found = _resolved(f"{{name: sysbench, test: {test}, tables: 4, table_size: 500}}")
    assert found.sysbench_args() == [test, "--tables=4", "--table-size=500"]
    assert found.modifies_data == (test not in ("oltp_read_only", "oltp_point_select"))
    assert found.data_bytes() == 4 * 500 * 256 + 8 * (1 << 20)


def test_it_is_stored_with_its_kind_and_comes_back_as_one() -> None:
    _, found = _resolved("{name: sysbench, test: oltp_read_write, tables: 2, table_size: 10000}")
    stored = json.loads(json.dumps(found.to_json()))
    assert stored["kind"] == "sysbench" and stored["options"] == {
        "table_size": 10000, "tables": 2, "test": "oltp_read_write"}
    back = workloads.from_json(stored)
    assert type(back) is SysbenchWorkload and back == found
    about = workloads.about(stored, "ja")
    assert about.startswith(tr("workload.about.sysbench", "ja")) and "test=oltp_read_write" in about


@pytest.mark.parametrize(("entry", "expected"), [
    ("{name: sysbench, tables: 0}",
     "workloads[0].tables: input should be greater than or equal to 1 (got 0)"),
    ("{name: sysbench, tables: 1001}",
     "workloads[0].tables: input should be less than or equal to 1000 (got 1001)"),
    ("{name: sysbench, table_size: 2147483648}",
     "workloads[0].table_size: input should be less than or equal to 2147483647 (got 2147483648)"),
    ("{name: sysbench, test: bulk_insert}",
     "workloads[0].test: got 'bulk_insert'; input should be 'oltp_read_only', 'oltp_point_select', "
     "'oltp_read_write', 'oltp_write_only', 'oltp_update_index', 'oltp_update_non_index', "
     "'oltp_insert' or 'oltp_delete'"),
    ("{name: sysbench, scale: 3}",
     "'scale' is pgbench's -s; the sysbench workload sizes its data with its own options (see its "
     "README); remove it"),
    ("{name: sysbench, modifies_data: false}",
     "'modifies_data' does not apply: the sysbench test says whether it changes the data (all but "
     "oltp_read_only and oltp_point_select do); remove it"),
    ("{name: select-only, table_size: 10}",
     "'table_size' is an option of the sysbench workload, not of 'select-only'; remove it"),
    ("{name: sysbench, warehouses: 2}",
     "'warehouses' is an option of the tpcc workload, not of 'sysbench'; remove it"),
])
def test_a_bad_option_is_refused_on_one_line(entry: str, expected: str) -> None:
    assert _error(entry) == f"study.yaml:5: {expected}"


def test_the_schema_lists_its_options() -> None:
    defs = json.loads(json_schema())["$defs"]
    assert set(defs["SysbenchSpec"]["properties"]) == {"name", "test", "tables", "table_size"}
    assert defs["SysbenchSpec"]["properties"]["name"]["const"] == "sysbench"
