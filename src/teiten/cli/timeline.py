"""``teiten timeline STUDY``: the study's TPS at each point across every build that ran it on one
testbed, with the change points (teiten.analysis.timeline), from the store's point summaries
(``teiten_points``) and the repetitions of their trials."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

from teiten.analysis.timeline import timeline
from teiten.model.errors import UserError
from teiten.model.results import PointRow, now
from teiten.report import outdir
from teiten.report import timeline as shown
from teiten.store import Store
from teiten.store import points as kept


def cmd_timeline(args: argparse.Namespace) -> int:
    store = Store.open(args.store)
    try:
        rows = chosen(kept.read(store), args.study, args.testbed, str(store))
        values: dict[tuple[int, str, str, int], list[float]] = {}
        for sid in sorted({r.study_id for r in rows}):
            for t in store.study_results(sid).measured().trials:
                if t.status == "ok" and t.tps is not None:
                    p = t.planned
                    values.setdefault((sid, p.server, p.workload, int(p.clients)), []).append(t.tps)
    finally:
        store.close()
    found = timeline(rows, values)
    print(shown.text(found, args.lang), end="")
    if args.out:
        out = Path(args.out)
        with outdir.claim(out, overwrite=args.overwrite) as claimed:
            written = shown.write(found, claimed, args.lang, now())
        for path in written.values():
            print(f"teiten: wrote {path}")
    return 0


def chosen(rows: Sequence[PointRow], study: str, testbed: str | None, where: str
           ) -> list[PointRow]:
    """The summaries of the study named ``study`` on one testbed (``testbed``, or the only one)."""
    mine = [r for r in rows if r.study == study]
    if not mine:
        names = ", ".join(sorted({r.study for r in rows})) or "none"
        raise UserError(f"{where} has no point summaries of a study named {study} (studies with "
                        f"some: {names}); a study finished before teiten kept them gets them "
                        f"from 'teiten store summarize --store {where}'")
    testbeds = sorted({r.testbed for r in mine})
    if testbed is not None:
        if testbed not in testbeds:
            raise UserError(f"{study} never ran on testbed {testbed} in {where}; it ran on "
                            + ", ".join(testbeds))
        return [r for r in mine if r.testbed == testbed]
    if len(testbeds) > 1:
        raise UserError(f"{study} ran on {len(testbeds)} testbeds in {where} ({', '.join(testbeds)}); "
                        "a timeline is one machine's: give --testbed NAME")
    return mine
