"""The commands themselves: parse nothing, print results of library calls."""

from __future__ import annotations

import argparse
import functools
import re
import sys
from pathlib import Path

import yaml

from teiten import installs, spec, studies, workloads
from teiten.analysis import differences
from teiten.cli import interrupts
from teiten.cli.bisect import cmd_bisect
from teiten.cli.gate import cmd_gate
from teiten.cli.installs import cmd_install, cmd_installs
from teiten.cli.output import Progress, as_csv, as_json, described, table
from teiten.cli.running import finish, run_study
from teiten.cli.runopts import check_options, runner_options
from teiten.cli.show import render_text
from teiten.cli.stores import cmd_store, print_points, summarize
from teiten.cli.system import cmd_fetch_source, cmd_system
from teiten.cli.timeline import cmd_timeline
from teiten.host import fingerprint, paths
from teiten.host.probe import probe
from teiten.messages import tr
from teiten.model.errors import SpecError, StudyInterrupted, UserError
from teiten.model.results import now
from teiten.model.studyrecord import MORE_BLOCKS, Append, ServerSetup
from teiten.report import outdir
from teiten.report.build import write_compare_report, write_study_report
from teiten.run import estimate, forewarn, leftovers, record, runlock, runner
from teiten.run.check import check
from teiten.run.plan import plan, profile_trials
from teiten.store import Store, result_rows, shown
from teiten.store.rows import CSV_FIELDS, csv_row
from teiten.words.formats import format_seconds


def dispatch(args: argparse.Namespace) -> int:
    handler = {
        "installs": cmd_installs, "install": cmd_install, "study": cmd_study,
        "schema": cmd_schema, "plan": cmd_plan, "run": cmd_run, "scaleup": cmd_scaleup, "resume": cmd_resume,
        "results": cmd_results, "report": cmd_report, "show": cmd_show, "compare": cmd_compare,
        "probe": cmd_probe, "clean": cmd_clean, "studies": cmd_studies, "store": cmd_store,
        "system": cmd_system, "fetch-source": cmd_fetch_source, "gate": cmd_gate, "timeline": cmd_timeline,
        "bisect": cmd_bisect,
    }[args.command]
    return handler(args)


def cmd_study(args: argparse.Namespace) -> int:
    if args.study_command == "list":
        print(described([(name, spec.load_file(studies.path_of(name)).study.description.strip()
                           .split("\n")[0]) for name in studies.names()]))
    else:
        sys.stdout.write(studies.path_of(args.name).read_text())
    return 0


def cmd_schema(args: argparse.Namespace) -> int:
    print(spec.json_schema())
    return 0


