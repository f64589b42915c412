"""Building a study's report from the store: the figures, and the flame graphs beside it."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from teiten import fingerprint
from teiten.analysis.compare import degradation
from teiten.analysis.model import Notice, ReportData
from teiten.analysis.rtt import statements_per_transaction
from teiten.analysis.summary import report_data
from teiten.errors import UserError
from teiten.monitors.profile import diff_flamegraph, hot_functions
from teiten.report import write_report
from teiten.results import now
from teiten.store import Store


def _safe(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.+-]", "_", text)


def hot_spots(store: Store, study_id: int,
              trials: list[dict[str, Any]]) -> dict[tuple[str, str, int], list[tuple[str, float]]]:
    """The hottest functions (self share) of every profiled point."""
    out: dict[tuple[str, str, int], list[tuple[str, float]]] = {}
    profiles = store.details_of_kind(study_id, "profile")
    for t in trials:
        prof = profiles.get(t["trial_id"])
        if prof and prof.get("folded"):
            out[(t["server"], t["workload"], int(t["clients"]))] = hot_functions(prof["folded"])
    return out


def lwlock_runs(store: Store, study_id: int,
                trials: list[dict[str, Any]]) -> dict[tuple[str, str, int], list[list[dict[str, Any]]]]:
    """The LWLOCK_STATS rows of every ok trial that has them, by point."""
    out: dict[tuple[str, str, int], list[list[dict[str, Any]]]] = {}
    stats = store.details_of_kind(study_id, "lwlock")
    for t in trials:
        if t["status"] != "ok":
            continue
        found = stats.get(t["trial_id"])
        if found:
            out.setdefault((t["server"], t["workload"], int(t["clients"])), []).append(found["locks"])
    return out


def app_runs(store: Store, study_id: int, trials: list[dict[str, Any]],
             rename: dict[str, str] | None = None) -> dict[tuple[str, str, int], list[dict[str, Any]]]:
    """The 'app' details (tpcc, bookstore) of every ok trial, by point."""
    out: dict[tuple[str, str, int], list[dict[str, Any]]] = {}
    found = store.details_of_kind(study_id, "app")
    for t in trials:
        if t["status"] == "ok" and t["trial_id"] in found:
            server = (rename or {}).get(t["server"], t["server"])
            out.setdefault((server, t["workload"], int(t["clients"])), []).append(found[t["trial_id"]])
    return out


def write_flamegraphs(store: Store, study_id: int, trials: list[dict[str, Any]], out_dir: Path,
                      baseline: str) -> tuple[dict[tuple[str, str, int], str],
                                              dict[tuple[str, str, int], str]]:
    """Write each stored flame graph, and a differential one against the baseline server
    wherever both were profiled at the same point. Returns their relative paths."""
    folded: dict[tuple[str, str, int], str] = {}
    graphs: dict[tuple[str, str, int], str] = {}
    diffs: dict[tuple[str, str, int], str] = {}
    profiles = store.details_of_kind(study_id, "profile")
    for t in trials:
        prof = profiles.get(t["trial_id"])
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


@dataclass
class _Gathered:
    study: dict[str, Any]
    servers: list[dict[str, Any]]
    trials: list[dict[str, Any]]
    evidence: dict[str, Any] = field(default_factory=dict)
    progress: dict[str, list[tuple[float, float | None]]] = field(default_factory=dict)
    steps: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    loads: dict[str, Any] = field(default_factory=dict)  # trial id -> details 'load'


def _gather(store: Store, study_id: int) -> _Gathered:
    trials = [dict(r) for r in store.trials(study_id)]
    g = _Gathered(dict(store.study(study_id)), [dict(r) for r in store.servers(study_id)], trials,
                  loads=store.details_of_kind(study_id, "load"))
    for st in store.steps(study_id):
        g.steps.setdefault(st["trial_id"], []).append(st)
    for t in trials:
        tid = t["trial_id"]
        g.evidence[tid] = (store.metrics(study_id, tid),
                           [(w["wait_event_type"], w["wait_event"], w["samples"])
                            for w in store.waits(study_id, tid)])
        g.progress[tid] = [(r["tps"], r["latency_ms"]) for r in store.progress(study_id, tid)]
    return g


def rtt_statements(store: Store, study_id: int, g: _Gathered) -> dict[tuple[str, str], float]:
    """(server, workload) -> SQL statements per transaction, from the first ok trial's
    pgbench -r lines, for the servers probed from this client (S11's round-trip bound)."""
    probed = {s["name"] for s in g.servers if "probe" in json.loads(s["description"] or "{}")}
    weights = {w["key"]: [int(n) for _, n in w["scripts"]]
               for w in json.loads(g.study["spec_json"])["workloads"]}
    out: dict[tuple[str, str], float] = {}
    for t in g.trials:
        key = (t["server"], t["workload"])
        if t["status"] != "ok" or t["server"] not in probed or key in out or not weights.get(t["workload"]):
            continue
        found = statements_per_transaction(
            ((r["script_index"], r["command"]) for r in store.statements(study_id, t["trial_id"])),
            weights[t["workload"]])
        if found:
            out[key] = found
    return out


def _pairs(names: list[str], degradations: list[tuple[str, str]]) -> list[tuple[str, str]]:
    for a, b in degradations:
        for n in (a, b):
            if n not in names:
                raise UserError(f"--degradation names server '{n}', which is not in the report "
                                f"({', '.join(names)})")
    return degradations


def _finish(data: ReportData, pairs: list[tuple[str, str]], out_dir: Path) -> dict[str, Path]:
    if pairs:
        data = replace(data, sections=tuple(
            replace(sec, degradations=tuple(degradation(sec, a, b) for a, b in pairs))
            for sec in data.sections))
    return write_report(data, out_dir)


def write_study_report(store: Store, study_id: int, out_dir: Path, *, lang: str = "en",
                       degradations: list[tuple[str, str]] | None = None,
                       exclude_rampup: bool = False) -> dict[str, Path]:
    """Write report.md and report.html for one study of ``store`` into ``out_dir``."""
    g = _gather(store, study_id)
    names = [s["name"] for s in g.servers]
    if not degradations and json.loads(g.study["spec_json"])["study"].get("environments"):
        degradations = [(names[0], n) for n in names[1:]]  # METHODS S5: each against the first
    pairs = _pairs(names, degradations or [])
    out_dir.mkdir(parents=True, exist_ok=True)
    graphs, diffs = write_flamegraphs(store, study_id, g.trials, out_dir, g.servers[0]["name"])
    data = report_data(g.study, g.servers, g.trials, store_path=str(store.path.absolute()),
                       generated_at=now(), evidence=g.evidence, graphs=graphs, diffs=diffs,
                       lang=lang, progress=g.progress, exclude_rampup=exclude_rampup,
                       hot=hot_spots(store, study_id, g.trials),
                       locks=lwlock_runs(store, study_id, g.trials),
                       apps=app_runs(store, study_id, g.trials), steps=g.steps,
                       rtt_statements=rtt_statements(store, study_id, g), load_details=g.loads)
    return _finish(data, pairs, out_dir)


def write_compare_report(sources: list[tuple[Store, int]], out_dir: Path, *, lang: str = "en",
                         allow_mixed: bool = False,
                         degradations: list[tuple[str, str]] | None = None,
                         exclude_rampup: bool = False) -> dict[str, Path]:
    """One report across several studies (the fixed-point observation over the years):
    their servers side by side, the first server of the first study as the baseline.

    Refuses studies whose machine fingerprints differ where it matters, unless
    ``allow_mixed``; then the report says which fields differ.
    """
    gathered = [_gather(store, sid) for store, sid in sources]
    first = gathered[0]
    base_fp = json.loads(first.study["fingerprint"])
    differ = sorted({f for g in gathered[1:]
                     for f in fingerprint.differences(base_fp, json.loads(g.study["fingerprint"]))})
    if differ and not allow_mixed:
        raise UserError(f"the studies ran on machines that differ in {', '.join(differ)}; their "
                        "numbers are not comparable (add --allow-mixed to compare anyway)")
    specs = [json.loads(g.study["spec_json"]) for g in gathered]
    keys = [w["key"] for w in specs[0]["workloads"]]
    common = [k for k in keys if all(k in [w["key"] for w in s["workloads"]] for s in specs)]
    if not common:
        raise UserError("the studies share no workload; there is nothing to compare")
    names_seen: dict[str, int] = {}
    for g in gathered:
        for srv in g.servers:
            names_seen[srv["name"]] = names_seen.get(srv["name"], 0) + 1
    servers, trials = [], []
    evidence: dict[str, Any] = {}
    runs: dict[tuple[str, str, int], list[dict[str, Any]]] = {}
    progress: dict[str, list[tuple[float, float | None]]] = {}
    steps: dict[str, list[dict[str, Any]]] = {}
    load_details: dict[str, Any] = {}
    statements: dict[tuple[str, str], float] = {}
    for (store, sid), g in zip(sources, gathered, strict=True):
        label = g.study["name"]
        rename = {s["name"]: (f"{label}/{s['name']}" if names_seen[s["name"]] > 1 else s["name"])
                  for s in g.servers}
        servers += [{**s, "name": rename[s["name"]]} for s in g.servers]
        for key, found in app_runs(store, sid, g.trials, rename).items():
            runs.setdefault(key, []).extend(found)
        statements.update({(rename[server], workload): n for (server, workload), n
                           in rtt_statements(store, sid, g).items()})
        for t in g.trials:
            tid = f"{g.study['id']}:{t['trial_id']}"
            trials.append({**t, "trial_id": tid, "server": rename[t["server"]]})
            evidence[tid] = g.evidence[t["trial_id"]]
            progress[tid] = g.progress[t["trial_id"]]
            steps[tid] = g.steps.get(t["trial_id"], [])
            if t["trial_id"] in g.loads:
                load_details[tid] = g.loads[t["trial_id"]]
    study_spec = dict(specs[0]["study"])
    study_spec["clients"] = sorted({c for s in specs for c in s["study"]["clients"]})
    study_spec["repetitions"] = max(s["study"]["repetitions"] for s in specs)
    study_spec["description"] = "Compared studies: " + ", ".join(
        f"{g.study['name']} ({g.study['created_at']})" for g in gathered)
    combined = {**first.study, "name": " + ".join(g.study["name"] for g in gathered),
                "spec_json": json.dumps({"study": study_spec, "workloads": [
                    w for w in specs[0]["workloads"] if w["key"] in common]})}
    pairs = _pairs([s["name"] for s in servers], degradations or [])
    notices = [Notice("mixed-fingerprints", {"fields": ", ".join(differ)})] if differ else []
    data = report_data(combined, servers, trials, store_path=", ".join(
        str(store.path.absolute()) for store, _ in sources), generated_at=now(),
        evidence=evidence, lang=lang, progress=progress, extra_notices=notices,
        exclude_rampup=exclude_rampup, apps=runs, steps=steps, rtt_statements=statements,
        load_details=load_details)
    out_dir.mkdir(parents=True, exist_ok=True)
    return _finish(data, pairs, out_dir)
