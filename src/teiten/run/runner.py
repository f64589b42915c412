"""Executes a study's trials: the failure policy, interruption and resumption.

A trial is the unit of failure and of resumption. A failed trial is recorded with its
reason and the study goes on, with the next trial on a fresh server. A killed study is
finished by ``teiten resume``: it first stops the servers the killed process left, then
runs what remains. A finished trial is never run twice and never lost.

The runner holds servers (teiten.servers.base.Server, built by their kinds: servers.kinds) and
workloads (teiten.workloads.base.Workload) only through their interfaces: the server
prepares and restores the data and says what it can offer (targets, a lag connection, a
remote monitor, confined CPUs ...), the workload runs its trial inside the monitors'
window, and the runner judges the outcome and stores it as a teiten.model.results.TrialResult."""

from __future__ import annotations

import contextlib
import logging
import os
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Literal

import psutil
import psycopg

from teiten import installs, workloads
from teiten.analysis import differences
from teiten.drivers import load
from teiten.host import cpus, paths, remote, ticker
from teiten.host.guard import run_choice
from teiten.installs import Install
from teiten.messages import tr
from teiten.model.errors import StoreFull, StoreUnreachable, TeitenError, UserError
from teiten.model.results import LoadRun, PlannedTrial, TrialResult, now
from teiten.model.studyrecord import (
    BESIDE_OTHERS,
    GUARD_RUNS,
    JOINED_BY,
    NOISE_GUARD,
    QUIET_CHECK,
    TESTBED,
    Append,
    StudyRecord,
)
from teiten.run import blocks, busy, estimate, leftovers, plan, runclock, runlock, series, window
from teiten.run.record import install_for
from teiten.servers import kinds, profiles
from teiten.servers.base import Endpoint, Server, Target
from teiten.servers.kind import Request
from teiten.spec import NoiseGuardSpec, Study, load_text
from teiten.spec.secrets import Secrets
from teiten.store import Store
from teiten.workloads import Workload
from teiten.workloads.base import TrialOutcome, TrialRequest

log = logging.getLogger(__name__)


@dataclass
class Event:
    """What the runner tells whoever shows progress."""

    kind: str  # "start" | "trial-start" | "trial-end" | "note"
    index: int = 0
    total: int = 0
    trial: PlannedTrial | None = None
    status: str = ""
    message: str = ""
    elapsed: float = 0.0
    eta: tuple[float, float] | None = None  # time still to run: likely, at most (blocks.eta)


Reporter = Callable[[Event], None]


def _workloads_from(record: StudyRecord) -> dict[str, Workload]:
    return {w.key: workloads.from_json(dict(w.fields)) for w in record.workloads}


@dataclass
class _Context:
    store: Store
    study_id: int
    study: Study
    workloads: dict[str, Workload]
    run_dir: Path
    report: Reporter
    servers: dict[str, Server] = field(default_factory=dict)
    installs: dict[str, Install] = field(default_factory=dict)
    client: Install | None = None
    broken: dict[tuple[str, str], str] = field(default_factory=dict)
    described: set[str] = field(default_factory=set)
    prepared: set[tuple[str, str]] = field(default_factory=set)  # (server, workload) loaded
    unprepared: dict[tuple[str, str], str] = field(default_factory=dict)  # ... that failed: why
    monitors: bool = True
    guard: NoiseGuardSpec | None = None  # the noise guard; None: off
    client_cpus: dict[str, list[int]] = field(default_factory=dict)  # server -> pgbench's CPUs
    load_clients: list[load.Client] = field(default_factory=list)  # several: the study's
    since: str = ""  # when this run started (UTC, ISO)
    joined: list[dict[str, object]] = field(default_factory=list)  # runs beside it (spec joined_by)
    secrets: Secrets = field(default_factory=Secrets)  # the study file's passwords (memory only)
    prepares: list[tuple[str, float]] = field(default_factory=list)  # (workload, seconds) loading
    clock: runclock.Clock = field(default_factory=runclock.Clock)  # this run's parts
    trials_run: int = 0  # trials this run ran (a repeat counts again)
    wait_quiet_s: float = busy.WAIT_QUIET_S  # --wait-quiet: one busy spell's wait before trials
    busy: busy.BusyWatch | None = None  # with the guard on: waits for quiet, stops when busy
    watch: window.Watch | None = None  # the last trial's monitors (the busy watch reads its foreign load)
    runs: series.Series = field(default_factory=series.Series)  # trials: {restore: first}


