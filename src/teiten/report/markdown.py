"""The Markdown report: ``report.md`` plus its charts as SVG files, readable on GitHub.

This module also holds what the Markdown and HTML reports share, so both say the same
thing in the same words and numbers: the number formats (TPS with 1 decimal, latency in ms
with 3, ratios as a percentage with 1), the per-client tables and the key/value sections.
These only format :mod:`teiten.report.model`; the one figure derived here is the latency
ratio of a cell (median latency over the baseline's at the same client count), which the
model does not carry.
"""

from __future__ import annotations

import html
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Literal
from urllib.parse import quote

from teiten import __version__
from teiten.report.activity import (
    ACTIVITY_HEADING,
    CPU_HEADING,
    DEVICE_HEADING,
    PROFILES_HEADING,
    WAITS_HEADING,
    WINDOW_HEADING,
    WINDOW_NOTE,
    cpu_bars,
    device_table,
    has_activity,
    profile_links,
    wait_bars,
)
from teiten.report.i18n import notice_text
from teiten.report.model import Point, ReportData, ServerInfo, ServerSeries, WorkloadSection
from teiten.report.svg import workload_charts

Metric = Literal["tps", "latency"]
METRICS: tuple[Metric, ...] = ("tps", "latency")

MISSING = "—"
CLIENTS_HEADING = "Clients (クライアント数)"
RATIO_HEADING = "Ratio to baseline (前バージョン比)"
METRIC_HEADINGS: dict[Metric, str] = {
    "tps": "Median TPS (中央値)",
    "latency": "Median latency, ms (レイテンシ中央値)",
}
RATIO_NOTE = (
    "Ratios are each server's median over the baseline's at the same client count. "
    "For TPS higher is better; for latency lower is better. Within ±1% counts as no change."
)


@dataclass(frozen=True)
class Cell:
    """One table cell: its formatted value, failed repetitions, and the ratio behind it."""

    value: str
    n_failed: int = 0
    ratio: float | None = None  # set on ratio cells, for colouring
    hint: str = ""  # hover text: the repetitions behind a median


@dataclass(frozen=True)
class MetricTable:
    """Medians per client count (one column per server), then ratios to the baseline."""

    metric: Metric
    baseline: str
    servers: tuple[str, ...]
    versions: tuple[str, ...]  # of ``servers``
    ratio_servers: tuple[str, ...]  # every server but the baseline
    rows: tuple[tuple[int, tuple[Cell, ...], tuple[Cell, ...]], ...]  # clients, values, ratios


def format_tps(value: float | None) -> str:
    return MISSING if value is None else f"{value:.1f}"


def format_latency(value: float | None) -> str:
    return MISSING if value is None else f"{value:.3f}"


def format_ratio(ratio: float | None) -> str:
    """``0.983`` → ``98.3%``."""
    return MISSING if ratio is None else f"{ratio * 100:.1f}%"


def format_diff(pct: float | None) -> str:
    """A mean difference already in percent: ``+2.3%``."""
    return MISSING if pct is None else f"{pct:+.1f}%"


def cell_text(cell: Cell) -> str:
    """``1234.5``, ``1234.5 (1 failed)`` or ``— (3 failed)``."""
    return f"{cell.value} ({cell.n_failed} failed)" if cell.n_failed else cell.value


def metric_table(section: WorkloadSection, metric: Metric) -> MetricTable:
    """The table of one metric of a workload, rows in the section's client order."""
    base = baseline_series(section)
    others = tuple(s for s in section.servers if s is not base)
    base_points = _by_clients(base)
    rows = []
    for clients in section.clients:
        values = []
        for s in section.servers:
            p = _by_clients(s).get(clients)
            values.append(_value_cell(p, metric))
        ratios = []
        for s in others:
            p = _by_clients(s).get(clients)
            ratio = _ratio(p, base_points.get(clients), metric)
            ratios.append(Cell(format_ratio(ratio), ratio=ratio))
        rows.append((clients, tuple(values), tuple(ratios)))
    return MetricTable(
        metric=metric,
        baseline=base.server,
        servers=tuple(s.server for s in section.servers),
        versions=tuple(s.version for s in section.servers),
        ratio_servers=tuple(s.server for s in others),
        rows=tuple(rows),
    )


