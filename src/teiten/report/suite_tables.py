"""Tables and charts of the measured-statement workloads (METHODS S6, S8-S10): time of each
step per variant and server, the plans' figures, the sizes each variant built, time against
the swept parameter, and for full-text search the strengths and weaknesses of each method.

Their data: every step's figures and plan (``<stem>-steps.csv``, which the step, plan and join
tables show), the sizes (``<stem>-sizes.csv``, written even empty: a workload that records
none has no sizes table), and the speed-ups (``<stem>-speedup.csv``), the iot summary
(``<stem>-models.csv``) and the strengths (``<stem>-strengths.csv``) of the tables of their own."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import replace

from teiten.analysis.model import SizeFigures, StepFigures, SuiteResults, WorkloadSection
from teiten.analysis.suites import step_ratio, variant_values
from teiten.analysis.verdicts import Judged
from teiten.report.cells import Cell, Column, DataTable, Table, Value, data_name, judged_cell
from teiten.report.columns import (
    MODEL_COLUMNS,
    SIZE_COLUMNS,
    SPEEDUP_COLUMNS,
    STEP_COLUMNS,
    STRENGTH_COLUMNS,
    SYSTEM_FIGURES,
)
from teiten.report.recheck_chart import recheck_chart
from teiten.report.svg import Line, line_chart
from teiten.report.value_bars import Bar, value_bars
from teiten.words import formats as f
from teiten.words.context import Context
from teiten.words.i18n import tr
from teiten.words.verdicts import judged_note
from teiten.workloads.statements import SUITE_NAMES, Suite, suite

MISSING = Cell(f.MISSING, tone="missing")
# Below a second, a step's CPU shares rest on a few of the kernel's 10 ms ticks: not shown.
SYSTEM_WINDOW_S = 1.0


def seconds_text(seconds: float | None) -> str:
    if seconds is None:
        return f.MISSING
    return f"{seconds * 1000:,.2f} ms" if seconds < 1 else f"{seconds:,.2f} s"


def _label(st: StepFigures, lang: str) -> str:
    values = variant_values(st.variant).values()
    shown = st.param if st.param and st.param not in values else ""
    step = tr("suite.step_again", lang, step=st.step, n=st.occurrence) if st.occurrence > 1 else st.step
    return " · ".join(x for x in (st.variant, step, shown) if x)


def _key(st: StepFigures) -> tuple[str, str, str | None, int]:
    return st.variant, st.step, st.param, st.occurrence


def _bracket(bounds: tuple[float, float] | None, level: float | None, *, decimals: int = 2) -> str:
    return f.bracketed(bounds, level, decimals=decimals)


def _time_bracket(step: StepFigures) -> str:
    """A step time's interval in the unit its median is printed in: ``[2.01–7.27 s, 75%]``."""
    if step.ci is None or step.seconds is None:
        return ""
    scale, unit = (1000, " ms") if step.seconds < 1 else (1, " s")
    low, high = step.ci
    return f"[{low * scale:,.2f}{f.DASH}{high * scale:,.2f}{unit}, {f.format_level(step.ci_level)}%]"


def steps_table(res: SuiteResults, ctx: Context) -> Table:
    """Median time of every step, servers side by side, with the ratio to the baseline."""
    lang = ctx.lang
    by: dict[tuple[str, str, str | None, int], dict[str, StepFigures]] = defaultdict(dict)
    order: list[tuple[str, str, str | None, int]] = []
    for st in res.steps:
        if _key(st) not in by:
            order.append(_key(st))
        by[_key(st)][st.server] = st
    base = res.servers[0] if res.servers else ""
    time, ratio = tr("suite.time", lang), tr("suite.ratio", lang, baseline=base)
    columns = [Column(time, sub=s, md=f"{time} · {s}") for s in res.servers]
    columns += [Column(ratio, sub=s, md=f"{s}: {ratio}") for s in res.servers[1:]]
    rows = []
    m = len(order) * max(0, len(res.servers) - 1)  # the table's ratios: one family
    judged: list[Judged | None] = []
    for key in order:
        figs = by[key]
        cells = []
        for s in res.servers:
            got = figs.get(s)
            cells.append(Cell(seconds_text(got.seconds), _time_bracket(got), title=tr(
                "suite.runs", lang, n=len(got.values), values=", ".join(seconds_text(v) for v in got.values)))
                if got and got.seconds is not None else MISSING)
        b = figs.get(base)
        for s in res.servers[1:]:
            other = figs.get(s)
            found = step_ratio(other, b, comparisons=m, margin_pct=ctx.margin_pct) if other and b else None
            judged.append(found)
            cells.append(judged_cell(found, ctx) if found is not None else MISSING)
        rows.append((_label(next(iter(figs.values())), lang), tuple(cells)))
    notes = [tr("suite.time.note", lang), *judged_note(judged, ctx)]
    notes += [tr("suite.not_installed", lang, server=s, variant=v, why=_reword(res, why, lang))
              for s, v, why in res.not_installed]
    return Table("suite-steps", tr("suite.steps", lang), tr("suite.step", lang), tuple(columns),
                 tuple(rows), tuple(notes))


