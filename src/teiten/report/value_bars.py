"""Horizontal bars of absolute values as SVG (sizes and times per variant), in the style of
:mod:`teiten.report.bars`: pure, deterministic, a ``<title>`` with the exact value on
every bar. Bars of one series keep one palette colour."""

from __future__ import annotations

from collections.abc import Sequence

from teiten.report.svg import AXIS, MUTED, PALETTE, coord, esc, nice_ticks, svg_head, text_width

Bar = tuple[str, float, str]  # series (a server), value, the value as text


def value_bars(title: str, rows: Sequence[tuple[str, Sequence[Bar]]], *, width: int = 640,
               no_data: str = "no data") -> str:
    """``rows`` is ``[(group, [(series, value, text), ...]), ...]``: one group per variant,
    one bar per series, all on one linear axis from 0 to the largest value."""
    bar_h, bar_gap, group_gap = 16.0, 3.0, 10.0
    series = list(dict.fromkeys(name for _, bars in rows for name, _, _ in bars))
    colour = {name: PALETTE[i % len(PALETTE)] for i, name in enumerate(series)}
    label_w = min(max((text_width(g, 12) for g, _ in rows), default=0.0), width * 0.4)
    left, right = 12 + label_w + 10, width - 90.0
    top = 44.0
    if len(series) > 1:
        x = 12.0
        legend = []
        for name in series:
            legend.append(f'<rect x="{coord(x)}" y="30" width="10" height="10" fill="{colour[name]}"/>'
                          f'<text x="{coord(x + 14)}" y="39">{esc(name)}</text>')
            x += 30 + text_width(name, 12)
        top = 56.0
    else:
        legend = []
    most = max((v for _, bars in rows for _, v, _ in bars), default=0.0)
    ticks = nice_ticks(most) if most > 0 else [0.0]
    scale = (right - left) / (ticks[-1] or 1.0)
    body, y = [], top
    for group, bars in rows:
        start = y
        for name, value, text in bars:
            w = max(value * scale, 0.5)
            body.append(f'<rect x="{coord(left)}" y="{coord(y)}" width="{coord(w)}" height="{coord(bar_h)}" '
                        f'fill="{colour[name]}"><title>{esc(f"{group} · {name} · {text}")}</title></rect>')
            body.append(f'<text x="{coord(left + w + 4)}" y="{coord(y + bar_h - 4)}" font-size="11" '
                        f'fill="{MUTED}">{esc(text)}</text>')
            y += bar_h + bar_gap
        body.append(f'<text x="{coord(left - 8)}" y="{coord((start + y - bar_gap) / 2 + 4)}" '
                    f'text-anchor="end">{esc(group)}</text>')
        y += group_gap
    if not rows:
        body.append(f'<text x="{coord(width / 2)}" y="{coord(top + 10)}" text-anchor="middle" '
                    f'fill="{MUTED}">{esc(no_data)}</text>')
        y += 20
    axis = [f'<line x1="{coord(left)}" y1="{coord(top - 4)}" x2="{coord(left)}" y2="{coord(y)}" '
            f'stroke="{AXIS}"/>']
    height = y + 10
    h = coord(height)
    return "\n".join([
        *svg_head(title, width, h),
        *legend, *axis, *body, "</svg>",
    ])
