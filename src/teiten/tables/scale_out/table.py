"""METHODS S7's scale-out of replication topologies, with its data (``<stem>-scaleout.csv``); each
method's strengths and weaknesses beside it (``<stem>-scaleout-strengths.csv``); and the 2016
report's figure (slide 31): total TPS against the number of nodes, one line per method and
client count, drawn from the table's Total TPS column."""

from __future__ import annotations

from dataclasses import replace

from teiten.analysis.model import WorkloadSection
from teiten.report.cells import Cell, Column, DataTable, Table, data_name
from teiten.report.svg import Line, line_chart
from teiten.tables.scale_out import ScaleOut
from teiten.tables.scale_out.strengths import Sentence, label
from teiten.words import formats as f
from teiten.words.context import Context
from teiten.words.i18n import clients_phrase, tr

SCALEOUT_COLUMNS = ("workload", "server", "method", "pgpool", "nodes", "clients", "total_tps",
                    "per_node_tps", "lag_bytes_max", "replay_lag_ms_max", "skew_ms")
# each method's strengths and weaknesses, in English whatever the report's language (as S9's)
STRENGTH_COLUMNS = ("workload", "method", "strengths", "weaknesses")


def tables(so: ScaleOut, section: WorkloadSection, ctx: Context) -> list[Table]:
    w, tps = section.workload, f.TPS_DECIMALS
    rows = tuple((w, r.server, r.method, int(r.pgpool), r.nodes, r.clients,
                  f.round_or_none(r.total_tps, tps), f.round_or_none(r.per_node_tps, tps),
                  None if r.lag_bytes_max is None else round(r.lag_bytes_max),
                  f.round_or_none(r.replay_lag_ms_max, 3),
                  f.round_or_none(r.skew_ms, 1)) for r in so.rows)
    data = DataTable(data_name(ctx, w, "scaleout"), w, "scaleout", SCALEOUT_COLUMNS, rows)
    out = [replace(scale_out_table(so, ctx), data=(data,))]
    if so.judgements:
        judged = DataTable(data_name(ctx, w, "scaleout-strengths"), w, "scaleout-strengths",
                           STRENGTH_COLUMNS, tuple((w, str(j["method"]), _said(j["strengths"], "en"),
                                                    _said(j["weaknesses"], "en")) for j in so.judgements))
        out.append(replace(strengths_table(so, ctx), data=(judged,)))
    return out


def strengths_table(so: ScaleOut, ctx: Context) -> Table:
    """METHODS S7 (the 2016 report's slide 32): each method's strengths and weaknesses, worded
    from the measured figures (and, marked so, from what the method is by design)."""
    lang = ctx.lang
    rows = tuple((str(j["method"]), (_cell(j["strengths"], lang), _cell(j["weaknesses"], lang)))
                 for j in so.judgements)
    return Table("scaleout-strengths", tr("scaleout.judge", lang), tr("scaleout.method", lang),
                 (Column(tr("scaleout.judge.strengths", lang)), Column(tr("scaleout.judge.weaknesses", lang))),
                 rows, (tr("scaleout.judge.note", lang),))


def say(sentence: Sentence, lang: str) -> str:
    """One of the judge's sentences in ``lang``."""
    return tr(f"scaleout.judge.{sentence['key']}", lang, **{k: v for k, v in sentence.items() if k != "key"})


def _said(sentences: object, lang: str) -> str | None:
    assert isinstance(sentences, list)
    said = [say(s, lang) for s in sentences]
    if not said:
        return None
    return tr("scaleout.judge.sentences", lang, said=tr("scaleout.judge.sep", lang).join(said))


def _cell(sentences: object, lang: str) -> Cell:
    said = _said(sentences, lang)
    return Cell(said) if said else Cell(f.MISSING, tone="missing")


def _at(nodes: int, server: str, lang: str) -> str:
    return tr("scaleout.chart.at.one" if nodes == 1 else "scaleout.chart.at", lang, nodes=nodes, server=server)


def charts(so: ScaleOut, section: WorkloadSection, ctx: Context) -> list[tuple[str, str, str]]:
    """The 2016 report's figure (slide 31): total TPS against the number of nodes, one line per
    method and client count (a method's colour and marker; its smaller client counts dashed),
    each marker's hover naming the server it was measured on."""
    if not so.lines:
        return []
    lang = ctx.lang
    methods = list(dict.fromkeys(label(line.method, line.pgpool) for line in so.lines))
    most = {m: max(line.clients for line in so.lines if label(line.method, line.pgpool) == m) for m in methods}
    drawn = []
    for line in so.lines:
        method = label(line.method, line.pgpool)
        name = f"{method} · {clients_phrase([line.clients], lang)}"
        hover = {float(n): f"{name} · {_at(n, ctx.named(server), lang)} · "
                           f"{f.format_tps(tps)} TPS" for n, tps, server in line.points if tps is not None}
        drawn.append(Line(name, [(float(n), tps) for n, tps, _ in line.points], hover=hover,
                          colour=methods.index(method), dashed=line.clients < most[method]))
    title = tr("chart.scaleout", lang, workload=section.workload)
    return [("scaleout", title, line_chart(title, tr("scaleout.nodes", lang), tr("scaleout.total", lang), drawn,
                                           no_data=tr("chart.no_data", lang)))]


def scale_out_table(so: ScaleOut, ctx: Context) -> Table:
    """METHODS S7: per topology and client count, the total TPS of its pgbench processes
    (one per node, all at once), the mean per node, and the replication lag seen."""
    lang = ctx.lang
    columns = tuple(Column(tr(k, lang)) for k in (
        "scaleout.method", "scaleout.nodes", "clients", "scaleout.total", "scaleout.per_node",
        "scaleout.lag", "scaleout.replay", "scaleout.skew"))
    rows = tuple((r.server, (
        Cell(r.method + (" + Pgpool-II" if r.pgpool else "")), Cell(str(r.nodes)),
        Cell(str(r.clients)), Cell(f.format_tps(r.total_tps)), Cell(f.format_tps(r.per_node_tps)),
        Cell(f.format_bytes(r.lag_bytes_max)),
        Cell(f"{r.replay_lag_ms_max:.1f}" if r.replay_lag_ms_max is not None else f.MISSING),
        Cell(f"{r.skew_ms:.0f}" if r.skew_ms is not None else f.MISSING))) for r in so.rows)
    notes = [tr("scaleout.note", lang)] + ([tr("scaleout.chart.note", lang)] if so.lines else [])
    if so.same_machine and set(so.same_machine) >= {r.server for r in so.rows if r.nodes > 1}:
        notes.append(tr("scaleout.same_machine", lang))
    elif so.same_machine:
        notes.append(tr("scaleout.same_machine_of", lang, servers=", ".join(so.same_machine)))
    if so.no_lag_times:
        notes.append(tr("scaleout.no_lag_times", lang, servers=", ".join(so.no_lag_times)))
    return Table("scaleout", tr("scaleout", lang), tr("scaleout.server", lang), columns, rows,
                 tuple(notes))
