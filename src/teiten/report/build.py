"""Building a study's report from the store: the figures, and the flame graphs beside it."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from teiten.analysis.summary import report_data
from teiten.monitors.profile import diff_flamegraph
from teiten.report import write_report
from teiten.runner import now
from teiten.store import Store


def _safe(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.+-]", "_", text)


def write_flamegraphs(store: Store, study_id: int, trials: list[dict[str, Any]], out_dir: Path,
                      baseline: str) -> tuple[dict[tuple[str, str, int], str],
                                              dict[tuple[str, str, int], str]]:
    """Write each stored flame graph, and a differential one against the baseline server
    wherever both were profiled at the same point. Returns their relative paths."""
    folded: dict[tuple[str, str, int], str] = {}
    graphs: dict[tuple[str, str, int], str] = {}
    diffs: dict[tuple[str, str, int], str] = {}
    for t in trials:
        prof = store.details(study_id, t["trial_id"]).get("profile")
        if not prof:
            continue
        key = (t["server"], t["workload"], int(t["clients"]))
        folded[key] = prof.get("folded") or ""
        if prof.get("svg"):
            rel = f"flamegraphs/{_safe(key[0])}-{_safe(key[1])}-c{key[2]}.svg"
            (out_dir / "flamegraphs").mkdir(parents=True, exist_ok=True)
            (out_dir / rel).write_text(prof["svg"])
            graphs[key] = rel
    for (server, workload, clients), stacks in folded.items():
        base = folded.get((baseline, workload, clients))
        if server == baseline or not base:
            continue
        svg = diff_flamegraph(base, stacks, title=f"{server} vs {baseline} · {workload} · "
                              f"{clients} clients")
        if svg:
            rel = (f"flamegraphs/diff-{_safe(baseline)}-vs-{_safe(server)}-{_safe(workload)}"
                   f"-c{clients}.svg")
            (out_dir / rel).write_text(svg)
            diffs[(server, workload, clients)] = rel
    return graphs, diffs


def write_study_report(store: Store, study_id: int, out_dir: Path, *,
                       lang: str = "en") -> dict[str, Path]:
    """Write report.md and report.html for one study of ``store`` into ``out_dir``."""
    trials = [dict(r) for r in store.trials(study_id)]
    evidence = {t["trial_id"]: (store.metrics(study_id, t["trial_id"]),
                                [(w["wait_event_type"], w["wait_event"], w["samples"])
                                 for w in store.waits(study_id, t["trial_id"])])
                for t in trials}
    servers = [dict(r) for r in store.servers(study_id)]
    out_dir.mkdir(parents=True, exist_ok=True)
    graphs, diffs = write_flamegraphs(store, study_id, trials, out_dir, servers[0]["name"])
    data = report_data(dict(store.study(study_id)), servers, trials,
                       store_path=str(store.path.absolute()), generated_at=now(),
                       evidence=evidence, graphs=graphs, diffs=diffs, lang=lang,
                       progress={t["trial_id"]: [(r["tps"], r["latency_ms"]) for r in
                                                 store.progress(study_id, t["trial_id"])]
                                 for t in trials})
    return write_report(data, out_dir)