def _reword(res: SuiteResults, why: str, lang: str) -> str:
    words = _words(res)
    return words.reword(why, lang) if words else why


def plans_table(res: SuiteResults, ctx: Context) -> Table | None:
    """The EXPLAIN ANALYZE figures of every query step."""
    lang = ctx.lang
    queried = [st for st in res.steps if st.shape]
    if not queried:
        return None
    keys = ("rows", "workers", "shared_hit", "shared_read", "rows_removed_by_filter",
            "rows_removed_by_index_recheck", "heap_blocks", "shape")
    columns = tuple(Column(tr(f"suite.plan.{k}", lang)) for k in keys)
    rows = []
    for st in queried:
        p = st.plan

        def n(name: str, p: dict[str, float] = p) -> str:
            return f"{p[name]:,.0f}" if name in p else f.MISSING
        cells = (Cell(f"{st.rows:,.0f}" if st.rows is not None else f.MISSING),
                 Cell(f"{n('workers_launched')} / {n('workers_planned')}"),
                 Cell(n("shared_hit")), Cell(n("shared_read")), Cell(n("rows_removed_by_filter")),
                 Cell(n("rows_removed_by_index_recheck")),
                 Cell(f"{n('heap_blocks_exact')} / {n('heap_blocks_lossy')}"), Cell(st.shape))
        rows.append((f"{st.server} · {_label(st, lang)}", cells))
    return Table("suite-plans", tr("suite.plans", lang), tr("suite.step", lang), columns,
                 tuple(rows), (tr("suite.plans.note", lang),))


def sizes_table(res: SuiteResults, ctx: Context) -> Table | None:
    lang = ctx.lang
    if not res.sizes:
        return None
    by = {(s.server, s.variant): s for s in res.sizes}
    columns = []
    for s in res.servers:
        table, index = tr("suite.table_bytes", lang), tr("suite.index_bytes", lang)
        columns += [Column(table, group=s, md=f"{table} · {s}"),
                    Column(index, group=s, md=f"{index} · {s}")]
    rows = []
    for v in res.variants:
        cells: list[Cell] = []
        for s in res.servers:
            got = by.get((s, v))
            cells += ([Cell(f.format_bytes(got.table_bytes)), Cell(f.format_bytes(got.index_bytes))]
                      if got else [MISSING, MISSING])
        if any(c is not MISSING for c in cells):
            rows.append((v, tuple(cells)))
    return Table("suite-sizes", tr("suite.sizes", lang), tr("suite.variant", lang), tuple(columns),
                 tuple(rows), (tr("suite.sizes.note", lang),))


def speedup_table(res: SuiteResults, ctx: Context) -> Table | None:
    """accesslog (S6): time, speed-up against no workers, workers launched of planned: of a
    suite whose variants set the parallel workers (its workers axis)."""
    if "workers" not in res.axes:
        return None
    lang = ctx.lang
    found = _speedups(res)
    system = any("cpu_busy_pct" in st.extra for st, _ in found)
    columns = (Column(tr("suite.time", lang)), Column(tr("suite.speedup", lang)),
               Column(tr("suite.plan.workers", lang)),
               *((Column(tr("suite.system.busy", lang)), Column(tr("suite.system.iowait", lang)),
                  Column(tr("suite.system.util", lang))) if system else ()))
    rows = []
    for st, up in found:
        machine = tuple(_pct_cell(st, k) for k in SYSTEM_FIGURES[:3]) if system else ()
        rows.append((f"{st.server} · {st.variant}", (
            Cell(seconds_text(st.seconds)), Cell(f"{up:.2f}×" if up else f.MISSING),
            Cell(f"{st.plan.get('workers_launched', 0):.0f} / {st.plan.get('workers_planned', 0):.0f}"),
            *machine)))
    notes = [tr("suite.speedup.note", lang), *([tr("suite.system.note", lang)] if system else [])]
    return Table("suite-speedup", tr("suite.speedup.heading", lang), tr("suite.variant", lang),
                 columns, tuple(rows), tuple(notes))


