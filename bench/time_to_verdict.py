"""Machine time per decided point: the measure of teiten's method (python -m bench.time_to_verdict).

Runs a study ``--runs`` times on this machine, each into a store and a report of its own, through
``teiten run`` as a user would, and prints per run and as medians: minutes of trials (the sum of
the trials' own times) and of the whole run (wall clock), blocks per point, points decided
(faster, slower or no difference, as the report's ratio tables say), the widest printed interval
(its half-width, ±%), and this machine's noise: the coefficient of variation of each server's
repetitions at each point and the standard deviation of each ratio's within-block log ratios
(the noise the stopping rule sees), and what the blocks' pairing buys: each ratio's SD over
√2 times its two servers' CV (1: no better than independent trials; 0.7: half the variance).
Each run is appended as one JSON line to
``bench/results/time_to_verdict.jsonl`` (``--out``), with the study file it ran, so that designs
are compared across sittings (docs/STATISTICS.md, "Designing the trial against the noise").

- the default study (``quick-fixed-point``), or any built-in name or study file (``--study``);
- ``--far``: a two-server study whose servers differ by a known, large amount (the update
  workload with ``synchronous_commit`` off on one server), which the stopping rule should
  decide at the floor of blocks.

``--table`` prints the runs kept in the results file instead (``--since`` a date), a line each:
the figures docs/STATISTICS.md's tables of designs are read from.

Nothing is asserted: the figures are for the note and for docs/STATISTICS.md.
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from datetime import UTC, datetime
from pathlib import Path

from bench.common import ROOT
from teiten.store import Store

RESULTS = ROOT / "bench" / "results" / "time_to_verdict.jsonl"

FAR = """
study: bench-far
description: two servers of one install, synchronous_commit off on the second: two to three
  times as fast on the update workload
servers:
  - {{name: pg17, install: "17"}}
  - {{name: pg17-async, install: "17", settings: {{synchronous_commit: "off"}}}}
workloads: [{{name: pgecons-update, fillfactor: 80}}]
scale: 10
clients: [1, 4]
threads: half
duration: {duration}s
repetitions: auto
auto_repetitions: {{floor: 8, ceiling: 12, budget: 8min}}
order: random
seed: 2021
"""


def _teiten(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "teiten", *args], cwd=ROOT, capture_output=True,
                          text=True)


def _verdicts(report: Path) -> list[dict[str, str]]:
    """Every row of the report's ratio tables (the TPS ratios to the baseline)."""
    rows: list[dict[str, str]] = []
    for path in sorted((report / "tables").glob("*ratio*.csv")):
        with path.open(newline="") as f:
            found = list(csv.DictReader(f))
        if found and {"verdict", "baseline", "estimate_pct"} <= set(found[0]):
            rows.extend(found)
    return rows


def _noise(store: Path) -> tuple[dict[str, float], dict[str, float], dict[str, int], float]:
    """Per point: the CV of each server's repetitions (%), the SD of each ratio's within-block
    log ratios (%), the blocks each point ran; and the seconds of its trials."""
    st = Store.open(store)
    try:
        (study_id,) = [s.id for s in st.studies()]
        trials = st.study_results(study_id).trials
        baseline = st.study_results(study_id).servers[0].name
    finally:
        st.close()
    seconds = sum((datetime.fromisoformat(t.finished_at) - datetime.fromisoformat(t.started_at))
                  .total_seconds() for t in trials if t.started_at and t.finished_at)
    tps: dict[tuple[str, str, int], dict[int, float]] = defaultdict(dict)
    for t in trials:
        if t.status == "ok" and t.tps and not t.planned.purpose:
            tps[(t.planned.server, t.planned.workload, t.planned.clients)][t.planned.repetition] = t.tps
    cv = {f"{s} {w} c{c}": 100 * statistics.stdev(v.values()) / statistics.mean(v.values())
          for (s, w, c), v in tps.items() if len(v) > 1}
    blocks = {f"{s} {w} c{c}": max(v) for (s, w, c), v in tps.items()}
    sd = {}
    for (s, w, c), v in tps.items():
        base = tps.get((baseline, w, c))
        if s == baseline or not base:
            continue
        d = [math.log(v[b] / base[b]) for b in v if b in base]
        if len(d) > 1:
            sd[f"{s}/{baseline} {w} c{c}"] = 100 * statistics.stdev(d)
    return cv, sd, blocks, seconds


