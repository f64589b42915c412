"""Reports of a study: Markdown (GitHub-readable, charts as SVG files), one HTML file, and
every table as CSV and JSON.

Renderers only format :class:`teiten.analysis.model.ReportData`, in its language
(``data.lang``); the figures themselves are computed by :mod:`teiten.analysis`.
"""

from __future__ import annotations

from pathlib import Path

from teiten.analysis.model import ReportData
from teiten.report.exports import write_tables
from teiten.report.html import render_html, write_html
from teiten.report.markdown import render_markdown

__all__ = ["render_html", "render_markdown", "write_html", "write_report", "write_tables"]


def write_report(data: ReportData, out_dir: Path) -> dict[str, Path]:
    """Write ``report.md`` (with ``charts/``), ``report.html``, ``tables/*.csv`` and
    ``tables.json`` into ``out_dir``.

    ``out_dir`` and its parents are created when missing; existing report files are
    overwritten. Returns the paths: ``{"markdown": ..., "html": ..., "csv:<table>": ...,
    "json": ...}``, one ``csv:`` key per table (``csv:pgecons-read-tps`` and so on).
    """
    out_dir.mkdir(parents=True, exist_ok=True)
    return {
        "markdown": render_markdown(data, out_dir),
        "html": write_html(data, out_dir),
        **write_tables(data, out_dir),
    }
