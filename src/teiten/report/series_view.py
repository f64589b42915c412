"""The HTML report's viewer of the per-second series of the trials.

The viewer picks a point (a workload and a client count) and draws one trial, every
repetition of one server, or every server and repetition at that point, as uPlot charts
(TPS and latency per second, and this machine's CPU busy % and the devices' %util where the
system monitor ran) whose cursors and zoom follow each other, with the ramp-up
seconds before the steady state shaded. The series are embedded as JSON in a
``<script type="application/json">`` and drawn by ``series.js``, after uPlot (MIT, vendored
in ``vendor/``), both inlined: nothing is fetched, the report stays one file that works
offline. Without JavaScript the viewer stays hidden and the table of every trial (ramp-up,
stalls, drift) still reads on its own.
"""

from __future__ import annotations

import html
import json
import re
from collections import Counter
from collections.abc import Mapping
from functools import cache
from importlib.resources import files

from teiten.analysis.model import ReportData, TrialSeries
from teiten.report.cells import Cell, Column, DataTable, Table
from teiten.report.columns import TRIAL_COLUMNS
from teiten.report.svg import PALETTE
from teiten.words.context import Context
from teiten.words.formats import format_tps, round_or_none
from teiten.words.i18n import clients_phrase, status_name, tr

# Reports an uncaught script error on <body data-js-errors="...">, so that a test in a
# headless browser can see it. Runs first, in <head>.
ERROR_HOOK = (
    "window.addEventListener('error', e => { const b = document.body || document.documentElement; "
    "b.dataset.jsErrors = (b.dataset.jsErrors ? b.dataset.jsErrors + ' | ' : '') + "
    "(e.message || 'error'); });"
)

# uPlot's minified build opens with a banner naming its home page by URL. The report names it
# without the scheme, so that no address in the page looks like a resource it loads.
UPLOT_BANNER = re.compile(r"/\*! https://github\.com/leeoniya/uPlot \(v(\d+\.\d+\.\d+)\) \*/\n")

MODES = ("trial", "server", "all")
UPDATED = "†"  # the repetition of a trial on data its series' runs before it changed (restore: first)


@cache
def script() -> str:
    """The viewer's JavaScript (a package file)."""
    return files("teiten.report").joinpath("series.js").read_text(encoding="utf-8")


@cache
def uplot_script() -> str:
    """uPlot's minified script, its banner replaced by one that names the version and
    carries the MIT licence the report redistributes it under."""
    vendor = files("teiten.report").joinpath("vendor")
    code = vendor.joinpath("uPlot.iife.min.js").read_text(encoding="utf-8")
    banner = UPLOT_BANNER.match(code)
    if banner is None:
        raise RuntimeError("teiten/report/vendor/uPlot.iife.min.js does not open with uPlot's "
                           "banner; vendor it again as vendor/README.md says")
    licence = vendor.joinpath("LICENSE").read_text(encoding="utf-8").strip()
    return f"/*! uPlot v{banner[1]}, github.com/leeoniya/uPlot\n\n{licence}\n*/\n{code[banner.end():]}"


@cache
def uplot_css() -> str:
    """uPlot's stylesheet."""
    return files("teiten.report").joinpath("vendor", "uPlot.min.css").read_text(encoding="utf-8")


def series_head(data: ReportData) -> list[str]:
    """What the viewer needs in ``<head>`` (uPlot's stylesheet); nothing without a series."""
    return [f"<style>\n{uplot_css()}\n</style>"] if data.series else []


def ordered(data: ReportData) -> list[TrialSeries]:
    """The trials in report order: by workload and server as the sections list them, then
    clients and repetition."""
    workloads = _workload_rank(data)
    servers = {s.name: i for i, s in enumerate(data.servers)}
    return sorted(data.series, key=lambda t: (workloads.get(t.workload, len(workloads)), t.workload,
                                              servers.get(t.server, len(servers)), t.server,
                                              t.clients, t.repetition, t.trial_id))


def points(data: ReportData) -> list[tuple[str, int]]:
    """The points that have a series, as (workload, clients), in report order."""
    workloads = _workload_rank(data)
    return sorted({(t.workload, t.clients) for t in data.series},
                  key=lambda p: (workloads.get(p[0], len(workloads)), p[0], p[1]))


def point_label(point: tuple[str, int], lang: str) -> str:
    return tr("series.point_option", lang, workload=point[0], clients=clients_phrase([point[1]], lang))


def option_label(trial: TrialSeries, lang: str) -> str:
    return tr("series.option", lang, server=trial.server, workload=trial.workload,
              clients=clients_phrase([trial.clients], lang), repetition=trial.repetition,
              status=status_name(trial.status, lang))