def seconds_noise(store: Path) -> dict[str, dict[str, float]]:
    """Where a point's noise lies, from each trial's per-second TPS (pgbench -P 1): the median
    over its trials of the first second's TPS against the rest (%, the ramp-up), of the CV of
    the seconds after the first (%, the noise within a run), the CV of whole-trial TPS (%,
    between runs) and of the trials' mean TPS after the first second (%, between runs once the
    ramp-up is left out). Noise between runs much above the within-run CV over the square root
    of the seconds is noise of each start (the server's and pgbench's placement, a restore),
    which longer runs do not shrink and more starts do."""
    st = Store.open(store)
    try:
        (study_id,) = [s.id for s in st.studies()]
        trials = st.study_results(study_id).trials
        progress = st.progress_by_trial(study_id)
    finally:
        st.close()
    by: dict[str, list[tuple[float, list[float]]]] = defaultdict(list)
    for t in trials:
        seconds = [p.tps for p in progress.get(t.planned.trial_id, ())]
        if t.status == "ok" and t.tps and not t.planned.purpose and len(seconds) >= 3:
            by[f"{t.planned.server} {t.planned.workload} c{t.planned.clients}"].append((t.tps, seconds))
    out = {}
    for where, rows in sorted(by.items()):
        if len(rows) < 2:
            continue
        steady = [statistics.mean(sec[1:]) for _, sec in rows]
        whole = [tps for tps, _ in rows]
        out[where] = {
            "first_second_pct": round(statistics.median(100 * sec[0] / statistics.mean(sec[1:])
                                                        for _, sec in rows), 1),
            "within_cv_pct": round(statistics.median(100 * statistics.stdev(sec[1:]) /
                                                     statistics.mean(sec[1:]) for _, sec in rows), 1),
            "between_cv_pct": round(100 * statistics.stdev(whole) / statistics.mean(whole), 1),
            "between_steady_cv_pct": round(100 * statistics.stdev(steady) / statistics.mean(steady), 1),
            "seconds": len(rows[0][1]),
        }
    return out


def pairing(cv: dict[str, float], sd: dict[str, float]) -> dict[str, float]:
    """Each ratio's SD of within-block log ratios over √2 times the root mean square of its two
    servers' CVs: about 1 where the two trials of a block vary independently, less where they
    share the noise (a drift both lie in), so that the pairing cancels it."""
    out = {}
    for where, value in sd.items():
        ratio, point = where.split(" ", 1)
        server, baseline = ratio.split("/", 1)
        both = [cv.get(f"{server} {point}"), cv.get(f"{baseline} {point}")]
        if None not in both and all(both):
            rms = math.sqrt(sum(c * c for c in both if c is not None) / 2)
            out[where] = round(value / (math.sqrt(2) * rms), 2)
    return out


def table(path: Path, since: str) -> None:
    """The kept runs, a line each (``--table``)."""
    for line in path.read_text().splitlines():
        r = json.loads(line)
        if r["at"] < since:
            continue
        cv, sd = list(r["cv_pct"].values()), list(r["log_ratio_sd_pct"].values())
        paired = list(pairing(r["cv_pct"], r["log_ratio_sd_pct"]).values())
        print(f"{r['at'][:16]} {r['design']:<28} {r['minutes_trials']:>5} min ({r['minutes_wall']}), "
              f"blocks {sorted(set(r['blocks'].values()))}, {r['decided']} of {r['points']} decided, "
              f"widest ±{r['widest_pct']}%, CV {statistics.median(cv):.1f}% ({min(cv):.1f}-{max(cv):.1f}), "
              f"SD {statistics.median(sd):.1f}% ({min(sd):.1f}-{max(sd):.1f}), "
              f"pairing {statistics.mean(paired):.2f}" if cv and sd and paired else "")


def one_run(study: Path, work: Path, n: int, report_args: list[str]) -> dict[str, object]:
    store, report = work / f"run{n}.db", work / f"run{n}-report"
    t0 = time.monotonic()
    done = _teiten("run", str(study), "--store", str(store), "--report", str(report), *report_args)
    wall = time.monotonic() - t0
    if done.returncode not in (0, 1):  # 1: a report whose answer is "slower" still counts
        raise SystemExit(f"teiten run exited {done.returncode}:\n{done.stderr[-3000:]}")
    rows = _verdicts(report)
    cv, sd, blocks, seconds = _noise(store)
    decided = [r for r in rows if r["verdict"] in ("faster", "slower", "no-difference")]
    widths = [100 * (float(r["ratio_ci_high_pct"]) - float(r["ratio_ci_low_pct"])) /
              (float(r["ratio_ci_high_pct"]) + float(r["ratio_ci_low_pct"]))
              for r in rows if r["ratio_ci_low_pct"] and r["ratio_ci_high_pct"]]
    return {
        "run": n, "minutes_trials": round(seconds / 60, 2), "minutes_wall": round(wall / 60, 2),
        "points": len(rows), "decided": len(decided),
        "verdicts": {f"{r['server']}/{r['baseline']} {r['workload']} c{r['clients']}":
                     f"{r['verdict']} {r['estimate_pct']} [{r['ratio_ci_low_pct']}-{r['ratio_ci_high_pct']}]"
                     for r in rows},
        "widest_pct": round(max(widths), 1) if widths else None,
        "blocks": blocks, "cv_pct": {k: round(v, 1) for k, v in cv.items()},
        "log_ratio_sd_pct": {k: round(v, 1) for k, v in sd.items()},
        "pairing": pairing(cv, sd),
        "seconds_noise": seconds_noise(store),
    }


