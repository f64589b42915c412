"""The HTML report: one self-contained HTML5 file, charts inlined as SVG.

No external resources at all (no fonts, scripts, stylesheets or images from anywhere),
so the file can be mailed, archived or opened offline and look the same; nothing needs
JavaScript. The content and numbers are the Markdown report's (see
:mod:`teiten.report.markdown`, which holds the shared formatting); here they get tables
with softly coloured ratio cells and hover text. Every user-provided string goes through
:func:`html.escape`.
"""

from __future__ import annotations

import html
from pathlib import Path

from teiten import __version__
from teiten.report.activity import (
    ACTIVITY_HEADING,
    DEVICE_HEADING,
    PROFILES_HEADING,
    WINDOW_HEADING,
    WINDOW_NOTE,
    DeviceTable,
    cpu_bars,
    device_table,
    has_activity,
    profile_links,
    wait_bars,
)
from teiten.report.i18n import notice_text
from teiten.report.markdown import (
    CLIENTS_HEADING,
    METRIC_HEADINGS,
    METRICS,
    MISSING,
    RATIO_HEADING,
    RATIO_NOTE,
    Cell,
    MetricTable,
    fingerprint_rows,
    mean_diff_line,
    metric_table,
    server_rows,
    study_rows,
)
from teiten.report.model import ReportData, WorkloadSection
from teiten.report.svg import workload_charts

# A ratio within this of 1 is shown as no change.
NEUTRAL_BAND = 0.01

CSS = """
:root { color-scheme: light; }
* { box-sizing: border-box; }
body { margin: 0; background: #f6f7f9; color: #222;
  font: 15px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, "Noto Sans",
  "Hiragino Sans", "Noto Sans CJK JP", "Yu Gothic", sans-serif; }
main { max-width: 1120px; margin: 0 auto; padding: 24px 28px 48px; background: #fff;
  min-height: 100vh; box-shadow: 0 0 0 1px #e4e6ea; }
h1 { font-size: 1.7rem; margin: 0.2rem 0 0.4rem; }
h2 { font-size: 1.3rem; margin: 2.2rem 0 0.6rem; padding-bottom: 0.25rem;
  border-bottom: 2px solid #e4e6ea; }
h3 { font-size: 1.05rem; margin: 1.4rem 0 0.5rem; }
h4 { font-size: 0.95rem; margin: 1rem 0 0.4rem; }
p.lead { color: #444; margin-top: 0; }
nav ul { list-style: none; padding: 0; margin: 0.5rem 0; display: flex; flex-wrap: wrap;
  gap: 6px 16px; }
a { color: #0a5ea8; }
table { border-collapse: collapse; margin: 0.4rem 0 0.6rem; font-size: 0.92rem; }
th, td { border: 1px solid #dde0e5; padding: 4px 10px; vertical-align: top; }
thead th { background: #f1f3f6; font-weight: 600; }
table.metric td { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
table.metric th { text-align: center; }
table.metric tbody th { text-align: right; background: #fafbfc; }
table.kv th { text-align: left; background: #fafbfc; font-weight: 600; white-space: nowrap; }
table.kv td { font-family: ui-monospace, "SFMono-Regular", Menlo, Consolas, monospace;
  font-size: 0.86rem; word-break: break-all; }
td.better { background: #e3f4e8; color: #14532d; }
td.worse { background: #fbe5e2; color: #7f1d1d; }
td.same { background: #f4f4f5; }
td.missing { color: #888; }
table.device td { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
table.device th { text-align: center; }
table.device tbody th { text-align: right; background: #fafbfc; }
table.device td.violation { background: #fbe5e2; color: #7f1d1d; font-weight: 600; text-align: left; }
table.device td.clean { color: #888; text-align: left; }
p.violation { background: #fbe5e2; color: #7f1d1d; border-left: 4px solid #d55e00;
  padding: 6px 12px; font-size: 0.9rem; }
ul.profiles { margin: 0.3rem 0; padding-left: 1.4rem; }
span.failed { color: #b45309; font-size: 0.85em; }
span.sub { display: block; font-weight: 400; color: #666; font-size: 0.85em; }
.charts { display: flex; flex-wrap: wrap; gap: 16px; margin: 0.8rem 0; }
figure { margin: 0; border: 1px solid #e4e6ea; border-radius: 6px; padding: 4px;
  background: #fff; flex: 1 1 460px; min-width: 0; max-width: 660px; }
figure svg { display: block; width: 100%; height: auto; }
p.diff { margin: 0.3rem 0; font-weight: 600; }
p.note { color: #666; font-size: 0.85rem; }
.status { display: flex; flex-wrap: wrap; gap: 8px; padding: 0; list-style: none; }
.status li { border: 1px solid #dde0e5; border-radius: 999px; padding: 2px 12px;
  background: #fafbfc; }
.status li b { font-variant-numeric: tabular-nums; }
.warnings { background: #fff8e6; border-left: 4px solid #e69f00; padding: 8px 12px 8px 32px;
  margin: 0.5rem 0; }
footer { margin-top: 3rem; color: #777; font-size: 0.85rem; }
@media print { body { background: #fff; } main { box-shadow: none; }
  section.workload { break-inside: avoid-page; } }
"""


