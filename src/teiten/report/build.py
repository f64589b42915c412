"""Writing a study's report: what analysis made of the study as the store gave it
(:mod:`teiten.analysis.gather`), and the flame graphs beside it."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from teiten.analysis import tenants
from teiten.analysis.gather import (
    Profiles,
    compared,
    profiled,
    profiles_without_graphs,
    study_data,
    with_profiles,
)
from teiten.analysis.inputs import Graphs, ReportOptions, StudyData
from teiten.analysis.summary import report_data
from teiten.features import FEATURES
from teiten.host.flamegraphs import diff_flamegraph
from teiten.model.results import Point, TrialRecord, now
from teiten.report import outdir, write_report
from teiten.store import Store


def _safe(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.+-]", "_", text)


def write_flamegraphs(trials: Sequence[TrialRecord], profiles: Profiles,
                      out_dir: Path | outdir.Writer, baseline: str) -> tuple[Graphs, Graphs]:
    """Write each stored flame graph, and a differential one against the baseline server
    wherever both were profiled at the same point (through :class:`outdir.Writer`). Returns
    their relative paths."""
    with outdir.opened(out_dir) as out:
        return _write_flamegraphs(trials, profiles, out, baseline)


def _write_flamegraphs(trials: Sequence[TrialRecord], profiles: Profiles, out: outdir.Writer,
                       baseline: str) -> tuple[Graphs, Graphs]:
    folded: dict[Point, str] = {}
    graphs: dict[Point, str] = {}
    diffs: dict[Point, str] = {}
    for t in trials:
        prof = profiles.get(t.trial_id)
        if not prof:
            continue
        at = t.point
        folded[at] = prof.folded
        if prof.svg:
            rel = f"flamegraphs/{_safe(at.server)}-{_safe(at.workload)}-c{at.clients}.svg"
            out.write_text(rel, prof.svg)
            graphs[at] = rel
    for at, stacks in folded.items():
        base = folded.get(replace(at, server=baseline))
        if at.server == baseline or not base:
            continue
        svg = diff_flamegraph(base, stacks, title=f"{at.server} vs {baseline} · {at.workload} · "
                              f"{at.clients} clients")
        if svg:
            rel = (f"flamegraphs/diff-{_safe(baseline)}-vs-{_safe(at.server)}-{_safe(at.workload)}"
                   f"-c{at.clients}.svg")
            out.write_text(rel, svg)
            diffs[at] = rel
    return graphs, diffs


class ChangeDrawer:
    """Draws the differential flame graph of a change point (analysis.history.graphed chooses
    where) from the stored profiles of ``trials``, written beside the report by ``out``."""

    def __init__(self, trials: Sequence[TrialRecord], profiles: Profiles, out: outdir.Writer):
        self.folded = {t.point: prof.folded for t in trials
                       if (prof := profiles.get(t.trial_id)) and prof.folded}
        self.profiled = frozenset(self.folded)
        self.out = out

    def __call__(self, before: Point, after: Point) -> str | None:
        svg = diff_flamegraph(self.folded[before], self.folded[after],
                              title=f"{before.server} → {after.server} · {before.workload} · "
                                    f"{before.clients} clients")
        if not svg:
            return None
        rel = (f"flamegraphs/change-{_safe(before.server)}-to-{_safe(after.server)}-"
               f"{_safe(before.workload)}-c{before.clients}.svg")
        out = self.out  # the report directory's Writer: never a write by path
        out.write_text(rel, svg)
        return rel


def write_study_report(store: Store, study_id: int, out_dir: Path, *, lang: str = "en",
                       degradations: list[tuple[str, str]] | None = None,
                       exclude_rampup: bool = False, overwrite: bool = False,
                       option: str = "--out") -> dict[str, Path]:
    """Write report.md and report.html for one study of ``store`` into ``out_dir``: a new or
    empty directory, or teiten's report directory, unless ``overwrite``; never one that
    another account could change (:mod:`.outdir`, whose refusals name ``option``)."""
    data = study_data(store, study_id, FEATURES)
    pairs = tenants.degradations(data.study.record.parameters, [s.name for s in data.study.servers],
                                 degradations)
    with outdir.claim(out_dir, overwrite=overwrite, option=option) as out:
        return _study_report(store, study_id, data, pairs, out, lang=lang,
                             exclude_rampup=exclude_rampup)


def _study_report(store: Store, study_id: int, data: StudyData, pairs: list[tuple[str, str]],
                  out: outdir.Writer, *, lang: str, exclude_rampup: bool) -> dict[str, Path]:
    every, profiles = profiled(store, study_id)
    graphs, diffs = write_flamegraphs(every.trials, profiles, out, data.study.servers[0].name)
    data = replace(with_profiles(store, data, every, profiles, graphs, diffs),
                   draw_diff=ChangeDrawer(every.trials, profiles, out))
    options = ReportOptions(store_path=store.address.absolute(), generated_at=now(), lang=lang,
                            exclude_rampup=exclude_rampup, degradations=tuple(pairs),
                            extra_notices=profiles_without_graphs(store, every, profiles))
    return write_report(report_data(data, options), out)


def write_compare_report(sources: list[tuple[Store, int]], out_dir: Path, *, lang: str = "en",
                         allow_mixed: bool = False, allow_different_parameters: bool = False,
                         degradations: list[tuple[str, str]] | None = None,
                         exclude_rampup: bool = False, overwrite: bool = False) -> dict[str, Path]:
    """One report across several studies (the fixed-point observation over the years):
    their servers side by side, the first server of the first study as the baseline.

    Refuses studies whose machine fingerprints differ where it matters, unless
    ``allow_mixed``, and studies whose parameters differ where their numbers stop being
    comparable (:mod:`teiten.analysis.parameters`), unless ``allow_different_parameters``;
    then the report says which fields or parameters differ. Refused, it writes nothing.
    ``out_dir`` is taken as by :func:`write_study_report`.
    """
    data, options = compared([study_data(store, sid, FEATURES) for store, sid in sources],
                             ", ".join(store.address.absolute() for store, _ in sources), lang=lang,
                             allow_mixed=allow_mixed,
                             allow_different_parameters=allow_different_parameters,
                             exclude_rampup=exclude_rampup)
    pairs = tenants.degradations(data.study.record.parameters, [s.name for s in data.study.servers],
                                 degradations) if degradations else []
    with outdir.claim(out_dir, overwrite=overwrite) as out:
        return write_report(report_data(data, replace(options, degradations=tuple(pairs))), out)