def execute(store: Store, study_id: int, report: Reporter, *, retry_failed: bool = False,
            monitors: bool = True, beside_others: bool = False,
            noise_guard: bool | None = None, secrets: Secrets | None = None,
            wait_quiet_s: float = busy.WAIT_QUIET_S, testbed: str | None = None) -> dict[str, int]:
    """Run every planned trial of a study. Returns the status counts at the end.

    ``beside_others``: other benchmarks may run on this machine meanwhile (the CLI's
    --beside-others); the study's record says so for good, and its report with it.
    ``noise_guard``: True or False overrides the study's noise_guard.enabled, else a resumed
    study keeps its run's (guard.run_choice); each run's is recorded with the study.
    ``secrets``: the passwords the study file gave (never
    stored; a resumed study has none, and libpq finds them the usual ways). ``wait_quiet_s``:
    with the guard on, how long one busy spell may be waited out before trials (teiten.run.busy);
    a machine that stays busy raises MachineBusy, the study left interrupted. ``testbed``: the
    user's name for this machine, kept with the study (one study stays on one testbed)."""
    stored = store.study_results(study_id)
    if testbed and (named := stored.record.testbed) and testbed != named:
        raise UserError(f"study {study_id} of {store} runs on the testbed {named}, not {testbed}: "
                        f"one study stays on one machine; resume it on {named} (or give no "
                        "--testbed or TEITEN_TESTBED)")
    study, since = load_text(stored.spec_yaml, stored.source).study, now()
    guard = study.noise_guard
    enabled, changed = run_choice(stored, guard.enabled, noise_guard)
    store.update_spec(study_id, {NOISE_GUARD: {**guard.model_dump(), "enabled": enabled},
                                 GUARD_RUNS: Append({"since": since, "enabled": enabled}),
                                 **({BESIDE_OTHERS: True} if beside_others else {}),
                                 **({TESTBED: testbed} if testbed else {})})
    if changed is not None:
        report(Event("note", message=changed))
    omitted = {o.server for o in stored.record.omitted}
    if omitted:
        study = study.model_copy(update={"servers": [s for s in study.servers if s.name not in omitted]})
    for note in leftovers.clean(store, study_id):
        report(Event("note", message=note))
    store.reset_interrupted(study_id, retry_failed=retry_failed)
    store.set_study_state(study_id, "running")
    run_dir = paths.make_owned(
        paths.clusters_dir() / f"{study.study}-{study_id}-{time.strftime('%Y%m%d%H%M%S')}-{os.getpid()}",
        f"clusters of study {study.study} ({store})")
    store.add_workdir(study_id, run_dir)
    ctx = _Context(store, study_id, study, _workloads_from(stored.record), run_dir, report,
                   monitors=monitors, guard=guard if enabled else None, since=since,
                   joined=[asdict(j) for j in stored.record.joined_by], secrets=secrets or Secrets(),
                   wait_quiet_s=wait_quiet_s)
    began = time.monotonic()
    try:
        _setup_servers(ctx)
        ctx.clock.setup = time.monotonic() - began
        loop_s = ctx.clock.trials = _loop(ctx)
        try:  # this machine's rates, for the next 'teiten plan' (never fails the study)
            estimate.learn_from_run(store, study_id, ctx.since, ctx.workloads, ctx.prepares, loop_s)
        except Exception as exc:  # noqa: BLE001 - the study's results stand whatever happens here
            log.warning("could not keep this run's rates for teiten plan: %s", exc)
    except BaseException:
        # On a full disk, or with the store gone, this write fails too: the study stays 'running',
        # which resume takes up all the same (its trial cut short goes back to planned).
        with contextlib.suppress(StoreFull, StoreUnreachable):
            store.set_study_state(study_id, "interrupted")
        raise
    finally:
        for server in ctx.servers.values():
            try:
                server.close()
            except (TeitenError, psycopg.Error, OSError) as exc:
                log.warning("cleaning up %s: %s", server.name, exc)
        for client in ctx.load_clients:
            if client.ssh is not None:
                client.ssh.close()
        try:
            paths.remove_owned(run_dir)
        except (OSError, TeitenError, RecursionError) as exc:  # kept: resume or clean removes it
            log.warning("could not remove %s: %s", run_dir, exc)
        if not run_dir.exists():
            with contextlib.suppress(StoreFull, StoreUnreachable):  # resume's leftover check finds it gone
                store.forget_workdir(study_id, run_dir)
    runclock.keep(store, study_id, since=ctx.since, clock=ctx.clock, trials_run=ctx.trials_run,
                  clusters_loaded=len(ctx.prepares), execute_s=time.monotonic() - began)
    counts = store.status_counts(study_id)
    left = [str(p) for p in store.workdirs(study_id) if p.exists()]
    if left:  # not finished while something of it is left behind
        report(Event("note", message=f"left behind: {', '.join(left)}; 'teiten clean --store "
                                     f"{store}' removes it"))
    elif not counts.get("planned") and not counts.get("running"):
        store.set_study_state(study_id, "finished", now())
    return counts


