"""``trials: {restore: first}``: each point's repetitions as one series on the data its runs
change (METHODS S2, the 2014 shape: three runs on the same data, a CHECKPOINT between them, no
restore).

The plan puts a point's runs back to back (teiten.run.plan). Before each trial the runner asks
:func:`before`: the first run of a series starts on restored data as any trial; a later run goes
on with the data only when the trial run just before it on the same server, in this process, was
the run before it of the same point (or the disturbed run it repeats) and that trial counted
(ok or disturbed). The server then keeps the changes (``Server.keep_data``: how many runs made
them) and its record says so. Otherwise -- an interruption cut the series and ``teiten resume``
goes on, a run before it failed or was skipped -- the later run would start on restored data and
measure something else than its number says, so it is skipped with the reason: the ratios, which
pair like-numbered runs, never pair a run on fresh data with one on changed data."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from teiten.model.results import PlannedTrial, Point
from teiten.servers.base import Server
from teiten.spec import Study

COUNTED = ("ok", "disturbed")  # a trial whose changes the next run of its series goes on with


@dataclass(frozen=True)
class _Last:
    point: Point
    repetition: int
    runs: int  # runs whose changes the data holds after this trial
    status: str


@dataclass
class Series:
    """The last trial run on each server in this process."""

    last: dict[str, _Last] = field(default_factory=dict)


def before(series: Series, study: Study, trial: PlannedTrial, server: Server,
           skip: Callable[[str, str], None]) -> tuple[str, str] | None:
    """Set ``server.keep_data`` for ``trial``; (status, why) when the trial is skipped instead
    (``skip`` records it, by trial id)."""
    server.keep_data = 0
    if not study.series or trial.purpose:
        return None
    last = series.last.get(trial.server)
    follows = last is not None and last.point == trial.point and last.status in COUNTED and (
        last.repetition == trial.repetition - 1
        or (trial.repeat_of is not None and last.repetition == trial.repetition))
    if follows:
        assert last is not None
        server.keep_data = last.runs
        return None
    if trial.repetition == 1:
        return None
    why = (f"skipped: run {trial.repetition} of its series (trials: restore: first) would start on "
           f"restored data, not on the data run {trial.repetition - 1} changed (the series was cut "
           "by an interruption, or a run before it did not count)")
    skip(trial.trial_id, why)
    after(series, trial, "skipped", server)
    return "skipped", why


def after(series: Series, trial: PlannedTrial, status: str, server: Server) -> None:
    """Note the trial just run (or skipped) on its server."""
    series.last[trial.server] = _Last(trial.point, trial.repetition, server.keep_data + 1, status)
