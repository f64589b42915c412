"""Running a study from the command line: check it, hold the machine, install what is missing,
create it in the store, run its trials, summarize its points, write its report (teiten run,
scaleup and bisect; resume finishes one the same way). Its progress goes to stderr, each long
phase said while it lasts (teiten.host.ticker)."""

from __future__ import annotations

import argparse
import functools
import sys
from pathlib import Path

from teiten import spec
from teiten.cli import interrupts
from teiten.cli.output import Progress
from teiten.cli.runopts import check_options, runner_options
from teiten.cli.stores import summarize
from teiten.host import ticker
from teiten.model.errors import SpecError, StudyInterrupted, UserError
from teiten.report.build import write_study_report
from teiten.run import record, runlock, runner
from teiten.run.check import check, materialise
from teiten.store import Store
from teiten.store.address import StoreAddress


def run_study(loaded: spec.LoadedStudy, source: str, args: argparse.Namespace, *,
              generated: bool = False) -> int:
    """Check, install what is missing, create the study in the store, run it, report; the
    exit status. A ``generated`` study's errors leave out its file and line, which mean nothing
    to the user (teiten scaleup or bisect wrote that file)."""
    return run_and_finish(loaded, source, args, generated=generated)[0]


def run_and_finish(loaded: spec.LoadedStudy, source: str, args: argparse.Namespace, *,
                   generated: bool = False) -> tuple[int, int]:
    """:func:`run_study`'s work: its exit status and the id of the study it made. Its long
    phases are said while the command ticks (teiten.host.ticker, from teiten.cli.main)."""
    try:
        with ticker.phase("checking the study", checking=True):
            checked = check(loaded)  # everything that can be wrong with the input, before creating
    except SpecError as exc:
        if not generated:
            raise
        raise UserError(f"teiten {args.command}: {exc.bare}") from None
    # One benchmark at a time on this machine: held from before anything is created or
    # downloaded until the report is written.
    address = StoreAddress.parse(args.store)
    check_options(args, address)
    with runlock.hold(study=loaded.study.study, store=address.absolute(), command=args.command,
                      wait=runlock.WAIT_LIMIT_S if args.wait else None,
                      beside_others=args.beside_others,
                      say=functools.partial(print, file=sys.stderr, flush=True)):
        Store.check(address, (source, loaded.text))  # an unusable store: refused before any download
        with ticker.phase("getting the installs"):
            checked = materialise(checked)  # downloads into the install cache, if anything is missing
        for name, why in checked.omitted:  # stderr: stdout's last line is the report's path
            print(f"teiten: note: optional server {name} left out: {why}", file=sys.stderr)
        store, study_id = record.create(checked, address, source)
        try:
            with store.claimed(study_id), interrupts.running(str(store)), ticker.phase("running"):
                counts = runner.execute(store, study_id, Progress(), secrets=loaded.secrets,
                                        **runner_options(args))
            with ticker.phase("writing the report"):
                return finish(store, study_id, counts, args), study_id
        except KeyboardInterrupt:
            raise StudyInterrupted(str(store)) from None
        finally:
            store.close()


def finish(store: Store, study_id: int, counts: dict[str, int], args: argparse.Namespace) -> int:
    total = sum(counts.values())
    parts = ", ".join(f"{counts.get(k, 0)} {k}" for k in ("ok", "failed", "skipped", "disturbed")
                      if counts.get(k) or k == "ok")
    print(f"teiten: {total} trials: {parts}; store: {store}", file=sys.stderr)
    if store.study(study_id).finished:  # each point's summary, for the timeline
        summarize(store, study_id)
    html = None
    if not args.no_report:
        out = Path(args.report) if args.report else store.address.report_dir()
        written = write_study_report(store, study_id, out, lang=getattr(args, "lang", "en"),
                                     overwrite=args.overwrite, option="--report")
        html = written["html"]
        print(f"teiten: report (and {written['markdown'].name} beside it):", file=sys.stderr)
    status = 0
    if total and not counts.get("ok"):
        # A study that measured nothing has no answer: scripts and CI must not read it as done.
        print(f"teiten: no trial succeeded; the reasons are in 'teiten results --store "
              f"{store}'", file=sys.stderr)
        status = 1
    if html is not None:  # stdout's last line, for a script to open
        sys.stderr.flush()
        print(html, flush=True)
    return status