def _pct_cell(st: StepFigures, key: str) -> Cell:
    """A step's share of the machine, or a dash below a second (or not measured)."""
    value = st.extra.get(key)
    if value is None or st.extra.get("window_s", 0.0) < SYSTEM_WINDOW_S:
        return MISSING
    return Cell(f"{value:.0f}%")


def system_table(res: SuiteResults, ctx: Context) -> Table | None:
    """The machine around each step of at least a second (METHODS S6, S8-S10: a time is read
    beside what held it back, the CPUs or the data device): medians over repetitions."""
    measured = [st for st in res.steps if "cpu_busy_pct" in st.extra]
    if not measured:
        return None
    lang = ctx.lang
    shown = [st for st in measured if st.extra.get("window_s", 0.0) >= SYSTEM_WINDOW_S]
    columns = (Column(tr("suite.time", lang)), Column(tr("suite.system.busy", lang)),
               Column(tr("suite.system.iowait", lang)), Column(tr("suite.system.util", lang)),
               Column(tr("suite.system.read", lang)), Column(tr("suite.system.write", lang)))
    rows = []
    for st in shown:
        rate = [Cell(f"{st.extra[k]:,.1f}") if k in st.extra else MISSING
                for k in ("read_mb_s", "write_mb_s")]
        rows.append((f"{st.server} · {_label(st, lang)}", (
            Cell(seconds_text(st.seconds)), *(_pct_cell(st, k) for k in SYSTEM_FIGURES[:3]),
            *rate)))
    devices = sorted({st.labels["device"] for st in shown if st.labels.get("device")})
    notes = [tr("suite.system.note", lang)]
    notes += [tr("suite.system.device", lang, device=", ".join(devices))] if devices else []
    if len(shown) < len(measured):
        notes.append(tr("suite.system.short", lang, n=len(measured) - len(shown)))
    # Every step under a second: nothing to show, the figures are in the steps' data.
    return Table("suite-system", tr("suite.system.heading", lang), tr("suite.step", lang),
                 columns, tuple(rows), tuple(notes), shown=bool(rows))


def _speedups(res: SuiteResults) -> list[tuple[StepFigures, float | None]]:
    """Each aggregate and join step with its speed-up: the same variant's time without
    workers over its own."""
    steps = [st for st in res.steps if st.step in ("aggregate", "join")]
    serial = {(st.server, _without(st.variant, "workers")): st.seconds for st in steps
              if variant_values(st.variant).get("workers") == "0"}
    out = []
    for st in steps:
        before = serial.get((st.server, _without(st.variant, "workers")))
        out.append((st, before / st.seconds if before and st.seconds else None))
    return out


def join_table(res: SuiteResults, ctx: Context) -> Table | None:
    """accesslog's join (S6): per variant, the workers launched of planned, and for each
    table how many processes scanned it and whether they divided it or each read it whole."""
    steps = [st for st in res.steps if st.step == "join"]
    if not steps:
        return None
    lang = ctx.lang
    tables = sorted({r for st in steps for r in st.scans})
    columns = (Column(tr("suite.time", lang)), Column(tr("suite.plan.workers", lang)),
               *(Column(tr("suite.join.scans", lang, table=t)) for t in tables))
    rows = []
    for st in steps:
        sides = [Cell(f.MISSING) if t not in st.scans else Cell(tr(
            "suite.join.divided" if t in st.divided else "suite.join.whole", lang,
            n=f"{st.scans[t]:.0f}")) for t in tables]
        rows.append((f"{st.server} · {st.variant}", (
            Cell(seconds_text(st.seconds)),
            Cell(f"{st.plan.get('workers_launched', 0):.0f} / {st.plan.get('workers_planned', 0):.0f}"),
            *sides)))
    return Table("suite-join", tr("suite.join.heading", lang), tr("suite.variant", lang),
                 columns, tuple(rows), (tr("suite.join.note", lang),))


def iot_table(res: SuiteResults, ctx: Context) -> Table | None:
    """iot (S8): per model and index, the load, its rate, the index build, the sizes and
    the query, in one row: of a suite whose variants are data models (its models axis)."""
    if "models" not in res.axes:
        return None
    lang = ctx.lang
    columns = tuple(Column(tr(k, lang)) for k in (
        "suite.iot.load", "suite.iot.rate", "suite.iot.index", "suite.table_bytes",
        "suite.index_bytes", "suite.iot.query"))
    rows = []
    for server, variant, load, rate, index, size, query in _iot_rows(res):
        rows.append((f"{server} · {variant}", (
            Cell(seconds_text(load)), Cell(f"{rate:,.0f}" if rate else f.MISSING), Cell(seconds_text(index)),
            Cell(f.format_bytes(size.table_bytes if size else None)),
            Cell(f.format_bytes(size.index_bytes if size else None)), Cell(seconds_text(query)))))
    return Table("suite-iot", tr("suite.iot", lang), tr("suite.variant", lang), columns,
                 tuple(rows), (tr("suite.iot.note", lang),))


