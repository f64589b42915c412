"""Step times (S6, S8-S10) keep their label too: each median with its order-statistic interval
and the level it reaches, each ratio to the baseline with the interval of the within-block
ratios, and colour only where that interval excludes 1 at the level asked for."""

from __future__ import annotations

from teiten.analysis.model import StepFigures, SuiteResults
from teiten.analysis.suites import step_ratio
from teiten.report.cells import Context
from teiten.report.suite_tables import steps_table


def _step(server: str, values: tuple[float, ...]) -> StepFigures:
    ordered = sorted(values)
    return StepFigures(server=server, variant="", step="load", param=None,
                       seconds=ordered[len(ordered) // 2], values=values,
                       blocks=tuple(range(1, len(values) + 1)),
                       ci=(ordered[0], ordered[-1]), ci_level=1 - 2 * 0.5 ** len(values))


def test_three_loads_that_vary_say_75_percent_and_take_no_colour() -> None:
    """The S8 case of the issue: one load took 7.27, 2.01 and 4.47 s."""
    base, other = _step("pg17", (7.27, 2.01, 4.47)), _step("pg18", (3.0, 2.5, 2.9))
    ratio, ci, level = step_ratio(other, base) or (None, None, None)
    assert ratio is not None and round(ratio, 3) == round(2.9 / 4.47, 3)
    # Paired by block: the within-block ratios 0.41, 1.24 and 0.65 span 1 at the 75% that
    # three blocks reach.
    assert level == 0.75 and ci is not None and ci[0] < 1 < ci[1]
    table = steps_table(SuiteResults("iot", (), ("pg17", "pg18"), ("",), (base, other)), Context())
    (_, cells), = table.rows
    assert cells[0].text == "4.47 s [2.01–7.27 s, 75%]"
    assert cells[2].text.startswith("0.65 [") and cells[2].text.endswith(", 75%]")
    assert cells[2].tone == ""  # 75% cannot carry a verdict at 95%


def test_a_clear_difference_over_eight_blocks_is_coloured() -> None:
    base = _step("pg17", (4.0, 4.1, 3.9, 4.2, 4.0, 4.1, 3.95, 4.05))
    other = _step("pg18", (2.0, 2.1, 1.9, 2.05, 2.0, 2.1, 1.95, 2.0))
    ratio, ci, level = step_ratio(other, base) or (None, None, None)
    assert ci is not None and level is not None and level >= 0.95 and ci[1] < 1
    table = steps_table(SuiteResults("iot", (), ("pg17", "pg18"), ("",), (base, other)), Context())
    (_, cells), = table.rows
    assert cells[2].tone == "better"