def _setup_servers(ctx: _Context) -> None:
    results = ctx.store.study_results(ctx.study_id)
    if pgbench := results.record.pgbench:  # a store from before it has each server's own
        ctx.client = install_for("pgbench", pgbench.ref, pgbench)
    sizing = profiles.Sizing(
        ram_bytes=psutil.virtual_memory().total,
        disk_free_bytes=psutil.disk_usage(str(ctx.run_dir)).free,
        max_clients=max(ctx.study.clients),
        data_bytes=max(w.data_bytes() for w in ctx.workloads.values()))
    matrix = [s for _, s in ctx.study.server_matrix()]
    for record in results.servers:
        spec = next(s for s in matrix if s.name == record.name)
        kind = kinds.of(spec)
        if not kind.install_here:  # its PostgreSQL is on that host, in the image, or not teiten's
            continue
        setup = record.setup
        inst = install_for(record.name, setup.install, setup.resolved)
        kind.check_install(inst, pgbench=ctx.client is None)
        ctx.installs[spec.name] = inst
        placement = setup.placement
        server_cpus = cpus.parse_list(placement.cpus) if placement else None
        if placement and placement.client_cpus != "any":
            ctx.client_cpus[spec.name] = cpus.parse_list(placement.client_cpus)
        ctx.servers[spec.name] = kind.build(Request(
            spec, inst, ctx.run_dir, sizing, connect=ctx.study.connect, cpus=server_cpus,
            max_clients=_per_pool(ctx.study), client=ctx.client))
        ctx.servers[spec.name].keep_running = ctx.study.restart == "after-changes"
    for spec in matrix:
        if kinds.of(spec).install_here:
            continue
        if ctx.client is None:
            ctx.client = next(iter(ctx.installs.values()), None) or installs.materialise(
                installs.any_pgbench())
        ctx.installs[spec.name] = ctx.client
        ctx.servers[spec.name] = kinds.build(Request(
            spec, ctx.client, ctx.run_dir, sizing, max_clients=_per_pool(ctx.study),
            secrets=ctx.secrets))
    for name, members in ctx.study.tenant_groups():  # loaded at once: the members' own servers
        ctx.servers[name] = kinds.group(name, [ctx.servers[m] for m in members])
        ctx.installs[name] = ctx.installs[members[0]]
        if all(m in ctx.client_cpus for m in members):  # each pgbench where it runs alone
            ctx.client_cpus[name] = sorted({c for m in members for c in ctx.client_cpus[m]})
    ctx.load_clients = [load.Client(c.name, ssh=remote.Ssh(c.ssh, _path(c.ssh_config), label=c.name)
                                    if c.ssh else None, pgbench=c.pgbench)
                        for c in ctx.study.load_clients or []]
    installs.verify_files([*ctx.installs.values(), *([ctx.client] if ctx.client else [])])