IotRow = tuple[str, str, float | None, float | None, float | None, SizeFigures | None, float | None]


def _iot_rows(res: SuiteResults) -> list[IotRow]:
    """(server, variant, load seconds, rows per second, index seconds, sizes, query seconds)
    of every variant a server ran."""
    sizes = {(s.server, s.variant): s for s in res.sizes}
    out = []
    for server in res.servers:
        for variant in res.variants:
            mine = {st.step: st for st in res.steps if st.server == server and st.variant == variant}
            if not mine:
                continue
            load = mine.get("load")
            rate = load.rows / load.seconds if load and load.rows and load.seconds else None
            out.append((server, variant, load.seconds if load else None, rate,
                        mine["index"].seconds if "index" in mine else None, sizes.get((server, variant)),
                        mine["query"].seconds if "query" in mine else None))
    return out


def _without(variant: str, axis: str) -> str:
    return " ".join(p for p in variant.split() if not p.startswith(axis + "="))


def judgement_table(res: SuiteResults, ctx: Context) -> Table | None:
    """fulltext (S9): each method's strengths and weaknesses, worded from the numbers."""
    if not res.judgements:
        return None
    lang = ctx.lang
    rows = []
    for j in res.judgements:
        strengths = j.get("strengths", {})
        weaknesses = j.get("weaknesses", {})
        assert isinstance(strengths, dict) and isinstance(weaknesses, dict)
        rows.append((f"{j['server']} · {j['method']}", (_sentences(res, strengths, lang),
                                                          _sentences(res, weaknesses, lang))))
    return Table("suite-judgement", tr("suite.judgement", lang), tr("suite.method", lang),
                 (Column(tr("suite.strengths", lang)), Column(tr("suite.weaknesses", lang))),
                 tuple(rows), (tr("suite.judgement.note", lang),))


def _words(res: SuiteResults) -> Suite | None:
    """The suite, which words its own judgements and reasons and says what to chart (none of an
    unknown name: they are shown as stored, and nothing is charted)."""
    return suite(res.suite) if res.suite in SUITE_NAMES else None


def _say(res: SuiteResults, sentence: dict[str, object], lang: str) -> str:
    words = _words(res)
    return words.say(sentence, lang) if words else str(sentence)


def _sentences(res: SuiteResults, by_group: dict[str, list[dict[str, object]]], lang: str) -> Cell:
    """The judge's sentences in ``lang``: those of the method as a whole ("all"), then
    those about English keywords, then Japanese ones."""
    said = [_say(res, s, lang) for g in ("all", "en", "ja") for s in by_group.get(g, [])]
    if not said:
        return Cell(f.MISSING, tone="missing")
    return Cell(tr("suite.judgement.sentences", lang, said=tr("suite.judgement.sep", lang).join(said)))


def suite_tables(section: WorkloadSection, ctx: Context) -> list[Table]:
    """The tables of a measured-statement workload, each with its data."""
    res = section.suite
    if res is None:
        return []
    w = section.workload

    def data(kind: str, columns: tuple[str, ...], rows: list[tuple[Value, ...]]) -> tuple[DataTable, ...]:
        return (DataTable(data_name(ctx, w, kind), w, kind, columns, tuple(rows)),)

    steps = data("steps", STEP_COLUMNS, [_step_row(w, st) for st in res.steps])
    sizes = data("sizes", SIZE_COLUMNS, [(w, s.server, s.variant, round(s.table_bytes), round(s.index_bytes))
                                         for s in res.sizes])
    r6 = f.round_or_none
    found = [
        (judgement_table(res, ctx), data("strengths", STRENGTH_COLUMNS, [
            (w, str(j["server"]), str(j["method"]), _english(res, j.get("strengths")),
             _english(res, j.get("weaknesses"))) for j in res.judgements])),
        (speedup_table(res, ctx), data("speedup", SPEEDUP_COLUMNS, [
            (w, st.server, st.variant, st.step, r6(st.seconds, 6), r6(up, 2),
             st.plan.get("workers_launched"), st.plan.get("workers_planned"),
             *(st.extra.get(k) for k in SYSTEM_FIGURES[:3]))
            for st, up in _speedups(res)])),
        (join_table(res, ctx), steps),
        (iot_table(res, ctx), data("models", MODEL_COLUMNS, [
            (w, server, variant, r6(load, 6), r6(rate, 1), r6(index, 6),
             None if size is None else round(size.table_bytes),
             None if size is None else round(size.index_bytes), r6(query, 6))
            for server, variant, load, rate, index, size, query in _iot_rows(res)])),
        (steps_table(res, ctx), steps),
        # No sizes, no table: its CSV is still written, with its header, as for every such workload.
        (sizes_table(res, ctx) or Table("suite-sizes", "", "", (), (), shown=False), sizes),
        (plans_table(res, ctx), steps),
        (system_table(res, ctx), steps),
    ]
    return [replace(t, data=d) for t, d in found if t is not None]