def cmd_plan(args: argparse.Namespace) -> int:
    """The trials in the order they will run, after every check that 'teiten run' makes
    before its first trial (a study that run would refuse is refused here, with its line)."""
    loaded, _ = studies.find(args.study or studies.DEFAULT)
    checked = check(loaded)
    loaded = checked.loaded  # without the optional servers that cannot be had here
    for name, why in checked.omitted:
        print(f"teiten: note: optional server {name} left out: {why}", file=sys.stderr)
    specs = [ServerSetup.from_json(record.server_spec(s)) for _, s in loaded.study.server_matrix()]
    if len(specs) > 1:
        factors = differences.declared_values(specs)
        print("teiten: note: " + (tr("differences.plan", factors="; ".join(
            f"{field} ({' / '.join(values)})" for field, values in factors)) if factors
            else tr("differences.plan_none")), file=sys.stderr)
    mixed = differences.origins_across_versions(
        {name: (r.version, r.origin) for name, r in checked.installs.items()})
    if mixed:
        print("teiten: note: " + tr("differences.origins", n=len(mixed), who="; ".join(
            f"{origin}: {', '.join(names)}" for origin, names in mixed.items())), file=sys.stderr)
    if loaded.study.repetitions == "auto":
        auto = loaded.study.auto_repetitions
        print("teiten: note: " + tr("auto.plan", floor=auto.floor, ceiling=auto.ceiling,
                                    target=f"{loaded.study.target_pct:g}",
                                    budget=format_seconds(auto.budget)), file=sys.stderr)
    found = workloads.variants(loaded.study)
    planned = plan(loaded.study, found)
    most = (plan(loaded.study, found, blocks=loaded.study.auto_repetitions.ceiling)
            if loaded.study.repetitions == "auto" else None)
    study = loaded.study
    if study.profile is not None and study.profile.at == "largest-difference":
        # Where is known after the blocks only; what they cost is known now.
        later = profile_trials(study, [(w.key, max(study.clients)) for w in study.workloads
                                       if w.key not in found])
        print("teiten: note: " + tr("profile.plan", n=len(later)), file=sys.stderr)
        most = [*most, *later] if most is not None else None
        planned_cost = [*planned, *later]
    else:
        planned_cost = planned
    building = estimate.images(study, {n: r.install for n, r in checked.installs.items()})
    resolved, rates = {w.key: w for w in workloads.resolve(loaded)}, estimate.Rates.load()
    cost = estimate.estimate(study, resolved, planned_cost, rates, most=most, building=building)
    fetch = forewarn.downloads(checked.installs, checked.client)
    noise, why = forewarn.noise_for(args.store)
    block_s = sum(estimate.trials_cost(study, resolved, planned, rates)) / max(1, study.blocks)
    disk, systems = forewarn.disk_warnings(study, resolved, planned_cost, rates, fetch)
    said = [*forewarn.download_warnings(fetch), *disk,
            *forewarn.level_warnings(study, planned, noise, why=why, block_s=block_s)]
    columns = ["order_index", "trial_id", "server", "workload",
               *(["variant"] if any(t.variant for t in planned) else []),
               "clients", "threads", "repetition", "duration_s"]
    rows = [{c: getattr(t, c) for c in columns} for t in planned]
    if args.format == "json-full":  # 'json' stays the list of trials that scripts read
        print(as_json({"trials": rows, "estimate": forewarn.estimate_json(cost, fetch, systems),
                       "warnings": [w.as_json() for w in said if not w.note],
                       "notes": [w.as_json() for w in said if w.note]}))
    else:
        print(as_json(rows) if args.format == "json" else table(rows, list(rows[0])))
    sys.stdout.flush()  # the estimate and the warnings after the table, where they are read
    print(f"teiten: note: {cost.text()}", file=sys.stderr)
    for w in said:
        print(f"teiten: {'note' if w.note else 'warning'}: {w.text()}", file=sys.stderr)
    return 0


def cmd_run(args: argparse.Namespace) -> int:
    loaded, source = studies.find(args.study or studies.DEFAULT)
    return run_study(loaded, source, args)


def cmd_scaleup(args: argparse.Namespace) -> int:
    """METHODS S4 for a workload of the user's choice: the built-in s4-scaleup study with
    the workload, install, cores and clients given on the command line."""
    data = yaml.safe_load(studies.path_of("s4-scaleup").read_text())
    workload = args.workload
    if workload.endswith(".pgbench") or Path(workload).is_file():
        path = Path(workload).expanduser().absolute()
        if not path.is_file():
            raise UserError(f"no such pgbench script: {path}; give a built-in workload name or "
                            "the path of a .pgbench file")
        data["workloads"] = [{"script": str(path)}]
    else:
        data["workloads"] = [workload]
    data["servers"][0] = {"name": _server_name(args.install), "install": args.install}
    for key, value in (("cores", args.cores), ("clients", args.clients)):
        if value is not None:
            data[key] = _int_list(value, f"--{key}")
    for key in ("scale", "duration", "repetitions"):
        if getattr(args, key) is not None:
            data[key] = getattr(args, key)
    data.pop("description")  # the built-in's; the report states what this one ran
    command = " ".join(["teiten scaleup", *sys.argv[2:]])
    text = f"# written by: {command}\n" + yaml.safe_dump(data, sort_keys=False, allow_unicode=True)
    try:
        loaded = spec.load_text(text, "<teiten scaleup>")
    except SpecError as exc:
        raise UserError(f"teiten scaleup: {exc.bare}") from None
    return run_study(loaded, "scaleup:" + workload, args, generated=True)