def _per_pool(study: Study) -> int:
    """The most clients one Pgpool-II serves at once: the trial's, from every load client."""
    return max(study.clients) * max(1, len(study.load_clients or []))


def _path(text: str | None) -> Path | None:
    return Path(text).expanduser() if text else None


def _loop(ctx: _Context) -> float:
    """Run the trials; returns the seconds the trials took, from the first one's start."""
    if ctx.guard is not None:  # a run killed between a disturbed trial and its repeat
        for r in ctx.store.records(ctx.study_id):
            if r.status == "disturbed":
                _repeat(ctx, r.planned, after_kill=True)
    rows = ctx.store.records(ctx.study_id)
    todo = _planned(ctx)
    total, done = len(rows), len(rows) - len(todo)
    t0 = time.monotonic()
    _prepare_all(ctx, todo)
    ctx.clock.load_data = time.monotonic() - t0
    _quiet_check(ctx, todo)
    started = time.monotonic()
    ctx.clock.quiet_check = started - t0 - ctx.clock.load_data
    spent: list[float] = []
    while True:
        if not todo:
            todo = blocks.after_blocks(ctx.store, ctx.study_id, ctx.study,
                                       lambda m: ctx.report(Event("note", message=m)))
            if not todo:
                break
            total += len(todo)
        trial = todo.pop(0)
        if ctx.busy is not None:  # a busy machine: wait for a quiet moment first
            ctx.busy.before(trial)
        eta = blocks.eta(ctx.store, ctx.study_id, ctx.study, spent, len(todo) + 1)
        ctx.report(Event("trial-start", index=done + 1, total=total, trial=trial,
                         elapsed=time.monotonic() - started, eta=eta))
        t0 = time.monotonic()
        ctx.watch, server = None, ctx.servers[trial.server]
        status, message = series.before(ctx.runs, ctx.study, trial, server, lambda t, why: ctx.store.skip_trial(
            ctx.study_id, t, why, now())) or _run_trial(ctx, trial)
        series.after(ctx.runs, trial, status, server)
        spent.append(time.monotonic() - t0)
        ctx.trials_run += 1
        done += 1
        _note_joined(ctx, trial)
        repeat = _repeat(ctx, trial) if status == "disturbed" else None
        if repeat is not None:
            # The store placed it after its block's last trial (its series': right after it) and moved
            # the later ones one place on: what is left to run is read back in the store's order.
            todo = _planned(ctx)
            total += 1
            message += f"; repeated as trial {repeat.trial_id}"
        ctx.report(Event("trial-end", index=done, total=total, trial=trial,
                         status=status, message=message, elapsed=time.monotonic() - started))
        if ctx.busy is not None:
            ctx.busy.after(trial, status, ctx.watch)
    return time.monotonic() - started


def _planned(ctx: _Context) -> list[PlannedTrial]:
    """The trials still to run, in the store's order."""
    return sorted((r.planned for r in ctx.store.records(ctx.study_id) if r.status == "planned"),
                  key=lambda t: t.order_index)


def _note_joined(ctx: _Context, trial: PlannedTrial) -> None:
    """Another run started with --beside-others while this one ran: kept with the study, with
    the first trial it may have touched, so that the report of the run it joined says so too."""
    known = {(j["pid"], j["since"]) for j in ctx.joined}
    new = [h for h in runlock.joined(ctx.since) if (h.pid, h.since) not in known]
    if not new:
        return
    ctx.joined += [{"pid": h.pid, "study": h.study, "store": h.store, "since": h.since,
                    "trial": trial.trial_id} for h in new]
    ctx.store.update_spec(ctx.study_id, {JOINED_BY: ctx.joined})
    for h in new:
        ctx.report(Event("note", message=tr("joined", who=h.describe(), trial=trial.trial_id)))


def _repeat(ctx: _Context, trial: PlannedTrial, *, after_kill: bool = False) -> PlannedTrial | None:
    """The repeat of a disturbed trial, in its block, while the study allows more. After a
    kill, only a disturbed trial that is the last of its chain and has no repeat yet."""
    assert ctx.guard is not None
    original = trial.repeat_of or trial.trial_id
    chain = [r.planned for r in ctx.store.records(ctx.study_id)
             if r.planned.repeat_of == original]
    if after_kill and any(t.attempt > trial.attempt for t in chain):
        return None
    return ctx.store.add_repeat(ctx.study_id, trial, right_after=ctx.study.series) \
        if len(chain) < ctx.guard.repeats else None


