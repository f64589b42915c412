"""From a study's results to the figures a report shows: medians per point, ratios to the
baseline, mean differences. Pure functions over the typed model (teiten.model.results)."""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, replace

from teiten import studies
from teiten.analysis import (
    compare,
    differences,
    history,
    stats,
    stopping,
    suites,
    tables,
    tenants,
    verdicts,
)
from teiten.analysis.apps import app_results
from teiten.analysis.inputs import Features, Graphs, ReportOptions, StudyData, Unnamed
from teiten.analysis.model import (
    Activity,
    Notice,
    Point,
    ReportData,
    ServerInfo,
    ServerSeries,
    StudyParameters,
    TrialSeries,
    WorkloadSection,
)
from teiten.analysis.noise import noise_notices, tuning_notices
from teiten.analysis.scaleups import core_families, with_builds_and_cores
from teiten.installs.releases import Release
from teiten.messages import clients_phrase, join, tr, word
from teiten.model.metrics import AUTOVACUUM_IN_WINDOW, CHECKPOINTS_IN_WINDOW
from teiten.model.results import ProgressPoint, ServerRecord, StudyResults, TrialRecord
from teiten.model.studyrecord import Parameters, WorkloadRecord
from teiten.spec.study import stop_target

CPU_PARTS = ("user", "sys", "iowait", "idle", "steal", "irq")
Metrics = Mapping[str, Mapping[str, float]]  # trial id -> what the monitors measured
Waits = Mapping[str, Sequence[tuple[str, str, int]]]  # trial id -> (type, event, samples)
Progress = Mapping[str, Sequence[ProgressPoint]]  # trial id -> its seconds


def median(values: Sequence[float]) -> float | None:
    """The median (mean of the middle two for an even count); None when empty."""
    return statistics.median(values) if values else None


PointRow = tuple[int, float | None, float | None, tuple[float, ...], int, int, tuple[float, ...],
                 tuple[str, ...]]


def block_of(t: TrialRecord) -> str:
    """The block (repetition set) a trial ran in: its study and repetition, and in a compare
    its study's place there (``TrialRecord.part``), so that trials of studies compared side by
    side never count as run in the same block, even when two stores each hold a study 1 of
    the same name (issue 54). A study read alone keeps the key "STUDY_ID:STUDY:REPETITION"."""
    key = f"{t.study_id}:{t.study}:{t.planned.repetition}"
    return f"{t.part}/{key}" if t.part else key


def _by_clients(trials: Iterable[TrialRecord], server: str,
                workload: str) -> dict[int, list[TrialRecord]]:
    """The trials of one server and workload by client count, each in their order: one pass
    over the trials for every client count (a pass per count made a report of 100,000 trials
    quadratic; bench/report_size.py --trials 100000)."""
    out: dict[int, list[TrialRecord]] = {}
    for t in trials:
        p = t.planned
        if p.server == server and p.workload == workload:
            out.setdefault(p.clients, []).append(t)
    return out


def points(trials: Iterable[TrialRecord], server: str, workload: str,
           clients: Sequence[int]) -> list[PointRow]:
    """(clients, median tps, median latency, tps values, n ok, n failed, latencies, the block
    of each tps value) per client count."""
    out = []
    by_clients = _by_clients(trials, server, workload)
    for c in clients:
        mine = by_clients.get(c, [])
        ok = [t for t in mine if t.status == "ok" and t.tps is not None]
        tps = tuple(float(t.tps) for t in ok if t.tps is not None)
        blocks = tuple(block_of(t) for t in ok if t.tps is not None)
        lat = [float(t.latency_ms_avg) for t in ok if t.latency_ms_avg is not None]
        failed = sum(1 for t in mine if t.status in ("failed", "skipped"))
        out.append((c, median(tps), median(lat), tps, len(ok), failed, tuple(lat), blocks))
    return out


