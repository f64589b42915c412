"""What a study will cost before it starts: wall time and disk, from rates teiten measured on
this machine (issue 24).

Every run ends by measuring its own rates (loading the data, restoring it, prewarming, and
the fixed cost of a trial's cycle around its window, from teiten.analysis.cycle's record)
and keeps them in ``$TEITEN_HOME/rates.json``, so that the next ``teiten plan`` estimates
from this machine's figures. Before any run, the defaults below (measured on a 2-core
virtual machine with an SSD, PostgreSQL 17, pgbench scales 1-50) stand in, and the estimate
says so.

The model, per study:
- wall = loading (per server and workload: a fixed part, initdb and the snapshot, plus the
  data at the loading rate) + every trial (its window, or a measured statement's typical
  time; the fixed cycle; prewarming its data; restoring its data when the trial before it on
  the same cluster changed it);
- disk = every cluster and its snapshot at once (teiten loads every server's data before the
  first trial), plus the WAL one data-changing trial writes (at its measured rate, up to the
  server's max_wal_size).
"""

from __future__ import annotations

import json
import math
import os
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, fields, replace
from pathlib import Path

from teiten.host import paths
from teiten.installs import Install
from teiten.model.details import APP
from teiten.model.results import PlannedTrial, now
from teiten.servers import kinds
from teiten.spec import Study
from teiten.store import Store
from teiten.workloads import Workload

MB = 1 << 20
GB = 1 << 30
FILE = "rates.json"
SMALL = 64 * MB  # a data set at most this large teaches fixed costs; a larger one, rates


@dataclass(frozen=True)
class Rates:
    """Seconds and bytes per second of the parts of a study, as measured here."""

    prepare_fixed_s: float = 3.0  # initdb, start, stop, snapshot of an empty cluster
    pgbench_load_bytes_per_s: float = 60 * MB  # pgbench -i with its vacuum, keys, checkpoint, snapshot
    sql_load_bytes_per_s: float = 15 * MB  # the application and statement workloads' own SQL
    trial_fixed_s: float = 0.6  # start, checkpoint, stop, monitors, the store, between trials
    # the same for a trial that goes on with the running server (restart: after-changes):
    # no start, no stop
    kept_fixed_s: float = 0.3
    prewarm_bytes_per_s: float = 1 * GB
    restore_fixed_s: float = 0.05
    restore_bytes_per_s: float = 300 * MB  # the incremental copy after an update trial
    statement_trial_s: float = 5.0  # a measured-statement variant on a small data set (no window)
    # and the rate at which a variant's steps go through its data beyond that: its load,
    # index builds, scans and VACUUMs all grow with it (the defaults are a guess, stated so)
    statement_bytes_per_s: float = 50 * MB
    wal_bytes_per_s: float = 20 * MB  # written by a data-changing trial
    studies: int = 0  # how many runs measured these (0: the defaults)
    measured_at: str = ""

    @classmethod
    def load(cls, home: Path | None = None) -> Rates:
        """The rates kept in ``$TEITEN_HOME`` (the defaults when none are, or unreadable)."""
        path = (home or paths.home()) / FILE
        try:
            found = json.loads(path.read_text())
        except (OSError, ValueError):
            return cls()
        if not isinstance(found, dict):
            return cls()
        good: dict[str, object] = {}
        for f in fields(cls):  # each field checked on its own; a bad one keeps its default
            value = found.get(f.name)
            if f.name == "measured_at":
                ok = isinstance(value, str)
            elif f.name == "studies":
                ok = isinstance(value, int) and not isinstance(value, bool) and value >= 0
            else:
                ok = (isinstance(value, int | float) and not isinstance(value, bool)
                      and math.isfinite(value)
                      and (value > 0 if f.name.endswith("_per_s") else value >= 0))
            if ok:
                good[f.name] = value
        return cls(**good)  # type: ignore[arg-type]

    def save(self, home: Path | None = None) -> None:
        """Keep these rates for the next estimate (written whole, then renamed)."""
        where = home or paths.home()
        where.mkdir(parents=True, exist_ok=True)
        tmp = where / f".{FILE}.{os.getpid()}"
        tmp.write_text(json.dumps(asdict(self), indent=1))
        tmp.replace(where / FILE)

    def source(self) -> str:
        """Where the rates come from, in a few words."""
        if not self.studies:
            return ("default rates (no study has run with this TEITEN_HOME yet; the first run "
                    "measures this machine's)")
        return (f"rates measured on this machine by {self.studies} earlier "
                f"run{'s' if self.studies != 1 else ''} (last {self.measured_at[:16]})")