def _server_name(install: str) -> str:
    """pg18 for install 18; the last part of a name or bindir path otherwise."""
    base = f"pg{install}" if install[:1].isdigit() else install.strip("/").rsplit("/", 1)[-1]
    return re.sub(r"[^A-Za-z0-9_.+-]", "_", base)[:40] or "server"


def _int_list(text: str, option: str) -> list[int]:
    try:
        values = [int(v) for v in text.split(",")]
    except ValueError:
        raise UserError(f"{option}: cannot read {text!r}; write numbers separated by commas, "
                        "e.g. 1,2,4") from None
    if not values or min(values) < 1:
        raise UserError(f"{option}: every number must be 1 or more (got {text})")
    return values


def _pick_study(store: Store, study_id: int | None, *, unfinished: bool = False) -> int:
    rows = store.studies()
    if study_id is not None:
        return store.study(study_id).id
    if unfinished:
        rows = [r for r in rows if not r.finished]
        if not rows and store.studies():
            raise NothingToResume(f"every study in {store} is finished; nothing to resume")
    if not rows:
        raise UserError(f"{store} holds no study yet")
    return rows[-1].id


def _grant_blocks(store: Store, study_id: int, more: int) -> None:
    """``resume --more-blocks N``: let a study of repetitions: auto run up to N more blocks of
    its undecided ratios, past its ceiling and time budget (teiten.run.blocks.limits)."""
    stored = store.study_results(study_id)
    if stored.record.parameters.repetitions != "auto":
        raise UserError(f"--more-blocks: study {study_id} in {store} has a fixed number of "
                        "repetitions; more blocks are for a study of 'repetitions: auto' (run "
                        "the study again with more repetitions instead)")
    measured = [t.planned.repetition for t in stored.trials if not t.planned.purpose]
    done = max(measured, default=0)
    store.update_spec(study_id, {MORE_BLOCKS: Append({"after": done, "blocks": more})})
    print(f"teiten: study {study_id}: up to {more} more blocks after block {done}, past its "
          "ceiling and time budget", file=sys.stderr)


class NothingToResume(Exception):
    """Every study of the store is finished: resume has nothing to do, which is no error."""


def cmd_resume(args: argparse.Namespace) -> int:
    store = Store.open(args.store)
    try:
        try:
            study_id = _pick_study(store, args.study_id,
                                   unfinished=not args.retry_failed and not args.more_blocks)
        except NothingToResume as done:
            print(f"teiten: {done}", file=sys.stderr)
            return 0
        if args.more_blocks:
            _grant_blocks(store, study_id, args.more_blocks)
        elif not args.retry_failed and store.study(study_id).finished:
            print(f"teiten: study {study_id} in {store} is finished; nothing to resume",
                  file=sys.stderr)
            return 0
        check_options(args, store.address)
        with runlock.hold(study=store.study(study_id).name, store=store.address.absolute(),
                          command=args.command, wait=runlock.WAIT_LIMIT_S if args.wait else None,
                          beside_others=args.beside_others,
                          say=functools.partial(print, file=sys.stderr, flush=True)):
            try:
                with store.claimed(study_id), interrupts.running(str(store)):
                    counts = runner.execute(store, study_id, Progress(), retry_failed=args.retry_failed,
                                            **runner_options(args))
            except KeyboardInterrupt:
                raise StudyInterrupted(str(store)) from None
            return finish(store, study_id, counts, args)
    finally:
        store.close()


