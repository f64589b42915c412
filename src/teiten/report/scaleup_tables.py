"""METHODS S4's evidence per workload: the scale-up analysis of each family of servers that
differ only in their cores (peak, gain, CPU idle, wait events, hottest functions and who calls
the hottest), with its
data (``<stem>-scaleup.csv``: one table per workload, the families in a column). The
LWLOCK_STATS tables beside it: teiten.report.lock_tables."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from teiten.analysis.compare import MIN_TRIALS_FOR_PEAK
from teiten.analysis.model import Finding, Scaleup, ScaleupRow, WorkloadSection
from teiten.report.cells import Cell, Column, DataTable, Table, Value, data_name, judged_cell
from teiten.report.columns import SCALEUP_COLUMNS, judged, shares
from teiten.words import formats as f
from teiten.words.context import Context
from teiten.words.i18n import clients_phrase, tr
from teiten.words.verdicts import judged_note


def scaleup_table(sc: Scaleup, ctx: Context) -> Table:
    """METHODS S4: per core count, the peak TPS, the gain over the previous count, and the
    evidence at the peak (CPU idle, wait events, hottest functions); the verdict as notes."""
    lang = ctx.lang
    columns = tuple(Column(tr(f"scaleup.{k}", lang)) for k in
                    ("peak", "at", "gain", "idle", "waits", "hot"))

    def shares(items: tuple[tuple[str, float], ...]) -> str:
        return ", ".join(f"{name} {share * 100:.0f}%" for name, share in items) or f.MISSING

    rows = []
    for r in sc.rows:
        rows.append((str(r.cores), (
            Cell(f.format_tps(r.peak_tps), f.bracketed(r.peak_ci, r.peak_level, decimals=f.TPS_DECIMALS)),
            Cell(str(r.peak_clients or f.MISSING)),
            _gain_cell(r, ctx),
            Cell(f.format_pct(r.cpu_idle)),
            Cell(shares(r.waits)),
            Cell(shares(r.hot) + (f" ({clients_phrase([r.hot_clients], lang)})" if r.hot_clients else "")))))
    judged = [r.gain_judged for r in sc.rows] + [sc.beyond_judged]
    return Table("scaleup", tr("scaleup", lang, family=sc.family), tr("axis.cores", lang), columns,
                 tuple(rows), (*scaleup_sentences(sc, ctx), tr("scaleup.note", lang),
                               *judged_note(judged, ctx)))


def _gain_cell(r: ScaleupRow, ctx: Context) -> Cell:
    """A gain over fewer cores: 100 less than its ratio's estimate, marked by the ratio's verdict."""
    j = r.gain_judged
    if j is None or j.estimate is None:
        return judged_cell(j, ctx)
    return judged_cell(j, ctx, text=f.format_diff(r.gain_pct),
                       ci=f.bracketed(r.gain_ci, r.gain_level, decimals=f.PCT_DECIMALS))


def scaleup_sentences(sc: Scaleup, ctx: Context) -> list[str]:
    """Which core count TPS peaks at and where it stops rising with cores, said only where the
    repetitions place them (the client-count findings' rule), and what changed from the core
    count of the highest peak to the largest: the IPA paper's evidence for the bottleneck. The
    largest core count's peak against that one's is said with its estimate, its interval and
    its verdict."""
    lang = ctx.lang
    if sc.best_cores is None:
        return []

    def cores(n: int | None) -> str:
        return tr("cores.one" if n == 1 else "cores.many", lang, n=n)

    out = [] if sc.placed is None else [_placed_sentence(sc.placed, lang, cores)]
    best = next(r for r in sc.rows if r.cores == sc.best_cores)
    last = sc.rows[-1]
    beyond = sc.beyond_judged
    if last.cores != best.cores and beyond is not None and beyond.estimate is not None:
        out.append(tr(f"scaleup.beyond.{beyond.verdict.word}", lang, cores=cores(last.cores),
                      best=cores(best.cores), pct=f.format_diff((beyond.estimate - 1) * 100),
                      ci=f.bracketed(sc.beyond_ci, sc.beyond_level, decimals=f.PCT_DECIMALS),
                      margin=f"{beyond.margin_pct:g}"))
    if last.cpu_idle is not None and best.cpu_idle is not None and last.cores != best.cores:
        out.append(tr("scaleup.say.idle", lang, cores=cores(last.cores), idle=f.format_pct(last.cpu_idle),
                      best=cores(best.cores), best_idle=f.format_pct(best.cpu_idle)))
    for r in (best, last) if last.cores != best.cores else (best,):
        if r.waits:
            name, share = r.waits[0]
            out.append(tr("scaleup.wait", lang, cores=cores(r.cores), event=name,
                          share=f"{share * 100:.0f}%"))
        if r.hot:
            name, share = r.hot[0]
            out.append(tr("scaleup.say.hot", lang, cores=cores(r.cores), function=name,
                          share=f"{share * 100:.0f}%"))
            if r.callers:
                chains = [f"{' ← '.join((name, *chain))} {share * 100:.0f}%" for chain, share in r.callers]
                out.append(tr("scaleup.say.callers", lang, cores=cores(r.cores), function=name,
                              chains=tr("list.sep", lang).join(chains)))
    return out


def _placed_sentence(placed: Finding, lang: str, cores: Callable[[int], str]) -> str:
    """Which core count TPS peaks at (and the knee), or why the repetitions cannot tell, in the
    words of the client-count findings."""
    if placed.kind == "peak-unsure":
        return tr("scaleup.placed.peak-unsure", lang, n=placed.needed, min=MIN_TRIALS_FOR_PEAK)
    best, tps = cores(placed.clients[0]), f.format_tps(placed.pct)
    if len(placed.clients) > 1:
        return tr("scaleup.placed.scales", lang, best=best, tps=tps, knee=cores(placed.clients[1]))
    return tr(f"scaleup.placed.{placed.kind}", lang, best=best, tps=tps)


def scaleup_tables(section: WorkloadSection, ctx: Context) -> list[Table]:
    """Each family's scale-up table, all written to ``<stem>-scaleup``."""
    if not section.scaleups:
        return []
    data = DataTable(data_name(ctx, section.workload, "scaleup"), section.workload, "scaleup",
                     SCALEUP_COLUMNS, tuple(_scaleup_row(section.workload, sc.family, r)
                                            for sc in section.scaleups for r in sc.rows))
    return [replace(scaleup_table(sc, ctx), data=(data,)) for sc in section.scaleups]


def _scaleup_row(workload: str, family: str, r: ScaleupRow) -> tuple[Value, ...]:
    low, high = r.peak_ci or (None, None)
    gain_low, gain_high = r.gain_ci or (None, None)
    tps, pct = f.TPS_DECIMALS, f.PCT_DECIMALS
    verdict = judged(r.gain_judged)
    return (workload, family, r.cores, r.server, f.round_or_none(r.peak_tps, tps),
            f.round_or_none(low, tps), f.round_or_none(high, tps), f.level_pct(r.peak_level),
            r.peak_clients, f.round_or_none(r.gain_pct, pct), f.round_or_none(gain_low, pct),
            f.round_or_none(gain_high, pct), f.level_pct(r.gain_level), verdict[4],
            f.round_or_none(r.cpu_idle, pct), shares(r.waits), shares(r.hot), r.hot_clients,
            shares(tuple(("<-".join((r.hot[0][0], *chain)), share) for chain, share in r.callers)))