def render_html(data: ReportData) -> str:
    """The whole report as one HTML5 document (a ``str``; write it as UTF-8)."""
    e = _e
    out = [
        "<!DOCTYPE html>",
        '<html lang="en">',
        "<head>",
        '<meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f'<meta name="generator" content="teiten {e(__version__)}">',
        f"<title>{e(data.title)}</title>",
        f"<style>{CSS}</style>",
        "</head>",
        "<body>",
        "<main>",
        f"<h1>{e(data.title)}</h1>",
    ]
    if data.description:
        out.append(f'<p class="lead">{e(data.description)}</p>')
    if data.sections:
        out.append("<nav><ul>")
        out += [
            f'<li><a href="#workload-{i}">{e(s.workload)}</a></li>'
            for i, s in enumerate(data.sections, 1)
        ]
        out.append('<li><a href="#machine">Machine</a></li>')
        out.append('<li><a href="#servers">Servers</a></li>')
        out.append("</ul></nav>")

    out += ["<h2>Study</h2>", _kv_table(study_rows(data))]
    out.append("<h2>Trial status</h2>")
    if data.status_counts:
        out.append('<ul class="status">')
        out += [f"<li>{e(k)} <b>{v}</b></li>" for k, v in data.status_counts.items()]
        out.append("</ul>")
    else:
        out.append("<p>No trials recorded.</p>")
    out.append("<h2>Warnings</h2>")
    if data.warnings:
        out.append('<ul class="warnings">')
        out += [f"<li>{e(notice_text(w, data.lang))}</li>" for w in data.warnings]
        out.append("</ul>")
    else:
        out.append("<p>No warnings.</p>")

    for i, section in enumerate(data.sections, 1):
        out += _section(section, i)

    out.append('<h2 id="machine">Machine fingerprint</h2>')
    rows = fingerprint_rows(data)
    out.append(_kv_table(rows) if rows else "<p>No fingerprint recorded.</p>")
    out.append('<h2 id="servers">Servers</h2>')
    for info in data.servers:
        out.append(f"<h3>{e(info.name)}</h3>")
        out.append(_kv_table(server_rows(info)))
        settings = sorted(info.settings.items())
        out.append("<p>Non-default settings:</p>")
        out.append(_kv_table(settings) if settings else "<p>None recorded.</p>")
    out += [
        f"<footer>Generated by teiten {e(__version__)} at {e(data.generated_at)}.</footer>",
        "</main>",
        "</body>",
        "</html>",
        "",
    ]
    return "\n".join(out)


def write_html(data: ReportData, out_dir: Path) -> Path:
    """Write ``out_dir/report.html`` (the directory must exist) and return its path."""
    path = out_dir / "report.html"
    path.write_text(render_html(data), encoding="utf-8")
    return path


def _section(section: WorkloadSection, index: int) -> list[str]:
    e = _e
    out = [
        f'<section class="workload" id="workload-{index}">',
        f"<h2>Workload: {e(section.workload)}</h2>",
    ]
    if section.description:
        out.append(f"<p>{e(section.description)}</p>")
    out.append('<div class="charts">')
    out += [f"<figure>{svg}</figure>" for svg in workload_charts(section)]
    out.append("</div>")
    for metric in METRICS:
        out.append(f"<h3>{e(METRIC_HEADINGS[metric])}</h3>")
        out.append(_metric_table(metric_table(section, metric)))
        line = mean_diff_line(section, metric)
        if line is not None:
            out.append(f'<p class="diff">{e(line)}</p>')
    out.append(f'<p class="note">{e(RATIO_NOTE)}</p>')
    if has_activity(section):
        out += _activity(section)
    out.append("</section>")
    return out


