"""The plan: servers x workloads x clients x repetitions, in a seeded order.

``order: random`` shuffles each repetition set separately (a randomised block design):
the order of (server, workload, clients) points is random within a set, and set 1 is
finished before set 2 starts. Drift over the hours of a study then falls on every point
alike, and an interrupted study still has complete sets. The same seed always gives the
same order; trial ids depend only on the point, never on the order.
"""

from __future__ import annotations

import hashlib
import random

from teiten.spec import Study
from teiten.store.db import PlannedTrial


def trial_id(study: str, server: str, workload: str, clients: int, repetition: int) -> str:
    """A stable id for one point at one repetition."""
    key = "\x1f".join((study, server, workload, str(clients), str(repetition)))
    return hashlib.sha1(key.encode()).hexdigest()[:12]


def plan(study: Study) -> list[PlannedTrial]:
    """Every trial of ``study`` in the order it will run."""
    rng = random.Random(study.seed)
    ordered: list[tuple[int, str, str, int]] = []
    for rep in range(1, study.repetitions + 1):
        block = [(rep, s.name, w.key, c) for _, s in study.server_matrix() for w in study.workloads
                 for c in study.clients]
        if study.order == "random":
            rng.shuffle(block)
        ordered.extend(block)
    return [
        PlannedTrial(
            trial_id=trial_id(study.study, server, workload, clients, rep),
            order_index=i, server=server, workload=workload, clients=clients,
            threads=study.threads_for(clients), repetition=rep, duration_s=study.duration)
        for i, (rep, server, workload, clients) in enumerate(ordered)
    ]
