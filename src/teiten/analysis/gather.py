"""What analysis reads of a study from the store: its trials and what they left beside their
figures (metrics, waits, per-second progress, details by kind), gathered into
:class:`~teiten.analysis.inputs.StudyData`; several studies joined into one for a report, a gate
or a compare across stores (:func:`compared`). The report writes what analysis makes of it
(:mod:`teiten.report.build`); ``teiten gate``, ``bisect`` and ``store summarize`` read through
here without the report."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from typing import TypeVar

from teiten.analysis import parameters, summary, tables, tenants
from teiten.analysis.callers import hot_callers
from teiten.analysis.cycle import MachineTime, machine_time
from teiten.analysis.inputs import (
    AppRuns,
    Features,
    Graphs,
    Hot,
    Locks,
    ReportOptions,
    StudyData,
    Unnamed,
    system_seconds,
)
from teiten.analysis.locks import LockRow, lock_rows
from teiten.analysis.model import Notice
from teiten.host import fingerprint, flamegraphs
from teiten.host.flamegraphs import hot_functions, unnamed_shares
from teiten.messages import tr
from teiten.model import cycles
from teiten.model.details import (
    APP,
    LATENCY,
    LOAD,
    PGBENCH,
    PLACEMENT,
    PROFILE,
    AppDetails,
    LatencyDetails,
    PlacementDetails,
    ProfileDetails,
)
from teiten.model.errors import UserError
from teiten.model.results import Point, ServerRecord, StudyResults, TrialRecord, now
from teiten.store import Store

Details = Mapping[str, Mapping[str, object]]  # trial id -> one kind of its details, as stored
Profiles = Mapping[str, ProfileDetails]  # trial id -> its profile
K = TypeVar("K")
V = TypeVar("V")


def hot_spots(trials: Sequence[TrialRecord], profiles: Profiles) -> Hot:
    """The hottest functions (self share) of every profiled point."""
    out: dict[Point, list[tuple[str, float]]] = {}
    for t in trials:
        prof = profiles.get(t.trial_id)
        if prof and prof.folded:
            out[t.point] = hot_functions(prof.folded)
    return out



def unnamed_frames(trials: Sequence[TrialRecord], profiles: Profiles) -> Unnamed:
    """Of every profiled point, how much of the profile perf could not name."""
    return {t.point: unnamed_shares(prof.folded) for t in trials
            if (prof := profiles.get(t.trial_id)) and prof.folded}



def lwlock_runs(trials: Sequence[TrialRecord], stats: Details) -> Locks:
    """The LWLOCK_STATS rows of every ok trial that has them, by point."""
    out: dict[Point, list[tuple[LockRow, ...]]] = {}
    for t in trials:
        if t.status != "ok":
            continue
        found = stats.get(t.trial_id)
        if found:
            out.setdefault(t.point, []).append(lock_rows(found))
    return out



def app_runs(trials: Sequence[TrialRecord], found: Mapping[str, AppDetails]) -> AppRuns:
    """The 'app' details (tpcc, bookstore) of every ok trial, by point."""
    out: dict[Point, list[AppDetails]] = {}
    for t in trials:
        if t.status == "ok" and t.trial_id in found:
            out.setdefault(t.point, []).append(found[t.trial_id])
    return out



def study_data(store: Store, study_id: int, features: Features) -> StudyData:
    """One study and what its trials left beside their figures, as analysis reads them (no
    flame graphs: :func:`teiten.report.build.write_study_report` writes them and adds their
    paths), with the ``features`` analysis asks (``teiten.features.FEATURES``)."""
    study = store.study_results(study_id).measured()  # profile trials: flame graphs only
    return tenants.apart(StudyData(
        study, metrics=store.metrics_by_trial(study_id), waits=store.waits_by_trial(study_id),
        progress=store.progress_by_trial(study_id), steps=store.steps_by_trial(study_id),
        system=system_series(store, study_id),
        loads=store.details_of(study_id, LOAD),
        latencies=latencies(store, study_id),
        apps=app_runs(study.trials, store.details_of(study_id, APP)),
        gathered=tables.gathered(store, study),
        confined=confinements(study.trials, store.details_of(study_id, PLACEMENT)),
        updated=updated_runs(store, study_id), features=features))


def updated_runs(store: Store, study_id: int) -> dict[str, int]:
    """Each trial that started on data the runs of its series before it changed (trials:
    {restore: first}), with how many runs they were (its cycle's start says)."""
    return {tid: runs for tid, body in store.details_of_kind(study_id, "cycle").items()
            if (runs := cycles.cycle(body).start.runs_before)}



def system_series(store: Store, study_id: int) -> dict[str, dict[str, list[float | None]]]:
    """Each monitored trial's CPU busy and device %util per second, for the series viewer."""
    devices = store.details_of_kind(study_id, "devices")
    return {trial_id: system_seconds(samples, devices.get(trial_id) or {})
            for trial_id, samples in store.system_by_trial(study_id).items()}



def latencies(store: Store, study_id: int) -> dict[str, LatencyDetails]:
    """The latency percentiles of the trials that took them, by trial id: pgbench's from its
    transaction log (details 'pgbench', as issue 21 stored them; no driver named), any other
    driver's from its own histogram (details 'latency', in the same figures), with that
    driver's name."""
    found = {trial_id: LatencyDetails(None, body.percentiles) for trial_id, body in
             store.details_of(study_id, PGBENCH).items() if body.percentiles}
    found.update({trial_id: body for trial_id, body in store.details_of(study_id, LATENCY).items()
                  if body.percentiles})
    return found



def confinements(trials: Sequence[TrialRecord], placements: Mapping[str, PlacementDetails]
                 ) -> dict[str, str]:
    """How each confined server was held to its CPUs, from its trials' placements (the last
    trial's, should a resume on another machine have changed it)."""
    return {t.planned.server: mechanism for t in trials
            if (found := placements.get(t.trial_id)) and (mechanism := found.mechanism)}



def profiled(store: Store, study_id: int) -> tuple[StudyResults, Profiles]:
    """The study with the profile trials run after its blocks (which make flame graphs only),
    and every trial's stored profile."""
    return store.study_results(study_id), store.details_of(study_id, PROFILE)


def with_profiles(store: Store, data: StudyData, every: StudyResults, profiles: Profiles,
                  graphs: Graphs, diffs: Graphs) -> StudyData:
    """``data`` with what its profiles, lock statistics and cycles add to the report: the hot
    functions and who calls the hottest, the locks, the flame graphs written beside the report
    (``graphs``, ``diffs``),
    the frames perf could not name, the machine time, and the points profiled after the
    blocks (``every``: the study with those trials)."""
    study_id = data.study.study_id
    hot = hot_spots(every.trials, profiles)
    return replace(data, hot=hot, callers=hot_callers(every.trials, profiles, hot),
                   locks=lwlock_runs(data.study.trials, store.details_of_kind(study_id, "lwlock")),
                   graphs=graphs, graph_diffs=diffs, unnamed=unnamed_frames(every.trials, profiles),
                   machine_time=study_machine_time(store, every),
                   profiled_after=tuple(sorted({(t.planned.workload, t.planned.clients)
                                                for t in every.trials if t.planned.purpose})))


def profiles_without_graphs(store: Store, study: StudyResults, profiles: Profiles
                            ) -> tuple[Notice, ...]:
    """A notice when trials that were to be profiled gave no folded stacks (perf or inferno
    missing, perf failed), with the first one's reason as its notes give it."""
    asked, missing, why = 0, 0, None
    for row in store.trials(study.study_id):
        notes = json.loads(row["notes"]) if row["notes"] else []
        if row["status"] != "ok" or not flamegraphs.asked(notes):
            continue
        asked += 1
        if not ((prof := profiles.get(row["trial_id"])) and prof.folded):
            missing += 1
            why = why or flamegraphs.trouble(notes)
    if not missing:
        return ()
    return (Notice("profile-without-graphs", {"missing": missing, "total": asked,
                                              "why": why or "no reason was recorded"}),)



def study_machine_time(store: Store, study: StudyResults) -> MachineTime | None:
    """The study's trials' cycles summed, each with its measured window (pgbench's
    duration, or an application workload's window after its ramp-up; none for a trial that
    measured nothing; all of a measured statement's load)."""
    apps = store.details_of(study.study_id, APP)
    windows = {t.trial_id: None if t.planned.variant else
               (t.figures.duration_s if t.figures else None)
               or (app.window_s if (app := apps.get(t.trial_id)) else None) or 0.0 for t in study.trials}
    kept = {tid: cycles.cycle(body) for tid, body in store.details_of_kind(study.study_id, "cycle").items()}
    return machine_time(kept, windows,
                        study.record.runs)



def _renamed(data: StudyData, rename: Mapping[str, str], part: int, tag: str) -> StudyData:
    """A study's data with its servers renamed, its trials marked with the study's place
    ``part`` in the compare (their blocks are then its own: ``summary.block_of``), and their
    ids made unique across studies ("TAG:TRIAL_ID", the tag the study's id, or PART/STUDY_ID
    where two stores each hold a study of that id: a trial's id depends only on the study's
    name, the point and the block, so the same study run on two machines has the same ids),
    for a report that puts several studies side by side."""
    study = data.study
    ids = {t.trial_id: f"{tag}:{t.trial_id}" for t in study.trials}
    trials = tuple(replace(t, part=part, planned=replace(t.planned, trial_id=ids[t.trial_id],
                                                         server=rename[t.planned.server]))
                   for t in study.trials)
    # Every trial has an entry, empty where it has nothing, so that merging the studies' maps
    # loses none (each study's ids are its own, as above).
    return StudyData(
        replace(study, servers=tuple(replace(s, name=rename[s.name], part=part) for s in study.servers),
                trials=trials),
        metrics={new: data.metrics.get(old, {}) for old, new in ids.items()},
        waits={new: data.waits.get(old, ()) for old, new in ids.items()},
        progress={new: data.progress.get(old, ()) for old, new in ids.items()},
        system={ids[old]: found for old, found in data.system.items() if old in ids},
        steps={new: data.steps.get(old, ()) for old, new in ids.items()},
        loads={ids[old]: found for old, found in data.loads.items() if old in ids},
        latencies={ids[old]: found for old, found in data.latencies.items() if old in ids},
        apps={replace(at, server=rename[at.server]): v for at, v in data.apps.items()},
        gathered={key: {ids[old]: v for old, v in found.items() if old in ids}
                  for key, found in data.gathered.items()},
        confined={rename[server]: how for server, how in data.confined.items()}, features=data.features,
        updated={ids[old]: n for old, n in data.updated.items() if old in ids})



def compared(gathered: list[StudyData], store_path: str, *, lang: str = "en",
             allow_mixed: bool = False, allow_different_parameters: bool = False,
             exclude_rampup: bool = False) -> tuple[StudyData, ReportOptions]:
    """Several studies as one, their servers side by side (renamed STUDY/SERVER where two
    share a name), and how to report them; refused as
    :func:`teiten.report.build.write_compare_report` says."""
    first = gathered[0].study
    differ = sorted({f for g in gathered[1:]
                     for f in fingerprint.differences(dict(first.fingerprint),
                                                      dict(g.study.fingerprint))})
    if differ and not allow_mixed:
        raise UserError(f"the studies ran on machines that differ in {', '.join(differ)}; their "
                        "numbers are not comparable (add --allow-mixed to compare anyway)")
    records = [g.study.record for g in gathered]
    keys = [w.key for w in records[0].workloads]
    common = [k for k in keys if all(k in [w.key for w in r.workloads] for r in records)]
    if not common:
        raise UserError("the studies share no workload; there is nothing to compare")
    changed = parameters.differences([g.study for g in gathered])
    if changed and not allow_different_parameters:
        raise UserError(f"the studies differ in {parameters.listed(changed)}; their numbers are "
                        "not comparable (add --allow-different-parameters to compare anyway)")
    names_seen: dict[str, int] = {}
    for g in gathered:
        for srv in g.study.servers:
            names_seen[srv.name] = names_seen.get(srv.name, 0) + 1
    study_names = [g.study.name for g in gathered]
    labels = [name if study_names.count(name) == 1 else f"{name} ({i})"  # one study twice
              for i, name in enumerate(study_names, 1)]
    study_ids = [g.study.study_id for g in gathered]
    tags = [str(sid) if study_ids.count(sid) == 1 else f"{i}/{sid}"  # a study 1 in two stores
            for i, sid in enumerate(study_ids, 1)]
    parts = [_renamed(g, {s.name: (f"{label}/{s.name}" if names_seen[s.name] > 1 else s.name)
                          for s in g.study.servers}, i, tag)
             for i, (g, label, tag) in enumerate(zip(gathered, labels, tags, strict=True), 1)]
    servers: list[ServerRecord] = [s for part in parts for s in part.study.servers]
    study_spec = {
        **records[0].parameters.fields, "clients": sorted({c for r in records for c in r.parameters.clients}),
        # Each study's own parameters go to the Study table; the whole's are the most blocks run.
        "repetitions": max(summary.blocks_run(g.study.record.parameters, g.study.trials) for g in gathered),
        "description": tr("compare.studies", lang, studies=", ".join(
            f"{g.study.name} ({g.study.created_at})" for g in gathered))}
    combined = replace(first, name=" + ".join(g.study.name for g in gathered), spec={
        "study": study_spec, "workloads": [w.fields for w in records[0].workloads if w.key in common]},
        servers=tuple(servers), trials=tuple(t for part in parts for t in part.study.trials))
    apps: dict[Point, list[AppDetails]] = {}
    for part in parts:
        for at, found in part.apps.items():
            apps.setdefault(at, []).extend(found)
    data = StudyData(
        combined, metrics=_merged(p.metrics for p in parts), waits=_merged(p.waits for p in parts),
        progress=_merged(p.progress for p in parts), steps=_merged(p.steps for p in parts),
        system=_merged(p.system for p in parts),
        loads=_merged(p.loads for p in parts), latencies=_merged(p.latencies for p in parts),
        apps=apps,
        gathered={key: _merged(p.gathered.get(key, {}) for p in parts)
                  for key in dict.fromkeys(k for p in parts for k in p.gathered)},
        confined=_merged(p.confined for p in parts), updated=_merged(p.updated for p in parts),
        features=gathered[0].features)
    notices: tuple[Notice, ...] = (
        (Notice("mixed-fingerprints", {"fields": ", ".join(differ)}),) if differ else ())
    upgraded = sorted({c for g in gathered[1:] for c in fingerprint.software_changes(
        dict(first.fingerprint), dict(g.study.fingerprint))})
    if upgraded:
        notices += (Notice("software-changed", {"changes": "; ".join(upgraded)}),)
    names = [g.study.name for g in gathered]  # a study compared with another run of itself: its id
    labels = [n if names.count(n) == 1 else f"{n} #{g.study.study_id}"
              for n, g in zip(names, gathered, strict=True)]
    notices += (parameters.notice(changed),) if changed else ()
    options = ReportOptions(
        store_path=store_path, generated_at=now(), lang=lang, exclude_rampup=exclude_rampup,
        extra_notices=notices, compared=tuple(summary.study_parameters(g.study, label)
                                              for g, label in zip(gathered, labels, strict=True)))
    return data, options



def _merged(maps: Iterable[Mapping[K, V]]) -> dict[K, V]:
    """One map of several; the last one's entry wins for a key that several have."""
    out: dict[K, V] = {}
    for m in maps:
        out.update(m)
    return out