def _step_row(w: str, st: StepFigures) -> tuple[Value, ...]:
    return (w, st.server, st.variant, st.step, st.param, st.occurrence, f.round_or_none(st.seconds, 6),
            len(st.values), st.rows, st.cache, *(st.plan.get(k) for k in STEP_COLUMNS[10:18]), st.shape,
            "; ".join(f"{r}={n:g}" for r, n in sorted(st.scans.items())) or None,
            "; ".join(st.divided) or None, st.extra.get("window_s"),
            *(st.extra.get(k) for k in SYSTEM_FIGURES[:2]), st.labels.get("device"),
            *(st.extra.get(k) for k in SYSTEM_FIGURES[2:]))


def _english(res: SuiteResults, by_group: object) -> str | None:
    """The judge's sentences in English, for the data (as the table orders them)."""
    if not isinstance(by_group, dict):
        return None
    return "; ".join(_say(res, s, "en") for g in ("all", "en", "ja") for s in by_group.get(g, [])) or None


def suite_charts(section: WorkloadSection, ctx: Context) -> list[tuple[str, str, str]]:
    """``[(kind, title, svg)]``: time against the swept parameter (and, against the rows found, time
    against the rows before the recheck), and sizes per variant."""
    res = section.suite
    assert res is not None
    lang = ctx.lang
    out = []
    step, x = found.chart if (found := _words(res)) is not None else ("", "")
    lines = _time_lines(res, step, x)
    if lines and x != "models":
        title = tr("chart.suite_time", lang, workload=section.workload, step=step)
        x_label = tr("axis.hits", lang) if x == "rows" else x
        out.append(("suite-time", title, line_chart(
            title, x_label, tr("axis.ms", lang), lines, log_x=x == "rows", y_decimals=2,
            log_caption=tr("axis.log", lang, label="{label}"), no_data=tr("chart.no_data", lang))))
        if x == "rows" and (found_recheck := recheck_chart(section, step, ctx)) is not None:
            out.append(found_recheck)  # S9: time against the rows before the recheck
    timed = [st for st in res.steps if st.step == step and st.seconds is not None]
    if x == "models" and timed:
        title = tr("chart.suite_time", lang, workload=section.workload, step=step)
        bars: list[tuple[str, list[Bar]]] = [
            (v, [(st.server, st.seconds * 1000, seconds_text(st.seconds)) for st in timed
                 if st.variant == v and st.seconds is not None]) for v in res.variants]
        out.append(("suite-time", title, value_bars(title, [b for b in bars if b[1]],
                                                    no_data=tr("chart.no_data", lang))))
    if res.sizes:
        title = tr("chart.suite_sizes", lang, workload=section.workload)
        rows = [(v, [(s.server, s.table_bytes + s.index_bytes,
                      f"{f.format_bytes(s.table_bytes)} + {f.format_bytes(s.index_bytes)}")
                     for s in res.sizes if s.variant == v]) for v in res.variants]
        out.append(("suite-sizes", title, value_bars(title, [r for r in rows if r[1]],
                                                     no_data=tr("chart.no_data", lang))))
    return out


def _time_lines(res: SuiteResults, step: str, x: str) -> list[Line]:
    colour = {s: i for i, s in enumerate(res.servers)}
    groups: dict[tuple[str, str], list[tuple[float, float | None]]] = defaultdict(list)
    for st in res.steps:
        if st.step != step or st.seconds is None:
            continue
        if x == "rows":
            if st.rows:
                groups[(st.server, st.variant)].append((st.rows, st.seconds * 1000))
            continue
        values = variant_values(st.variant)
        try:
            xv = float(values.get(x, ""))
        except ValueError:
            continue
        groups[(st.server, _without(st.variant, x))].append((xv, st.seconds * 1000))
    lines = []
    for i, ((server, rest), points) in enumerate(sorted(groups.items())):
        name = f"{server} · {rest}" if rest else server
        lines.append(Line(name, sorted(points), colour=colour.get(server, 0) * 4 + i % 4
                          if len(res.servers) > 1 else i))
    return lines
