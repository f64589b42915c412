"""Tables and charts of the application workloads: tpcc's NOPM and TPM (HammerDB's
figures), latency by transaction type, and the bookstore's measurement against users ÷ think
time with its capacity (IPA paper, figure 2). Every server's tables are written to one
``<stem>-app.csv``: a row per client count with type "all", then one per transaction type."""

from __future__ import annotations

from dataclasses import replace

from teiten.analysis.model import AppResults, WorkloadSection
from teiten.report.cells import Cell, Column, DataTable, Table, Value, data_name
from teiten.report.columns import APP_COLUMNS
from teiten.report.svg import Line
from teiten.words import formats as f
from teiten.words.context import Context
from teiten.words.i18n import clients_phrase, tr


def _ms(value: float | None) -> Cell:
    return Cell(f.format_latency(value)) if value is not None else Cell(f.MISSING, tone="missing")


def _number(value: float | None) -> Cell:
    return Cell(f"{value:,.0f}") if value is not None else Cell(f.MISSING, tone="missing")


def tpcc_table(res: AppResults, ctx: Context) -> Table:
    lang = ctx.lang
    columns = tuple(Column(tr(k, lang)) for k in
                    ("app.nopm", "app.tpm", "app.tpm_pgbench", "app.nopm_share", "app.runs"))
    rows = []
    for p in res.points:
        share = p.nopm / p.tpm if p.nopm is not None and p.tpm else None
        rows.append((clients_phrase([p.clients], lang), (
            _number(p.nopm), _number(p.tpm), _number(p.tpm_pgbench), Cell(f.format_pct(
                share * 100 if share is not None else None)), Cell(str(p.runs)))))
    return Table("app", tr("app.tpcc", lang, server=res.server), tr("axis.clients", lang), columns,
                 tuple(rows), (tr("app.tpcc.note", lang),))


def types_table(res: AppResults, ctx: Context) -> Table:
    lang = ctx.lang
    columns = (Column(tr("app.share", lang)), *(Column(tr(k, lang)) for k in
               ("app.avg", "app.p50", "app.p95", "app.p99", "app.response")))
    rows = []
    for p in res.points:
        for t in p.types:
            share = f"{f.format_pct(t.share * 100 if t.share is not None else None)} " \
                    f"({t.target * 100:.1f}%)"
            rows.append((f"{clients_phrase([p.clients], lang)} · {t.name}", (
                Cell(share), _ms(t.avg_ms), _ms(t.p50_ms), _ms(t.p95_ms), _ms(t.p99_ms),
                _ms(t.response_ms))))
    return Table("app-types", tr("app.types", lang, server=res.server), tr("app.type", lang),
                 columns, tuple(rows), (tr("app.types.note", lang),))


def bookstore_table(res: AppResults, ctx: Context) -> Table:
    lang = ctx.lang
    think = f"{res.think_time_s:g}" if res.think_time_s else "0"
    columns = (Column(tr("app.bts", lang)), Column(tr("app.theory", lang, think=think)),
               Column(tr("app.of_theory", lang)), Column(tr("app.runs", lang)))
    rows = []
    for p in res.points:
        of = p.tps / p.theoretical * 100 if p.tps is not None and p.theoretical else None
        bounds = p.share_bounds()
        # Colour only what holds over the repetitions: surely below 95% of theory, or surely
        # within it; none where the interval straddles it.
        tone = "" if bounds is None else "worse" if bounds[1] < 0.95 else \
            "same" if bounds[0] >= 0.95 else ""
        ci = f.bracketed((p.share_ci[0] * 100, p.share_ci[1] * 100) if p.share_ci else None,
                         p.share_level, decimals=f.PCT_DECIMALS)
        rows.append((clients_phrase([p.clients], lang), (
            Cell(f.format_tps(p.tps)), Cell(f.format_tps(p.theoretical)),
            Cell(f.format_pct(of), ci, tone=tone), Cell(str(p.runs)))))
    return Table("app", tr("app.bookstore", lang, server=res.server), tr("app.users", lang),
                 columns, tuple(rows), tuple(capacity_sentences(res, lang)))


