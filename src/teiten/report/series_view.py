"""The HTML report's viewer of the per-second series of any trial.

A ``<select>`` lists every trial (server · workload · clients · repetition · status);
choosing one draws its per-second TPS and latency, shading the ramp-up seconds before the
steady state, with its stalls and drift beside it. The series are embedded as JSON in a
``<script type="application/json">`` and drawn by the small inline script
``series.js`` (no libraries, no network). Without JavaScript the viewer stays hidden and
the table of every trial (ramp-up, stalls, drift) still reads on its own.
"""

from __future__ import annotations

import html
import json
from functools import cache
from importlib.resources import files

from teiten.analysis.model import ReportData, TrialSeries
from teiten.report.formats import format_tps
from teiten.report.i18n import clients_phrase, status_name, tr

# Reports an uncaught script error on <body data-js-errors="...">, so that a test in a
# headless browser can see it. Runs first, in <head>.
ERROR_HOOK = (
    "window.addEventListener('error', e => { const b = document.body || document.documentElement; "
    "b.dataset.jsErrors = (b.dataset.jsErrors ? b.dataset.jsErrors + ' | ' : '') + "
    "(e.message || 'error'); });"
)


@cache
def script() -> str:
    """The viewer's JavaScript (a package file)."""
    return files("teiten.report").joinpath("series.js").read_text(encoding="utf-8")


def ordered(data: ReportData) -> list[TrialSeries]:
    """The trials in report order: by workload and server as the sections list them, then
    clients and repetition."""
    workloads = {s.workload: i for i, s in enumerate(data.sections)}
    servers = {s.name: i for i, s in enumerate(data.servers)}
    return sorted(data.series, key=lambda t: (workloads.get(t.workload, len(workloads)), t.workload,
                                              servers.get(t.server, len(servers)), t.server,
                                              t.clients, t.repetition, t.trial_id))


def option_label(trial: TrialSeries, lang: str) -> str:
    return tr("series.option", lang, server=trial.server, workload=trial.workload,
              clients=clients_phrase([trial.clients], lang), repetition=trial.repetition,
              status=status_name(trial.status, lang))


def info_text(trial: TrialSeries, lang: str) -> str:
    return tr("series.info", lang, rampup=trial.steady_from, stalls=trial.stalls,
              drift=f"{trial.drift_pct_per_min:+.1f}")


def payload(trials: list[TrialSeries], lang: str) -> str:
    """The JSON the script reads, safe to put inside ``<script>``: ``<``, ``>`` and ``&``
    are escaped as \\u sequences, so no string in it can close the element."""
    doc = {
        "labels": {"empty": tr("series.empty", lang), "rampup": tr("series.rampup_label", lang),
                   "seconds": tr("series.axis", lang), "tps": tr("axis.tps", lang),
                   "latency": tr("axis.latency", lang)},
        "trials": [{"label": option_label(t, lang), "info": info_text(t, lang),
                    "tps": [round(v, 1) for v in t.tps],
                    "latency": [None if v is None else round(v, 3) for v in t.latency_ms],
                    "steadyFrom": t.steady_from} for t in trials],
    }
    text = json.dumps(doc, ensure_ascii=False, separators=(",", ":"))
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
        f'<label for="series-select">{e(tr("series.select", lang))}</label> ',
        '<select id="series-select">',
    ]
    out += [f'<option value="{i}">{e(option_label(t, lang))}</option>' for i, t in enumerate(trials)]
    out += ["</select>", '<p id="series-info" class="series-info"></p>',
            '<figure id="series-chart" class="series-chart"></figure>', "</div>"]
    heads = ("series.trial", "series.server", "series.workload", "clients", "series.repetition",
             "series.status", "series.tps", "series.seconds", "series.rampup", "series.stalls",
             "series.drift")
    out += [f"<details><summary>{e(tr('series.table', lang))}</summary>",
            '<table class="trials">', "<thead><tr>"]
    out += [f'<th scope="col">{e(tr(h, lang))}</th>' for h in heads]
    out += ["</tr></thead>", "<tbody>"]
    for i, t in enumerate(trials):
        cells = (t.server, t.workload, str(t.clients), str(t.repetition), status_name(t.status, lang),
                 format_tps(t.tps_figure), str(len(t.tps)), str(t.steady_from), str(t.stalls),
                 f"{t.drift_pct_per_min:+.1f}")
        unstable = ' class="unstable"' if t.stalls else ""
        # The id links to the trial's per-second chart (the script selects it; without
        # script, the link still leads to the viewer's section).
        out.append(f'<tr{unstable}><th scope="row"><a href="#series" data-series="{i}">'
                   f"{e(t.trial_id)}</a></th>" + "".join(f"<td>{e(c)}</td>" for c in cells) + "</tr>")
    out += ["</tbody>", "</table>", "</details>",
            f'<script type="application/json" id="series-data">{payload(trials, lang)}</script>',
            f"<script>\n{script()}</script>", "</section>"]
    return out


def _e(text: str) -> str:
    return html.escape(text, quote=True)
