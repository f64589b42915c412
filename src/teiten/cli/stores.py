"""``teiten store copy`` and ``teiten store summarize``; each point's summary kept when a study
finishes (:func:`summarize`); ``teiten results --format bmf|openmetrics``, read from the view
``teiten_points`` (docs/DESIGN.md, "Results others read")."""

from __future__ import annotations

import argparse
import json
import sys

from teiten.analysis import points
from teiten.analysis.gather import study_data
from teiten.analysis.inputs import ReportOptions
from teiten.analysis.summary import report_data
from teiten.features import FEATURES
from teiten.host import fingerprint
from teiten.model.errors import UserError
from teiten.model.results import now
from teiten.store import Store
from teiten.store import copy as store_copy
from teiten.store import points as kept
from teiten.store.address import StoreAddress
from teiten.words import metric_formats


def summarize(store: Store, study_id: int) -> int:
    """Keep each point's summary of a finished study, as ``teiten report`` judges it (the same
    analysis, run on the same study); replaces what was kept before. Returns the rows kept."""
    data = study_data(store, study_id, FEATURES)
    options = ReportOptions(store_path=store.address.absolute(), generated_at=now())
    found = points.summaries(report_data(data, options), data.study)
    kept.keep(store, study_id, found)
    return len(found)


def cmd_store(args: argparse.Namespace) -> int:
    """``teiten store copy FROM TO``: one line per study, as it is copied. ``teiten store
    summarize``: one line per study summarized."""
    if args.store_command == "summarize":
        return _summarize(args)
    source = Store.open(args.source)
    try:
        if StoreAddress.parse(args.source).absolute() == StoreAddress.parse(args.dest).absolute():
            raise UserError(f"{args.source} is both FROM and TO; give another store to copy into")
        dest = Store.open(args.dest, create=True)
        try:
            for done in store_copy.copy(source, dest, args.study_id):
                print(f"study {done.source_id} ({done.name}, {done.trials} trials) -> "
                      f"{dest}" + (f" study {done.dest_id}" if done.dest_id else "")
                      + f": {done.outcome}")
        finally:
            dest.close()
    finally:
        source.close()
    return 0


def _summarize(args: argparse.Namespace) -> int:
    """The finished studies that have no summaries yet (studies finished before teiten kept
    them), or the studies given, again."""
    store = Store.open(args.store)
    try:
        given = [store.study(i).id for i in args.study_id or ()]
        rows = [store.study(i) for i in given] if given else store.studies()
        done = kept.summarized(store)
        for row in rows:
            sid = row.id
            if not row.finished:
                if given:
                    raise UserError(f"study {sid} ({row.name}) of {store} is {row.state}: "
                                    "only a finished study is summarized; 'teiten resume --store "
                                    f"{store}' finishes it")
                print(f"study {sid} ({row.name}): not summarized: {row.state}")
            elif sid in done and not given:
                print(f"study {sid} ({row.name}): already summarized")
            else:
                print(f"study {sid} ({row.name}): {summarize(store, sid)} point summaries")
    finally:
        store.close()
    return 0


def print_points(args: argparse.Namespace) -> int:
    """``teiten results --format bmf`` (one study: the given one, else the latest finished) or
    ``--format openmetrics`` (every study, or the given one), from the view ``teiten_points``."""
    store = Store.open(args.store)
    try:
        study_id = args.study_id
        if study_id is None and args.format == "bmf":
            finished = [r.id for r in store.studies() if r.finished]
            if not finished:
                raise UserError(f"{store} holds no finished study to export")
            study_id = finished[-1]
        if study_id is not None:
            row = store.study(study_id)
            if study_id not in kept.summarized(store):
                raise UserError(f"study {study_id} ({row.name}) of {store} has no point "
                                f"summaries; 'teiten store summarize --store {store} --study-id "
                                f"{study_id}' computes them")
        rows = kept.read(store, study_id)
        testbeds = {sid: _testbed_name(store, sid) for sid in {r.study_id for r in rows}}
    finally:
        store.close()
    if args.format == "bmf":
        print(json.dumps(metric_formats.bmf(rows), indent=2, ensure_ascii=False))
    else:
        sys.stdout.write(metric_formats.openmetrics(rows, testbeds))
    return 0


def _testbed_name(store: Store, study_id: int) -> str:
    """The testbed of a study in words (OpenMetrics' testbed_name), from its fingerprint."""
    row = store.study(study_id)
    return fingerprint.testbed_name(row.machine, row.record.testbed)
