"""Stores whose truth is known: a built-in study's real spec and plan (the quick fixed-point
study, made as small as asked), saved by the real store, with every trial finished by a TPS
drawn from a known law instead of a pgbench run. The reading tests render them with `teiten
report` and assert what a person is told; the property test reads the same model in memory.

The law: server ``b``'s TPS at a point is ``a``'s times the true ratio; each block shares a
drift (both servers alike, as on a real machine) and each trial has its own log-normal noise
of the given coefficient of variation.
"""

from __future__ import annotations

import json
import math
import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from teiten import workloads
from teiten.host import cpus
from teiten.model.results import LoadFigures, PlannedTrial, TrialResult
from teiten.run import record
from teiten.run.plan import plan
from teiten.servers import kinds
from teiten.spec.load import LoadedStudy, load_text
from teiten.store import Store

BASE_TPS = 1000.0


@dataclass(frozen=True)
class Truth:
    """What the store holds: ``ratio[(workload, clients)]`` is b's true TPS over a's (1.0 where
    not given), ``cv`` the noise of one trial, ``blocks`` the blocks run; ``disturbed`` the
    (workload, clients) points whose every trial of b was disturbed."""

    blocks: int
    cv: float
    ratio: Mapping[tuple[str, int], float] = field(default_factory=dict)
    clients: tuple[int, ...] = (1, 2, 4)
    workloads: tuple[str, ...] = ("pgecons-read", "pgecons-update")
    disturbed: frozenset[tuple[str, int]] = frozenset()
    seed: int = 1
    margin_pct: float | None = None  # None: the study's default
    cv_at: Mapping[tuple[str, int], float] = field(default_factory=dict)  # another cv at a point
    auto: str | None = None  # repetitions: auto with these auto_repetitions (floor = blocks)
    stalls: frozenset[int] = frozenset()  # blocks where pg18 stalls at every point: 0.3 x its TPS


def study_text(truth: Truth) -> str:
    """The study file: two servers, the PGECons read and update scripts, fixed blocks."""
    wl = "\n".join(f"  - name: {w}" for w in truth.workloads)
    margin = f"margin_pct: {truth.margin_pct:g}\n" if truth.margin_pct is not None else ""
    repetitions = f"auto\nauto_repetitions: {truth.auto}" if truth.auto else str(truth.blocks)
    return ("study: truth\nservers:\n  - {name: pg17, install: \"17\"}\n  - {name: pg18, install: \"18\"}\n"
            f"workloads:\n{wl}\nscale: 1\nclients: [{', '.join(map(str, truth.clients))}]\n"
            f"duration: 1s\nrepetitions: {repetitions}\nseed: {truth.seed}\n{margin}")


def tps_of(truth: Truth, trials: list[PlannedTrial]) -> dict[str, float]:
    """The TPS of every trial, drawn from the truth's law with its seed."""
    rng = random.Random(truth.seed)
    drift = {r: math.exp(rng.gauss(0, 0.05)) for r in range(1, truth.blocks + 1)}
    out = {}
    for t in sorted(trials, key=lambda t: t.order_index):
        cv = truth.cv_at.get((t.workload, t.clients), truth.cv)
        sigma = math.sqrt(math.log(1 + cv**2))
        mean = BASE_TPS * t.clients * drift[t.repetition]
        if t.server == "pg18":
            mean *= truth.ratio.get((t.workload, t.clients), 1.0)
            mean *= 0.3 if t.repetition in truth.stalls else 1.0
        out[t.trial_id] = mean * math.exp(rng.gauss(-sigma**2 / 2, sigma))
    return out