def _print(r: dict[str, object]) -> None:
    blocks = r["blocks"]
    assert isinstance(blocks, dict)
    print(f"run {r['run']}: {r['minutes_trials']} min of trials ({r['minutes_wall']} min in all), "
          f"{r['decided']} of {r['points']} points decided, widest ±{r['widest_pct']}%, "
          f"blocks per point {sorted(set(blocks.values()))}", flush=True)
    for where, said in dict(r["verdicts"]).items():  # type: ignore[call-overload]
        print(f"  {where}: {said}", flush=True)
    print(f"  CV per server and point (%): {r['cv_pct']}", flush=True)
    print(f"  SD of the within-block log ratios (%): {r['log_ratio_sd_pct']}", flush=True)
    print(f"  pairing (SD / (√2 CV)): {r['pairing']}", flush=True)
    print("  per point: first second / rest, CV within a run (per second), CV between runs "
          "(whole, after the first second):", flush=True)
    for where, n in dict(r["seconds_noise"]).items():  # type: ignore[call-overload]
        print(f"    {where}: {n['first_second_pct']}%, {n['within_cv_pct']}%, "
              f"{n['between_cv_pct']}%, {n['between_steady_cv_pct']}% ({n['seconds']} s)", flush=True)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--study", default="quick-fixed-point",
                        help="a built-in study's name or a study file (default: the default study)")
    parser.add_argument("--far", action="store_true", help="the two-server study of a known, "
                        "large difference instead (synchronous_commit off on one server)")
    parser.add_argument("--duration", type=int, default=3, help="--far's trial seconds")
    parser.add_argument("--design", default="", help="a name for this design in the results file")
    parser.add_argument("--exclude-rampup", action="store_true",
                        help="judge each trial on its steady window (teiten report's option)")
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--keep", type=Path, help="copy each run's store into this directory")
    parser.add_argument("--table", action="store_true", help="print the runs kept in --out instead")
    parser.add_argument("--since", default="", help="with --table: runs from this date on (2026-12-06)")
    args = parser.parse_args(argv)
    if args.table:
        table(args.out, args.since)
        return
    report_args = ["--exclude-rampup"] if args.exclude_rampup else []
    runs = []
    with tempfile.TemporaryDirectory(prefix="bench-ttv-") as tmp:
        work = Path(tmp)
        work.chmod(0o755)
        if args.far:
            study = work / "far.yaml"
            study.write_text(FAR.format(duration=args.duration))
        elif Path(args.study).is_file():
            study = Path(args.study).resolve()
        else:
            shown = _teiten("study", "show", args.study)
            if shown.returncode != 0:
                raise SystemExit(shown.stderr.strip())
            study = work / f"{args.study}.yaml"
            study.write_text(shown.stdout)
        text = study.read_text()
        for n in range(1, args.runs + 1):
            r = one_run(study, work, n, report_args)
            _print(r)
            if args.keep:
                args.keep.mkdir(parents=True, exist_ok=True)
                kept = args.keep / f"{args.design or study.stem}-{int(time.time())}-run{n}.db"
                shutil.copyfile(work / f"run{n}.db", kept)
                print(f"  store kept: {kept}", flush=True)
            runs.append(r)
            args.out.parent.mkdir(parents=True, exist_ok=True)
            with args.out.open("a") as f:
                f.write(json.dumps({"at": datetime.now(UTC).isoformat(timespec="seconds"),
                                    "design": args.design or ("far" if args.far else args.study),
                                    "exclude_rampup": args.exclude_rampup, "study": text, **r}) + "\n")
    decided = [int(r["decided"]) for r in runs]  # type: ignore[call-overload]
    print(f"medians over {len(runs)} runs: "
          f"{statistics.median(float(r['minutes_trials']) for r in runs):.2f} min of trials, "  # type: ignore[arg-type]
          f"{statistics.median(decided)} points decided (each run: {decided}), widest "
          f"±{statistics.median(float(r['widest_pct'] or 0) for r in runs):.1f}%")  # type: ignore[arg-type]
    cvs = [v for r in runs for v in dict(r["cv_pct"]).values()]  # type: ignore[call-overload]
    sds = [v for r in runs for v in dict(r["log_ratio_sd_pct"]).values()]  # type: ignore[call-overload]
    if cvs and sds:
        print(f"noise: CV per server and point, median {statistics.median(cvs):.1f}% (from "
              f"{min(cvs):.1f} to {max(cvs):.1f}); SD of within-block log ratios, median "
              f"{statistics.median(sds):.1f}% (from {min(sds):.1f} to {max(sds):.1f})")


if __name__ == "__main__":
    main()