@dataclass(frozen=True)
class Estimate:
    """What a study will take, roughly."""

    wall_s: float
    windows_s: float  # of it, measured windows
    loading_s: float  # of it, loading the data
    trials: int
    disk_bytes: int
    rates: Rates
    wall_s_most: float | None = None  # repetitions: auto, if it runs to its ceiling (or budget)
    images: tuple[tuple[str, float], ...] = ()  # built before the first trial: what, seconds

    def text(self) -> str:
        wall = duration(self.wall_s)
        if self.wall_s_most is not None and self.wall_s_most > self.wall_s * 1.01:
            wall = (f"{wall} to {duration(self.wall_s_most)} (repetitions: auto, from its floor "
                    "of blocks to its ceiling or budget)")
        building = ""
        if self.images:
            building = (f", {duration(sum(s for _, s in self.images))} building "
                        + " and ".join(what for what, _ in self.images) + " (the first time only)")
        return (f"estimate: about {wall} of wall time for {self.trials} trials "
                f"({duration(self.windows_s)} of measured windows, {duration(self.loading_s)} "
                f"loading the data{building}), and about {size_text(self.disk_bytes)} of disk at most; "
                f"from {self.rates.source()}")


def duration(seconds: float) -> str:
    """``45 s``, ``3 min 05 s`` (under 10 minutes), ``42 min``, ``4 h 41 min``."""
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 600:
        minutes, rest = divmod(round(seconds), 60)
        return f"{minutes} min {rest:02d} s"
    minutes = round(seconds / 60)
    if minutes < 90:
        return f"{minutes} min"
    return f"{minutes // 60} h {minutes % 60:02d} min"


def size_text(n: float) -> str:
    return f"{n / GB:.1f} GB" if n >= GB else f"{n / MB:.0f} MB"


def wal_cap(study: Study) -> float:
    """The most WAL a trial leaves before a checkpoint removes it: max_wal_size (the
    pgecons profile's is up to a quarter of the free disk; 1 GB by default), with slack."""
    sizes = []
    for _, server in study.server_matrix():
        text = str(server.settings.get("max_wal_size", "")).strip().upper()
        units = {"MB": MB, "GB": GB, "TB": 1 << 40}
        value = next((float(text[:-2]) * u for suffix, u in units.items()
                      if text.endswith(suffix) and text[:-2].strip().isdigit()), None)
        if value is None:
            value = 160.0 * GB if server.profile == "pgecons" else 1.0 * GB
        sizes.append(value)
    return max(sizes, default=1.0 * GB) * 1.1


def images(study: Study, installs: Mapping[str, Install | None]) -> tuple[tuple[str, float], ...]:
    """What a run of ``study`` builds before its first trial that this machine has not built
    yet (each server's kind says: a Docker image, a VM guest), once each, with its seconds;
    ``installs`` are the servers' resolved installs, by name."""
    found: dict[str, float] = {}
    for _, server in study.server_matrix():
        needed = kinds.of(server).image_to_build(server, installs.get(server.name))
        if needed is not None:
            found.setdefault(*needed)
    return tuple(found.items())


def estimate(study: Study, workloads: Mapping[str, Workload], trials: Sequence[PlannedTrial],
             rates: Rates, *, most: Sequence[PlannedTrial] | None = None,
             building: Sequence[tuple[str, float]] = ()) -> Estimate:
    """The cost of running ``trials`` (the planned ones; ``most``: all of them when
    repetitions: auto adds blocks up to its ceiling), after ``building`` (:func:`images`)."""
    servers = [s.name for _, s in study.server_matrix()]
    loading = sum(rates.prepare_fixed_s + w.data_bytes() / (
        rates.sql_load_bytes_per_s if w.sql_loaded else rates.pgbench_load_bytes_per_s)
        for w in workloads.values() for _ in servers) + sum(s for _, s in building)
    windows, cycles = trials_cost(study, workloads, trials, rates)
    disk = 2.0 * sum(w.data_bytes() for w in workloads.values()) * len(servers)
    changing = unrestored_s(study, workloads, trials)
    if changing:
        disk += min(rates.wal_bytes_per_s * max(changing), wal_cap(study)) + 64 * MB
    found = Estimate(loading + windows + cycles, windows, loading - sum(s for _, s in building),
                     len(trials), int(disk), rates, images=tuple(building))
    if most is not None and len(most) > len(trials):
        w2, c2 = trials_cost(study, workloads, most, rates)
        in_trials = w2 + c2
        if study.repetitions == "auto":  # no block is added that would overrun the budget
            in_trials = max(windows + cycles, min(in_trials, study.auto_repetitions.budget))
        found = replace(found, wall_s_most=loading + in_trials)
    return found