def activity(trials: Iterable[TrialRecord], metrics: Metrics, waits: Waits, server: str,
             workload: str, clients: Sequence[int], *, top: int = 6) -> tuple[Activity, ...]:
    """Per client count, the median over repetitions of what the monitors saw (the trials
    with no figures of the monitors count nowhere)."""
    out: list[Activity] = []
    if not metrics:
        return ()
    by_clients = _by_clients(trials, server, workload)
    for c in clients:
        seen = [(m, waits.get(t.trial_id, ())) for t in by_clients.get(c, [])
                if t.status == "ok" and (m := metrics.get(t.trial_id))]
        if not seen:
            continue
        cpu = {p: median([m[f"cpu_{p}"] for m, _ in seen if f"cpu_{p}" in m]) or 0.0
               for p in CPU_PARTS}
        host_cpu = {p: median([m[f"host_cpu_{p}"] for m, _ in seen
                               if f"host_cpu_{p}" in m]) or 0.0
                    for p in CPU_PARTS} if any("host_cpu_user" in m for m, _ in seen) else {}
        shares: dict[str, list[float]] = {}
        for _, sampled in seen:
            total = sum(n for _, _, n in sampled)
            for etype, event, n in sampled:
                shares.setdefault(f"{etype}:{event}", []).append(n / total if total else 0.0)
        wait_medians = {k: median(v + [0.0] * (len(seen) - len(v))) or 0.0
                        for k, v in shares.items()}
        ranked = sorted(wait_medians.items(), key=lambda kv: (-kv[1], kv[0]))[:top]
        util = {role: median([m[f"{role}_device_util"] for m, _ in seen
                              if f"{role}_device_util" in m]) or 0.0
                for role in ("data", "wal") if any(f"{role}_device_util" in m for m, _ in seen)}
        out.append(Activity(
            clients=c, cpu=cpu, waits=dict(ranked), device_util=util,
            checkpoints=int(sum(m.get(CHECKPOINTS_IN_WINDOW, 0) for m, _ in seen)),
            autovacuum=sum(1 for m, _ in seen if m.get(AUTOVACUUM_IN_WINDOW, 0) > 0),
            server_cpu_idle=median([m["server_cpu_idle"] for m, _ in seen if "server_cpu_idle" in m]),
            host_cpu=host_cpu, server_cpu={p: v for p in CPU_PARTS if (v := median(
                [m[f"server_cpu_{p}"] for m, _ in seen if f"server_cpu_{p}" in m])) is not None}))
    return tuple(out)


def mean_diff_pct(mine: Sequence[float | None], base: Sequence[float | None]) -> float | None:
    """Mean over the points where both exist of (mine / base - 1) * 100 (METHODS S1)."""
    diffs = [(m / b - 1) * 100 for m, b in zip(mine, base, strict=True) if m and b]
    return sum(diffs) / len(diffs) if diffs else None


def section(trials: Sequence[TrialRecord], workload: str, description: str,
            servers: Sequence[tuple[str, str]], clients: Sequence[int],
            metrics: Metrics | None = None, waits: Waits | None = None,
            graphs: Graphs | None = None, diffs: Graphs | None = None,
            references: Mapping[str, str] | None = None,
            unnamed: Unnamed | None = None) -> WorkloadSection:
    """One workload's table: ``servers`` is [(name, version)], baseline first. A server named
    in ``references`` is compared with the server given there instead of the baseline."""
    rows = {name: points(trials, name, workload, clients) for name, _ in servers}
    plain: dict[str, list[Point]] = {}
    series = []
    for i, (name, version) in enumerate(servers):
        ref = (references or {}).get(name, servers[0][0])
        pts, ref_pts = rows[name], rows[ref]
        plain[name] = [Point(clients=c, tps_median=tps, latency_ms_median=lat, tps_values=vals,
                             n_ok=ok, n_failed=failed, latency_values=lats,
                             ratio=(tps / b[1]) if tps is not None and b[1] else None,
                             tps_blocks=blocks)
                       for (c, tps, lat, vals, ok, failed, lats, blocks), b
                       in zip(pts, ref_pts, strict=True)]
        full = tuple(compare.with_statistics(p, b, is_baseline=i == 0)
                     for p, b in zip(plain[name], plain.get(ref, plain[name]), strict=True))
        series.append(ServerSeries(
            server=name, version=version,
            points=full, reference=ref if ref != servers[0][0] else None,
            mean_tps_diff_pct=None if i == 0 else mean_diff_pct(
                [p[1] for p in pts], [p[1] for p in ref_pts]),
            mean_latency_diff_pct=None if i == 0 else mean_diff_pct(
                [p[2] for p in pts], [p[2] for p in ref_pts]),
            saturation=compare.saturation_of(ServerSeries(name, version, full, None, None)),
            activity=activity(trials, metrics or {}, waits or {}, name, workload, clients),
            profiles=tuple((at.clients, p) for at, p in sorted((graphs or {}).items())
                           if at.server == name and at.workload == workload),
            profile_diffs=tuple((at.clients, p) for at, p in sorted((diffs or {}).items())
                                if at.server == name and at.workload == workload),
            profile_unnamed=tuple((at.clients, *shares) for at, shares
                                  in sorted((unnamed or {}).items())
                                  if at.server == name and at.workload == workload),
        ))
    sec = WorkloadSection(workload=workload, description=description, baseline=servers[0][0],
                          clients=tuple(clients), servers=tuple(series))
    return replace(sec, findings=compare.findings(sec))