def mean_diff_line(section: WorkloadSection, metric: Metric) -> str | None:
    """``Mean TPS difference vs pg17: pg18 +2.3%`` (plain text); None with one server."""
    base = baseline_series(section)
    parts = []
    for s in section.servers:
        if s is base:
            continue
        pct = s.mean_tps_diff_pct if metric == "tps" else s.mean_latency_diff_pct
        parts.append(f"{s.server} {format_diff(pct)}")
    if not parts:
        return None
    what = "TPS" if metric == "tps" else "latency"
    return f"Mean {what} difference vs {base.server}: {', '.join(parts)}"


def baseline_series(section: WorkloadSection) -> ServerSeries:
    """The baseline's series (by name; the first server if the name is not among them)."""
    for s in section.servers:
        if s.server == section.baseline:
            return s
    return section.servers[0]


def study_rows(data: ReportData) -> list[tuple[str, str]]:
    return [
        ("Study", data.study),
        ("Duration per trial", f"{data.duration_s:g} s"),
        ("Repetitions", str(data.repetitions)),
        ("Scale factor", str(data.scale)),
        ("Order", data.order),
        ("Seed", str(data.seed)),
        ("Generated at", data.generated_at),
        ("Results store", data.store_path),
    ]


def fingerprint_rows(data: ReportData) -> list[tuple[str, str]]:
    """Every key of the fingerprint; nested values as compact JSON."""
    return [(str(key), fingerprint_value(value)) for key, value in data.fingerprint.items()]


def fingerprint_value(value: object) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), sort_keys=True, default=str)


def server_rows(info: ServerInfo) -> list[tuple[str, str]]:
    checksums = {True: "on", False: "off", None: "unknown"}[info.data_checksums]
    return [
        ("Kind", info.kind),
        ("Version", info.version),
        ("Origin", info.origin),
        ("Bindir", info.bindir),
        ("Data checksums", checksums),
    ]


def chart_stems(data: ReportData) -> list[str]:
    """One safe, distinct file stem per workload section, in section order."""
    stems: list[str] = []
    for section in data.sections:
        stem = re.sub(r"[^A-Za-z0-9._-]+", "_", section.workload).strip("._") or "workload"
        candidate, n = stem, 2
        while candidate in stems:
            candidate, n = f"{stem}-{n}", n + 1
        stems.append(candidate)
    return stems


def render_markdown(data: ReportData, out_dir: Path) -> Path:
    """Write ``out_dir/report.md`` and ``out_dir/charts/<workload>-{tps,latency}.svg``.

    Workloads with monitor data also get ``charts/<workload>-{cpu,waits}.svg``.
    """
    charts_dir = out_dir / "charts"
    charts_dir.mkdir(parents=True, exist_ok=True)
    lines = [f"# {md(data.title)}", ""]
    if data.description:
        lines += [md(data.description), ""]
    lines += ["## Study", ""]
    lines += _kv_table(("Parameter", "Value"), study_rows(data))
    lines += ["", "## Trial status", ""]
    counts = data.status_counts
    header, values = [md(k) for k in counts], [[str(v) for v in counts.values()]]
    lines += _table(header, values, numeric=True) if counts else ["No trials recorded."]
    lines += ["", "## Warnings", ""]
    lines += [f"- {md(notice_text(w, data.lang))}" for w in data.warnings] or ["No warnings."]

    for section, stem in zip(data.sections, chart_stems(data), strict=True):
        lines += ["", f"## Workload: {md(section.workload)}", ""]
        if section.description:
            lines += [md(section.description), ""]
        for kind, svg in zip(METRICS, workload_charts(section), strict=True):
            name = f"{stem}-{kind}.svg"
            (charts_dir / name).write_text(svg + "\n", encoding="utf-8")
            alt = md(f"{section.workload}: median {'TPS' if kind == 'tps' else 'latency'}")
            lines.append(f"![{alt}](charts/{quote(name)})")
        for metric in METRICS:
            table = metric_table(section, metric)
            lines += ["", f"### {METRIC_HEADINGS[metric]}", ""]
            lines += _metric_lines(table)
            line = mean_diff_line(section, metric)
            if line is not None:
                lines += ["", md(line)]
        lines += ["", f"*{RATIO_NOTE}*"]
        if has_activity(section):
            lines += _activity_lines(section, stem, charts_dir)

    lines += ["", "## Machine fingerprint", ""]
    rows = fingerprint_rows(data)
    lines += _kv_table(("Key", "Value"), rows) if rows else ["No fingerprint recorded."]
    lines += ["", "## Servers"]
    for info in data.servers:
        lines += ["", f"### {md(info.name)}", ""]
        lines += _kv_table(("Property", "Value"), server_rows(info))
        lines += ["", "Non-default settings:", ""]
        settings = sorted(info.settings.items())
        lines += _kv_table(("Setting", "Value"), settings) if settings else ["None recorded."]
    lines += ["", "---", "", f"Generated by teiten {__version__}.", ""]

    path = out_dir / "report.md"
    path.write_text("\n".join(lines), encoding="utf-8")
    return path


