"""The HTML report: one self-contained HTML5 file, charts inlined as SVG.

No external resources at all (no fonts, scripts, stylesheets or images from anywhere),
so the file can be mailed, archived or opened offline and look the same. Everything reads
without JavaScript; the one inline script only adds the per-second series viewer (see
:mod:`teiten.report.series_view`). The content and numbers are the Markdown report's
(both lay out :mod:`teiten.report.tables`, :mod:`teiten.report.findings` and
:mod:`teiten.report.charts`); here the tables get coloured ratio cells, hover text and
ids, and each finding links to the cell it repeats. Every user-provided string goes
through :func:`html.escape`.
"""

from __future__ import annotations

import html
from functools import cache
from importlib.resources import files
from pathlib import Path

from teiten import __version__
from teiten.analysis.cycle import MachineTime
from teiten.analysis.model import ReportData, WorkloadSection
from teiten.report import outdir
from teiten.report.activity import (
    DeviceTable,
    chart_data,
    cpu_bars,
    device_heading,
    device_table,
    has_activity,
    profile_links,
    profiles_note,
    wait_bars,
)
from teiten.report.cells import Cell, DataTable, Table
from teiten.report.charts import chart_groups
from teiten.report.differences import declared_sentence, difference_table
from teiten.report.exports import section_data, table_links
from teiten.report.findings import sentences
from teiten.report.machine_time import machine_time_text
from teiten.report.parts import findings_tables, section_body, sections
from teiten.report.series_view import ERROR_HOOK, series_head, series_section
from teiten.report.tables import (
    fingerprint_rows,
    server_rows,
    study_rows,
)
from teiten.words.answer import answer_intro, answer_lines
from teiten.words.context import Context
from teiten.words.formats import MISSING
from teiten.words.i18n import lang_of, status_name, tr, warning_lines, workload_heading

WARNINGS_SHOWN = 6


@cache
def stylesheet() -> str:
    """The report's CSS (a package file, inlined into every report)."""
    return files("teiten.report").joinpath("report.css").read_text(encoding="utf-8")