def server_info(row: ServerRecord, features: Features) -> ServerInfo:
    desc = row.description or {}
    setup = row.setup
    kind = features.server_kind(row.kind, row.spec)
    settings = {k: differences.read_back(v) for k, v in (desc.get("settings") or {}).items()}
    return ServerInfo(
        name=row.name, kind=kind.name,
        version=str(desc.get("version") or setup.version or "?"),
        origin=str(desc.get("origin") or kind.origin or "?"),
        bindir=str(desc.get("bindir") or ""),
        data_checksums=desc.get("data_checksums"), settings=settings,
        cpus=setup.placement.cpus if setup.placement else None,
        cpus_said=(said[0], tuple(sorted(said[1].items()))) if (said := kind.cpus(row.spec, desc)) else None,
        client_cpus=setup.placement.client_cpus if setup.placement else None,
        limits=tuple(row.setup.limit_values().items()),
        delay=(float(d["rtt_ms"]), float(d["rtt_ms_median"]), float(d["direct_rtt_ms"]))
        if (d := desc.get("delay")) else None,
        bandwidth=(float(d["bandwidth_mbps"]), d.get("measured_mbps"))
        if d and d.get("bandwidth_mbps") else None,
        facts=tuple((label, value, tuple(sorted(fields.items())))
                    for label, value, fields in kind.facts(desc)),
        emulated=kind.emulated(desc))




def trial_series(trials: Sequence[TrialRecord], progress: Progress,
                 system: Mapping[str, Mapping[str, Sequence[float | None]]] | None = None,
                 updated: Mapping[str, int] | None = None) -> tuple[TrialSeries, ...]:
    """The per-second series of every trial, with its ramp-up, stalls and drift, what the
    system monitor saw in the same seconds, and the runs of its series whose changes its data
    held (``updated``: trials: {restore: first})."""
    out = []
    for t in trials:
        rows = progress.get(t.trial_id) or ()
        tps = tuple(float(r.tps) for r in rows)
        s = stats.stability(tps)
        p = t.planned
        out.append(TrialSeries(t.trial_id, p.server, p.workload, int(p.clients),
                               int(p.repetition), t.status, tps,
                               tuple(r.latency_ms for r in rows), s.steady_from, s.stalls,
                               round(s.drift_pct_per_min, 3), t.tps,
                               tuple((k, tuple(v)) for k, v in (system or {}).get(t.trial_id, {}).items()),
                               (updated or {}).get(t.trial_id, 0)))
    return tuple(out)


def _without_rampup(trials: Sequence[TrialRecord], progress: Progress,
                    ) -> tuple[list[TrialRecord], int]:
    out, excluded = [], 0
    for t in trials:
        tps = [float(r.tps) for r in progress.get(t.trial_id) or ()]
        start = stats.steady_state_start(tps)
        # A trial with a per-second series always has figures: the store keeps the series
        # with them.
        if t.status == "ok" and start > 0 and t.figures is not None:
            t = replace(t, figures=replace(t.figures, tps=statistics.fmean(tps[start:])))
            excluded += 1
        out.append(t)
    return out, excluded


