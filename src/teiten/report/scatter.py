"""A scatter chart as SVG: markers, no lines, both axes linear from 0 and ticked in 1-2-5
steps; pure, deterministic, self-contained like :mod:`teiten.report.svg`, whose palette, marker
shapes and legend it shares. Every marker is of class ``point`` with ``data-series`` (its
series' index) and carries a ``<title>`` with its exact values; each axis's ticks are texts of
class ``x-tick`` / ``y-tick`` with ``data-value``, so that a reader maps a marker back."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from teiten.report.svg import (
    AXIS,
    GRID,
    MUTED,
    SHAPES,
    _colour,
    _legend,
    _shape_parts,
    coord,
    esc,
    nice_ticks,
    svg_head,
    text_width,
)


@dataclass(frozen=True)
class Series:
    name: str
    points: Sequence[tuple[float, float, str]]  # x, y, hover text
    colour: int  # palette index (its shape follows it)


def _tick_text(t: float) -> str:
    return f"{t:,.0f}" if float(t).is_integer() else f"{t:,g}"


def scatter(title: str, x_label: str, y_label: str, series: Sequence[Series], *, width: int = 640,
            height: int = 380, caption: str = "", no_data: str = "no data") -> str:
    xs = [x for s in series for x, _, _ in s.points]
    ys = [y for s in series for _, y, _ in s.points]
    x_ticks, y_ticks = nice_ticks(max(xs, default=0.0)), nice_ticks(max(ys, default=0.0))
    out = svg_head(title, width, str(height))
    legend, legend_bottom = _legend([(s.name, s.colour, False) for s in series], width, top=34)
    out += legend
    y_texts = [_tick_text(t) for t in y_ticks]
    left = 30 + max(text_width(t, 11) for t in y_texts) + 8
    right, top = width - 20.0, legend_bottom + 12
    bottom = height - (62.0 if caption else 46.0)

    def xpos(x: float) -> float:
        return left + x / x_ticks[-1] * (right - left)

    def ypos(y: float) -> float:
        return bottom - y / y_ticks[-1] * (bottom - top)

    for t, text in zip(y_ticks, y_texts, strict=True):
        ty = coord(ypos(t))
        out.append(f'<line x1="{coord(left)}" y1="{ty}" x2="{coord(right)}" y2="{ty}" stroke="{GRID}"/>')
        out.append(f'<text class="y-tick" data-value="{t:g}" x="{coord(left - 6)}" y="{ty}" dy="4" '
                   f'text-anchor="end" font-size="11" fill="{MUTED}">{esc(text)}</text>')
    for t in x_ticks:
        tx = coord(xpos(t))
        out.append(f'<line x1="{tx}" y1="{coord(bottom)}" x2="{tx}" y2="{coord(bottom + 4)}" stroke="{AXIS}"/>')
        out.append(f'<text class="x-tick" data-value="{t:g}" x="{tx}" y="{coord(bottom + 17)}" '
                   f'text-anchor="middle" font-size="11" fill="{MUTED}">{esc(_tick_text(t))}</text>')
    out.append(f'<line x1="{coord(left)}" y1="{coord(bottom)}" x2="{coord(right)}" y2="{coord(bottom)}" '
               f'stroke="{AXIS}"/>')
    out.append(f'<line x1="{coord(left)}" y1="{coord(top)}" x2="{coord(left)}" y2="{coord(bottom)}" '
               f'stroke="{AXIS}"/>')
    mid = coord((top + bottom) / 2)
    out.append(f'<text x="16" y="{mid}" transform="rotate(-90 16 {mid})" text-anchor="middle" '
               f'fill="{MUTED}">{esc(y_label)}</text>')
    out.append(f'<text x="{coord((left + right) / 2)}" y="{coord(bottom + 34)}" text-anchor="middle" '
               f'fill="{MUTED}">{esc(x_label)}</text>')
    if caption:
        out.append(f'<text x="{coord((left + right) / 2)}" y="{coord(height - 8)}" text-anchor="middle" '
                   f'font-size="11" fill="{MUTED}">{esc(caption)}</text>')
    if not xs:
        out.append(f'<text x="{coord((left + right) / 2)}" y="{coord((top + bottom) / 2)}" '
                   f'text-anchor="middle" fill="{MUTED}">{esc(no_data)}</text>')
    for i, s in enumerate(series):
        out.append(f'<g fill="{_colour(s.colour)}" fill-opacity="0.85">')
        for x, y, hover in s.points:
            if not (math.isfinite(x) and math.isfinite(y)):
                continue
            tag, attrs = _shape_parts(SHAPES[s.colour % len(SHAPES)], xpos(x), ypos(y), size=4.5)
            out.append(f'<{tag} class="point" data-series="{i}" data-x="{xpos(x):.3f}" '
                       f'data-y="{ypos(y):.3f}" {attrs}><title>{esc(hover)}</title></{tag}>')
        out.append("</g>")
    out.append("</svg>")
    return "\n".join(out)
