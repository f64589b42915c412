"""The Markdown report: ``report.md`` plus its charts as SVG files, readable on GitHub.

It lays out what :mod:`teiten.report.tables`, :mod:`teiten.report.findings` and
:mod:`teiten.report.charts` prepare, in the report's language (``data.lang``); the HTML
report lays out the same things, so both say the same in the same words and numbers.
Tables link to their CSV files under ``tables/`` (written by
:func:`teiten.report.write_report`).
"""

from __future__ import annotations

import html
import re
from pathlib import Path
from urllib.parse import quote

from teiten import __version__
from teiten.analysis.model import ReportData, WorkloadSection
from teiten.report import outdir
from teiten.report.activity import (
    chart_data,
    cpu_bars,
    device_heading,
    device_table,
    has_activity,
    profile_links,
    profiles_note,
    wait_bars,
)
from teiten.report.cells import DataTable, Table
from teiten.report.charts import chart_groups
from teiten.report.differences import declared_sentence, difference_table
from teiten.report.exports import section_data, table_links
from teiten.report.findings import sentences
from teiten.report.machine_time import machine_time_text
from teiten.report.parts import findings_tables, section_body, sections
from teiten.report.series_view import trials_table
from teiten.report.tables import (
    fingerprint_rows,
    server_rows,
    study_rows,
)
from teiten.words.answer import answer_intro, answer_lines
from teiten.words.context import Context
from teiten.words.i18n import status_name, tr, warning_lines, workload_heading


def render_markdown(data: ReportData, out_dir: Path | outdir.Writer) -> Path:
    """Write ``out_dir/report.md`` and ``out_dir/charts/<workload>-{tps,latency,ratio}.svg``
    (through :class:`outdir.Writer`).

    Workloads with monitor data also get ``charts/<workload>-{cpu,waits}.svg``.
    """
    with outdir.opened(out_dir) as out:
        out.sub("charts")
        return _render_markdown(data, out)


def _render_markdown(data: ReportData, out: outdir.Writer) -> Path:
    lang = data.lang
    lines = [f"# {md(tr('report.title', lang, study=data.study))}", ""]
    if data.description:
        lines += [md(data.description), ""]
    answer = answer_lines(data)
    if answer:  # the answer first, then what else differs, then what may disturb it
        lines += [f"## {tr('answer', lang)}", "", md(answer_intro(data)), ""]
        lines += [f"- {md(line)}" for line in answer] + [""]
    if len(data.servers) > 1:
        lines += [f"## {tr('differences', lang)}", "", md(declared_sentence(data))]
        lines += _table_lines(difference_table(data), lang) if data.differences else [
            "", tr("differences.alike", lang)]
        lines.append("")
    lines += [f"## {tr('warnings', lang)}", ""]
    lines += [f"- {md(w)}" for w in warning_lines(data.warnings, lang)] or [tr("warnings.none", lang)]
    lines += ["", f"## {tr('study', lang)}", ""]
    lines += _kv_table((tr("kv.parameter", lang), tr("kv.value", lang)), study_rows(data))
    lines += ["", f"## {tr('status', lang)}", ""]
    counts = data.status_counts
    header = [md(status_name(k, lang)) for k in counts]
    lines += _table(header, [[str(v) for v in counts.values()]], numeric=True) if counts else [
        tr("status.none", lang)]

    for section, at in sections(data):
        lines += _section(section, out, at)
    if data.series:
        lines += _trials(data)

    if data.machine_time is not None:
        told = machine_time_text(data.machine_time, lang)
        lines += ["", f"## {tr('machine_time', lang)}", "", md(told.intro), ""]
        lines += _table([md(h) for h in told.header],
                        [[md(a), b, c] for a, b, c in told.rows], numeric=True)
        lines += _data_line((told.data,) if told.data else (), lang)
        lines += ["", md(told.starts)]
        if told.run_intro is not None:
            lines += ["", md(told.run_intro), ""]
            lines += _table([md(h) for h in told.header],
                            [[md(a), b, c] for a, b, c in told.run_rows], numeric=True)
            lines += _data_line((told.run_data,) if told.run_data else (), lang)
    lines += ["", f"## {tr('machine', lang)}", ""]
    rows = fingerprint_rows(data)
    lines += _kv_table((tr("kv.key", lang), tr("kv.value", lang)), rows) if rows else [
        tr("machine.none", lang)]
    lines += ["", f"## {tr('servers', lang)}"]
    for info in data.servers:
        lines += ["", f"### {md(info.name)}", ""]
        lines += _kv_table((tr("kv.property", lang), tr("kv.value", lang)), server_rows(info, lang))
        lines += ["", tr("server.settings", lang), ""]
        settings = sorted(info.settings.items())
        lines += _kv_table((tr("kv.setting", lang), tr("kv.value", lang)), settings) if settings else [
            tr("server.settings.none", lang)]
    lines += ["", "---", "", tr("footer", lang, version=__version__), ""]

    return out.write_text("report.md", "\n".join(lines))


def md(text: str) -> str:
    """Escape user text for Markdown: no tables broken, no HTML or links injected."""
    text = " ".join(text.splitlines())
    text = re.sub(r"([\\`*_\[\]|~])", r"\\\1", text)
    return html.escape(text, quote=False)


