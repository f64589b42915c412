"""Stored bodies read back typed: a measured step (teiten.drivers.sql.Step) and a workload
(teiten.workloads.stored): an older body takes the defaults of what it lacks, a malformed one
is refused in one line naming the field."""

from __future__ import annotations

import pytest

from teiten import workloads
from teiten.drivers.explain import summarise
from teiten.drivers.sql import Step
from teiten.model.errors import StoreError
from teiten.workloads.stored import StoredWorkload

PLAN = ('[{"Plan": {"Node Type": "Seq Scan", "Relation Name": "t", "Actual Rows": 2, '
        '"Actual Loops": 1, "Shared Hit Blocks": 3, "Shared Read Blocks": 0, "Temp Read Blocks": 0, '
        '"Temp Written Blocks": 0}, "Planning Time": 0.1, "Execution Time": 0.5}]')


def test_a_step_reads_back_as_it_was_written() -> None:
    step = Step("search", "word", 0.0005, rows=2, plan=summarise(PLAN), sizes={"t": 8192},
                cache={"state": "warm", "prewarmed_blocks": 1, "relations": ["t"]},
                extra={"wall_s": 0.001, "cls": "en"}, indexes=("t_idx",))
    body = step.to_json()
    assert list(body) == ["name", "param", "seconds", "rows", "plan", "sizes", "indexes", "cache", "extra"]
    back = Step.from_json(body)
    assert back == step and back.to_json() == body


def test_an_older_step_takes_defaults() -> None:
    back = Step.from_json({"name": "load", "seconds": 2, "plan": None, "extra": None})
    assert back == Step("load", None, 2.0)


@pytest.mark.parametrize(("body", "says"), [
    ({"name": "load"}, "seconds: Field required"),
    ({"name": "load", "seconds": 1, "plan": {"shape": "x"}}, "plan.nodes: Field required"),
    ({"name": "load", "seconds": "soon"}, "seconds: Input should be a valid number"),
])
def test_a_malformed_step_is_refused(body: dict[str, object], says: str) -> None:
    with pytest.raises(ValueError, match="^not a stored step: ") as exc:
        Step.from_json(body)
    assert says in str(exc.value) and "\n" not in str(exc.value)


def test_a_stored_workload_takes_defaults() -> None:
    found = StoredWorkload.of({"key": "x", "description": "mine", "options": None, "later": 1})
    assert found == StoredWorkload(key="x", description="mine")
    assert StoredWorkload.of({"key": "t", "suite": "iot"}).named == "iot"


def test_a_malformed_workload_is_refused() -> None:
    with pytest.raises(ValueError, match=r"^not a stored workload: scripts\.0\.1: ") as exc:
        StoredWorkload.of({"key": "x", "scripts": [["a.pgbench", "heavy"]]})
    assert "\n" not in str(exc.value)
    with pytest.raises(StoreError, match="^not a stored workload: scripts"):
        workloads.from_json({"key": "x", "scripts": [["a.pgbench", "heavy"]], "scale": 1,
                             "fillfactor": None, "modifies_data": True})
    with pytest.raises(StoreError, match="^not a stored workload: it has no scale, modifies_data$"):
        workloads.from_json({"key": "x", "scripts": [["builtin:select-only", 1]]})