def render_html(data: ReportData) -> str:
    """The whole report as one HTML5 document (a ``str``; write it as UTF-8), in
    ``data.lang``."""
    e = _e
    lang = lang_of(data.lang)
    out = [
        "<!DOCTYPE html>",
        f'<html lang="{lang}">',
        "<head>",
        '<meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f'<meta name="generator" content="teiten {e(__version__)}">',
        f"<title>{e(tr('report.title', lang, study=data.study))}</title>",
        f"<script>{ERROR_HOOK}</script>",
        f"<style>\n{stylesheet()}</style>",
        *series_head(data),
        "</head>",
        "<body>",
        "<main>",
        f"<h1>{e(tr('report.title', lang, study=data.study))}</h1>",
    ]
    if data.description:
        out.append(f'<p class="lead">{e(data.description)}</p>')
    if data.sections:
        out.append(f'<nav aria-label="{e(tr("nav", lang))}"><ul>')
        out += [f'<li><a href="#workload-{i}">{e(workload_heading(s.workload, lang))}</a></li>'
                for i, s in enumerate(data.sections, 1)]
        if data.series:
            out.append(f'<li><a href="#series">{e(tr("series.nav", lang))}</a></li>')
        out.append(f'<li><a href="#machine">{e(tr("machine.nav", lang))}</a></li>')
        out.append(f'<li><a href="#servers">{e(tr("servers", lang))}</a></li>')
        out.append("</ul></nav>")

    answer = answer_lines(data)
    if answer:
        out += [f'<h2 id="answer">{e(tr("answer", lang))}</h2>', f"<p>{e(answer_intro(data))}</p>",
                '<ul class="answer">', *(f"<li>{e(line)}</li>" for line in answer), "</ul>"]
    if len(data.servers) > 1:
        out += [f'<h2 id="differences">{e(tr("differences", lang))}</h2>',
                f"<p>{e(declared_sentence(data))}</p>",
                *(_table(difference_table(data)) if data.differences else
                  [f"<p>{e(tr('differences.alike', lang))}</p>"])]
    out.append(f"<h2>{e(tr('warnings', lang))}</h2>")
    grouped = warning_lines(data.warnings, lang)
    if grouped:
        # A long list would bury the results: the first few causes, the rest one click away.
        shown = grouped if len(grouped) <= WARNINGS_SHOWN + 2 else grouped[:WARNINGS_SHOWN]
        out.append('<ul class="warnings">')
        out += [f"<li>{e(w)}</li>" for w in shown]
        out.append("</ul>")
        rest = grouped[len(shown):]
        if rest:
            out.append(f"<details><summary>{e(tr('warnings.more', lang, n=len(rest)))}</summary>")
            out.append('<ul class="warnings">')
            out += [f"<li>{e(w)}</li>" for w in rest]
            out.append("</ul></details>")
    else:
        out.append(f"<p>{e(tr('warnings.none', lang))}</p>")
    out += [f"<h2>{e(tr('study', lang))}</h2>", _kv_table(study_rows(data))]
    out.append(f"<h2>{e(tr('status', lang))}</h2>")
    if data.status_counts:
        out.append('<ul class="status">')
        out += [f"<li>{e(status_name(k, lang))} <b>{v}</b></li>" for k, v in data.status_counts.items()]
        out.append("</ul>")
    else:
        out.append(f"<p>{e(tr('status.none', lang))}</p>")

    for i, (section, at) in enumerate(sections(data), 1):
        out += _section(section, i, at)
    out += series_section(data)

    if data.machine_time is not None:
        out += _machine_time(data.machine_time, lang)
    out.append(f'<h2 id="machine">{e(tr("machine", lang))}</h2>')
    rows = fingerprint_rows(data)
    out.append(_kv_table(rows) if rows else f"<p>{e(tr('machine.none', lang))}</p>")
    out.append(f'<h2 id="servers">{e(tr("servers", lang))}</h2>')
    for info in data.servers:
        out.append(f"<h3>{e(info.name)}</h3>")
        out.append(_kv_table(server_rows(info, lang)))
        settings = sorted(info.settings.items())
        out.append(f"<p>{e(tr('server.settings', lang))}</p>")
        out.append(_kv_table(settings) if settings else f"<p>{e(tr('server.settings.none', lang))}</p>")
    out += [
        f"<footer>{e(tr('footer.at', lang, version=__version__, at=data.generated_at))}</footer>",
        "</main>",
        "</body>",
        "</html>",
        "",
    ]
    return "\n".join(out)


def write_html(data: ReportData, out_dir: Path | outdir.Writer) -> Path:
    """Write ``out_dir/report.html`` (through :class:`outdir.Writer`) and return its path."""
    with outdir.opened(out_dir) as out:
        return out.write_text("report.html", render_html(data))


def _section(section: WorkloadSection, index: int, ctx: Context) -> list[str]:
    e = _e
    lang = ctx.lang
    out = [
        f'<section class="workload" id="workload-{index}">',
        f"<h2>{e(workload_heading(section.workload, lang))}</h2>",
    ]
    if section.description:
        out.append(f"<p>{e(section.description)}</p>")
    if section.suite is None:
        out += _findings(section, ctx)
    for data, charts in chart_groups(section, ctx):  # a group drawn from a CSV names it
        if not charts:
            continue
        out.append(f'<div class="charts"{_names(tuple(data))}>')
        out += [f'<figure class="{kind}">{svg}</figure>' for kind, _, svg in charts]
        out.append("</div>")
    if section.suite is None:
        out.append(f'<p class="note">{e(tr("chart.note", lang, conf=ctx.conf))}</p>')
    for table in section_body(section, ctx):
        out += _table(table)
    links = " · ".join(f'<a href="{e(href)}">{e(label)}</a>'
                       for label, href in table_links(section_data(section, ctx), lang))
    out.append(f'<p class="downloads">{e(tr("tables.csv", lang))} {links}</p>')
    if has_activity(section):
        out += _activity(section, ctx)
    out.append("</section>")
    return out