def md(text: str) -> str:
    """Escape user text for Markdown: no tables broken, no HTML or links injected."""
    text = " ".join(text.splitlines())
    text = re.sub(r"([\\`*_\[\]|~])", r"\\\1", text)
    return html.escape(text, quote=False)


def _activity_lines(section: WorkloadSection, stem: str, charts_dir: Path) -> list[str]:
    """The "System and database activity" subsection: bar charts, device table, flame graphs."""
    lines = ["", f"### {ACTIVITY_HEADING}"]
    if any(s.activity for s in section.servers):
        lines.append("")
        for kind, heading, svg in (("cpu", CPU_HEADING, cpu_bars(section)),
                                   ("waits", WAITS_HEADING, wait_bars(section))):
            name = f"{stem}-{kind}.svg"
            (charts_dir / name).write_text(svg + "\n", encoding="utf-8")
            lines.append(f"![{md(f'{section.workload}: {heading}')}](charts/{quote(name)})")
        table = device_table(section)
        lines += ["", f"#### {DEVICE_HEADING}", ""]
        header = [CLIENTS_HEADING, *(f"{md(s)} {d}" for s in table.servers for d in table.devices)]
        if table.has_violations:
            header.append(WINDOW_HEADING)
        body = []
        for clients, cells, violations in table.rows:
            row = [str(clients), *cells]
            if table.has_violations:
                row.append(f"**⚠ {md(violations)}**" if violations else "none")
            body.append(row)
        if len(header) > 1:
            lines += _table(header, body, numeric=True)
        else:
            lines.append("No device statistics recorded.")
        if table.has_violations:
            lines += ["", f"**⚠ {WINDOW_NOTE}**"]
    links = profile_links(section)
    if links:
        lines += ["", f"#### {PROFILES_HEADING}", ""]
        lines += [f"- [{md(text)}]({href})" for text, href in links]
    return lines


def _metric_lines(table: MetricTable) -> list[str]:
    header = [CLIENTS_HEADING, *(md(s) for s in table.servers)]
    header += [f"{RATIO_HEADING}: {md(s)} / {md(table.baseline)}" for s in table.ratio_servers]
    body = [
        [str(clients), *(cell_text(c) for c in values), *(cell_text(c) for c in ratios)]
        for clients, values, ratios in table.rows
    ]
    return _table(header, body, numeric=True)


def _kv_table(header: tuple[str, str], rows: list[tuple[str, str]]) -> list[str]:
    return _table(list(header), [[md(k), md(v)] for k, v in rows])


def _table(header: list[str], body: list[list[str]], *, numeric: bool = False) -> list[str]:
    align = "---:" if numeric else "---"
    out = ["| " + " | ".join(header) + " |", "|" + "|".join(align for _ in header) + "|"]
    out += ["| " + " | ".join(row) + " |" for row in body]
    return out


def _by_clients(series: ServerSeries) -> dict[int, Point]:
    return {p.clients: p for p in series.points}


def _value_cell(point: Point | None, metric: Metric) -> Cell:
    if point is None:
        return Cell(MISSING)
    if metric == "tps":
        hint = ", ".join(format_tps(v) for v in point.tps_values)
        return Cell(format_tps(point.tps_median), point.n_failed, hint=hint)
    return Cell(format_latency(point.latency_ms_median), point.n_failed)


def _ratio(point: Point | None, base: Point | None, metric: Metric) -> float | None:
    if point is None:
        return None
    if metric == "tps":
        return point.ratio
    if base is None or point.latency_ms_median is None or not base.latency_ms_median:
        return None
    return point.latency_ms_median / base.latency_ms_median