def _where(t: TrialRecord) -> dict[str, object]:
    p = t.planned
    return {"trial": p.trial_id, "server": p.server, "workload": p.workload,
            "clients": p.clients, "repetition": p.repetition}


def notices(trials: Sequence[TrialRecord], sections: Sequence[WorkloadSection],
            series: Sequence[TrialSeries], metrics: Metrics | None, *,
            repetitions: int, alpha: float = stats.ALPHA) -> list[Notice]:
    """Everything that should make a reader doubt a number, as data."""
    out: list[Notice] = []
    counts: dict[str, int] = {}
    for t in trials:
        counts[t.status] = counts.get(t.status, 0) + 1
    if counts.get("planned") or counts.get("running"):
        out.append(Notice("unfinished", {"planned": counts.get("planned", 0) +
                                         counts.get("running", 0)}))
    for t in trials:
        if t.status in ("failed", "skipped"):
            out.append(Notice(f"trial-{t.status}", {**_where(t), "error": t.error}))
    for t in trials:
        m = (metrics or {}).get(t.trial_id, {})
        if m.get(CHECKPOINTS_IN_WINDOW):
            out.append(Notice("checkpoint-in-window",
                              {**_where(t), "count": int(m[CHECKPOINTS_IN_WINDOW])}))
        if m.get(AUTOVACUUM_IN_WINDOW):
            out.append(Notice("autovacuum-in-window", _where(t)))
    family = [sections[i].servers[j].points[k] for i, j, k in compare.comparisons(sections)]
    if family:
        out.append(Notice("comparisons", {"count": len(family), "alpha": alpha,
                                          "level_pct": verdicts.required_text(
                                              verdicts.family_level(len(family), alpha))})
                   if len(family) > 1 else Notice("comparison-one", {"alpha": alpha}))
    too_few = [p.needed for p in family if p.reason == verdicts.SHORT]
    if too_few:
        out.append(Notice("too-few-repetitions", {"repetitions": repetitions, "needed": max(too_few)}))
    for sec in sections:
        for server, clients, cv in compare.noisy_points(sec):
            out.append(Notice("high-noise", {"workload": sec.workload, "server": server,
                                             "clients": clients, "cv_pct": round(100 * cv, 1)}))
    for ts in series:
        if ts.status == "ok" and (ts.stalls or abs(ts.drift_pct_per_min) > 20):
            out.append(Notice("unstable-series", {
                "trial": ts.trial_id, "server": ts.server, "workload": ts.workload,
                "clients": ts.clients, "repetition": ts.repetition, "stalls": ts.stalls,
                "drift_pct_per_min": ts.drift_pct_per_min}))
    return out


def suite_section(w: WorkloadRecord, trials: Sequence[TrialRecord],
                  servers: Sequence[str], steps: suites.Steps, features: Features,
                  lang: str = "en") -> WorkloadSection:
    """A measured-statement workload's section: steps, plans and sizes instead of TPS."""
    if w.suite is None:
        raise ValueError(f"workload {w.key} runs no suite of measured statements")
    found = features.suite(w.suite)
    variants = features.variants(w.suite, w.options)
    res = suites.suite_results(w.suite, found.axes, variants, servers, trials, steps, w.key)
    if found.judge is not None:  # the suite's own judgements (fulltext's strengths)
        res = replace(res, judgements=found.judge(res))
    return WorkloadSection(workload=w.key, description=features.about(w.fields, lang),
                           baseline=servers[0] if servers else "", clients=(), servers=(),
                           suite=res)


def without_waits(servers: Sequence[ServerRecord]) -> list[Notice]:
    """A notice for each server of a release without wait events (before 9.6), whose trials
    the database monitor sampled none of (teiten.monitors.database)."""
    out = []
    for row in servers:
        num = (row.description or {}).get("version_num")
        if isinstance(num, int) and not Release.of_num(num).wait_events:
            out.append(Notice("waits-unavailable", {"server": row.name,
                                                    "version": (row.description or {}).get("version")}))
    return out


