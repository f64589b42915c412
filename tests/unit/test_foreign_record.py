"""The noise guard's record of foreign load (teiten.host.guard.ForeignLoad) read and written
through its typed fields (issue 55): the stored body key for key as before, the fields a load
lacks left out, a malformed body refused in its checks' words, a missing key said as such."""

from __future__ import annotations

import json

import pytest

from teiten.host.guard import FOREIGN, Consumer, ForeignLoad, Program


def test_a_load_is_stored_key_for_key_and_reads_back() -> None:
    server = {"pid": 40, "datadir": "/x", "port": 5433}
    found = ForeignLoad(2.0, 0, (Consumer(11, "stress-ng-cpu", 1.9),), {"psi_some_ms": 0.5},
                        own_cpu_s=1.25, capacity=2,
                        programs=(Program("stress-ng", 10, 3, 3.8), Program("pgbench", 30, 6, 2.4, server)))
    details: dict[str, object] = {}
    FOREIGN.put(details, found)
    assert json.dumps(details) == (
        '{"foreign": {"window_s": 2.0, "cpu_s": 0, "top": [{"pid": 11, "name": "stress-ng-cpu", '
        '"cpu_s": 1.9}], "memory": {"psi_some_ms": 0.5}, "own_cpu_s": 1.25, "capacity": 2, '
        '"programs": [{"name": "stress-ng", "pid": 10, "processes": 3, "cpu_s": 3.8}, {"name": '
        '"pgbench", "pid": 30, "processes": 6, "cpu_s": 2.4, "server": {"pid": 40, "datadir": '
        '"/x", "port": 5433}}]}}')
    assert FOREIGN.read(json.loads(json.dumps(details["foreign"]))) == found
    assert ForeignLoad(3.0, 0.5).to_json() == {"window_s": 3.0, "cpu_s": 0.5, "top": [], "memory": {}}


@pytest.mark.parametrize("change, said", [
    ({"window_s": True}, "foreign load: expected a number, got True"),
    ({"own_cpu_s": None}, "foreign load: expected a number, got None"),
    ({"memory": []}, "foreign load: 'top' and 'programs' are lists and 'memory' a mapping"),
    ({"capacity": 0}, "foreign load: capacity is at least 1 CPU, got 0"),
    ({"programs": [{"name": "x", "pid": 1, "processes": 1, "cpu_s": 1, "server": 3}]},
     "foreign load: a program's 'server' is a mapping"),
    ({"top": [{"pid": 1, "name": "x"}]}, "foreign load: top.0.cpu_s: Field required"),
])
def test_a_malformed_load_is_refused_with_its_reason(change: dict[str, object], said: str) -> None:
    body = {**ForeignLoad(2.0, 1.0, own_cpu_s=0.5, capacity=2).to_json(), **change}
    with pytest.raises(ValueError) as refused:
        ForeignLoad.from_json(body)
    assert str(refused.value) == said


def test_a_load_without_its_window_says_so_rather_than_a_key_error() -> None:
    with pytest.raises(ValueError, match="^foreign load: window_s: Field required$"):
        ForeignLoad.from_json({"cpu_s": 1.0, "top": [], "memory": {}})