def _findings(section: WorkloadSection, ctx: Context) -> list[str]:
    e, lang = _e, ctx.lang
    out = [f"<h3>{e(tr('findings', lang))}</h3>"]
    found = sentences(section, ctx)
    if found:
        out.append('<ul class="findings">')
        for s in found:
            text = f'<a href="#{e(s.cell)}">{e(s.text)}</a>' if s.cell else e(s.text)
            out.append(f'<li class="{e(s.kind)}">{text}</li>')
        out.append("</ul>")
    else:
        out.append(f"<p>{e(tr('findings.none', lang))}</p>")
    return [*out, *(line for table in findings_tables(section, ctx) for line in _table(table))]


def _names(data: tuple[DataTable, ...]) -> str:
    """The ``data-table`` attribute: the names of the CSV files (and tables.json entries) the
    table is written to."""
    return f' data-table="{_e(" ".join(d.name for d in data))}"' if data else ""


def _table(table: Table) -> list[str]:
    """A heading, the table (two header rows when columns are grouped), and its notes."""
    if not table.shown:
        return []
    e = _e
    grouped = any(c.group for c in table.columns)
    span = ' rowspan="2"' if grouped else ""
    out = [f"<h3>{e(table.heading)}</h3>", '<div class="scroll">',
           f'<table class="data {table.kind}"{_names(table.data)}>', "<thead>", "<tr>",
           f'<th{span} scope="col">{e(table.corner)}</th>']
    second: list[str] = []
    i = 0
    while i < len(table.columns):
        col = table.columns[i]
        if not col.group:
            out.append(f'<th{span} scope="col">{_head(col.label, col.sub)}</th>')
            i += 1
            continue
        n = 1
        while i + n < len(table.columns) and table.columns[i + n].group == col.group:
            n += 1
        out.append(f'<th colspan="{n}" scope="colgroup">{e(col.group)}</th>')
        second += [f'<th scope="col">{_head(c.label, c.sub)}</th>' for c in table.columns[i:i + n]]
        i += n
    out.append("</tr>")
    if grouped:
        out += ["<tr>", *second, "</tr>"]
    out += ["</thead>", "<tbody>"]
    for label, cells in table.rows:
        out.append(f'<tr><th scope="row">{e(label)}</th>{"".join(_td(c) for c in cells)}</tr>')
    out += ["</tbody>", "</table>", "</div>"]
    out += [f'<p class="note">{e(note)}</p>' for note in table.notes]
    return out


def _head(label: str, sub: str) -> str:
    return _e(label) + (f'<span class="sub">{_e(sub)}</span>' if sub else "")


MARK_CLASS = {"▲": "sig", "▼": "sig", "≈": "ns", "?": "unsure"}


def _td(cell: Cell) -> str:
    e = _e
    attrs = ""
    if cell.id:
        attrs += f' id="{e(cell.id)}"'
    classes = " ".join(c for c in (cell.tone, "marked" if cell.marker else "") if c)
    if classes:
        attrs += f' class="{e(classes)}"'
    if cell.title:
        attrs += f' title="{e(cell.title)}"'
    body = e(cell.value)
    if cell.ci:
        body += f' <span class="ci">{e(cell.ci)}</span>'
    if cell.marker:
        body += f' <span class="mark {MARK_CLASS.get(cell.marker, "")}">{e(cell.marker)}</span>'
    if cell.failed:
        body += f' <span class="failed">{e(cell.failed)}</span>'
    return f"<td{attrs}>{body}</td>"