def _activity(section: WorkloadSection) -> list[str]:
    """The "System and database activity" subsection: bar charts, device table, flame graphs."""
    e = _e
    out = [f"<h3>{e(ACTIVITY_HEADING)}</h3>"]
    if any(s.activity for s in section.servers):
        out.append('<div class="charts">')
        out += [f"<figure>{svg}</figure>" for svg in (cpu_bars(section), wait_bars(section))]
        out.append("</div>")
        table = device_table(section)
        out.append(f"<h4>{e(DEVICE_HEADING)}</h4>")
        if table.devices or table.has_violations:
            out.append(_device_table(table))
        else:
            out.append("<p>No device statistics recorded.</p>")
        if table.has_violations:
            out.append(f'<p class="violation">{e(WINDOW_NOTE)}</p>')
    links = profile_links(section)
    if links:
        out.append(f"<h4>{e(PROFILES_HEADING)}</h4>")
        out.append('<ul class="profiles">')
        out += [f'<li><a href="{e(href)}">{e(text)}</a></li>' for text, href in links]
        out.append("</ul>")
    return out


def _device_table(table: DeviceTable) -> str:
    e = _e
    n_dev = len(table.devices)
    out = ['<table class="device">', "<thead>", "<tr>"]
    out.append(f'<th rowspan="2" scope="col">{e(CLIENTS_HEADING)}</th>')
    out += [f'<th colspan="{n_dev}" scope="colgroup">{e(s)}</th>' for s in table.servers if n_dev]
    if table.has_violations:
        out.append(f'<th rowspan="2" scope="col">{e(WINDOW_HEADING)}</th>')
    out += ["</tr>", "<tr>"]
    out += [f'<th scope="col">{e(d)}</th>' for _ in table.servers for d in table.devices]
    out += ["</tr>", "</thead>", "<tbody>"]
    for clients, cells, violations in table.rows:
        out.append(f'<tr><th scope="row">{clients}</th>')
        out += [f'<td{_missing(c)}>{e(c)}</td>' for c in cells]
        if violations:
            out.append(f'<td class="violation">⚠ {e(violations)}</td>')
        elif table.has_violations:
            out.append('<td class="clean">none</td>')
        out.append("</tr>")
    out += ["</tbody>", "</table>"]
    return "\n".join(out)


def _missing(cell: str) -> str:
    return ' class="missing"' if cell == MISSING else ""


def _metric_table(table: MetricTable) -> str:
    e = _e
    n_ratio = len(table.ratio_servers)
    out = [f'<table class="metric {table.metric}">', "<thead>", "<tr>"]
    out.append(f'<th rowspan="2" scope="col">{e(CLIENTS_HEADING)}</th>')
    heading = e(METRIC_HEADINGS[table.metric])
    out.append(f'<th colspan="{len(table.servers)}" scope="colgroup">{heading}</th>')
    if n_ratio:
        out.append(f'<th colspan="{n_ratio}" scope="colgroup">{e(RATIO_HEADING)}</th>')
    out += ["</tr>", "<tr>"]
    for name, version in zip(table.servers, table.versions, strict=True):
        sub = f"{version} · baseline" if name == table.baseline else version
        out.append(f'<th scope="col">{e(name)}<span class="sub">{e(sub)}</span></th>')
    out += [f'<th scope="col">{e(name)} / {e(table.baseline)}</th>' for name in table.ratio_servers]
    out += ["</tr>", "</thead>", "<tbody>"]
    for clients, values, ratios in table.rows:
        out.append(f'<tr><th scope="row">{clients}</th>')
        out += [_value_td(c) for c in values]
        out += [_ratio_td(c, lower_is_better=table.metric == "latency") for c in ratios]
        out.append("</tr>")
    out += ["</tbody>", "</table>"]
    return "\n".join(out)


def _value_td(cell: Cell) -> str:
    cls = ' class="missing"' if cell.value == MISSING else ""
    hint = f' title="repetitions: {_e(cell.hint)}"' if cell.hint else ""
    failed = f' <span class="failed">({cell.n_failed} failed)</span>' if cell.n_failed else ""
    return f"<td{cls}{hint}>{_e(cell.value)}{failed}</td>"


def _ratio_td(cell: Cell, *, lower_is_better: bool) -> str:
    cls = ratio_class(cell.ratio, lower_is_better=lower_is_better)
    return f'<td class="{cls}">{_e(cell.value)}</td>'


def ratio_class(ratio: float | None, *, lower_is_better: bool = False) -> str:
    """``better``/``worse`` outside ±1% of the baseline, ``same`` inside, ``missing``."""
    if ratio is None:
        return "missing"
    # Judge the percentage as printed, so that 101.0% is "same" however the float rounds.
    if abs(round(ratio * 100, 1) - 100) <= NEUTRAL_BAND * 100:
        return "same"
    return "better" if (ratio < 1) == lower_is_better else "worse"


def _kv_table(rows: list[tuple[str, str]]) -> str:
    body = "\n".join(f'<tr><th scope="row">{_e(k)}</th><td>{_e(v)}</td></tr>' for k, v in rows)
    return f'<table class="kv">\n<tbody>\n{body}\n</tbody>\n</table>'


def _e(text: str) -> str:
    return html.escape(text, quote=True)
