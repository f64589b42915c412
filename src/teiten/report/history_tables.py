"""The line of versions' table (:mod:`teiten.analysis.history`): per client count, each
version's 前バージョン比 against the version before it, with its interval and level, marked
and coloured by its verdict as the TPS table's ratios are (:func:`teiten.words.verdicts.judged_cell`);
its data, ``<stem>-history.csv``: a row per version and client count."""

from __future__ import annotations

from dataclasses import replace

from teiten.analysis.model import History, WorkloadSection
from teiten.report.cells import Column, DataTable, Table, data_name, judged_cell
from teiten.report.columns import HISTORY_COLUMNS, judged
from teiten.words import formats as f
from teiten.words.context import Context
from teiten.words.i18n import clients_phrase, tr
from teiten.words.verdicts import judged_note


def history_tables(section: WorkloadSection, ctx: Context) -> list[Table]:
    history = section.history
    if history is None:
        return []
    w = section.workload
    rows = tuple((w, s.server, s.version, s.previous, s.previous_version, cell.clients, *judged(cell.judged))
                 for s in history.steps for cell in s.cells)
    data = DataTable(data_name(ctx, w, "history"), w, "history", HISTORY_COLUMNS, rows)
    return [replace(history_table(section, history, ctx), data=(data,))]


def history_table(section: WorkloadSection, history: History, ctx: Context) -> Table:
    lang = ctx.lang
    group = tr("history.group", lang)
    columns = tuple(Column(f"{s.server} / {s.previous}", group, f"{s.version} / {s.previous_version}",
                           md=f"{group}: {s.server} / {s.previous}") for s in history.steps)
    rows = []
    for i, clients in enumerate(section.clients):
        cells = []
        for step in history.steps:
            cells.append(judged_cell(step.cells[i].judged, ctx))
        rows.append((str(clients), tuple(cells)))
    order = " → ".join(f"{name} ({version})" for name, version, _ in history.line)
    built = [f"{s.server} / {s.previous} ({build_words(s.build, lang)})"
             for s in history.steps if s.build]
    builds = [tr("history.builds", lang, steps=tr("list.sep", lang).join(built))] if built else []
    apart = [f"{s.server} / {s.previous}" for s in history.steps if s.apart]
    if apart:
        builds.append(tr("history.apart", lang, steps=tr("list.sep", lang).join(apart)))
    return Table("history", tr("history", lang, workload=section.workload), tr("clients", lang),
                 columns, tuple(rows), (tr("history.note", lang, order=order),
                                        *judged_note([c.judged for s in history.steps for c in s.cells], ctx),
                                        *builds, *change_notes(history, ctx)))


def build_words(build: tuple[tuple[str, str, str], ...], lang: str) -> str:
    """'compiler gcc 4.4.7 → gcc 7.5.0; optimisation -O2 → -Os', in the report's language."""
    return "; ".join(f"{tr(f'history.build.{what}', lang)} {a} → {b}" for what, a, b in build)


def change_notes(history: History, ctx: Context) -> list[str]:
    """Where performance changed along the line (E-divisive), or that it found no change."""
    if history.change_alpha is None:
        return []
    lang = ctx.lang
    alpha = f"{history.change_alpha:.3g}"
    if not history.changes:
        return [tr("history.changes.none", lang, alpha=alpha)]
    out = [tr("history.changes", lang, alpha=alpha)]
    for c in history.changes:
        ci = (f" [{f.pct_number(c.ci[0])}{f.DASH}{f.pct_number(c.ci[1])}, "
              f"{f.format_level(c.level)}%]") if c.ci else ""
        out.append(tr("history.change", lang, clients=clients_phrase([c.clients], lang),
                      before=f"{c.before} ({c.before_version})",
                      after=f"{c.after} ({c.after_version})",
                      ratio=f.format_ratio(c.ratio) + ci, p=f.format_p(c.p))
                   + (tr("history.change.graph", lang, path=c.graph,
                         clients=clients_phrase([c.graph_clients or c.clients], lang))
                      if c.graph else "")
                   + (tr("history.change.build", lang, what=build_words(c.build, lang))
                      if c.build else ""))
    return out

