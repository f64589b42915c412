"""Step times (S6, S8-S10) keep their label too: each median with its order-statistic interval
and the level it reaches, each ratio to the baseline judged as the TPS ratios are (issue 33,
item 2): the interval of the within-block ratios at the table's family level, its own estimate
printed, and the verdict's marker and colour (a shorter time is faster)."""

from __future__ import annotations

import pytest

from teiten.analysis.model import StepFigures, SuiteResults
from teiten.analysis.suites import step_ratio
from teiten.report.suite_tables import steps_table
from teiten.words.context import Context


def _step(server: str, values: tuple[float, ...], step: str = "load") -> StepFigures:
    ordered = sorted(values)
    return StepFigures(server=server, variant="", step=step, param=None,
                       seconds=ordered[len(ordered) // 2], values=values,
                       blocks=tuple(range(1, len(values) + 1)),
                       ci=(ordered[0], ordered[-1]), ci_level=1 - 2 * 0.5 ** len(values))


def test_three_loads_that_vary_say_75_percent_and_cannot_tell() -> None:
    """The S8 case of the issue: one load took 7.27, 2.01 and 4.47 s."""
    base, other = _step("pg17", (7.27, 2.01, 4.47)), _step("pg18", (3.0, 2.5, 2.9))
    found = step_ratio(other, base, comparisons=1)
    # Paired by block: the within-block ratios 0.41, 1.24 and 0.65 span 1 at the 75% that
    # three blocks reach, short of 95%.
    assert found is not None and found.level == 0.75 and found.ci is not None
    assert found.ci[0] < 1 < found.ci[1]
    assert found.verdict.word == "cannot-tell" and found.verdict.reason == "short"
    table = steps_table(SuiteResults("iot", (), ("pg17", "pg18"), ("",), (base, other)), Context())
    (_, cells), = table.rows
    assert cells[0].text == "4.47 s [2.01–7.27 s, 75%]"
    assert cells[2].text.endswith(", 75%] ?") and (cells[2].marker, cells[2].tone) == ("?", "")
    assert cells[2].title == ("cannot tell: these blocks reach 75%, short of the 95% each of this "
                              "table's 1 ratios needs")


@pytest.mark.parametrize("lang", ["en", "ja"])
def test_a_clear_difference_over_eight_blocks_is_faster_and_the_family_is_said(lang: str) -> None:
    """Two steps: one family of 2, each interval at 97.5%. Half the time is faster (▲, green),
    its printed estimate inside its printed interval."""
    base = _step("pg17", (4.0, 4.1, 3.9, 4.2, 4.0, 4.1, 3.95, 4.05))
    other = _step("pg18", (2.0, 2.1, 1.9, 2.05, 2.0, 2.1, 1.95, 2.0))
    same_b = _step("pg17", (1.0, 1.01, 0.99, 1.0, 1.0, 1.01, 0.99, 1.0), "query")
    same_o = _step("pg18", (1.0, 1.0, 0.99, 1.01, 1.0, 1.0, 1.0, 0.995), "query")
    table = steps_table(SuiteResults("iot", (), ("pg17", "pg18"), ("",), (base, other, same_b, same_o)),
                        Context(lang=lang))
    load, query = (cells for _, cells in table.rows)
    assert (load[2].marker, load[2].tone) == ("▲", "better sig")
    value, rest = load[2].text.split(" [", 1)
    low, high = rest.split(",")[0].split("–")
    assert float(low) <= float(value.rstrip("%")) <= float(high) < 100
    assert (query[2].marker, query[2].tone) == ("≈", "same")
    family = [n for n in table.notes if "97.5%" in n]
    assert family and ("This table's 2 ratios are one family" in family[0] if lang == "en"
                       else "この表の 2 件の比を一つの族とし" in family[0])