def _activity(section: WorkloadSection, ctx: Context) -> list[str]:
    """The "System and database activity" subsection: bar charts, device table, flame graphs."""
    e, lang = _e, ctx.lang
    out = [f"<h3>{e(tr('activity', lang))}</h3>"]
    if any(s.activity for s in section.servers):
        out.append(f'<div class="charts"{_names(chart_data(section, ctx.stem))}>')
        out += [f"<figure>{svg}</figure>" for svg in (cpu_bars(section, lang), wait_bars(section, lang))]
        out.append("</div>")
        table = device_table(section, lang, ctx.stem)
        out.append(f"<h4>{e(device_heading(table, lang))}</h4>")
        if table.shown:
            out.append(_device_table(table, lang))
        else:
            out.append(f"<p>{e(tr('activity.no_devices', lang))}</p>")
        if table.has_violations:
            out.append(f'<p class="violation">{e(tr("activity.window_note", lang))}</p>')
    links = profile_links(section, lang)
    if links:
        out.append(f"<h4>{e(tr('activity.profiles', lang))}</h4>")
        if note := profiles_note(section, lang):
            out.append(f"<p>{e(note)}</p>")
        out.append('<ul class="profiles">')
        out += [f'<li><a href="{e(href)}">{e(text)}</a></li>' for text, href in links]
        out.append("</ul>")
    return out


def _device_table(table: DeviceTable, lang: str) -> str:
    e = _e
    n_dev = len(table.devices)
    out = [f'<table class="device"{_names(table.data)}>', "<thead>", "<tr>"]
    out.append(f'<th rowspan="2" scope="col">{e(tr("clients", lang))}</th>')
    out += [f'<th colspan="{n_dev}" scope="colgroup">{e(s)}</th>' for s in table.servers if n_dev]
    if table.has_violations:
        out.append(f'<th rowspan="2" scope="col">{e(tr("activity.window", lang))}</th>')
    out += ["</tr>", "<tr>"]
    out += [f'<th scope="col">{e(d)}</th>' for _ in table.servers for d in table.devices]
    out += ["</tr>", "</thead>", "<tbody>"]
    for clients, cells, violations in table.rows:
        out.append(f'<tr><th scope="row">{clients}</th>')
        out += [f'<td{_missing(c)}>{e(c)}</td>' for c in cells]
        if violations:
            out.append(f'<td class="violation">⚠ {e(violations)}</td>')
        elif table.has_violations:
            out.append(f'<td class="clean">{e(tr("activity.none", lang))}</td>')
        out.append("</tr>")
    out += ["</tbody>", "</table>"]
    return "\n".join(out)


def _missing(cell: str) -> str:
    return ' class="missing"' if cell == MISSING else ""


def _machine_time(found: MachineTime, lang: str) -> list[str]:
    e, told = _e, machine_time_text(found, lang)
    head = "".join(f'<th scope="col">{e(h)}</th>' for h in told.header)

    def table(rows: tuple[tuple[str, str, str], ...], data: DataTable | None) -> str:
        body = "".join(f'<tr><th scope="row">{e(a)}</th><td class="num">{e(b)}</td>'
                       f'<td class="num">{e(c)}</td></tr>' for a, b, c in rows)
        return (f'<table class="kv time"{_names((data,) if data else ())}><thead><tr>{head}</tr></thead>'
                f"<tbody>{body}</tbody></table>")

    out = [f'<h2 id="machine-time">{e(tr("machine_time", lang))}</h2>', f"<p>{e(told.intro)}</p>",
           table(told.rows, told.data), f"<p>{e(told.starts)}</p>"]
    if told.run_intro is not None:
        out += [f"<p>{e(told.run_intro)}</p>", table(told.run_rows, told.run_data)]
    return out


def _kv_table(rows: list[tuple[str, str]]) -> str:
    body = "\n".join(f'<tr><th scope="row">{_e(k)}</th><td>{_e(v)}</td></tr>' for k, v in rows)
    return f'<table class="kv">\n<tbody>\n{body}\n</tbody>\n</table>'


def _e(text: str) -> str:
    return html.escape(text, quote=True)