def _section(section: WorkloadSection, out: outdir.Writer, ctx: Context) -> list[str]:
    lang, stem = ctx.lang, ctx.stem
    lines = ["", f"## {md(workload_heading(section.workload, lang))}", ""]
    if section.description:
        lines += [md(section.description), ""]
    if section.suite is None:
        lines += [f"### {tr('findings', lang)}", ""]
        lines += [f"- {md(s.text)}" for s in sentences(section, ctx)] or [tr("findings.none", lang)]
        for table in findings_tables(section, ctx):
            lines += _table_lines(table, lang)
        lines.append("")
    for data, charts in chart_groups(section, ctx):  # a group drawn from a CSV links it
        if data and charts:
            lines.append("")
        for kind, title, svg in charts:
            name = f"{stem}-{kind}.svg"
            out.write_text(f"charts/{name}", svg + "\n")
            lines.append(f"![{md(title)}](charts/{quote(name)})")
        if charts:
            lines += _data_line(data, lang)
    if section.suite is None:
        lines += ["", f"*{md(tr('chart.note', lang, conf=ctx.conf))}*"]
    for table in section_body(section, ctx):
        lines += _table_lines(table, lang)
    lines += ["", _download_line(section_data(section, ctx), lang)]
    if has_activity(section):
        lines += _activity_lines(section, out, ctx)
    return lines


def _download_line(tables: list[DataTable], lang: str) -> str:
    links = " · ".join(f"[{md(label)}]({href})" for label, href in table_links(tables, lang))
    return f"{tr('tables.csv', lang)} {links}"


def _data_line(tables: tuple[DataTable, ...], lang: str) -> list[str]:
    """The line under a table that links the CSV files it is written to (its identity in
    tables.json too)."""
    if not tables:
        return []
    links = " · ".join(f"[{md(label)}]({href})" for label, href in table_links(tables, lang, json_too=False))
    return ["", f"{tr('table.data', lang)} {links}"]


def _table_lines(table: Table, lang: str) -> list[str]:
    """A heading, the table, its notes in italics, and the link to its data."""
    if not table.shown:
        return []
    header = [md(table.corner), *(md(c.md or c.label) for c in table.columns)]
    body = [[md(label), *(md(cell.text) for cell in cells)] for label, cells in table.rows]
    lines = ["", f"### {md(table.heading)}", ""]
    lines += _table(header, body, numeric=True)
    for note in table.notes:
        lines += ["", f"*{md(note)}*"]
    return lines + _data_line(table.data, lang)


def _trials(data: ReportData) -> list[str]:
    """Every trial with its series (the HTML report's viewer draws them), folded as there."""
    table = trials_table(data)
    header = [md(table.corner), *(md(c.label) for c in table.columns)]
    body = [[md(label), *(md(cell.text) for cell in cells)] for label, cells in table.rows]
    return ["", f"## {tr('series.nav', data.lang)}", "", *(line for n in table.notes for line in (md(n), "")),
            f"<details><summary>{html.escape(table.heading)}</summary>", "",
            *_table(header, body, numeric=True), *_data_line(table.data, data.lang), "", "</details>"]


def _activity_lines(section: WorkloadSection, out: outdir.Writer, ctx: Context) -> list[str]:
    """The "System and database activity" subsection: bar charts, device table, flame graphs."""
    lang, stem = ctx.lang, ctx.stem
    lines = ["", f"### {tr('activity', lang)}"]
    if any(s.activity for s in section.servers):
        lines.append("")
        for kind, svg in (("cpu", cpu_bars(section, lang)), ("waits", wait_bars(section, lang))):
            name = f"{stem}-{kind}.svg"
            out.write_text(f"charts/{name}", svg + "\n")
            heading = tr(f"activity.{kind}", lang)
            lines.append(f"![{md(f'{section.workload}: {heading}')}](charts/{quote(name)})")
        lines += _data_line(chart_data(section, stem), lang)
        table = device_table(section, lang, stem)
        lines += ["", f"#### {device_heading(table, lang)}", ""]
        header = [tr("clients", lang), *(f"{md(s)} {d}" for s in table.servers for d in table.devices)]
        if table.has_violations:
            header.append(tr("activity.window", lang))
        body = []
        for clients, cells, violations in table.rows:
            row = [str(clients), *cells]
            if table.has_violations:
                row.append(f"**⚠ {md(violations)}**" if violations else tr("activity.none", lang))
            body.append(row)
        if table.shown:
            lines += _table(header, body, numeric=True)
            lines += _data_line(table.data, lang)
        else:
            lines.append(tr("activity.no_devices", lang))
        if table.has_violations:
            lines += ["", f"**⚠ {tr('activity.window_note', lang)}**"]
    links = profile_links(section, lang)
    if links:
        lines += ["", f"#### {tr('activity.profiles', lang)}", ""]
        if note := profiles_note(section, lang):
            lines += [md(note), ""]
        lines += [f"- [{md(text)}]({href})" for text, href in links]
    return lines


def _kv_table(header: tuple[str, str], rows: list[tuple[str, str]]) -> list[str]:
    return _table(list(header), [[md(k), md(v)] for k, v in rows])


def _table(header: list[str], body: list[list[str]], *, numeric: bool = False) -> list[str]:
    align = "---:" if numeric else "---"
    out = ["| " + " | ".join(header) + " |", "|" + "|".join(align for _ in header) + "|"]
    out += ["| " + " | ".join(row) + " |" for row in body]
    return out
