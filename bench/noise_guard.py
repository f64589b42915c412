"""The noise guard's cost and its detection (python -m bench.noise_guard).

What it measures
----------------
1. Cost. One study (pg17, select-only, scale 10, clients [2], sequential, 2 repetitions) is run
   ``--pairs`` times with ``--noise-guard on`` and as often with ``--noise-guard off``, interleaved
   in pairs (which side goes first alternates from pair to pair, so that drift favours neither),
   each run into a store of its own. A pair's ratio is the median TPS of the guarded run's ok
   trials over the unguarded run's. Read it as: 1.000 means the guard costs nothing; the spread
   of the ratios over the pairs is the noise band, and a median inside it is no measurable cost.
   The guard's work in a trial is one pass over /proc at each end of the measured window, outside
   the load itself; its duration (``ForeignMeter.start`` and ``stop``, timed in this process over
   the machine's current process table) is printed too. The guarded runs also pay a 2 s quiet
   check before their first trial: that is wall time, not TPS, and is not in the ratio.
2. Detection. One guarded study (clients [1], 6 repetitions, max_foreign_cpus 0.25, repeats 2)
   runs while a CPU burner (``stress-ng --cpu 1`` when installed, else a Python busy loop) is
   started at the start line of chosen repetitions and killed at their end line. Per trial it
   prints whether a burner ran, the status, the foreign CPUs measured (cpu_s / window_s of the
   trial's 'foreign' details) with the largest consumers, and what it repeats. Read the summary
   as: caught = burner trials marked disturbed (want all of them); false positives = quiet
   trials marked disturbed, repeats included (want none); every caught trial should have a
   repeat in its block.

Figures are printed, not asserted. Each run uses a machine lock of its own in /tmp, so that it
does not wait for, or refuse, other teiten runs; run it on an otherwise quiet machine.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import psutil

from bench.common import ROOT, install, summary
from teiten.monitors.foreign import ForeignMeter

COST_STUDY = """
study: bench-noise-cost
servers: [{{name: pg17, install: "17"}}]
workloads: [select-only]
scale: 10
clients: [2]
duration: {duration:g}s
repetitions: 2
order: sequential
"""

DETECT_STUDY = """
study: bench-noise-detect
servers: [{{name: pg17, install: "17"}}]
workloads: [select-only]
scale: 10
clients: [1]
duration: {duration:g}s
repetitions: {repetitions}
order: sequential
noise_guard: {{max_foreign_cpus: {limit}, repeats: 2}}
"""

LIMIT = 0.25                    # noise_guard.max_foreign_cpus of the detection study
DETECT_REPETITIONS = 6
BURN_REPETITIONS = (2, 4, 5)    # the repetitions whose first trial runs beside a burner
BURNER_LIFE_S = 120             # a burner left behind by a crash stops by itself
STUDY_TIMEOUT_S = 600
METER_REPS = 20

START = re.compile(r"\] +\d+/\d+ \S+ \S+ \S+ rep=(\d+) \.\.\.")
END = re.compile(r" rep=(\d+): (\S+)")


def _lock() -> Path:
    return Path(tempfile.gettempdir()) / f"teiten-bench-noise-{os.getpid()}.lock"


def _env() -> dict[str, str]:
    # bench.common has set TEITEN_HOME; the lock is this process's own (see the docstring).
    return dict(os.environ, PYTHONPATH=str(ROOT / "src"), TEITEN_MACHINE_LOCK=str(_lock()))


def _teiten_run(study: Path, store: Path, guard: str) -> list[str]:
    return [sys.executable, "-m", "teiten", "run", str(study), "--store", str(store),
            "--no-report", "--noise-guard", guard]


def _run_study(study: Path, store: Path, guard: str) -> None:
    done = subprocess.run(_teiten_run(study, store, guard), env=_env(), text=True,
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                          timeout=STUDY_TIMEOUT_S)
    if done.returncode != 0:
        tail = "\n".join(done.stderr.splitlines()[-20:])
        raise RuntimeError(f"teiten run {study.name} --noise-guard {guard} exited "
                           f"{done.returncode}:\n{tail}")


def _trial_tps(store: Path) -> tuple[list[float], int]:
    """The TPS of the ok trials, and how many trials were not ok."""
    with sqlite3.connect(store) as conn:
        tps = [float(r[0]) for r in conn.execute(
            "SELECT tps FROM trials WHERE status='ok' ORDER BY order_index")]
        other = conn.execute("SELECT count(*) FROM trials WHERE status!='ok'").fetchone()[0]
    return tps, int(other)


def meter_cost(reps: int = METER_REPS) -> tuple[float, float]:
    """Median milliseconds of ``ForeignMeter.start()`` and ``stop()`` in this process."""
    meter = ForeignMeter(lambda: [os.getpid()])
    starts, stops = [], []
    for _ in range(reps):
        t0 = time.perf_counter()
        meter.start()
        t1 = time.perf_counter()
        time.sleep(0.05)  # a window, however short, so that stop() has growth to count
        t2 = time.perf_counter()
        meter.stop()
        t3 = time.perf_counter()
        starts.append(1000 * (t1 - t0))
        stops.append(1000 * (t3 - t2))
    return statistics.median(starts), statistics.median(stops)


def cost(work: Path, pairs: int, duration: float) -> float:
    """Guarded over unguarded TPS, interleaved in pairs; returns the median ratio."""
    study = work / "cost.yaml"
    study.write_text(COST_STUDY.format(duration=duration))
    ratios = []
    for i in range(pairs):
        tps: dict[str, list[float]] = {}
        for guard in (("on", "off") if i % 2 == 0 else ("off", "on")):
            store = work / f"cost-{i + 1}-{guard}.db"
            _run_study(study, store, guard)
            tps[guard], other = _trial_tps(store)
            if not tps[guard]:
                raise RuntimeError(f"{store}: no ok trial")
            if other:
                print(f"  pair {i + 1}, guard {guard}: {other} trial(s) not ok "
                      f"(disturbed or failed)", flush=True)
        on, off = statistics.median(tps["on"]), statistics.median(tps["off"])
        ratios.append(on / off)
        first = "on" if i % 2 == 0 else "off"
        print(f"  pair {i + 1} ({first} first): on {on:.1f} tps "
              f"[{', '.join(f'{t:.1f}' for t in tps['on'])}], off {off:.1f} tps "
              f"[{', '.join(f'{t:.1f}' for t in tps['off'])}], ratio on/off {ratios[-1]:.3f}",
              flush=True)
    print(summary("noise guard cost, on/off TPS ratio (1.000: no cost; the min-max is the noise band)",
                  ratios))
    start_ms, stop_ms = meter_cost()
    print(f"ForeignMeter over {len(psutil.pids())} processes, median of {METER_REPS}: "
          f"start {start_ms:.1f} ms, stop {stop_ms:.1f} ms (outside the load, once per trial each)")
    return statistics.median(ratios)


def _burner() -> subprocess.Popen[bytes]:
    """A process that keeps one CPU busy, in a session of its own (its pid is its group's id,
    so that stress-ng's worker dies with it); it ends by itself after BURNER_LIFE_S."""
    stress = shutil.which("stress-ng")
    argv = ([stress, "--cpu", "1", "--timeout", f"{BURNER_LIFE_S}s", "--quiet"] if stress else
            [sys.executable, "-c", "import time\nend = time.monotonic() + "
             f"{BURNER_LIFE_S}\nwhile time.monotonic() < end: pass"])
    return subprocess.Popen(argv, start_new_session=True)


def _kill(burner: subprocess.Popen[bytes] | None) -> None:
    if burner is not None and burner.poll() is None:
        os.killpg(burner.pid, signal.SIGKILL)  # its own group (start_new_session), by its pid
        burner.wait(timeout=10)


@dataclass(frozen=True)
class Row:
    trial_id: str
    repetition: int
    status: str
    repeat_of: str | None
    foreign_cpus: float | None
    top: str


def _rows(store: Path) -> list[Row]:
    with sqlite3.connect(store) as conn:
        trials = conn.execute("SELECT trial_id, repetition, status, repeat_of FROM trials "
                              "ORDER BY order_index").fetchall()
        details = dict(conn.execute("SELECT trial_id, body FROM details WHERE kind='foreign'")
                       .fetchall())
    rows = []
    for trial_id, repetition, status, repeat_of in trials:
        body = json.loads(details[trial_id]) if trial_id in details else None
        cpus = body["cpu_s"] / body["window_s"] if body and body["window_s"] > 0 else None
        top = ", ".join(f"{c['name']} {c['cpu_s']:.1f}s" for c in body["top"][:2]) if body else ""
        rows.append(Row(trial_id, repetition, status, repeat_of, cpus, top))
    return rows


def detect(work: Path, duration: float) -> tuple[int, int, int, int]:
    """Run the guarded study beside a burner in BURN_REPETITIONS; returns caught, with a
    burner, false positives, quiet trials."""
    study = work / "detect.yaml"
    study.write_text(DETECT_STUDY.format(duration=duration, repetitions=DETECT_REPETITIONS,
                                         limit=LIMIT))
    store = work / "detect.db"
    burner_kind = "stress-ng --cpu 1" if shutil.which("stress-ng") else "python busy loop"
    run = subprocess.Popen(_teiten_run(study, store, "on"), env=_env(), text=True,
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    # The stderr loop below ends when teiten does; this bounds it when teiten does not.
    watchdog = threading.Timer(STUDY_TIMEOUT_S, run.kill)
    watchdog.start()
    burner: subprocess.Popen[bytes] | None = None
    burned: dict[int, int] = {}  # repetition -> the burner's pid, for its first trial only
    seen: set[int] = set()
    lines: list[str] = []
    try:
        assert run.stderr is not None
        for line in run.stderr:
            lines.append(line)
            start, end = START.search(line), END.search(line)
            if start:
                rep = int(start.group(1))
                if rep in BURN_REPETITIONS and rep not in seen:
                    burner = _burner()
                    burned[rep] = burner.pid
                seen.add(rep)
            elif end and burner is not None:
                _kill(burner)
                burner = None
        code = run.wait(timeout=60)
    finally:
        watchdog.cancel()
        _kill(burner)
        if run.poll() is None:
            run.kill()
            run.wait(timeout=60)
    if code != 0:
        tail = "".join(lines[-20:])
        raise RuntimeError(f"teiten run {study.name} exited {code}:\n{tail}")

    rows = _rows(store)
    print(f"burner: {burner_kind}, beside the first trial of repetitions "
          f"{', '.join(map(str, sorted(burned)))}; limit {LIMIT} CPUs")
    print(f"  {'trial':<28} {'rep':>3}  {'burner':<6} {'status':<9} {'foreign CPUs':>12}  "
          f"repeat of / largest consumers")
    for r in rows:
        with_burner = r.repeat_of is None and r.repetition in burned
        cpus = f"{r.foreign_cpus:.3f}" if r.foreign_cpus is not None else "-"
        what = f"repeat of {r.repeat_of}" if r.repeat_of else ""
        print(f"  {r.trial_id:<28} {r.repetition:>3}  {'yes' if with_burner else 'no':<6} "
              f"{r.status:<9} {cpus:>12}  {'; '.join(filter(None, [what, r.top]))}")
    hot = [r for r in rows if r.repeat_of is None and r.repetition in burned]
    quiet = [r for r in rows if r not in hot]
    caught = [r for r in hot if r.status == "disturbed"]
    false = [r for r in quiet if r.status == "disturbed"]
    repeated = {r.repeat_of for r in rows if r.repeat_of}
    print(f"caught: {len(caught)}/{len(hot)} trials with a burner marked disturbed")
    print(f"false positives: {len(false)}/{len(quiet)} quiet trials marked disturbed"
          + (f" ({', '.join(r.trial_id for r in false)})" if false else ""))
    hot_cpus = [r.foreign_cpus for r in hot if r.foreign_cpus is not None]
    quiet_cpus = [r.foreign_cpus for r in quiet if r.foreign_cpus is not None]
    if hot_cpus and quiet_cpus:
        print(f"foreign CPUs: with a burner min {min(hot_cpus):.3f}, median "
              f"{statistics.median(hot_cpus):.3f}; quiet median {statistics.median(quiet_cpus):.3f}, "
              f"max {max(quiet_cpus):.3f}")
    missing = [r.trial_id for r in caught if r.trial_id not in repeated]
    print(f"repeats: {len(caught) - len(missing)}/{len(caught)} caught trials have a repeat"
          + (f" (none for {', '.join(missing)})" if missing else ""))
    return len(caught), len(hot), len(false), len(quiet)


def main(pairs: int = 3, duration: float = 5, detect_duration: float = 3) -> float:
    install("17")
    work = Path(tempfile.mkdtemp(prefix="teiten-bench-noise-", dir=ROOT / ".cache"))
    work.chmod(0o755)  # as bench.orchestration: the server's account reads below it
    t0 = time.monotonic()
    try:
        print(f"-- cost: {pairs} pairs of studies, 2 trials of {duration:g} s each, on/off "
              f"interleaved --", flush=True)
        ratio = cost(work, pairs, duration)
        print(f"-- detection: {DETECT_REPETITIONS} trials of {detect_duration:g} s, guard on --",
              flush=True)
        detect(work, detect_duration)
    finally:
        shutil.rmtree(work, ignore_errors=True)
        _lock().unlink(missing_ok=True)
    print(f"(wall {time.monotonic() - t0:.0f} s)")
    return ratio


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--pairs", type=int, default=3, help="on/off pairs of the cost study (3)")
    ap.add_argument("--duration", type=float, default=5,
                    help="seconds of each cost trial (5)")
    ap.add_argument("--detect-duration", type=float, default=3,
                    help="seconds of each detection trial (3)")
    a = ap.parse_args()
    main(a.pairs, a.duration, a.detect_duration)