def info_text(trial: TrialSeries, lang: str) -> str:
    return tr("series.info", lang, rampup=trial.steady_from, stalls=trial.stalls,
              drift=f"{trial.drift_pct_per_min:+.1f}")


def legend_labels(trials: list[TrialSeries], lang: str) -> list[str]:
    """Each trial's line in a chart's legend: its server and repetition (and its status
    unless it succeeded). Two trials of one point never share a label: when they would (a
    repetition measured twice), the trial id tells them apart."""
    return _apart(trials, [tr("series.legend" if t.status == "ok" else "series.legend_status", lang,
                              server=t.server, repetition=t.repetition, status=status_name(t.status, lang))
                           for t in trials])


def choice_labels(trials: list[TrialSeries], lang: str) -> list[str]:
    """Each trial in the list of one server's trials at a point: its repetition and status."""
    return _apart(trials, [tr("series.choice", lang, repetition=t.repetition,
                              status=status_name(t.status, lang)) for t in trials])


def viewer_model(data: ReportData) -> dict[str, object]:
    """What the script draws from: the words it shows, the points with their servers (each
    with its palette colour, as in the workload's charts, and its trials), and every trial's
    series, in the order of :func:`ordered` (the table's ``data-series`` indexes)."""
    lang = data.lang
    trials = ordered(data)
    where = {p: i for i, p in enumerate(points(data))}
    groups: list[dict[str, list[int]]] = [{} for _ in where]  # per point: each server's trials
    placed = []
    for i, t in enumerate(trials):
        servers = groups[where[(t.workload, t.clients)]]
        servers.setdefault(t.server, []).append(i)
        placed.append((where[(t.workload, t.clients)], list(servers).index(t.server)))
    legends, choices = legend_labels(trials, lang), choice_labels(trials, lang)
    return {
        "labels": {"empty": tr("series.empty", lang), "rampup": tr("series.rampup_label", lang),
                   "seconds": tr("series.axis", lang), "tps": tr("axis.tps", lang),
                   "latency": tr("axis.latency", lang), "cpu": tr("series.cpu", lang),
                   "util": tr("series.util", lang), "data": tr("series.util.data", lang),
                   "wal": tr("series.util.wal", lang)},
        "palette": list(PALETTE),
        "points": [{"label": point_label(p, lang), "servers": [
                       {"name": server, "colour": _colour(data, p[0], server), "trials": found}
                       for server, found in groups[i].items()]}
                   for p, i in where.items()],
        "trials": [{"label": option_label(t, lang), "legend": legend, "choice": choice,
                    "info": info_text(t, lang), "ok": t.status == "ok", "point": point, "server": server,
                    "tps": [round(v, 1) for v in t.tps],
                    "latency": [None if v is None else round(v, 3) for v in t.latency_ms],
                    "steadyFrom": t.steady_from, **_system(t)}
                   for t, legend, choice, (point, server) in zip(trials, legends, choices, placed,
                                                                  strict=True)],
    }


def _system(t: TrialSeries) -> dict[str, object]:
    """A trial's system seconds for the script: CPU busy % and each device role's %util, and
    whether its WAL went to another device than its data (only then is it drawn apart)."""
    if not t.system:
        return {}
    found = {key: [None if v is None else round(v, 1) for v in values] for key, values in t.system}
    return {"system": {**found, "walApart": "wal" in found and found.get("wal") != found.get("data")}}


def payload(model: Mapping[str, object]) -> str:
    """The model as JSON safe to put inside ``<script>``: ``<``, ``>`` and ``&`` are escaped
    as \\u sequences, so no string in it can close the element."""
    text = json.dumps(model, ensure_ascii=False, separators=(",", ":"))
    for raw, escaped in (("&", "\\u0026"), ("<", "\\u003c"), (">", "\\u003e"),
                         ("\u2028", "\\u2028"), ("\u2029", "\\u2029")):
        text = text.replace(raw, escaped)
    return text


