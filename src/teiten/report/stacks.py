"""Vertical stacked bars in panels side by side, as SVG (the 2014 LWLock figures: a panel per
build, a bar per core count): pure, deterministic, self-contained like
:mod:`teiten.report.svg`, a ``<title>`` with the exact value on every segment. One linear y axis
from 0 serves every panel, so that the builds compare by height. Every segment is a ``rect`` of
class ``segment`` whose ``data-*`` attributes say which panel, bar and key it is, so that a
reader (a test, a script) can map its height back through the axis."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from teiten.report.svg import AXIS, GRID, MUTED, coord, esc, legend_flow, nice_ticks, svg_head, text_width


@dataclass(frozen=True)
class Key:
    """A legend entry: a segment's kind, its colour and opacity (a lock's shared requests are its
    colour, lighter)."""

    name: str
    colour: str
    opacity: float = 1.0


@dataclass(frozen=True)
class Column:
    label: str  # under the bar: "2 cores"
    hover: str  # what the bar is: "pg18 · 2 cores"
    segments: tuple[tuple[int, float, str], ...] | None  # (key index, value, value text), bottom first


def stacked_columns(title: str, y_label: str, keys: Sequence[Key],
                    panels: Sequence[tuple[str, Sequence[Column]]], *, y_decimals: int = 3,
                    width: int = 640, height: int = 380, nothing: str = "nothing recorded",
                    no_data: str = "no data") -> str:
    """``panels`` is ``[(build, [column, ...]), ...]`` drawn left to right; each column's
    segments stack from 0 in the order given."""
    out = svg_head(title, width, str(height))
    legend, legend_bottom = _legend(keys, width, top=34)
    out += legend
    totals = [sum(v for _, v, _ in c.segments or ()) for _, cols in panels for c in cols]
    ticks = nice_ticks(max(totals, default=0.0))
    decimals = max(0, min(y_decimals, len(f"{ticks[1]:g}".partition(".")[2])))
    texts = [f"{t:,.{decimals}f}" for t in ticks]
    left = 30 + max(text_width(t, 11) for t in texts) + 8
    right, top, bottom = width - 16.0, legend_bottom + 12, height - 62.0

    def ypos(v: float) -> float:
        return bottom - v / ticks[-1] * (bottom - top)

    out.append('<g class="y-axis">')
    for tick, text in zip(ticks, texts, strict=True):
        y = coord(ypos(tick))
        out.append(f'<line x1="{coord(left)}" y1="{y}" x2="{coord(right)}" y2="{y}" stroke="{GRID}"/>')
        out.append(f'<text class="tick" data-value="{tick:g}" x="{coord(left - 6)}" y="{y}" dy="4" '
                   f'text-anchor="end" font-size="11" fill="{MUTED}">{esc(text)}</text>')
    out.append("</g>")
    mid = coord((top + bottom) / 2)
    out.append(f'<text x="16" y="{mid}" transform="rotate(-90 16 {mid})" text-anchor="middle" '
               f'fill="{MUTED}">{esc(y_label)}</text>')
    count = sum(len(cols) for _, cols in panels)
    gap = 18.0  # between panels
    slot = (right - left - gap * max(len(panels) - 1, 0)) / max(count, 1)
    bar_w = min(slot * 0.7, 48.0)
    x = left
    for p, (build, cols) in enumerate(panels):
        start = x
        for c, col in enumerate(cols):
            cx = x + slot / 2
            out.append(f'<text x="{coord(cx)}" y="{coord(bottom + 15)}" text-anchor="middle" font-size="11" '
                       f'fill="{MUTED}">{esc(col.label)}</text>')
            out += _column(col, keys, cx - bar_w / 2, bar_w, ypos, bottom, p, c, nothing)
            x += slot
        out.append(f'<text x="{coord((start + x) / 2)}" y="{coord(bottom + 34)}" text-anchor="middle" '
                   f'font-weight="600">{esc(build)}</text>')
        if p:
            sep = coord(start - gap / 2)
            out.append(f'<line x1="{sep}" y1="{coord(top)}" x2="{sep}" y2="{coord(bottom)}" '
                       f'stroke="{AXIS}" stroke-dasharray="3 3"/>')
        x += gap
    out.append(f'<line x1="{coord(left)}" y1="{coord(bottom)}" x2="{coord(right)}" y2="{coord(bottom)}" '
               f'stroke="{AXIS}"/>')
    if not count:
        out.append(f'<text x="{coord((left + right) / 2)}" y="{coord((top + bottom) / 2)}" '
                   f'text-anchor="middle" fill="{MUTED}">{esc(no_data)}</text>')
    out.append("</svg>")
    return "\n".join(out)


def _column(col: Column, keys: Sequence[Key], x: float, w: float, ypos: Callable[[float], float],
            bottom: float, panel: int, index: int, nothing: str) -> list[str]:
    if col.segments is None:
        return [f'<text x="{coord(x + w / 2)}" y="{coord(bottom - 6)}" text-anchor="middle" font-size="10" '
                f'fill="{MUTED}"><title>{esc(col.hover)} · {esc(nothing)}</title>–</text>']
    out = []
    done = 0.0
    for key, value, text in col.segments:
        y0, y1 = ypos(done), ypos(done + value)
        done += value
        k = keys[key]
        out.append(f'<rect class="segment" data-panel="{panel}" data-column="{index}" data-key="{key}" '
                   f'x="{coord(x)}" y="{y1:.3f}" width="{coord(w)}" height="{y0 - y1:.3f}" '
                   f'fill="{k.colour}" fill-opacity="{k.opacity:g}" stroke="#FFFFFF" stroke-width="0.5">'
                   f"<title>{esc(f'{col.hover} · {k.name} {text}')}</title></rect>")
    return out


def _legend(keys: Sequence[Key], width: int, *, top: float) -> tuple[list[str], float]:
    out: list[str] = []
    places, bottom = legend_flow([16 + text_width(k.name, 12) for k in keys], width, top=top, gap=14)
    for i, (k, (x, y)) in enumerate(zip(keys, places, strict=True)):
        out.append(f'<rect class="key" data-key="{i}" x="{coord(x)}" y="{coord(y - 5)}" width="10" '
                   f'height="10" fill="{k.colour}" fill-opacity="{k.opacity:g}" stroke="{AXIS}" '
                   f'stroke-width="0.5"/>')
        out.append(f'<text x="{coord(x + 15)}" y="{coord(y)}" dy="4">{esc(k.name)}</text>')
    return out, bottom