def trials_cost(study: Study, workloads: Mapping[str, Workload], trials: Sequence[PlannedTrial],
                 rates: Rates) -> tuple[float, float]:
    """Seconds of measured windows, and of everything around them, for ``trials`` in order."""
    windows = around = 0.0
    last_changed: dict[tuple[str, str], bool] = {}
    before: tuple[str, str] | None = None  # the slot of the trial before
    local = {s.name for _, s in study.server_matrix() if kinds.of(s).runs_here}
    groups = dict(study.tenant_groups())
    for t in trials:
        w = workloads[t.workload]
        slot = (t.server, t.workload)
        rampup = float(dict(w.options).get("rampup") or 0.0) if w.app else 0.0
        windows += t.duration_s if not t.variant else statement_trial_s(w.data_bytes(), rates)
        # restart: after-changes: a trial right after a read-only one of the same server and
        # workload goes on with its running server (teiten.servers.local.server)
        kept = (study.restart == "after-changes" and before == slot and t.server in local
                and not w.modifies_data and not last_changed.get(slot, True))
        # a group of tenants brings each of its servers to its trial's state, one by one
        n = len(groups.get(t.server, ())) or 1
        around += n * (rates.kept_fixed_s if kept else rates.trial_fixed_s) + rampup
        before = slot
        if study.prewarm and w.prewarm:
            around += n * w.data_bytes() / rates.prewarm_bytes_per_s
        if last_changed.get(slot) and not (study.series and t.repetition > 1):  # a series goes on
            around += n * (rates.restore_fixed_s + w.data_bytes() / rates.restore_bytes_per_s)
        last_changed[slot] = w.modifies_data
    return windows, around


def unrestored_s(study: Study, workloads: Mapping[str, Workload], trials: Sequence[PlannedTrial]
                 ) -> list[float]:
    """The seconds of each stretch of changes no restore ends, whose WAL the disk must hold:
    each trial that changes its data, or with trials: {restore: first} each point's series."""
    out: dict[object, float] = {}
    for t in trials:
        if workloads[t.workload].modifies_data:
            key = t.point if study.series else t.trial_id
            out[key] = out.get(key, 0.0) + t.duration_s
    return list(out.values())


def statement_trial_s(data_bytes: int, rates: Rates) -> float:
    """The seconds of a measured-statement variant's steps: the fixed part measured on small
    data sets, and the rest at the rate measured on large ones."""
    return rates.statement_trial_s + max(0, data_bytes - SMALL) / rates.statement_bytes_per_s



# -- learning the rates from a run ---------------------------------------------------------


@dataclass(frozen=True)
class Observed:
    """One trial of a run, as the rates are learnt from it."""

    cycle: Mapping[str, Mapping[str, float]]  # the stored cycle ("seconds", "start")
    data_bytes: int
    window_s: float | None  # None: a measured statement (its load is all window)
    wal_bytes: float | None
    rampup_s: float = 0.0  # an application workload's, before its window


