"""Reports of a study: Markdown (GitHub-readable, charts as SVG files) and one HTML file.

Renderers only format :class:`teiten.report.model.ReportData`; the figures themselves are
computed by :mod:`teiten.analysis`.
"""

from __future__ import annotations

from pathlib import Path

from teiten.report.html import render_html, write_html
from teiten.report.markdown import render_markdown
from teiten.report.model import ReportData

__all__ = ["render_html", "render_markdown", "write_html", "write_report"]


def write_report(data: ReportData, out_dir: Path) -> dict[str, Path]:
    """Write ``report.md`` (with ``charts/``) and ``report.html`` into ``out_dir``.

    ``out_dir`` and its parents are created when missing; existing report files are
    overwritten. Returns the paths by format: ``{"markdown": ..., "html": ...}``.
    """
    out_dir.mkdir(parents=True, exist_ok=True)
    return {
        "markdown": render_markdown(data, out_dir),
        "html": write_html(data, out_dir),
    }
