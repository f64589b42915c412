"""``teiten bisect --repo PATH --good REF --bad REF STUDY``: the commit that made a study slower.

It builds good and bad (``teiten install --from-git``), runs the study with the two as its
servers, and takes as points of interest those where bad is slower than good (the verdict:
an interval wholly below 100%, not within the study's margin; none: it says so, exit 1). Each
step builds the commit midway on the first-parent line and runs good, bad and it as three
servers of one study at those points, its ratios measured within a share of the gap the first
study found; teiten.analysis.bisection places the midpoint against the point midway between
good and bad, from the blocks' TPS. Every
step's study is in the store, under the study's own name, so ``teiten timeline`` draws them.
The first study's servers are the study's first server with another install: its settings,
cores and directories are kept.

Exit status: 0 the first bad commit is named; 1 bad is not slower than good at any point (or a
step measured nothing); 2 bad input; 3 a step cannot tell (the range left is named).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from dataclasses import dataclass

import yaml

from teiten import spec, studies
from teiten.analysis import bisection, gate, verdicts
from teiten.analysis.gather import study_data
from teiten.analysis.inputs import ReportOptions
from teiten.analysis.intervals import Interval
from teiten.cli.running import run_and_finish
from teiten.features import FEATURES
from teiten.host import safefs
from teiten.installs.model import Install
from teiten.installs.source import build
from teiten.installs.source_git import Commit, first_parent_range, resolve
from teiten.model.errors import SpecError, UserError
from teiten.model.results import now
from teiten.servers import kinds
from teiten.store import Store
from teiten.words import formats as f
from teiten.words.gate import beyond_key
from teiten.words.i18n import clients_phrase, join, tr

Point = tuple[str, int]  # (workload, clients)


@dataclass(frozen=True)
class Side:
    """A commit on the line as a server of a step's study."""

    role: str  # good, bad or mid
    commit: str
    install: Install

    @property
    def server(self) -> str:
        return f"{self.role}-{self.commit[:12]}"


def cmd_bisect(args: argparse.Namespace) -> int:
    loaded, _source = studies.find(args.study)
    template = _template(loaded)
    good = resolve(args.repo, args.good, options=("--repo", "--good"))
    bad = resolve(args.repo, args.bad, options=("--repo", "--bad"))
    line = [good.commit, *first_parent_range(good, bad)]
    search = bisection.Search(line)
    lines: list[str] = []
    lang = args.lang

    def say(text: str) -> None:
        lines.append(text)
        print(text, flush=True)

    say(tr("bisect.start", lang, n=len(line) - 1, good=_short(good), bad=_short(bad),
           repo=good.repo, builds=bisection.most_builds(len(line) - 1)))
    built: dict[str, Install] = {}

    def side(role: str, index: int) -> Side:
        commit = line[index]
        if commit not in built:
            print(f"teiten bisect: building {commit[:12]}", file=sys.stderr, flush=True)
            built[commit] = build(str(good.repo), ref=commit, configure=args.configure,
                                  jobs=args.jobs,
                                  progress=lambda text: print(text, file=sys.stderr, flush=True))
        return Side(role, commit, built[commit])

    first = [side("good", search.good), side("bad", search.bad)]
    status, study_id = _step(loaded, template, first, None, args)
    if status:
        return status
    opening = _judged(args.store, study_id, first[0], first[1], lang)
    margin = f"{opening.points[0].point.margin_pct:g}"
    interest = [(g.workload, g.point.clients) for g in opening.slower]
    if not interest:
        say(tr("bisect.none", lang, bad=_short(bad), good=_short(good), study=study_id))
        return _ended(args, lines, 1)
    beyond = [(g.workload, g.point.clients) for g in opening.slower if gate.beyond_margin(g.point)]
    # Each step measures its ratios within a share of the smallest gap found (the contrast that
    # places the midpoint is half that gap), not the study's own target: a 12% regression is
    # placed without a 10% margin's help (analysis.bisection.step_target).
    gap = max(g.point.shown_ratio or 1.0 for g in opening.slower)
    target = bisection.step_target(gap, loaded.study.target_pct)
    say(tr(beyond_key("bisect.interest", opening.slower), lang, bad=_short(bad),
           good=_short(good), margin=margin, study=study_id, where=_where(interest, lang),
           beyond=_where(beyond, lang)))
    step = 0
    while not search.done:
        step += 1
        mid = search.midpoint()
        sides = [side("good", search.good), side("bad", search.bad), side("mid", mid)]
        status, study_id = _step(loaded, template, sides, interest, args, target)
        if status:
            return status
        against_good = _verdicts(args.store, study_id, sides[0], sides[2], interest, lang)
        against_bad = _verdicts(args.store, study_id, sides[1], sides[2], interest, lang)
        placed = _midways(args.store, study_id, sides, interest)
        required = verdicts.family_level(len(interest))
        outcome = bisection.step_outcome([bisection.point_outcome(placed[p], required)
                                          for p in interest])
        subject = _subject(good, line[mid])
        say(tr(f"bisect.step.{outcome}", lang, step=step, study=study_id, commit=line[mid][:12],
               subject=subject))
        for p in interest:
            say("  " + tr("bisect.point", lang, where=_where([p], lang), good=against_good[p][1],
                          bad=against_bad[p][1], midway=_interval_text(placed[p])))
        if outcome == bisection.CANNOT_TELL:
            left = search.left
            say(tr("bisect.left", lang, n=len(left), good=line[search.good][:12],
                   bad=line[search.bad][:12], commits=join([c[:12] for c in left], lang)))
            return _ended(args, lines, 3)
        search.record(mid, outcome)
    say(tr("bisect.found", lang, commit=search.first_bad, subject=_subject(good, search.first_bad),
           builds=len(built), steps=step, store=args.store))
    return _ended(args, lines, 0)


