"""Reports of a study: Markdown (GitHub-readable, charts as SVG files), one HTML file, and
every table as CSV and JSON.

Renderers only format :class:`teiten.analysis.model.ReportData`, in its language
(``data.lang``); the figures themselves are computed by :mod:`teiten.analysis`.
"""

from __future__ import annotations

from pathlib import Path

from teiten.analysis.model import ReportData
from teiten.report import outdir
from teiten.report.exports import write_tables
from teiten.report.html import render_html, write_html
from teiten.report.markdown import render_markdown

__all__ = ["render_html", "render_markdown", "write_html", "write_report", "write_tables"]


def write_report(data: ReportData, out_dir: Path | outdir.Writer) -> dict[str, Path]:
    """Write ``report.md`` (with ``charts/``), ``report.html``, ``tables/*.csv`` and
    ``tables.json`` into ``out_dir`` (a path, or the directory :func:`outdir.claim` opened).

    ``out_dir`` and its parents are created when missing; existing report files are
    replaced (:class:`outdir.Writer`: through the directory's descriptor, never following a
    link). Returns the paths: ``{"markdown": ..., "html": ..., "csv:<table>": ...,
    "json": ...}``, one ``csv:`` key per table (``csv:pgecons-read-tps`` and so on).
    """
    with outdir.opened(out_dir) as out:
        return {
            "markdown": render_markdown(data, out),
            "html": write_html(data, out),
            **write_tables(data, out),
        }