def report_data(data: StudyData, options: ReportOptions) -> ReportData:
    """The whole report's figures. With ``options.exclude_rampup``, each trial's TPS is the
    mean of its per-second series from the steady state on (stats.steady_state_start),
    instead of pgbench's figure over the whole window; the report says so."""
    study, features = data.study, data.asked()
    trials: Sequence[TrialRecord] = study.trials
    notes_first: list[Notice] = list(options.extra_notices)
    record = study.record
    if record.beside_others:  # run or resumed with --beside-others (issue 18, 3a)
        notes_first.append(Notice("beside-others"))
    notes_first += [Notice("joined-by", {k: str(v) for k, v in asdict(j).items()})
                    for j in record.joined_by]
    notes_first += [Notice("server-omitted", asdict(o)) for o in record.omitted]
    notes_first += [Notice(key, dict(fields)) for row in study.servers
                    for key, fields in features.server_kind(row.kind, row.spec).notices(
                        row.name, row.description or {})]
    notes_first += noise_notices(study) + tuning_notices(study.fingerprint) + without_waits(study.servers)
    if options.exclude_rampup:
        trials, excluded = _without_rampup(trials, data.progress)
        notes_first.append(Notice("rampup-excluded", {"trials": excluded}))
    s = record.parameters
    servers = study.servers
    infos = [replace(server_info(r, features), confined_by=data.confined.get(r.name)) for r in servers]
    names = [(i.name, i.version) for i in infos]
    descriptions = {w.key: features.about(w.fields, options.lang) for w in record.workloads}
    families = core_families(servers)
    margin = margin_pct(s)
    clients = list(s.clients)
    pgbench_sections = {w.key: with_builds_and_cores(
        section(trials, w.key, descriptions.get(w.key, ""), names, clients,
                data.metrics, data.waits, data.graphs, data.graph_diffs,
                references={b: a for a, b in tenants.pairs(s)}, unnamed=data.unnamed),
        families, data.hot, data.locks, margin_pct=margin, callers=data.callers)
        for w in record.workloads if not w.suite}
    sections: tuple[WorkloadSection, ...] = tuple(_with_tables(replace(
        pgbench_sections[w.key], apps=app_results(pgbench_sections[w.key], data.apps, features.app_capacity),
        history=history.history(pgbench_sections[w.key], servers, margin_pct=margin, draw=data.draw_diff)),
        trials, servers, clients, data, margin)
        if w.key in pgbench_sections else
        suite_section(w, trials, [n for n, _ in names], data.steps, features, options.lang)
        for w in record.workloads)
    # A study that stopped on the decision prints its intervals at the level the rule judged
    # them at (one that stopped on width only, settle: false, needs no more than the family's).
    sections = compare.with_family(sections, margin_pct=margin, at_least=stopping.DECIDE_CONFIDENCE
                                   if s.repetitions == "auto" and s.settles else 0.0)
    counts: dict[str, int] = {}
    for t in trials:
        counts[t.status] = counts.get(t.status, 0) + 1
    series = trial_series(trials, data.progress, data.system, data.updated)
    blocks = blocks_run(s, trials)
    warnings = [*notes_first, *notices(trials, sections, series, data.metrics,
                                         repetitions=blocks)]
    if options.degradations:  # METHODS S5, as asked (after the notices, which they do not change)
        sections = tuple(replace(sec, degradations=tuple(compare.degradation(sec, a, b)
                                                         for a, b in options.degradations))
                         for sec in sections)
    sections = tuple(replace(sec, profiled_after=tuple(sorted(
        c for w, c in set(data.profiled_after) if w == sec.workload))) for sec in sections)
    return ReportData(
        study=study.name,
        description=studies.about(study.name, s.description, options.lang)
        or ran(s, infos, record.workloads, blocks, options.lang), generated_at=options.generated_at,
        store_path=options.store_path, duration_s=s.duration_s,
        repetitions=blocks, scale=s.scale, order=s.order,
        seed=s.seed, fingerprint=dict(study.fingerprint), servers=tuple(infos),
        sections=sections, status_counts=counts, warnings=tuple(warnings), lang=options.lang,
        series=series, differences=differences.differences(servers),
        auto=_auto(s, record.auto_decisions, study.trials), compared=options.compared,
        margin_pct=margin, machine_time=data.machine_time)


