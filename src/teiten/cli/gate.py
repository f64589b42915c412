"""``teiten gate``: the exit status a CI job acts on, with a one-screen summary for its log and
Markdown for its job summary (teiten.analysis.gate judges, teiten.words.gate words it; this
module finds the two servers).

Exit status: 0 every point decided and none slower; 1 some point slower (listed: "beyond ±m%"
only where its interval lies wholly below 100 − m); 2 bad input; 3 some point cannot tell (0 with
--allow-undecided).
"""

from __future__ import annotations

import argparse
import sys

from teiten.analysis import gate
from teiten.analysis.gather import compared, study_data
from teiten.analysis.inputs import ReportOptions
from teiten.features import FEATURES
from teiten.host import safefs
from teiten.model.errors import UserError
from teiten.model.results import now
from teiten.store import Store
from teiten.words import gate as words

STATUS = {gate.PASS: 0, gate.FAIL: 1, gate.UNDECIDED: 3}


def cmd_gate(args: argparse.Namespace) -> int:
    store = Store.open(args.store)
    try:
        (a_study, a), (b_study, b) = sides(store, args.baseline, args.candidate, args.study)
        for sid in dict.fromkeys((a_study, b_study)):
            row = store.study(sid)
            if not row.finished:
                raise UserError(f"study {row.name} (#{sid}) is {row.state}: the gate judges "
                                f"finished studies only; 'teiten resume --store {args.store}' "
                                "finishes it")
        if a_study == b_study:
            if a == b:
                raise UserError(f"--baseline and --candidate are both {a}: compared with itself a "
                                "server differs from nothing; give two servers")
            options = ReportOptions(store_path=store.address.absolute(), generated_at=now(),
                                    lang=args.lang)
            data = gate.restricted(study_data(store, a_study, FEATURES), [a, b])
            found = gate.judge(data, options, paired=True, studies=_name(store, a_study))
        else:
            data, options = compared(
                [gate.restricted(study_data(store, a_study, FEATURES), [a]),
                 gate.restricted(study_data(store, b_study, FEATURES), [b])],
                store.address.absolute(), lang=args.lang, allow_mixed=args.allow_mixed,
                allow_different_parameters=args.allow_different_parameters)
            found = gate.judge(data, options, paired=False, studies=" / ".join(
                _name(store, s) for s in (a_study, b_study)))
    finally:
        store.close()
    print(words.text(found, args.lang, allow_undecided=args.allow_undecided), end="")
    if args.markdown is not None:
        try:
            safefs.append_file(args.markdown, words.markdown(found, args.lang,
                                                             allow_undecided=args.allow_undecided))
        except (OSError, safefs.UnsafePath) as exc:
            why = exc.strerror if isinstance(exc, OSError) else str(exc)
            print(f"teiten: could not write {args.markdown}: {why}", file=sys.stderr)
            return 1
    status = STATUS[found.outcome]
    return 0 if status == 3 and args.allow_undecided else status


def _name(store: Store, study_id: int) -> str:
    return f"study {store.study(study_id).name} #{study_id}"


def sides(store: Store, baseline: str, candidate: str, study: str | None
          ) -> tuple[tuple[int, str], tuple[int, str]]:
    """(study id, server) of the baseline and of the candidate."""
    given = [_split(baseline, "--baseline"), _split(candidate, "--candidate")]
    default = _study(store, study) if study is not None else None
    named = [s for s, _ in given if s is not None]
    out = []
    for (which, server), other in zip(given, reversed(given), strict=True):
        if which is not None:
            sid = _study(store, which)
        elif default is not None:
            sid = default
        elif other[0] is not None:
            sid = _study(store, other[0])
        elif not named:
            sid = _latest_with(store, [server for _, server in given])
        out.append((sid, server))
    for sid, server in out:
        names = [r.name for r in store.servers(sid)]
        if server not in names:
            raise UserError(f"{_name(store, sid)} has no server {server}; its servers are "
                            f"{', '.join(names)}")
    return out[0], out[1]


def _split(text: str, option: str) -> tuple[str | None, str]:
    study, sep, server = text.rpartition(":")
    if sep and not (study and server):
        raise UserError(f"{option} {text}: give SERVER or STUDY:SERVER, e.g. pg18 or 3:pg18")
    return (study if sep else None), server


def _study(store: Store, text: str) -> int:
    """A study of the store by id, or the latest one of that name."""
    if text.isdigit():
        return store.study(int(text)).id
    found = [r for r in store.studies() if r.name == text]
    if not found:
        names = sorted({r.name for r in store.studies()})
        raise UserError(f"{store} has no study named {text}; its studies are "
                        f"{', '.join(names) or 'none'} ('teiten studies --store {store}')")
    return found[-1].id


def _latest_with(store: Store, servers: list[str]) -> int:
    for row in reversed(store.studies()):
        names = {r.name for r in store.servers(row.id)}
        if set(servers) <= names:
            return row.id
    latest = store.studies()[-1] if store.studies() else None
    has = (f" (the latest, {_name(store, latest.id)}, has "
           f"{', '.join(r.name for r in store.servers(latest.id))})" if latest else "")
    raise UserError(f"no study of {store} has both {servers[0]} and {servers[1]}{has}; name "
                    "their studies as STUDY:SERVER, or give --study")