def series_section(data: ReportData) -> list[str]:
    """The viewer's section of the HTML report; empty when no trial has a series."""
    if not data.series:
        return []
    lang = data.lang
    e = _e
    trials = ordered(data)
    out = [
        '<section class="series" id="series">',
        f"<h2>{e(tr('series', lang))}</h2>",
        f"<p>{e(tr('series.lead', lang))}</p>",
        '<div id="series-viewer" class="viewer" hidden>',
        f'<p class="note">{e(tr("series.howto", lang))}</p>',
        '<div class="series-controls">',
        f'<label>{e(tr("series.point", lang))} <select id="series-point">',
        *(f'<option value="{i}">{e(point_label(p, lang))}</option>' for i, p in enumerate(points(data))),
        "</select></label>",
        f'<fieldset id="series-mode"><legend>{e(tr("series.mode", lang))}</legend>',
        *(f'<label><input type="radio" name="series-mode" value="{mode}"{" checked" if i == 0 else ""}> '
          f'{e(tr(f"series.mode.{mode}", lang))}</label>' for i, mode in enumerate(MODES)),
        "</fieldset>",
        # The script fills these two with the servers and the trials at the chosen point.
        f'<label id="series-server-choice">{e(tr("series.server", lang))} <select id="series-server">'
        "</select></label>",
        f'<label id="series-trial-choice">{e(tr("series.select", lang))} <select id="series-select">'
        "</select></label>",
        "</div>",
        '<p id="series-info" class="series-info"></p>',
        '<figure id="series-chart" class="series-chart"></figure>',
        f'<div id="series-drawn" class="series-drawn" hidden><p>{e(tr("series.drawn", lang))}</p>',
        '<ul id="series-trials"></ul></div>',
        "</div>",
    ]
    table = trials_table(data)
    names = " ".join(d.name for d in table.data)
    out += [f'<p class="note">{e(n)}</p>' for n in table.notes]
    out += [f"<details><summary>{e(table.heading)}</summary>",
            f'<table class="trials" data-table="{e(names)}">', "<thead><tr>"]
    out += [f'<th scope="col">{e(h)}</th>' for h in (table.corner, *(c.label for c in table.columns))]
    out += ["</tr></thead>", "<tbody>"]
    for i, (t, (label, cells)) in enumerate(zip(trials, table.rows, strict=True)):
        unstable = ' class="unstable"' if t.stalls else ""
        # The link shows the trial in the viewer (the script selects it; without script, the
        # link still leads to the viewer's section).
        out.append(f'<tr{unstable}><th scope="row"><a href="#series" data-series="{i}">'
                   f"{e(label)}</a></th>" + "".join(f"<td>{e(c.value)}</td>" for c in cells) + "</tr>")
    # uPlot and the viewer share one element: the report has one script of its own.
    out += ["</tbody>", "</table>", "</details>",
            f'<script type="application/json" id="series-data">{payload(viewer_model(data))}</script>',
            f"<script>\n{uplot_script()}\n{script()}</script>", "</section>"]
    return out


def trials_table(data: ReportData) -> Table:
    """Every trial with a series, in the viewer's order: its TPS, the seconds of its series,
    its ramp-up, stalls and drift; written to ``trials.csv``."""
    lang, ctx = data.lang, Context.of(data)
    trials = ordered(data)
    heads = ("series.server", "series.workload", "clients", "series.repetition", "series.status",
             "series.tps", "series.seconds", "series.rampup", "series.stalls", "series.drift")
    rows = tuple((t.trial_id, tuple(Cell(c) for c in (
        ctx.named(t.server), t.workload, str(t.clients), f"{t.repetition}{UPDATED if t.runs_before else ''}",
        status_name(t.status, lang),
        format_tps(t.tps_figure), str(len(t.tps)), str(t.steady_from), str(t.stalls),
        f"{t.drift_pct_per_min:+.1f}"))) for t in trials)
    found = DataTable("trials", "", "trials", TRIAL_COLUMNS, tuple(
        (t.trial_id, t.server, t.workload, t.clients, t.repetition, t.status, round_or_none(t.tps_figure, 1),
         len(t.tps), t.steady_from, t.stalls, round(t.drift_pct_per_min, 1), t.runs_before,
         ctx.marked(t.server)) for t in trials))
    updated = sum(1 for t in trials if t.runs_before)
    notes = (tr("series.updated", lang, mark=UPDATED, n=updated, total=len(trials)),) if updated else ()
    return Table("trials", tr("series.table", lang), tr("series.trial", lang),
                 tuple(Column(tr(h, lang)) for h in heads), rows, notes=notes, data=(found,))


def _apart(trials: list[TrialSeries], labels: list[str]) -> list[str]:
    """The labels, with the trial id added to each that two trials of one server at one point
    share."""
    seen = Counter((t.workload, t.clients, t.server, label) for t, label in zip(trials, labels, strict=True))
    return [f"{label} · {t.trial_id}" if seen[(t.workload, t.clients, t.server, label)] > 1 else label
            for t, label in zip(trials, labels, strict=True)]


def _workload_rank(data: ReportData) -> dict[str, int]:
    return {s.workload: i for i, s in enumerate(data.sections)}


def _colour(data: ReportData, workload: str, server: str) -> str:
    """A server's palette colour: its position in the workload's section, as in that
    workload's charts (else among the study's servers)."""
    for section in data.sections:
        names = [s.server for s in section.servers]
        if section.workload == workload and server in names:
            return PALETTE[names.index(server) % len(PALETTE)]
    names = [s.name for s in data.servers]
    return PALETTE[(names.index(server) if server in names else 0) % len(PALETTE)]


def _e(text: str) -> str:
    return html.escape(text, quote=True)
