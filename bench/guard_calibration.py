"""Calibrating the noise guard's rule (python -m bench.guard_calibration; issue 33, item 4).

The question: how much foreign load disturbs a trial, and does the guard's rule throw away the
trials that load shifted and keep the ones it did not? The rule (teiten.host.guard.Rule):
disturbed above ``max_foreign_cpus``, or, with ``spare_fraction`` above 0, above that share of
the CPUs the trial left idle where that is more. Does a trial that leaves CPUs idle shrug off
load a saturating one does not? On this project's 2-CPU virtual machine, no (see the Rule).

What it runs
------------
One local server (select-only, scale 10). Two kinds of trial: "1 client" (1 client, 1 thread:
leaves most of a 2-CPU machine idle) and "saturating" (2 clients and 1 thread per CPU the
process may use). Five burner levels: none, and ``stress-ng --cpu 1 --cpu-load P`` with P = 10,
25, 50 and 100 (a tenth, a quarter, half and all of one CPU; a Python duty-cycle loop when
stress-ng is missing). Every block runs each kind at each level once, in an order shuffled per
block (seeded), so that drift spreads over all of them. The burner starts just before the
measured window and is killed right after it; the window is measured by the guard's own meter
(``ForeignMeter``), which says the foreign CPUs and the trial's own.

What it prints
--------------
Per kind and burner level: the TPS shift against the same kind without a burner in the same
block (the paired Hodges-Lehmann estimate, its 95% interval and the verdict with a ±5% margin,
as the report would say it), the median foreign and own CPUs the meter saw, and the share of
the trials each rule would mark disturbed: max_foreign_cpus 0.1 and 0.25 (the default) alone,
and spare_fraction 0.25 to 1 beside the default. Read it as: a rule is right where it marks the
trials of a level whose shift is "slower" or "faster" and passes those whose shift is "no
difference"; "cannot tell" levels are not evidence either way. Figures are printed, not
asserted; run it on an otherwise quiet machine (about 5 minutes at the defaults).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import random
import shutil
import signal
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass

from bench.common import install, local_server, workload
from teiten.analysis import judging
from teiten.drivers import pgbench
from teiten.host.guard import ForeignLoad, Rule
from teiten.monitors.foreign import ForeignMeter

LEVELS = (0, 10, 25, 50, 100)         # a burner's load, % of one CPU (0: no burner)
FRACTIONS = (0.25, 0.5, 0.75, 1.0)    # noise_guard.spare_fraction, each judged
LIMIT = 0.25                          # noise_guard.max_foreign_cpus
BURNER_LIFE_S = 120                   # a burner left behind by a crash stops by itself
SETTLE_S = 0.3                        # the burner reaches its duty cycle before the window


@dataclass(frozen=True)
class Trial:
    kind: str
    level: int
    block: int
    tps: float
    found: ForeignLoad


def _burner(level: int) -> int:
    """A process that keeps ``level`` % of one CPU busy, in a session of its own, and no
    descendant of this process (as a load teiten did not start: its parent exits at once, so
    that it is orphaned); its pid, which is its group's id (stress-ng's worker dies with it)."""
    stress = shutil.which("stress-ng")
    if stress:
        argv = [stress, "--cpu", "1", "--cpu-load", str(level), "--timeout", f"{BURNER_LIFE_S}s",
                "--quiet"]
    else:
        on = level / 100 * 0.01
        argv = [sys.executable, "-c", "import time\nend = time.monotonic() + "
                f"{BURNER_LIFE_S}\nwhile time.monotonic() < end:\n t = time.monotonic() + {on}\n"
                f" while time.monotonic() < t: pass\n time.sleep({0.01 - on})"]
    starter = subprocess.run(
        [sys.executable, "-c", "import subprocess, sys\n"
         "print(subprocess.Popen(sys.argv[1:], start_new_session=True, stdin=subprocess.DEVNULL,\n"
         "                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).pid)", *argv],
        capture_output=True, text=True, check=True, timeout=30)
    return int(starter.stdout)


def _kill(burner: int | None) -> None:
    if burner is not None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(burner, signal.SIGKILL)  # its own group (start_new_session), by its pid


def run(blocks: int, duration: float, major: str, seed: int) -> list[Trial]:
    inst = install(major)
    w = workload("select-only", 10)
    capacity = len(os.sched_getaffinity(0))
    kinds = {"1 client": (1, 1), "saturating": (2 * capacity, capacity)}
    rng = random.Random(seed)
    trials: list[Trial] = []
    with local_server(inst, w, max_clients=2 * capacity) as server:
        server.prepare(w)
        for block in range(1, blocks + 1):
            order = [(kind, level) for kind in kinds for level in LEVELS]
            rng.shuffle(order)
            for kind, level in order:
                clients, threads = kinds[kind]
                endpoint = server.begin_trial(w, f"cal-{block}-{kind[0]}-{level}", prewarm=True)
                burner = _burner(level) if level else None
                try:
                    time.sleep(SETTLE_S)
                    meter = ForeignMeter(lambda: [os.getpid(), *server.server_pids()])
                    meter.start()
                    done = pgbench.run(inst, endpoint, w, clients=clients, threads=threads,
                                       duration_s=duration)
                    found = meter.stop()
                finally:
                    _kill(burner)
                    server.end_trial()
                tps = float(done.output.tps or 0)
                trials.append(Trial(kind, level, block, tps, found))
                print(f"  block {block} {kind:<10} burner {level:>3}%: {tps:8.1f} tps, foreign "
                      f"{found.cpus:.2f}, own {found.own_cpus or 0:.2f} of {found.capacity} CPUs",
                      flush=True)
    return trials


def report(trials: list[Trial]) -> None:
    rules = {"abs 0.1": Rule(0.1), f"abs {LIMIT:g}": Rule(LIMIT),
             **{f"f={f:g}": Rule(LIMIT, f) for f in FRACTIONS}}
    print(f"\nTPS shift against no burner (paired, 95%, margin ±5%) and the share of trials each rule "
          f"marks disturbed (abs: max_foreign_cpus alone; f: spare_fraction with max_foreign_cpus "
          f"{LIMIT:g}):")
    print(f"  {'kind':<10} {'burner':>6}  {'shift':>7} {'interval':>15}  {'verdict':<22} "
          f"{'foreign':>7} {'own':>5} {'limit f=.5':>10}  " + " ".join(f"{n:>8}" for n in rules))
    for kind in dict.fromkeys(t.kind for t in trials):
        base = [t for t in trials if t.kind == kind and t.level == 0]
        for level in LEVELS:
            mine = [t for t in trials if t.kind == kind and t.level == level]
            if level:
                judged = judging.ratio([t.tps for t in mine], [t.tps for t in base], comparisons=1,
                                       blocks=[t.block for t in mine],
                                       baseline_blocks=[t.block for t in base])
                shift = f"{100 * judged.estimate:6.1f}%" if judged.estimate else "      ?"
                ci = (f"[{100 * judged.ci[0]:.1f}–{100 * judged.ci[1]:.1f}]" if judged.ci else "")
                verdict = judged.verdict.word
            else:
                shift, ci, verdict = "   100%", "", "(the baseline)"
            foreign = statistics.median(t.found.cpus for t in mine)
            own = statistics.median(t.found.own_cpus or 0.0 for t in mine)
            limit = statistics.median(Rule(LIMIT, 0.5).limit_of(t.found) for t in mine)
            shares = " ".join(
                f"{sum(t.found.cpus > r.limit_of(t.found) for t in mine):>3}/{len(mine):<4}"
                for r in rules.values())
            print(f"  {kind:<10} {level:>5}%  {shift:>7} {ci:>15}  {verdict:<22} {foreign:7.2f} "
                  f"{own:5.2f} {limit:10.2f}  {shares}")


def main(blocks: int = 6, duration: float = 3, major: str = "17", seed: int = 1) -> None:
    t0 = time.monotonic()
    trials = run(blocks, duration, major, seed)
    report(trials)
    print(f"(wall {time.monotonic() - t0:.0f} s, {len(trials)} trials of {duration:g} s)")


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--blocks", type=int, default=6, help="blocks of every kind and level (6)")
    ap.add_argument("--duration", type=float, default=3, help="seconds of each trial (3)")
    ap.add_argument("--install", default="17", help="the PostgreSQL major to run (17)")
    ap.add_argument("--seed", type=int, default=1, help="the order's seed (1)")
    a = ap.parse_args()
    main(a.blocks, a.duration, a.install, a.seed)