def learn(old: Rates, trials: Iterable[Observed], prepares: Iterable[tuple[int, bool, float]],
          *, between_s: float, when: str) -> Rates:
    """New rates from a run's trials and its preparations ((data bytes, loaded by SQL,
    seconds) each); ``between_s``: the run's wall time outside every trial's cycle and
    preparation, per trial. What the run did not measure keeps its old rate."""
    seen = list(trials)
    if not seen:
        return old
    fixed: list[float] = []
    kept: list[float] = []
    prewarm, restore, wal = [], [], []
    statements: list[tuple[int, float]] = []
    for t in seen:
        s = t.cycle.get("seconds", {})
        load = s.get("load", 0.0)
        window = load if t.window_s is None else min(load, t.window_s)
        total = sum(s.get(k, 0.0) for k in ("begin", "load", "end", "collect"))
        outside = total - window - t.rampup_s - s.get("prewarm", 0.0) - s.get("restore", 0.0) \
            + between_s
        went_on = str((t.cycle.get("start") or {}).get("server", "")).startswith("kept running")
        (kept if went_on else fixed).append(outside)
        if t.window_s is None:
            statements.append((t.data_bytes, load))
        if s.get("prewarm", 0.0) > 0.01 and t.data_bytes > SMALL:
            prewarm.append(t.data_bytes / s["prewarm"])
        if "restore" in s and t.data_bytes > SMALL:
            restore.append(t.data_bytes / max(s["restore"], 1e-3))
        if t.wal_bytes and t.window_s:
            wal.append(t.wal_bytes / t.window_s)
    med = statistics.median
    # Small data sets give the fixed part of a statement trial, large ones its rate.
    few = [seconds for size, seconds in statements if size <= SMALL]
    fixed_statement = med(few) if few else old.statement_trial_s
    through = [(size - SMALL) / (seconds - fixed_statement) for size, seconds in statements
               if size > SMALL and seconds > fixed_statement]
    # Small data sets give the fixed part of a preparation, large ones the loading rate.
    made = list(prepares)
    small = [seconds for size, _, seconds in made if size <= SMALL]
    base = med(small) if small else old.prepare_fixed_s
    loads: dict[bool, list[float]] = {True: [], False: []}
    for size, by_sql, seconds in made:
        if size > SMALL and seconds > base:
            loads[by_sql].append(size / (seconds - base))
    return replace(
        old, trial_fixed_s=med(fixed) if fixed else old.trial_fixed_s,
        kept_fixed_s=med(kept) if kept else old.kept_fixed_s, prepare_fixed_s=base,
        prewarm_bytes_per_s=med(prewarm) if prewarm else old.prewarm_bytes_per_s,
        restore_bytes_per_s=med(restore) if restore else old.restore_bytes_per_s,
        statement_trial_s=fixed_statement,
        statement_bytes_per_s=med(through) if through else old.statement_bytes_per_s,
        wal_bytes_per_s=max(wal) if wal else old.wal_bytes_per_s,
        pgbench_load_bytes_per_s=med(loads[False]) if loads[False] else old.pgbench_load_bytes_per_s,
        sql_load_bytes_per_s=med(loads[True]) if loads[True] else old.sql_load_bytes_per_s,
        studies=old.studies + 1, measured_at=when)


def learn_from_run(store: Store, study_id: int, since: str, workloads: Mapping[str, Workload],
                   prepares: Sequence[tuple[str, float]], loop_s: float) -> Rates:
    """Learn from the trials of ``study_id`` that finished since ``since`` (this run), the
    preparations it timed ((workload key, seconds) each) and the wall time of its loop of
    trials; keep the new rates in ``$TEITEN_HOME`` and return them."""
    cycles = store.details_of_kind(study_id, "cycle")
    apps = store.details_of(study_id, APP)
    metrics = store.metrics_by_trial(study_id)
    ran = [t for t in store.records(study_id) if t.finished_at and t.finished_at >= since
           and t.trial_id in cycles]
    window = {tid: (app.window_s, app.rampup_s) for tid, app in apps.items()}
    seen = [Observed(
        cycles[t.trial_id], workloads[t.planned.workload].data_bytes(),
        None if t.planned.variant else
        (t.figures.duration_s if t.figures else None) or window.get(t.trial_id, (0.0, 0.0))[0]
        or 0.0, metrics.get(t.trial_id, {}).get("wal_bytes"),
        float(window.get(t.trial_id, (0.0, 0.0))[1])) for t in ran]
    # Every trial that ran shares the time between trials; only those that measured teach
    # the rates.
    in_cycles = sum(sum(o.cycle.get("seconds", {}).get(k, 0.0) for k in ("begin", "load", "end",
                                                                           "collect"))
                    for o in seen)
    between = max(0.0, loop_s - in_cycles) / len(seen) if seen else 0.0
    ok = {t.trial_id for t in ran if t.status in ("ok", "disturbed")}
    seen = [o for o, t in zip(seen, ran, strict=True) if t.trial_id in ok]
    old = Rates.load()
    new = learn(old, seen, [(workloads[k].data_bytes(), workloads[k].sql_loaded, s)
                            for k, s in prepares], between_s=between, when=now())
    if new is not old:
        new.save()
    return new
