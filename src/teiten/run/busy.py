"""A busy machine handled in minutes (issue 33, item 5): with the noise guard on, wait for a
quiet moment before a trial instead of burning one, and stop the study (exit 3, left
``interrupted`` for ``teiten resume``) when the machine stays busy, with one line that names
what keeps it busy and the ways out.

The rules, chosen so that a busy machine costs at most the wait plus one block:
- Before a trial, when the machine was last seen busy (at the start, or the trial before was
  disturbed), wait for a quiet window of :data:`WINDOW_S` seconds: the host's steal within the
  guard's, and foreign CPU within the limit
  the guard's rule gives that trial with its own use taken at its most (``Rule.before``), so
  that a moment quiet enough for the wait is quiet enough for the trial. The wait of one busy
  spell is bounded by ``--wait-quiet`` (default 30 s) in all: once it is spent, the trials run
  without waiting until one is quiet again.
- Stop when more than half of the first block's trials were disturbed, or when
  :data:`STREAK` trials in a row were disturbed after the spell's wait was spent.

A quiet machine pays nothing: after an undisturbed trial no window is taken.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from teiten.host.guard import ForeignLoad, Rule, who
from teiten.messages import tr
from teiten.model.errors import MachineBusy
from teiten.model.results import PlannedTrial
from teiten.monitors.foreign import ForeignWatch, quiet_check
from teiten.run.window import Watch
from teiten.spec.study import NoiseGuardSpec

WINDOW_S = 2.0      # a quiet window before a trial
WAIT_QUIET_S = 30.0  # the default bound of the wait of one busy spell (--wait-quiet)
STREAK = 3          # disturbed trials in a row, after the spell's wait, that stop the study


def start(guard: NoiseGuardSpec, wait_s: float, ours: Callable[[], Iterable[int]], say: Callable[[str], None],
          store: str, todo: Sequence[PlannedTrial], *,
          keep: Callable[[Mapping[str, object]], None],
          theirs: Callable[[], Iterable[int]] = tuple) -> BusyWatch:
    """Before the first trial: how busy the rest of the machine is over a short window, against
    the limit of the first trial (kept by ``keep`` for the report, the limit beside it; a busy
    machine is said at once), and the watch of the run, which judges by the guard's rule."""
    rule = Rule.of(guard.model_dump())
    found = quiet_check(WINDOW_S, ours=ours, theirs=theirs)
    watch = BusyWatch(rule, wait_s, ours, say, store,
                      sum(1 for t in todo if t.repetition == 1 and t.repeat_of is None and not t.purpose),
                      last=found, theirs=theirs)
    limit = watch.limit(todo[0]) if todo else rule.limit(None, None)
    keep({**found.to_json(), "limit": limit})
    watch.quiet = rule.quiet(found, limit)
    if not watch.quiet:
        say(tr("noise.busy", cpus=f"{found.cpus:.2f}", who=who(found, rule=rule), limit=f"{limit:.2f}"))
    return watch


@dataclass
class BusyWatch:
    """The state of one run: whether the machine was last seen quiet, the wait left in the
    current busy spell, and the counts the stopping rules read."""

    rule: Rule                          # the guard's rule
    wait_s: float                       # the bound of one spell's wait (0: never wait)
    ours: Callable[[], Iterable[int]]   # teiten's and its servers' pids: not foreign
    say: Callable[[str], None]          # a line for the progress display
    store: str                          # for the stop line's resume command
    first_block: int                    # trials of the first block (repetition 1) still to run
    quiet: bool = False
    left_s: float = 0.0
    waited_s: float = 0.0               # the time the current spell was really waited out
    streak: int = 0
    first_disturbed: int = 0
    last: ForeignLoad | None = None
    theirs: Callable[[], Iterable[int]] = tuple  # pids under ``ours`` that are foreign after all

    def __post_init__(self) -> None:
        self.left_s = self.wait_s

    def limit(self, trial: PlannedTrial) -> float:
        """The foreign CPUs a quiet moment before ``trial`` may hold."""
        return self.rule.before(trial.clients, trial.threads, len(os.sched_getaffinity(0)))

    def before(self, trial: PlannedTrial) -> None:
        """Wait, within what the spell has left, for a quiet window before ``trial``."""
        if self.quiet or self.left_s <= 0:
            return
        said, limit = False, self.limit(trial)
        while self.left_s > 0:
            begun = time.monotonic()
            found = quiet_check(WINDOW_S, ours=self.ours, theirs=self.theirs)
            took = time.monotonic() - begun
            self.left_s -= took
            self.waited_s += took
            self.last = found
            if self.rule.quiet(found, limit):
                self.quiet = True
                return
            if not said:
                self.say(tr("busy.waiting", cpus=f"{found.cpus:.2f}", who=who(found, rule=self.rule),
                            limit=f"{limit:.2f}", left=f"{max(self.left_s, 0):.0f}",
                            trial=trial.trial_id))
                said = True

    def after(self, trial: PlannedTrial, status: str, watch: Watch | None) -> None:
        """Count ``trial``'s outcome (``watch``: its monitors, when it ran); raise
        :class:`MachineBusy` when the machine stays busy."""
        disturbed = status == "disturbed"
        meter = watch.monitor(ForeignWatch) if watch is not None else None
        if meter is not None and meter.seen is not None:
            self.last = meter.seen
        if not disturbed:
            self.quiet, self.left_s, self.waited_s, self.streak = True, self.wait_s, 0.0, 0
            return
        self.quiet = False
        if trial.repetition == 1 and trial.repeat_of is None and not trial.purpose:
            self.first_disturbed += 1
            if self.first_disturbed * 2 > self.first_block:
                self._stop(tr("busy.first_block", n=self.first_disturbed, of=self.first_block))
        if self.left_s <= 0:
            self.streak += 1
            if self.streak >= STREAK:
                # The wait said is the one this spell really took (its windows run past the bound).
                self._stop(tr("busy.streak", n=self.streak, wait=f"{self.waited_s:.0f}")
                           if self.waited_s > 0 else tr("busy.streak_unwaited", n=self.streak))

    def _stop(self, why: str) -> None:
        found = self.last
        raise MachineBusy(tr("busy.stop", why=why, who=who(found, rule=self.rule) if found else "?",
                             cpus=f"{found.cpus:.2f}" if found else "?", store=self.store))