def _quiet_check(ctx: _Context, todo: list[PlannedTrial]) -> None:
    """Before the first trial, with the guard on: how busy the machine is (kept with the
    study for its report), and the busy watch that judges the run (teiten.run.busy)."""
    if ctx.guard is None:
        return
    ctx.busy = busy.start(ctx.guard, ctx.wait_quiet_s, lambda: _ours(ctx),
                          lambda m: ctx.report(Event("note", message=m)), str(ctx.store), todo,
                          keep=lambda body: ctx.store.update_spec(ctx.study_id, {QUIET_CHECK: body}),
                          theirs=lambda: [p for server in ctx.servers.values() for p in server.foreign_pids()])


def _ours(ctx: _Context) -> list[int]:
    """teiten and its servers: not foreign load."""
    return [os.getpid(), *(pid for server in ctx.servers.values() for pid in server.server_pids())]


def _prepare_all(ctx: _Context, todo: list[PlannedTrial]) -> None:
    """Load every server's data before the first trial, in the order the trials need it: no
    data is loaded between measured trials, and every server is read back (and the ways the
    servers differ shown) before the first one. A preparation that fails is the failure of
    the first trial that needed it (see _run_trial)."""
    for trial in todo:
        key = (trial.server, trial.workload)
        if key in ctx.broken or key in ctx.unprepared or key in ctx.prepared:
            continue
        server, began = ctx.servers[trial.server], time.monotonic()
        try:
            with ticker.phase(f"preparing {trial.server}/{trial.workload}"):
                server.prepare(ctx.workloads[trial.workload])
        except (TeitenError, psycopg.Error, OSError) as exc:
            ctx.unprepared[key] = _unprepared(ctx, trial, exc)
            continue
        if not server.members():  # a group's servers' own preparations count
            ctx.prepares.append((trial.workload, time.monotonic() - began))
        ctx.prepared.add(key)
        _describe(ctx, trial.server, server)
    stored = ctx.store.study_results(ctx.study_id).servers
    found = [d for d in differences.differences(stored) if d.cause != "version-only"]
    if len(stored) > 1 and all(s.description for s in stored):
        ctx.report(Event("note", message=tr("differences.run", names=" / ".join(
            s.name for s in stored)) if found else tr("differences.none")))
        for d in found:
            ctx.report(Event("note", message=f"  {d.what}: {' / '.join(d.values)} "
                             f"({tr(f'differences.cause.{d.cause}')})"))


def _unprepared(ctx: _Context, trial: PlannedTrial, exc: Exception) -> str:
    """Why a preparation failed; on a full disk (what was made for it is gone), how to go on."""
    reason = f"preparing {trial.server}/{trial.workload} failed: {exc}"
    if "No space left on device" in reason:
        reason += (f"; free space on that disk, then 'teiten resume --store {ctx.store} "
                   "--retry-failed' runs the trials it failed")
    return reason


def _describe(ctx: _Context, name: str, server: Server) -> None:
    if name in ctx.described or server.members():  # a group's servers are described
        return
    # The pgbench that drives the server is part of what is compared (load clients bring
    # their own, recorded with their figures).
    client = None if ctx.load_clients else (ctx.client or ctx.installs[name]).version
    ctx.store.set_server_description(ctx.study_id, name, {**server.describe(), "pgbench": client})
    ctx.described.add(name)