def _template(loaded: spec.LoadedStudy) -> dict[str, object]:
    """The study's first server, as written, without its name and install: every server of
    the steps' studies is it with a build of a commit."""
    first = loaded.study.servers[0]
    if (where := kinds.of(first).field) is not None:  # the kind's key: docker, ssh, vm, external
        raise UserError(f"teiten bisect: the first server of study {loaded.study.study} "
                        f"({first.name}) runs elsewhere ({where}); bisect builds commits on "
                        "this machine: give a study whose first server runs here")
    data = spec.load.parse_yaml(loaded.text, loaded.path)[1]  # bounded, as the study was
    return {k: val for k, val in data["servers"][0].items()
            if k not in ("name", "install", "optional")}


def _step(loaded: spec.LoadedStudy, template: dict[str, object], sides: Sequence[Side],
          interest: Sequence[Point] | None, args: argparse.Namespace,
          target: float | None = None) -> tuple[int, int]:
    """Run the study with ``sides`` as its servers (at the points of interest, when given;
    with repetitions: auto, its ratios measured within ``target`` and not stopped by the
    margin: the step judges a contrast of its three servers, not each ratio)."""
    data = spec.load.parse_yaml(loaded.text, loaded.path)[1]  # bounded, as the study was
    data["servers"] = [{"name": s.server, "install": s.install.name, **template} for s in sides]
    if target is not None and data.get("repetitions") == "auto":
        data["auto_repetitions"] = {**(data.get("auto_repetitions") or {}),
                                    "target_pct": round(target, 2), "settle": False}
    if interest is not None:
        keys = {w for w, _ in interest}
        data["workloads"] = [entry for entry, model in zip(data["workloads"],
                                                            loaded.study.workloads, strict=True)
                             if model.key in keys]
        data["clients"] = sorted({c for _, c in interest})
    text = f"# written by: teiten bisect ({', '.join(s.server for s in sides)})\n" + \
        yaml.safe_dump(data, sort_keys=False, allow_unicode=True)
    try:
        step = spec.load_text(text, loaded.path)
    except SpecError as exc:
        raise UserError(f"teiten bisect: {exc.bare}") from None
    run_args = argparse.Namespace(**{**vars(args), "report": None, "no_report": True,
                                     "overwrite": False})
    return run_and_finish(step, f"bisect:{loaded.path}", run_args, generated=True)