def _with_tables(section: WorkloadSection, trials: Sequence[TrialRecord], servers: Sequence[ServerRecord],
                 clients: Sequence[int], data: StudyData, margin: float) -> WorkloadSection:
    """A load workload's section with the figures of each registered table (teiten.tables)."""
    given = tables.SectionInputs(section, trials, servers, clients, data, margin, block_of)
    return replace(section, tables=tables.figures(given))


def margin_pct(study: Parameters) -> float:
    """The study's margin of "no difference within ±m%" (studies stored before it existed: the
    default)."""
    return study.margin_pct or verdicts.MARGIN_PCT


def ran(study: Parameters, servers: Sequence[ServerInfo], workloads: Sequence[WorkloadRecord],
        blocks: int, lang: str) -> str:
    """What a study without a description of its own ran, in one sentence (``teiten
    scaleup`` writes none: its header gives the parameters it ran with)."""
    return tr("study.ran", lang, servers=join([s.name for s in servers], lang),
              workloads=join([w.key for w in workloads], lang),
              clients=clients_phrase(list(study.clients), lang), duration=f"{study.duration_s:g}",
              repetitions=blocks, order=word("study.order", study.order, lang), scale=study.scale)


def blocks_run(study: Parameters, trials: Sequence[TrialRecord]) -> int:
    """The blocks a study ran: its repetitions, or as many as repetitions: auto decided (a
    repeat stays in its block)."""
    if study.repetitions == "auto":
        return max((t.planned.repetition for t in trials), default=0)
    return study.repetitions


def study_parameters(study: StudyResults, label: str) -> StudyParameters:
    """How ``study`` ran, named ``label``: for a compare report's Study table."""
    s = study.record.parameters
    return StudyParameters(label, s.duration_s, blocks_run(s, study.trials), s.scale, s.order,
                           s.seed, _auto(s, study.record.auto_decisions, study.trials))


def _auto(study: Parameters, decisions: Sequence[Mapping[str, object]],
          trials: Sequence[TrialRecord]) -> stopping.AutoSummary | None:
    """repetitions: auto's last decision with its rule, for the report's study table."""
    if study.repetitions != "auto":
        return None
    rule = study.auto_repetitions
    first = sum(1 for t in trials if t.planned.repetition == 1 and t.planned.repeat_of is None
                and not t.planned.purpose)
    last = decisions[-1] if decisions else {}
    return stopping.AutoSummary(
        decision=str(last["decision"]) if decisions else "unfinished",
        target_pct=stop_target(rule.target_pct, margin_pct(study)),
        margin_pct=margin_pct(study), floor=rule.floor,
        # raised by teiten resume --more-blocks, where the decision says so
        ceiling=_whole(last.get("ceiling")) or rule.ceiling,
        # a block that held only some points: one a decision added with fewer trials than the
        # first block's
        per_point=any(0 < (_whole(d.get("trials")) or 0) < first for d in decisions),
        more_blocks=_whole(last.get("more_blocks")), more_s=_number(last.get("more_s")), last=last)


def _whole(value: object) -> int | None:
    """A stored whole number of repetitions: auto's rule or decisions (None for none)."""
    if value is None or isinstance(value, int) and not isinstance(value, bool):
        return value
    raise ValueError(f"repetitions: auto stored {value!r} where a whole number belongs")


def _number(value: object) -> float | None:
    """A stored number of repetitions: auto's rule or decisions (None for none)."""
    if value is None or isinstance(value, int | float) and not isinstance(value, bool):
        return value
    raise ValueError(f"repetitions: auto stored {value!r} where a number belongs")
