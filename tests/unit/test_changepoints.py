"""E-divisive means over a line of versions (teiten.analysis.changepoints, issue 19): the
energy statistic as its definition gives it, the permutation test's level simulated at the
sizes teiten runs (it claims p, so a line without a change must be split at most alpha of
the time), its power and place for a step of the size the reports discuss, and two steps
found by the recursive search."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from teiten.analysis.changepoints import _q_at_cuts, best_split, change_points


def _q(a: np.ndarray, b: np.ndarray) -> float:
    """Q from its definition (Matteson and James, 2014, exponent 1)."""
    m, n = len(a), len(b)
    between = 2 * np.mean(np.abs(a[:, None] - b[None, :]))
    within = [np.mean([abs(x - y) for x, y in itertools.combinations(side, 2)]) if len(side) > 1
              else 0.0 for side in (a, b)]
    return m * n / (m + n) * (between - within[0] - within[1])


def test_the_statistic_is_the_energy_distance_of_the_definition() -> None:
    rng = np.random.default_rng(1)
    for m, n in ((1, 4), (3, 3), (6, 2), (7, 9)):
        a, b = rng.normal(0, 1, m), rng.normal(0.5, 2, n)
        values = np.concatenate([a, b])
        got = _q_at_cuts(values, np.repeat([0, 1], [m, n])[None, :], [m, n])[0, 0]
        assert got == pytest.approx(_q(a, b))
    # at each boundary between groups, and for any assignment of the values to the groups
    values, sizes = rng.normal(0, 1, 9), [2, 3, 4]
    for labels in (np.repeat([0, 1, 2], sizes), rng.permutation(np.repeat([0, 1, 2], sizes))):
        got = _q_at_cuts(values, labels[None, :], sizes)[0]
        assert got == pytest.approx([_q(values[labels <= c], values[labels > c]) for c in (0, 1)])
    # the best split of groups is at a group boundary, where the means jump
    at, _ = best_split(np.array([0.0, 0.1, 0.05, 1.0, 1.1, 0.95]), [2, 1, 3])
    assert at == 2


def _line(rng: np.random.Generator, shifts: list[float], reps: int = 3,
          sd: float = 0.03) -> list[list[float]]:
    """log TPS of ``reps`` repetitions per version, each version shifted by ``shifts``."""
    return [list(rng.normal(shift, sd, reps)) for shift in shifts]


def test_a_line_without_change_is_split_at_most_alpha_of_the_time() -> None:
    """The level, simulated: 6 versions of 3 repetitions (a minor series teiten runs small),
    skewed noise as TPS has, 400 lines; the rate stays within sampling error of 5%."""
    rng = np.random.default_rng(2024)
    runs, split = 400, 0
    for i in range(runs):
        groups = [list(np.log(1000 * rng.gamma(50, 1 / 50, 3))) for _ in range(6)]
        split += bool(change_points(groups, alpha=0.05, permutations=199, seed=i))
    rate = split / runs
    assert rate <= 0.05 + 3 * np.sqrt(0.05 * 0.95 / runs), rate


def test_a_step_of_ten_percent_is_found_where_it_is() -> None:
    rng = np.random.default_rng(7)
    found = [change_points(_line(rng, [0, 0, 0, -0.105, -0.105, -0.105]), permutations=199, seed=i)
             for i in range(60)]
    hits = [f for f in found if [c.boundary for c in f] == [3]]
    assert len(hits) >= 0.9 * len(found)
    assert all(c.p <= 0.05 for f in hits for c in f)


def test_two_steps_are_both_found_by_the_recursive_search() -> None:
    rng = np.random.default_rng(11)
    groups = _line(rng, [0, 0, -0.2, -0.2, -0.2, 0.1, 0.1], reps=4, sd=0.02)
    assert [c.boundary for c in change_points(groups, permutations=499)] == [2, 5]


def test_versions_that_measured_nothing_are_skipped() -> None:
    rng = np.random.default_rng(5)
    groups = _line(rng, [0, 0, 0, -0.3, -0.3], reps=3, sd=0.02)
    groups.insert(3, [])
    [change] = change_points(groups, permutations=199)
    assert change.boundary == 4  # between the third version and the fifth (the fourth is empty)
    assert change_points([[0.0], [0.1]]) == []  # too few values to test


def test_the_history_view_reports_the_change_with_its_ratio_and_p() -> None:
    """A line of five minors whose TPS drops 15% from the fourth on: the history view finds
    the change between the third and the fourth at each client count, with the ratio of the
    segments' medians, and the report's note words it."""
    from teiten.analysis.history import history
    from teiten.analysis.model import Point, ServerSeries, WorkloadSection
    from teiten.model.results import ServerRecord
    from teiten.report.history_tables import change_notes
    from teiten.words.context import Context

    rng = np.random.default_rng(17)
    versions = ["17.1", "17.2", "17.3", "17.4", "17.5"]
    series, records = [], []
    for i, v in enumerate(versions):
        level = 1000.0 if i < 3 else 850.0
        points = tuple(Point(clients=c, tps_median=None, latency_ms_median=None,
                             tps_values=tuple(level * c * float(np.exp(rng.normal(0, 0.01)))
                                              for _ in range(4)),
                             n_ok=4, n_failed=0, ratio=None, tps_blocks=("1", "2", "3", "4"))
                       for c in (1, 2))
        points = tuple(Point(**{**p.__dict__, "tps_median": float(np.median(p.tps_values))})
                       for p in points)
        series.append(ServerSeries(f"pg{v}", v, points, None, None))
        records.append(ServerRecord(f"pg{v}", i, "local", {"name": f"pg{v}", "install": v}))
    section = WorkloadSection("w", "", "pg17.1", (1, 2), tuple(series))
    found = history(section, records)
    assert found is not None and found.change_alpha == pytest.approx(0.025)
    assert [(c.clients, c.before_version, c.after_version) for c in found.changes] == [
        (1, "17.3", "17.4"), (2, "17.3", "17.4")]
    assert all(c.ratio == pytest.approx(0.85, abs=0.02) and c.p <= 0.025 for c in found.changes)
    assert all(c.ci is not None and c.ci[0] < 0.85 < c.ci[1] for c in found.changes)
    notes = change_notes(found, Context())
    assert notes[1].startswith("1 client: between pg17.3 (17.3) and pg17.4 (17.4), 8")
