"""The plan: every trial of a study, in a seeded, blocked random order."""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from teiten.model.results import PlannedTrial
from teiten.run.plan import plan, trial_id
from teiten.spec import Study


def make_study(**overrides: Any) -> Study:
    data: dict[str, Any] = {
        "study": "plan-test",
        "servers": [{"name": "pg17", "install": "17"}, {"name": "pg18", "install": "18"}],
        "workloads": ["pgecons-read", {"name": "pgecons-update", "fillfactor": 80},
                      {"script": "scripts/mine.pgbench"}],
        "clients": [1, 2, 3, 8],
        "repetitions": 3,
        "duration": "5s",
        "seed": 2021,
    }
    data.update(overrides)
    return Study.model_validate(data)


def point(t: PlannedTrial) -> tuple[str, str, int]:
    return (t.server, t.workload, t.clients)


def matrix(study: Study) -> list[tuple[str, str, int]]:
    return [(s.name, w.key, c) for s in study.servers for w in study.workloads
            for c in study.clients]


def test_count_is_the_product() -> None:
    study = make_study()
    trials = plan(study)
    assert len(trials) == 2 * 3 * 4 * 3 == 72
    assert len(plan(make_study(servers=[{"name": "x", "install": "17"}], clients=[4],
                               repetitions=1, workloads=["select-only"]))) == 1
    assert len(plan(make_study(repetitions=5, clients=[1, 2]))) == 2 * 3 * 2 * 5


def test_every_point_at_every_repetition_once() -> None:
    study = make_study()
    trials = plan(study)
    got = sorted((t.repetition, *point(t)) for t in trials)
    want = sorted((r, *p) for r in range(1, 4) for p in matrix(study))
    assert got == want


def test_order_index_counts_from_zero() -> None:
    assert [t.order_index for t in plan(make_study())] == list(range(72))


def test_same_seed_same_order() -> None:
    a = plan(make_study(seed=7))
    b = plan(make_study(seed=7))
    assert a == b


def test_different_seed_different_order() -> None:
    orders = {tuple(t.trial_id for t in plan(make_study(seed=seed))) for seed in (0, 1, 2, 2021)}
    assert len(orders) == 4


def test_random_order_is_not_matrix_order() -> None:
    study = make_study()
    first_block = [point(t) for t in plan(study) if t.repetition == 1]
    assert first_block != matrix(study)


def test_random_order_keeps_repetition_sets_together() -> None:
    study = make_study()
    trials = plan(study)
    reps = [t.repetition for t in trials]
    assert reps == sorted(reps), "every repetition-1 trial comes before any repetition-2 one"
    blocks = [[point(t) for t in group]
              for _, group in itertools.groupby(trials, key=lambda t: t.repetition)]
    assert len(blocks) == 3
    for block in blocks:
        assert sorted(block) == sorted(matrix(study))  # a permutation of the whole matrix
        assert len(set(block)) == len(block)
    # Each set is shuffled on its own, not the same permutation repeated.
    assert blocks[0] != blocks[1] or blocks[1] != blocks[2]


def test_sequential_order_is_matrix_order() -> None:
    study = make_study(order="sequential")
    trials = plan(study)
    want = [(r, *p) for r in range(1, 4) for p in matrix(study)]
    assert [(t.repetition, *point(t)) for t in trials] == want
    # The seed does not matter for a sequential study.
    assert plan(make_study(order="sequential", seed=99)) == trials


def test_paired_order_runs_each_points_servers_back_to_back() -> None:
    """order: pairs (docs/STATISTICS.md, "Designing the trial against the noise"): every block
    holds the whole matrix; each (workload, clients) point's two servers run one after the
    other, their order swapped from block to block, the points in a random order."""
    study = make_study(order="pairs", repetitions=4)
    trials = plan(study)
    blocks = [list(group) for _, group in itertools.groupby(trials, key=lambda t: t.repetition)]
    assert len(blocks) == 4
    firsts: dict[tuple[str, int], list[str]] = {}
    for block in blocks:
        assert sorted(point(t) for t in block) == sorted(matrix(study))
        for a, b in zip(block[::2], block[1::2], strict=True):
            assert (a.workload, a.clients) == (b.workload, b.clients) and a.server != b.server
            firsts.setdefault((a.workload, a.clients), []).append(a.server)
    for servers in firsts.values():  # swapped every block: AB, BA, AB, BA (or BA, AB, ...)
        assert servers[0::2] == [servers[0]] * 2 and servers[1::2] == [servers[1]] * 2
        assert servers[0] != servers[1]
    assert len({s[0] for s in firsts.values()}) == 2  # the side each point starts on is drawn
    orders = [[(t.workload, t.clients) for t in block[::2]] for block in blocks]
    assert len({tuple(o) for o in orders}) > 1  # the points in a new order each block
    assert plan(make_study(order="pairs", repetitions=4)) == trials  # seeded
    # Three servers: each point's three back to back, in an order drawn each block.
    three = make_study(order="pairs", servers=[{"name": n, "install": "17"} for n in "abc"])
    for block in (list(g) for _, g in itertools.groupby(plan(three), key=lambda t: t.repetition)):
        for i in range(0, len(block), 3):
            assert {(t.workload, t.clients) for t in block[i:i + 3]} == {(block[i].workload, block[i].clients)}
            assert {t.server for t in block[i:i + 3]} == {"a", "b", "c"}


def test_trial_ids_do_not_depend_on_order_or_seed() -> None:
    def ids(study: Study) -> dict[tuple[int, str, str, int], str]:
        return {(t.repetition, *point(t)): t.trial_id for t in plan(study)}

    base = ids(make_study(seed=1))
    assert ids(make_study(seed=2)) == base
    assert ids(make_study(order="sequential")) == base
    assert ids(make_study(order="pairs")) == base


def test_trial_ids_are_unique() -> None:
    ids = [t.trial_id for t in plan(make_study())]
    assert len(set(ids)) == len(ids)


def test_trial_ids_depend_on_every_part_of_the_point() -> None:
    base = ("s", "pg17", "pgecons-read", 4, 1)
    variants = [("t", *base[1:]), (*base[:1], "pg18", *base[2:]),
                (*base[:2], "select-only", *base[3:]), (*base[:3], 8, base[4]), (*base[:4], 2)]
    ids = {trial_id(*base), *(trial_id(*v) for v in variants)}
    assert len(ids) == 6


def test_trial_id_is_stable() -> None:
    # Stores written by earlier versions are resumed by id: the id must never change.
    assert trial_id("s", "a", "pgecons-read", 1, 1) == "1b5e47d641c7"
    trials = plan(make_study())
    for t in trials:
        assert t.trial_id == trial_id("plan-test", t.server, t.workload, t.clients, t.repetition)
        assert len(t.trial_id) == 12


def test_workload_key_of_a_script_is_its_stem() -> None:
    assert {t.workload for t in plan(make_study())} == {"pgecons-read", "pgecons-update", "mine"}


@pytest.mark.parametrize("threads", ["half", 1, 3, 100])
def test_threads_follow_threads_for(threads: str | int) -> None:
    study = make_study(threads=threads)
    for t in plan(study):
        assert t.threads == study.threads_for(t.clients)
        assert 1 <= t.threads <= t.clients


def test_threads_half_values() -> None:
    got = {t.clients: t.threads for t in plan(make_study())}
    assert got == {1: 1, 2: 1, 3: 1, 8: 4}


def test_duration_is_in_seconds() -> None:
    assert {t.duration_s for t in plan(make_study(duration="2min"))} == {120.0}
