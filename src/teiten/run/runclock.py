"""A run's own wall time, kept with its study: from the process's start to the run's end, by
part (starting, setting up the servers, loading the data, the quiet check, the trials,
finishing), so that the report can say where the time went beyond the trials' cycles
(teiten.analysis.cycle.RunTime reads it back). A resume adds a run of its own."""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass

from teiten.model.studyrecord import RUNS, Append
from teiten.store import Store

log = logging.getLogger(__name__)


@dataclass
class Clock:
    """The parts of a run the runner times (seconds), set as they end."""

    setup: float = 0.0  # setting up the servers
    load_data: float = 0.0
    quiet_check: float = 0.0
    trials: float = 0.0

    def parts(self) -> dict[str, float]:
        """The parts by the names a run keeps them under, in the order they come."""
        return {"setup": self.setup, "load data": self.load_data, "quiet check": self.quiet_check,
                "trials": self.trials}


def process_age() -> float:
    """Seconds since this process started, to the clock tick (psutil's create_time rounds
    the boot time to a second)."""
    with open("/proc/self/stat") as f:
        start_ticks = int(f.read().rsplit(")", 1)[1].split()[19])  # field 22, starttime
    with open("/proc/uptime") as f:
        uptime = float(f.read().split()[0])
    return uptime - start_ticks / os.sysconf("SC_CLK_TCK")


def keep(store: Store, study_id: int, *, since: str, clock: Clock, trials_run: int,
         clusters_loaded: int, execute_s: float) -> None:
    """Add this run to the study's ``runs``: ``clock`` holds the parts the runner timed
    (setup, load data, quiet check, trials) of the ``execute_s`` it ran; what came before
    (Python, reading the study, waiting for the machine, installing) is "start", what is left
    after is "finish"; ``trials_run``: how many trials it ran, so that a reader can tell the
    runs kept from trials of a run that was interrupted (and kept no time). Never fails the
    study: a store that refuses the write loses the run's time only."""
    try:
        wall = max(execute_s, process_age())
        parts = clock.parts()
        seconds = {"start": wall - execute_s, **parts,
                   "finish": max(0.0, execute_s - sum(parts.values()))}
        store.update_spec(study_id, {RUNS: Append({
            "started": since, "wall_s": round(wall, 3), "clusters_loaded": clusters_loaded,
            "trials_run": trials_run, "seconds": {k: round(v, 3) for k, v in seconds.items()}})})
    except Exception as exc:  # noqa: BLE001 - the study's results stand whatever happens here
        log.warning("could not keep this run's time: %s", exc)
