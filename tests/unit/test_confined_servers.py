"""The Servers table says how a confined server was held to its CPUs (issue 38, item 3): a
cpuset of cgroup v2 or v1, or CPU affinity when no cgroup could be made; in en and ja. The
mechanism comes from the trials' placements (what happened), not from the study file."""

from __future__ import annotations

from teiten.analysis.gather import confinements
from teiten.analysis.model import ServerInfo
from teiten.model.details import PLACEMENT, PlacementDetails
from teiten.model.results import PlannedTrial, TrialRecord
from teiten.report.tables import server_rows


def _info(cpus: str | None, how: str | None) -> ServerInfo:
    return ServerInfo(name="pg18-1core", kind="local", version="18.6", origin="pypi", bindir="/x",
                      data_checksums=True, cpus=cpus, confined_by=how)


def _cpus(info: ServerInfo, lang: str) -> str:
    label = {"en": "CPUs", "ja": "CPU"}[lang]
    return dict(server_rows(info, lang))[label]


def test_each_mechanism_is_named_in_en_and_ja() -> None:
    assert _cpus(_info("0", "cgroup-v2"), "en") == "0 (a cpuset of cgroup v2)"
    assert _cpus(_info("0", "cpuset-cgroup"), "en") == "0 (a cpuset of cgroup v1)"
    assert _cpus(_info("0-1", "affinity"), "en") == "0-1 (CPU affinity: no cgroup could be made)"
    assert _cpus(_info("0", "cgroup-v2"), "ja") == "0 (cgroup v2 の cpuset)"
    assert _cpus(_info("0", "affinity"), "ja") == "0 (CPU アフィニティ（cgroup を作成できず）)"
    # A server of a store made before the mechanism was read, or not confined at all.
    assert _cpus(_info("0", None), "en") == "0"
    assert _cpus(_info(None, None), "en") == "all (not confined)"


def _trial(server: str, rep: int) -> TrialRecord:
    planned = PlannedTrial(trial_id=f"{server}{rep}", order_index=rep, server=server,
                           workload="select-only", clients=1, threads=1, repetition=rep,
                           duration_s=1.0)
    return TrialRecord(planned=planned, study_id=1, study="s", status="ok")


def test_the_mechanism_is_the_trials_placement() -> None:
    trials = [_trial("a", 1), _trial("a", 2), _trial("b", 1), _trial("c", 1)]
    placements = {trials[0].trial_id: PLACEMENT.read({"mechanism": "affinity"}),
                  trials[1].trial_id: PLACEMENT.read({"mechanism": "cgroup-v2"}),
                  trials[2].trial_id: PLACEMENT.read({"mechanism": "cpuset-cgroup"}),
                  trials[3].trial_id: PlacementDetails()}  # a store from before the mechanism
    assert confinements(trials, placements) == {"a": "cgroup-v2", "b": "cpuset-cgroup"}
