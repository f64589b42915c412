"""Report size: render a store of 5,000 trials, each with 10 s of per-second series, and
print the time, the peak memory and the size of report.html. Target: under 10 s and under
10 MB.

``--trials 100000`` measures a large study; ``--keep`` leaves the store (and prints its path)
and ``--store PATH`` renders one built before, so that a change is measured against the same
store; ``--profile N`` prints the N functions that took the most time (cProfile).

The store is synthetic (written through the store's own API): the renderer's cost does
not depend on how the numbers were measured.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import pstats
import random
import resource
import shutil
import tempfile
import time
from pathlib import Path

from bench.common import ROOT
from teiten.drivers.pgbench_output import PgbenchOutput, ProgressPoint
from teiten.model.results import Evidence, TrialResult
from teiten.report.build import write_study_report
from teiten.run.plan import plan
from teiten.spec import load_text
from teiten.store import Store

STUDY = """
study: report-size
servers: [{{name: pg15, install: "15"}}, {{name: pg16, install: "16"}},
          {{name: pg17, install: "17"}}, {{name: pg18, install: "18"}}]
workloads: [pgecons-read, {{name: pgecons-update, fillfactor: 80}}]
scale: 100
clients: [{clients}]
duration: 10s
repetitions: {reps}
"""


def build(path: Path, trials: int = 5000, seconds: int = 10) -> tuple[Store, int]:
    clients = [1, 2, 4, 8, 16, 32, 48, 64, 80, 96, 128, 160, 192, 224, 256, 288, 320, 352,
               384, 416, 448, 480, 512, 544, 576][: max(1, trials // (8 * 25))]
    reps = trials // (8 * len(clients))
    text = STUDY.format(clients=", ".join(map(str, clients)), reps=reps)
    study = load_text(text, "<bench>").study
    planned = plan(study)
    store = Store.open(path, create=True)
    spec = {"study": study.model_dump(mode="json"), "workloads": [
        {"key": w.key, "scripts": [], "scale": 100, "fillfactor": None, "modifies_data": False,
         "description": ""} for w in study.workloads]}
    sid = store.create_study(
        name=study.study, source="<bench>", spec_yaml=text, spec_json=json.dumps(spec),
        seed=0, created_at="2026-01-01T00:00:00+00:00",
        fingerprint={"cpu_model": "bench", "cpu_logical": 2}, teiten_version="bench",
        servers=[(s.name, "local", json.dumps(s.model_dump(mode="json"))) for s in study.servers],
        trials=planned)
    rng = random.Random(1)
    for t in planned:
        base = 1000 * min(t.clients, 64) * (1 + 0.02 * int(t.server[2:]) - 0.3)
        series = [base * rng.gauss(1, 0.05) for _ in range(seconds)]
        out = PgbenchOutput(
            pgbench_version="17.11", scale=100, clients=t.clients, threads=t.threads,
            duration_s=seconds, transactions=int(sum(series)), failed_transactions=0,
            tps=sum(series) / seconds, tps_including_connections=None,
            latency_ms_avg=1000 * t.clients / base, latency_ms_stddev=0.1,
            initial_connection_ms=1.0, aborted=False, errors=(),
            progress=tuple(ProgressPoint(float(i + 1), v, 1000 * t.clients / v, 0.1, 0)
                           for i, v in enumerate(series)),
            statements=(), scripts=())
        evidence = Evidence(
            series=[("system", float(i + 1), name, rng.uniform(0, 100)) for i in range(seconds)
                    for name in ("cpu.user", "cpu.system", "cpu.idle")],
            metrics={"cpu_user": 60.0, "cpu_sys": 20.0, "cpu_iowait": 1.0, "cpu_idle": 19.0,
                     "cpu_steal": 0.0, "cpu_irq": 0.0, "wal_bytes": 1e6,
                     "checkpoints_in_window": 0.0},
            waits=[("client backend", "CPU", "CPU", 80), ("client backend", "LWLock",
                                                          "WALWrite", 20)],
            details={})
        store.finish_trial(sid, TrialResult(t.trial_id, "ok", "2026-01-01T00:00:10+00:00",
                                            figures=out.figures(), evidence=evidence))
    return store, sid


def main(trials: int = 5000, *, store_path: Path | None = None, keep: bool = False,
         profile: int = 0) -> tuple[float, int]:
    work = Path(tempfile.mkdtemp(prefix="teiten-bench-report-", dir=ROOT / ".cache"))
    try:
        if store_path is None:
            t0 = time.monotonic()
            store, sid = build(work / "big.db", trials)
            store_path = work / "big.db"
            print(f"  built a store of {trials} trials in {time.monotonic() - t0:.1f} s "
                  f"({store_path.stat().st_size / 1e6:.1f} MB)")
            if keep:
                print(f"  kept: {store_path} (render it again with --store {store_path})")
        else:
            store = Store.open(store_path)
            sid = store.studies()[-1].id
            trials = len(store.trials(sid))
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        profiler = cProfile.Profile() if profile else None
        t0 = time.monotonic()
        if profiler is not None:
            profiler.enable()
        written = write_study_report(store, sid, work / "report")
        if profiler is not None:
            profiler.disable()
        took = time.monotonic() - t0
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        size = written["html"].stat().st_size
        store.close()
        print(f"report of {trials} trials: {took:.1f} s, peak RSS {peak:.0f} MB (before the "
              f"report {before:.0f} MB), report.html {size / 1e6:.2f} MB "
              f"(targets: < 10 s, < 10 MB)")
        if profiler is not None:
            pstats.Stats(profiler).sort_stats("cumulative").print_stats(profile)
            pstats.Stats(profiler).sort_stats("tottime").print_stats(profile)
        return took, size
    finally:
        if not keep:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--trials", type=int, default=5000)
    ap.add_argument("--store", type=Path, help="render this store (built by --keep) instead")
    ap.add_argument("--keep", action="store_true", help="keep the store built")
    ap.add_argument("--profile", type=int, default=0, metavar="N",
                    help="print the N functions that took the most time")
    a = ap.parse_args()
    main(a.trials, store_path=a.store, keep=a.keep, profile=a.profile)