def _run_trial(ctx: _Context, trial: PlannedTrial) -> tuple[str, str]:
    """Run one trial and record it. Returns (status, one-line summary)."""
    store, sid, tid = ctx.store, ctx.study_id, trial.trial_id
    key = (trial.server, trial.workload)
    if key in ctx.broken:
        store.skip_trial(sid, tid, ctx.broken[key], now())
        return "skipped", ctx.broken[key]
    server = ctx.servers[trial.server]
    workload = ctx.workloads[trial.workload]
    store.mark_running(sid, tid, now())
    reason = ctx.unprepared.pop(key, None)
    if reason is None:
        try:
            server.prepare(workload)
        except (TeitenError, psycopg.Error, OSError) as exc:
            reason = _unprepared(ctx, trial, exc)
    if reason is not None:
        ctx.broken[key] = f"skipped: {reason}"
        store.finish_trial(sid, TrialResult(tid, "failed", now(), error=reason))
        return "failed", reason
    _describe(ctx, trial.server, server)
    notes: list[str] = []
    options = window.WindowOptions(ctx.monitors, ctx.study.profile, guard=ctx.guard)
    watch = window.Watch(trial, server, notes, options, client_cpus=ctx.client_cpus.get(trial.server))
    cycle = server.new_cycle()
    try:
        with cycle.phase("begin"):
            # One server runs at a time: what a read-only trial left running (restart:
            # after-changes) is stopped, unless this trial goes on with it.
            cycle.seconds["stop_leftover"] = sum(
                s.park(trial.workload if s is server else None) for s in ctx.servers.values())
            endpoint = server.begin_trial(workload, tid,
                                          prewarm=ctx.study.prewarm and workload.prewarm)
        with cycle.phase("load"):
            outcome = workload.run_trial(_request(ctx, trial, server, endpoint),
                                         watch.around(endpoint))
    except (TeitenError, psycopg.Error, OSError) as exc:
        outcome = TrialOutcome(error=f"could not start the trial: {exc}")
    except BaseException:
        # Interrupted: the trial goes back to 'planned' so that resume runs it.
        server.end_trial()
        store.reset_interrupted(sid)
        raise
    with cycle.phase("end"):
        end = server.end_trial()
    if outcome.not_installed is not None:
        reason = f"not installed: {outcome.not_installed}"
        store.skip_trial(sid, tid, reason, now())
        return "skipped", reason
    load = outcome.load
    warnings = watch.warnings()
    notes = list(end.notes) + warnings + notes + list(outcome.notes)
    with cycle.phase("collect"):
        evidence = watch.evidence(end.log, outcome)
    evidence.details.update(cycle=cycle.to_json(), design=plan.trial_design(
        ctx.study, trial, ctx.client_cpus.get(trial.server)))
    if load is not None:
        error = _verdict(load, end.crashed) or watch.failure() or outcome.error
    else:
        error = outcome.error or end.crashed
    status: Literal["ok", "failed", "disturbed"] = "failed" if error else "ok"
    ctx.watch = watch
    if status == "ok":
        error = watch.disturbance()
        status = "disturbed" if error else "ok"
    store.finish_trial(sid, TrialResult(
        tid, status, now(), error=error, figures=outcome.figures,
        argv=load.argv if load else (), stdout=load.stdout if load else "",
        stderr=load.stderr if load else "", server_log=end.log, notes=tuple(notes),
        evidence=evidence, steps=outcome.steps))
    return status, error or outcome.summary() + "".join(f"; {w}" for w in warnings)


def _request(ctx: _Context, trial: PlannedTrial, server: Server, endpoint: Endpoint) -> TrialRequest:
    """What the trial's workload needs to run it. Several nodes, or several load clients:
    one pgbench for each, started together."""
    nodes = server.targets()
    return TrialRequest(
        trial_id=trial.trial_id, install=ctx.client or ctx.installs[trial.server], endpoint=endpoint,
        targets=tuple(nodes or [Target(server.name, endpoint)]),
        several=bool(nodes or ctx.load_clients), clients=tuple(ctx.load_clients),
        sessions=trial.clients, threads=trial.threads,
        duration_s=trial.duration_s, variant=trial.variant,
        cpus=ctx.client_cpus.get(trial.server), work_dir=ctx.run_dir,
        cold_restart=server.cold_restarter(),
        meter=server.step_meter() if ctx.monitors else None)


def _verdict(load: LoadRun, crashed: str | None) -> str | None:
    """Why a load does not count, or None when it does: killed for its time, the server
    crashed under it, or the driver's own reason (it exited badly, it measured nothing)."""
    if load.timed_out:
        return load.failure
    return crashed or load.failure