def capacity_sentences(res: AppResults, lang: str) -> list[str]:
    if not res.think_time_s:
        return [tr("app.no_think", lang)]
    out = []
    if res.capacity is not None:
        out.append(tr("app.capacity", lang, think=f"{res.think_time_s:g}", fits=res.capacity))
        if res.first_below is not None:
            out.append(tr("app.below", lang, below=res.first_below))
    elif res.first_below is not None:
        out.append(tr("app.below_all", lang, below=res.first_below))
    return out


def thinks(res: AppResults) -> bool:
    """Whether the application's users think between interactions (the bookstore records its
    think time, even 0): its measure is against users ÷ think time. Else (tpcc) it is NOPM and
    TPM, HammerDB's figures."""
    return res.think_time_s is not None


def app_tables(section: WorkloadSection, ctx: Context) -> list[Table]:
    if not section.apps:
        return []
    data = (DataTable(data_name(ctx, section.workload, "app"), section.workload, "app", APP_COLUMNS,
                      app_rows(section)),)
    out = []
    for res in section.apps:
        out.append(replace(bookstore_table(res, ctx) if thinks(res) else tpcc_table(res, ctx), data=data))
        out.append(replace(types_table(res, ctx), data=data))
    return out


def app_rows(section: WorkloadSection) -> tuple[tuple[Value, ...], ...]:
    """tpcc and bookstore figures: a row per point with type "all", then one per type."""
    rows: list[tuple[Value, ...]] = []
    r1 = f.round_or_none
    for res in section.apps:
        for p in res.points:
            rows.append((section.workload, res.server, p.clients, "all", r1(p.tps, f.TPS_DECIMALS),
                         r1(p.nopm, 1), r1(p.tpm, 1), r1(p.tpm_pgbench, 1),
                         r1(p.theoretical, f.TPS_DECIMALS), None, None, None, None, None, None, None,
                         p.runs))
            for t in p.types:
                rows.append((section.workload, res.server, p.clients, t.name, None, None, None, None,
                             None, f.pct_or_none(t.share), f.pct_or_none(t.target),
                             *(r1(v, f.LATENCY_DECIMALS) for v in
                               (t.avg_ms, t.p50_ms, t.p95_ms, t.p99_ms, t.response_ms)), p.runs))
    return tuple(rows)


def app_chart_lines(section: WorkloadSection, ctx: Context) -> tuple[str, str, list[Line]] | None:
    """(kind, y label, lines) of the section's app chart: NOPM per server for tpcc; measured
    BT/s per server and the theoretical line for the bookstore."""
    if not section.apps:
        return None
    colour = {s.server: i for i, s in enumerate(section.servers)}
    lines = []
    if not thinks(section.apps[0]):
        for res in section.apps:
            lines.append(Line(res.server, [(p.clients, p.nopm) for p in res.points],
                              hover={float(p.clients): f"{res.server} · {clients_phrase([p.clients], ctx.lang)}"
                                     f" · {p.nopm:,.0f} NOPM" for p in res.points if p.nopm is not None},
                              colour=colour.get(res.server)))
        return "nopm", tr("axis.nopm", ctx.lang), lines
    for res in section.apps:
        lines.append(Line(res.server, [(p.clients, p.tps) for p in res.points],
                          colour=colour.get(res.server)))
    theory = max(section.apps, key=lambda r: len(r.points))
    if theory.think_time_s:
        lines.append(Line(tr("app.theory", ctx.lang, think=f"{theory.think_time_s:g}"),
                          [(p.clients, p.theoretical) for p in theory.points],
                          colour=len(section.servers), dashed=True))
    return "theory", tr("axis.bts", ctx.lang), lines