def cmd_clean(args: argparse.Namespace) -> int:
    """Remove what killed or failed runs of a store's studies left behind (servers still
    running, cluster, WAL, tablespace and socket directories, cgroups, namespaces,
    containers, clusters on ssh hosts), only where teiten marked it as its own; a study
    whose every trial is done is finished once nothing of it is left. Runs no trial."""
    store = Store.open(args.store)
    try:
        # A store several machines share: each cleans what its own runs left.
        here = fingerprint.machine(paths.home()).get("hostname") if store.postgres else None
        ids = [store.study(args.study_id).id] if args.study_id is not None else \
            [r.id for r in store.studies() if here is None or r.machine.get("hostname") == here]
        said = 0
        with runlock.hold(study="(teiten clean)", store=store.address.absolute(), command=args.command,
                          wait=runlock.WAIT_LIMIT_S if args.wait else None,
                          say=functools.partial(print, file=sys.stderr, flush=True)):
            for study_id in ids:
                with store.claimed(study_id):
                    for note in leftovers.clean(store, study_id):
                        print(f"teiten: study {study_id}: {note}", file=sys.stderr)
                        said += 1
                    counts = store.status_counts(study_id)
                    if not counts.get("planned") and not counts.get("running") and \
                            not store.study(study_id).finished:
                        store.set_study_state(study_id, "finished", now())
                        summarize(store, study_id)
                        print(f"teiten: study {study_id} is finished", file=sys.stderr)
        for note in installs.remove_interrupted():  # of any store: the install cache is one
            print(f"teiten: {note}", file=sys.stderr)
            said += 1
        if not said:
            print(f"teiten: nothing left behind by the studies of {store}", file=sys.stderr)
        return 0
    finally:
        store.close()


STUDY_FIELDS = ("study_id", "name", "machine", "started_at", "finished_at", "state", "trials",
                "ok", "failed", "disturbed", "skipped", "planned", "source", "testbed")


def cmd_studies(args: argparse.Namespace) -> int:
    """Every study of a store, one row each."""
    store = Store.open(args.store)
    try:
        rows = []
        for r in store.studies():
            counts = store.status_counts(r.id)
            machine = r.machine
            rows.append({
                "study_id": r.id, "name": r.name, "machine": machine.get("hostname"),
                "started_at": r.created_at, "finished_at": r.finished_at, "state": r.state,
                "trials": sum(counts.values()),
                **{k: counts.get(k, 0) for k in ("ok", "failed", "disturbed", "skipped")},
                "planned": counts.get("planned", 0) + counts.get("running", 0),
                "source": r.source, "testbed": fingerprint.testbed_key(machine, r.record.testbed)})
    finally:
        store.close()
    if not rows and args.format == "table":
        print(f"teiten: {args.store} holds no study yet", file=sys.stderr)
        return 0
    if args.format == "json":
        print(as_json(rows))
    elif args.format == "csv":
        sys.stdout.write(as_csv(rows, STUDY_FIELDS))
    else:
        print(table(rows, [f for f in STUDY_FIELDS if f not in ("finished_at", "source")]))
    return 0


def cmd_results(args: argparse.Namespace) -> int:
    if args.format in ("bmf", "openmetrics"):
        return print_points(args)
    store = Store.open(args.store)
    try:
        if args.study_id is not None:
            store.study(args.study_id)  # one that does not exist is an error, not an empty list
        rows = result_rows(store, args.study_id)
    finally:
        store.close()
    if args.format == "json":
        print(as_json(rows))
    elif args.format == "csv":
        sys.stdout.write(as_csv([csv_row(r) for r in rows], CSV_FIELDS))
    else:
        varied = ["variant"] if any(r["variant"] for r in rows) else []
        why = ["purpose"] if any(r["purpose"] for r in rows) else []
        print(table(rows, ["study_id", "order_index", "trial_id", "server", "workload", *varied,
                           "clients", "repetition", *why, "status", "tps", "latency_ms_avg",
                           "error"]))
    return 0


def cmd_show(args: argparse.Namespace) -> int:
    store = Store.open(args.store)
    try:
        study_id, trial_id = shown.find(store, args.trial_id)
        text = as_json(shown.record(store, study_id, trial_id)) if args.format == "json" else \
            render_text(shown.typed(store, study_id, trial_id))
    finally:
        store.close()
    print(text)
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    outdir.check(Path(args.out), overwrite=args.overwrite)
    store = Store.open(args.store)
    try:
        study_id = _pick_study(store, args.study_id)
        written = write_study_report(store, study_id, Path(args.out), lang=args.lang,
                                     degradations=_pairs(args.degradation),
                                     exclude_rampup=args.exclude_rampup, overwrite=args.overwrite)
    finally:
        store.close()
    print(f"{written['html']}\n{written['markdown']}")
    return 0


