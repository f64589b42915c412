"""Where a trial's machine time went: its cycle, phase by phase, from the record the runner
and the server keep (teiten.servers.base.Cycle), and how the state it started from was made.

The runner times four phases around the server: ``begin`` (bring the server to the trial's
starting state), ``load`` (the workload with its monitors, the measured window inside it),
``end`` (stop the server, read its log) and ``collect`` (what the monitors saw). The server
times the parts of its begin and end it knows (restore, start, prewarm, checkpoint, stop); what
is left of begin and end is shown as "other", and what is left of the load around its window
(client start, an application's ramp-up, the monitors) as "around window". A study's wall
time is the sum of its trials' cycles and of what happens outside them (starting teiten,
loading the data, the noise guard's quiet check, the store between trials, removing the
clusters), which the runner keeps per run (:class:`RunTime`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from teiten.model import cycles
from teiten.model.studyrecord import StoredRun

# Shown in this order; "begin other" and "end other" are what the server did not time itself.
PHASES = ("restore", "start", "prewarm", "checkpoint", "begin other", "window", "around window",
          "stop", "end other", "collect")


@dataclass(frozen=True)
class Phases:
    """Seconds per phase of one trial or of a sum of trials."""

    seconds: dict[str, float]

    @property
    def total(self) -> float:
        return sum(self.seconds.values())

    @property
    def window(self) -> float:
        return self.seconds.get("window", 0.0)

    def overhead(self) -> float | None:
        """Wall time divided by the measured window (None without a window)."""
        return self.total / self.window if self.window > 0 else None

    def text(self) -> str:
        """``restore 0.31 s, start 0.52 s, ...`` for the phases that took any time."""
        return ", ".join(f"{name} {s:.2f} s" for name, s in self.seconds.items() if s >= 0.005)


def phases(stored: cycles.Cycle, window_s: float | None) -> Phases:
    """The phases of one trial's stored cycle. ``window_s``: its measured window (pgbench's
    duration, an application's window; 0 for a trial that measured nothing; None when the
    workload measures statements, whose load phase is all window)."""
    got = stored.seconds
    window = min(got.load, window_s) if window_s is not None else got.load
    # A stop of a server left over from an interrupted trial falls in begin, the usual one in end.
    inner_begin = got.restore + got.start + got.prewarm + got.checkpoint
    values = {
        "restore": got.restore, "start": got.start, "prewarm": got.prewarm, "checkpoint": got.checkpoint,
        "begin other": max(0.0, got.begin - inner_begin - got.stop_leftover),
        "window": window, "around window": max(0.0, got.load - window),
        "stop": got.stop + got.stop_leftover, "end other": max(0.0, got.end - got.stop),
        "collect": got.collect}
    return Phases({name: values[name] for name in PHASES})


def add(many: Iterable[Phases]) -> Phases:
    """The sum of several trials' phases."""
    total = dict.fromkeys(PHASES, 0.0)
    for one in many:
        for name, s in one.seconds.items():
            total[name] += s
    return Phases(total)


def started_from(s: cycles.Start) -> str:
    """How the trial's starting state was made, in a few words (English; the report
    translates the same keys). A group of tenants: each server's, by name."""
    if s.tenants:
        return "; ".join(f"{name}: {started_from(each)}" for name, each in s.tenants.items())
    if s.data == "restored":
        why = " after a crash" if s.after == "crash" else ""
        text = f"data restored from the snapshot by {s.restore if s.restore is not None else 'a copy'}{why}"
    elif s.runs_before:  # trials: {restore: first}
        runs = f"{s.runs_before} run{'s' if s.runs_before > 1 else ''}"
        text = (f"updated data: not restored, as the {runs} of its series before it changed it "
                "(trials: restore: first)")
    elif s.data:
        text = f"data {s.data}"
    else:
        return "not recorded (a trial from before teiten kept its cycle)"
    return text + (f"; server {s.server}" if s.server else "")