def build(path: Path, truth: Truth) -> Path:
    """Save the study, its plan and every trial's figures in a new SQLite store at ``path``."""
    loaded = load_text(study_text(truth), "truth.yaml")
    study = loaded.study
    trials = plan(study, workloads.variants(study))
    servers = [(s.name, "local", json.dumps({**s.model_dump(mode="json"), "resolved": {
        "ref": s.install, "version": "17.7" if s.name == "pg17" else "18.1", "origin": "pypi",
        "bindir": None}})) for _, s in study.server_matrix()]
    store = Store.open(path, create=True)
    try:
        sid = _create_study(store, loaded, "truth.yaml", servers, trials)
        tps = tps_of(truth, trials)
        for t in trials:
            figures = _figures(tps[t.trial_id], t.clients)
            if t.server == "pg18" and (t.workload, t.clients) in truth.disturbed:
                store.finish_trial(sid, TrialResult(t.trial_id, "disturbed", "2026-11-26T00:01:00+00:00",
                                                    error="foreign load: stress-ng used 1.9 CPUs",
                                                    figures=figures))
            else:
                store.finish_trial(sid, TrialResult(t.trial_id, "ok", "2026-11-26T00:01:00+00:00",
                                                    figures=figures))
        store.set_study_state(sid, "finished", "2026-11-26T00:02:00+00:00")
    finally:
        store.close()
    return path


def _figures(tps: float, clients: int) -> LoadFigures:
    """A 1 s trial of ``clients`` clients at ``tps``, as pgbench 18 reports it."""
    return LoadFigures(tps=tps, transactions=int(tps), failed_transactions=0, duration_s=1.0,
                       latency_ms_avg=1000 * clients / tps, latency_ms_stddev=None,
                       initial_connection_ms=None, pgbench_version="18.1")


def _create_study(store: Store, loaded: LoadedStudy, source: str,
                  servers: list[tuple[str, str, str]], trials: list[PlannedTrial]) -> int:
    """The study of ``loaded`` in ``store``, as a run of pgbench 18 made it on 2026-11-26."""
    study = loaded.study
    spec_json = json.dumps({
        "study": study.model_dump(mode="json"),
        "pgbench": {"ref": "18", "version": "18.1", "bindir": None},
        "workloads": [w.to_json() for w in workloads.resolve(loaded)], "omitted": []})
    return store.create_study(
        name=study.study, source=source, spec_yaml=loaded.text, spec_json=spec_json,
        seed=study.seed, created_at="2026-11-26T00:00:00+00:00",
        fingerprint={"cpu_model": "test", "logical_cpus": 2}, teiten_version="test",
        servers=servers, trials=trials)


def build_study(path: Path, text: str, tps: Callable[[PlannedTrial], float], *,
                descriptions: Mapping[str, dict[str, object]] | None = None) -> Path:
    """A store of the study file ``text`` with every trial ok at the TPS ``tps`` gives it: its
    servers saved as a run saves them (teiten.run.record.server_spec, their kinds, a server with
    cores on CPUs 0 to cores - 1), each with its read-back ``descriptions`` where given."""
    loaded = load_text(text, "study.yaml")
    study = loaded.study
    trials = plan(study, workloads.variants(study))
    servers = []
    for _, s in study.server_matrix():
        spec = {**record.server_spec(s), "resolved": {
            "ref": s.install, "version": "18.1", "origin": "pypi", "bindir": None}}
        if s.cores is not None:
            spec["placement"] = {"cpus": cpus.format_list(range(s.cores)), "cores": s.cores,
                                 "client_cpus": "any"}
        servers.append((s.name, kinds.of(s).name, json.dumps(spec)))
    store = Store.open(path, create=True)
    try:
        sid = _create_study(store, loaded, "study.yaml", servers, trials)
        for name, description in (descriptions or {}).items():
            store.set_server_description(sid, name, dict(description))
        for t in trials:
            store.finish_trial(sid, TrialResult(t.trial_id, "ok", "2026-11-26T00:01:00+00:00",
                                                figures=_figures(tps(t), t.clients)))
        store.set_study_state(sid, "finished", "2026-11-26T00:02:00+00:00")
    finally:
        store.close()
    return path