def _pairs(specs: list[str]) -> list[tuple[str, str]]:
    pairs = []
    for text in specs:
        a, sep, b = text.partition(":")
        if not sep or not a or not b:
            raise UserError(f"--degradation {text}: write two server names as A:B, e.g. "
                            "physical:vm")
        pairs.append((a, b))
    return pairs


def cmd_compare(args: argparse.Namespace) -> int:
    outdir.check(Path(args.out), overwrite=args.overwrite)
    stores = [Store.open(p) for p in args.store]
    try:
        if args.studies:
            if len(stores) != 1:
                raise UserError("--studies picks studies of one store; with several stores, "
                                "each contributes its latest study")
            try:
                ids = [int(x) for x in args.studies.split(",")]
            except ValueError:
                raise UserError(f"--studies {args.studies}: give study ids such as 1,2") from None
            sources = [(stores[0], _pick_study(stores[0], i)) for i in ids]
        else:
            sources = [(s, _pick_study(s, None)) for s in stores]
        if len(sources) < 2:
            raise UserError("compare needs two studies: give two --store, or --studies 1,2")
        _refuse_one_study_twice(sources)
        written = write_compare_report(sources, Path(args.out), lang=args.lang,
                                       allow_mixed=args.allow_mixed,
                                       allow_different_parameters=args.allow_different_parameters,
                                       degradations=_pairs(args.degradation),
                                       exclude_rampup=args.exclude_rampup, overwrite=args.overwrite)
    finally:
        for s in stores:
            s.close()
    print(f"{written['html']}\n{written['markdown']}")
    return 0


def _refuse_one_study_twice(sources: list[tuple[Store, int]]) -> None:
    """A study given twice (its id twice, one store twice, or a store and its copy: the same
    name, start and machine, as 'teiten store copy' tells a study's twin) compares a study with
    itself, whose ratios are 100% by construction: refused, so that none is read as a finding."""
    seen: dict[tuple[str, str, str], tuple[Store, int]] = {}
    for store, sid in sources:
        row = store.study(sid)
        key = (row.name, row.created_at, row.fingerprint)
        if key in seen:
            first, first_id = seen[key]
            given = (f"study {sid} of {store} is given twice" if (str(first), first_id) == (
                str(store), sid) else f"study {first_id} of {first} and study {sid} of {store} "
                "are one study (a copy)")
            raise UserError(f"{given} ({row.name}, started {row.created_at}): compared with "
                            "itself it differs from nothing; give two different studies")
        seen[key] = (store, sid)


def cmd_probe(args: argparse.Namespace) -> int:
    if not 10 <= args.round_trips <= 1_000_000:
        raise UserError(f"--round-trips {args.round_trips} is out of range; give 10 to 1000000")
    found = probe(args.conninfo, round_trips=args.round_trips)
    if args.format == "json":
        print(as_json(found.to_json()))
        return 0
    print(f"server {found.target}: PostgreSQL {found.version}")
    print(f"round trip (SELECT 1, {found.round_trips} times): median {found.rtt_ms_median:.3f} ms, "
          f"p99 {found.rtt_ms_p99:.3f} ms, min {found.rtt_ms_min:.3f} ms")
    print(f"one connection does at most {found.ceiling_per_connection:,.0f} statements/s "
          "(1000 / median round trip)")
    print(f"connect: median {found.connect_ms_median:.2f} ms over {found.connects} connections")
    if found.settings:
        print(f"non-default settings ({len(found.settings)}):")
        for name, value in found.settings.items():
            print(f"  {name} = {value}")
    elif found.settings_note:
        print(found.settings_note)
    return 0