# How a trial's data was made, as keys of the report's catalogue (cycle.data.*).
_STARTS = {"as loaded": "loaded", "as the last trial left it": "unchanged",
           "reflink clone": "reflink", "incremental copy": "incremental", "full copy": "full",
           "loaded again": "reloaded", "container made again from the loaded image": "container"}


def first_start(start: cycles.Start) -> cycles.Start:
    """A trial's starting state; a group of tenants': its first server's."""
    return next(iter(start.tenants.values())) if start.tenants else start


def start_key(start: cycles.Start) -> str:
    """The catalogue key (below ``cycle.data.``) of how a trial's data was made (a group of
    tenants: as its first server's)."""
    s = first_start(start)
    if s.runs_before:
        return "updated"
    if s.data == "restored":
        return _STARTS.get(str(s.restore), "restored")
    return _STARTS.get(str(s.data), "unknown")


@dataclass(frozen=True)
class RunTime:
    """A study's runs (the first and each resume) from teiten's start to its end, as the
    runner keeps them (teiten.run.runclock.keep): where the wall time went beyond the trials'
    cycles."""

    runs: int
    wall: float
    seconds: dict[str, float]  # start, setup, load data, quiet check, trials, finish
    clusters_loaded: int
    trials_run: int | None = None  # None: a run kept before it was counted

    def parts(self, cycles: float, trials_kept: int) -> dict[str, float] | None:
        """The wall time by part, with the trials split into their cycles (``cycles``, the
        sum of the phases of the ``trials_kept`` trials that kept one) and what ran between
        them (the store, the monitors' rows, the progress line): the parts sum to the wall
        time. None when some of those trials ran in a run that kept no time (it was
        interrupted), which the kept runs' count of trials shows."""
        got = dict(self.seconds)
        trials = got.pop("trials", 0.0)
        if self.trials_run is None or self.trials_run < trials_kept or cycles > trials:
            return None
        return {"cycles": cycles, "between": max(0.0, trials - cycles),
                "load data": got.get("load data", 0.0), "quiet check": got.get("quiet check", 0.0),
                "start": got.get("start", 0.0) + got.get("setup", 0.0),
                "finish": got.get("finish", 0.0)}


def run_time(runs: Sequence[StoredRun]) -> RunTime | None:
    """The sum of a study's stored runs (its record's ``runs``); None when none was kept (a
    store from before, or a run that was interrupted)."""
    if not runs:
        return None
    seconds: dict[str, float] = {}
    for run in runs:
        for name, s in run.seconds.items():
            seconds[name] = seconds.get(name, 0.0) + s
    counted = [r.trials_run for r in runs]
    return RunTime(len(runs), sum(r.wall_s for r in runs), seconds,
                   sum(r.clusters_loaded for r in runs),
                   None if None in counted else sum(n for n in counted if n is not None))


@dataclass(frozen=True)
class MachineTime:
    """A study's trials' cycles summed: where the machine time went, and how many trials
    started from each kind of state; ``run``: the wall time of its runs, where kept."""

    phases: Phases
    trials: int
    starts: dict[str, int]  # start_key -> trials
    restarted: int  # trials before which the server was started afresh
    run: RunTime | None = None


def machine_time(kept: Mapping[str, cycles.Cycle],
                 windows: Mapping[str, float | None],
                 runs: Sequence[StoredRun] = ()) -> MachineTime | None:
    """The sum over the trials that kept a cycle (trial id -> stored cycle); ``windows``:
    each trial's measured window; ``runs``: the study's kept runs (see :func:`run_time`).
    None when no trial kept one (a store from before)."""
    if not kept:
        return None
    starts: dict[str, int] = {}
    restarted = 0
    for cycle in kept.values():
        key = start_key(cycle.start)
        starts[key] = starts.get(key, 0) + 1
        restarted += (first_start(cycle.start).server or "").startswith("restarted")
    total = add(phases(cycle, windows.get(tid)) for tid, cycle in kept.items())
    return MachineTime(total, len(kept), starts, restarted, run_time(runs))