def _judged(store_path: str, study_id: int, baseline: Side, candidate: Side, lang: str
            ) -> gate.Gate:
    store = Store.open(store_path)
    try:
        options = ReportOptions(store_path=store.address.absolute(), generated_at=now(), lang=lang)
        data = gate.restricted(study_data(store, study_id, FEATURES), [baseline.server, candidate.server])
        return gate.judge(data, options, paired=True, studies=f"#{study_id}")
    finally:
        store.close()


def _verdicts(store_path: str, study_id: int, baseline: Side, candidate: Side,
              interest: Sequence[Point], lang: str) -> dict[Point, tuple[str, str]]:
    """Each point of interest: the candidate's verdict against the baseline, and its ratio
    with its interval as the report prints them."""
    out: dict[Point, tuple[str, str]] = {}
    for g in _judged(store_path, study_id, baseline, candidate, lang).points:
        p = g.point
        if (g.workload, p.clients) in interest:
            bounds = f.ratio_ci_bounds(p)
            out[(g.workload, p.clients)] = (p.verdict, f.format_ratio(p.shown_ratio) + (
                f" [{bounds}, {f.format_level(p.ratio_ci_level)}%]" if bounds else ""))
    return out


def _midways(store_path: str, study_id: int, sides: Sequence[Side], interest: Sequence[Point]
             ) -> dict[Point, Interval | None]:
    """Each point of interest: where the midpoint (``sides[2]``) lies against the point midway
    between good (``sides[0]``) and bad (``sides[1]``), at the level the step's family needs
    (analysis.bisection.midway), from the TPS of the trials each block ran."""
    store = Store.open(store_path)
    try:
        trials = store.study_results(study_id).measured().trials
    finally:
        store.close()
    tps: dict[tuple[str, str, int], dict[int, float]] = {}
    for t in trials:
        if t.status == "ok" and t.tps and not t.planned.variant:
            tps.setdefault((t.planned.server, t.planned.workload, t.planned.clients), {})[
                t.planned.repetition] = t.tps
    level = verdicts.family_level(len(interest))
    good, bad, mid = (s.server for s in sides)
    return {(w, c): bisection.midway(tps.get((good, w, c), {}), tps.get((bad, w, c), {}),
                                     tps.get((mid, w, c), {}), confidence=level)
            for w, c in interest}


def _interval_text(found: Interval | None) -> str:
    """An interval as the report prints a ratio's: ``97.0% [94.1–99.9, 97.5%]``."""
    if found is None:
        return f.MISSING
    return (f"{f.format_ratio(found.value)} [{f.pct_number(found.low)}{f.DASH}{f.pct_number(found.high)}, "
            f"{f.format_level(found.confidence)}%]")


def _where(points: Sequence[Point], lang: str) -> str:
    by_workload: dict[str, list[int]] = {}
    for w, c in points:
        by_workload.setdefault(w, []).append(c)
    return join([tr("gate.at", lang, workload=w, clients=clients_phrase(c, lang))
                 for w, c in by_workload.items()], lang)


def _short(commit: Commit) -> str:
    return commit.commit[:12] if commit.ref.startswith(commit.commit[:7]) else \
        f"{commit.ref} ({commit.commit[:12]})"


def _subject(good: Commit, commit: str) -> str:
    return resolve(str(good.repo), commit).subject


def _ended(args: argparse.Namespace, lines: list[str], status: int) -> int:
    if args.markdown is not None:
        text = "\n".join([f"### {lines[0]}", "", *(f"- {ln.strip()}" if not ln.startswith("  ")
                                                   else f"  - {ln.strip()}" for ln in lines[1:])])
        try:
            safefs.append_file(args.markdown, text + "\n")
        except (OSError, safefs.UnsafePath) as exc:
            why = exc.strerror if isinstance(exc, OSError) else str(exc)
            print(f"teiten: could not write {args.markdown}: {why}", file=sys.stderr)
            return 1
    return status
