"""The ETA of a run (issue 33, item 5): the trials planned, and with repetitions: auto the blocks
likely still to come (the last decision's widest interval narrowing as 1/sqrt(blocks) to the
target) and, at most, every block up to the ceiling within the budget."""

from __future__ import annotations

import json
from typing import Any

import pytest

from teiten.model.studyrow import StudyRow
from teiten.run import blocks
from teiten.spec import load_text

STUDY = """
study: eta
servers: [{{name: a, install: "17"}}, {{name: b, install: "18"}}]
workloads: [pgecons-read]
clients: [1, 2]
duration: 2s
repetitions: {repetitions}
"""
AUTO = "auto_repetitions: {floor: 4, ceiling: 12, target_pct: 3, budget: 1h}\n"


class _Stored:
    """What blocks.eta reads of a store: the study's spec_json with its auto decisions."""

    def __init__(self, decisions: list[dict[str, Any]]) -> None:
        self.spec = {"auto_decisions": decisions}

    def study(self, study_id: int) -> StudyRow:
        return StudyRow(study_id, "s", "s.yaml", "", json.dumps(self.spec), 0, "running", "t0", None, "{}",
                        "0", None)


def _eta(repetitions: str, decisions: list[dict[str, Any]], spent: list[float], left: int
         ) -> tuple[float, float] | None:
    text = STUDY.format(repetitions=repetitions) + (AUTO if repetitions == "auto" else "")
    study = load_text(text, "<test>").study
    return blocks.eta(_Stored(decisions), 1, study, spent, left)  # type: ignore[arg-type]


def test_fixed_repetitions_count_the_planned_trials_only() -> None:
    assert _eta("3", [], [], 5) is None
    assert _eta("3", [], [2.0, 4.0], 5) == (15.0, 15.0)


def test_auto_before_its_first_decision_may_run_to_the_ceiling() -> None:
    # 4 trials a block (2 servers x 2 client counts); 8 blocks may follow the floor's 4.
    likely, most = _eta("auto", [], [3.0], 10) or (0, 0)
    assert likely == 30.0 and most == pytest.approx(30.0 + 8 * 4 * 3.0)


def test_auto_projects_the_blocks_the_widest_interval_still_needs() -> None:
    # After 4 blocks the widest interval is ±6% against a target of ±3%: about 4 x (6/3)^2 = 16
    # blocks, capped by the ceiling of 12; block 5 is planned, so 7 more are likely.
    decisions = [{"blocks": 4, "decision": "add", "widest_pct": 6.0}]
    likely, most = _eta("auto", decisions, [3.0], 4) or (0, 0)
    assert likely == pytest.approx(12.0 + 7 * 4 * 3.0)
    assert most == pytest.approx(12.0 + 7 * 4 * 3.0)
    # Nearly there (±3.3% after 8 blocks: 10 blocks needed, block 9 planned): one more likely.
    decisions = [{"blocks": 8, "decision": "add", "widest_pct": 3.3}]
    likely, most = _eta("auto", decisions, [3.0], 4) or (0, 0)
    assert likely == pytest.approx(12.0 + 1 * 4 * 3.0) and most == pytest.approx(12.0 + 3 * 4 * 3.0)


def test_later_blocks_count_only_the_undecided_points_the_last_one_held() -> None:
    # The last block added held 2 trials (one undecided ratio and its reference), not 4.
    decisions = [{"blocks": 4, "decision": "add", "widest_pct": 6.0, "trials": 2}]
    likely, most = _eta("auto", decisions, [3.0], 2) or (0, 0)
    assert likely == pytest.approx(6.0 + 7 * 2 * 3.0) and most == pytest.approx(6.0 + 7 * 2 * 3.0)


def test_the_budget_bounds_what_more_blocks_may_take() -> None:
    # 3500 s already spent of a 1 h budget: at most the 100 s left, whatever the ceiling.
    likely, most = _eta("auto", [], [3500.0], 0) or (0, 0)
    assert most == pytest.approx(100.0) and likely == 0.0


def test_a_stop_on_the_decision_that_is_coming_is_counted() -> None:
    """Issue 53 item 6: the last decision projected the open ratios to be decided (beyond or
    within the margin) 3 blocks after its 8th, though the widest interval (±6% against ±3%)
    alone would take the study to its ceiling: block 9 is planned, 2 more are likely, and at
    most the 3 up to the ceiling of 12."""
    decisions = [{"blocks": 8, "decision": "add", "widest_pct": 6.0, "to_decide": 3}]
    likely, most = _eta("auto", decisions, [3.0], 4) or (0, 0)
    assert likely == pytest.approx(12.0 + 2 * 4 * 3.0) and most == pytest.approx(12.0 + 3 * 4 * 3.0)
    # Decided with the block just planned: nothing more is likely.
    decisions = [{"blocks": 8, "decision": "add", "widest_pct": 6.0, "to_decide": 1}]
    likely, _ = _eta("auto", decisions, [3.0], 4) or (0, 0)
    assert likely == pytest.approx(12.0)
