"""The plan: servers x workloads x clients x repetitions, in a seeded order.

A measured-statement workload has variants (teiten.workloads.statements) where a pgbench
workload has client counts: its points are servers x variants, each run by one session. The
caller gives them (teiten.workloads.variants): the plan knows no workload.

``order: random`` shuffles each repetition set separately (a randomised block design):
the order of (server, workload, clients) points is random within a set, and set 1 is
finished before set 2 starts. Drift over the hours of a study then falls on every point
alike, and an interrupted study still has complete sets. The same seed always gives the
same order; trial ids depend only on the point, never on the order.

``trials: {restore: first}`` (the 2014 shape) orders the points once, in the same way, and
runs each point's repetitions back to back as a series, 1, 2, 3: only the first starts on
restored data (teiten.run.series). Repetition r is then the r-th run of every series, and the
analysis, which pairs the servers' values by repetition, compares like-numbered runs.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Mapping, Sequence

from teiten.model.results import PlannedTrial
from teiten.spec import Study


def trial_id(study: str, server: str, workload: str, clients: int, repetition: int,
             variant: str = "", purpose: str = "") -> str:
    """A stable id for one point at one repetition (or run for ``purpose``)."""
    parts = (study, server, workload, str(clients), str(repetition)) + ((variant,) if variant else ()) \
        + ((purpose,) if purpose else ())
    return hashlib.sha1("\x1f".join(parts).encode()).hexdigest()[:12]


def trial_design(study: Study, trial: PlannedTrial, client_cpus: Sequence[int] | None) -> dict[str, object]:
    """How a trial was run, kept with it (its ``design`` detail) so that trials of different
    designs are told apart in any store (bench/time_to_verdict.py compares designs by it): the
    study's order within blocks, the trial's block and planned seconds, whether each trial
    restarts its server and prewarms, and where pgbench runs (the server's CPUs are in the
    trial's ``placement`` detail)."""
    return {"order": study.order, "block": trial.repetition, "duration_s": trial.duration_s,
            "restart": study.restart, "prewarm": study.prewarm, "restore": study.trials.restore,
            "client_cpus": ",".join(map(str, client_cpus)) if client_cpus else "any"}


def profile_trials(study: Study, points: Sequence[tuple[str, int]]) -> list[PlannedTrial]:
    """A profile trial of every server at each (workload, clients) point, after the blocks
    (profile: {at: largest-difference}); their order_index is the store's to give."""
    return [PlannedTrial(
        trial_id=trial_id(study.study, s.name, workload, clients, 1, purpose="profile"),
        order_index=0, server=s.name, workload=workload, clients=clients,
        threads=study.threads_for(clients), repetition=1, duration_s=study.duration,
        purpose="profile") for workload, clients in points for _, s in study.server_matrix()]


def _points(study: Study, variants: Sequence[str] | None) -> list[tuple[int, str]]:
    """(clients, variant) points of a workload: its variants, one session each, or the
    study's client counts."""
    if variants is not None:
        return [(1, v) for v in variants]
    return [(c, "") for c in study.clients]


Slot = tuple[int, str, str, int, str]  # (repetition, server, workload, clients, variant)


def _paired(block: list[Slot], rep: int, rng: random.Random,
            sides: dict[tuple[str, int, str], bool]) -> list[Slot]:
    """``order: pairs``: the block's points in a random order, each point's servers back to
    back; two servers swap places every block from a side drawn once per point (``sides``,
    kept across blocks), more than two are drawn in a new order each block."""
    points: dict[tuple[str, int, str], list[Slot]] = {}
    for slot in block:
        points.setdefault((slot[2], slot[3], slot[4]), []).append(slot)
    keys = list(points)
    rng.shuffle(keys)
    out: list[Slot] = []
    for key in keys:
        servers = points[key]
        if len(servers) == 2:
            first = sides.setdefault(key, rng.random() < 0.5)
            if first != (rep % 2 == 1):
                servers = servers[::-1]
        else:
            rng.shuffle(servers)
        out.extend(servers)
    return out


def plan(study: Study, variants: Mapping[str, Sequence[str]] | None = None, *,
         blocks: int | None = None) -> list[PlannedTrial]:
    """Every trial of ``study`` in the order it will run. ``variants``: the variants of each
    measured-statement workload, by key (teiten.workloads.variants). ``blocks``: plan this
    many repetition sets instead of the study's (repetitions: auto adds them one at a time;
    block r is the same whatever the number planned)."""
    found = variants or {}
    rng = random.Random(study.seed)
    sides: dict[tuple[str, int, str], bool] = {}
    ordered: list[Slot] = []
    for rep in range(1, 2 if study.series else (blocks or study.blocks) + 1):
        block = [(rep, name, w.key, c, v) for name in study.points() for w in study.workloads
                 for c, v in _points(study, found.get(w.key))]
        if study.order == "random":
            rng.shuffle(block)
        elif study.order == "pairs":
            block = _paired(block, rep, rng, sides)
        ordered.extend(block)
    if study.series:  # trials: {restore: first}: each point's runs back to back, in the first's place
        ordered = [(run, *slot[1:]) for slot in ordered for run in range(1, study.blocks + 1)]
    return [
        PlannedTrial(
            trial_id=trial_id(study.study, server, workload, clients, rep, variant),
            order_index=i, server=server, workload=workload, clients=clients,
            threads=study.threads_for(clients) if not variant else 1, repetition=rep,
            duration_s=study.duration if not variant else 0.0, variant=variant)
        for i, (rep, server, workload, clients, variant) in enumerate(ordered)
    ]
