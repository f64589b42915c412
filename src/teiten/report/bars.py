"""100%-stacked horizontal bar charts as SVG, for the activity figures (CPU breakdown,
wait events): pure functions, deterministic, self-contained like :mod:`teiten.report.svg`,
a ``<title>`` with the exact value on every segment.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from teiten.report.svg import AXIS, MUTED, TEXT, coord, esc, legend_flow, svg_head, text_width


def format_percent(value: float) -> str:
    return f"{value:.1f}%"


@dataclass(frozen=True)
class Segment:
    name: str
    percent: float  # as measured: the title shows it exactly
    colour: str
    note: str = ""  # added to the hover text


Bar = tuple[str, tuple[Segment, ...] | None]  # server, its segments (None: nothing recorded)


def stacked_bars(
    title: str,
    legend: Sequence[tuple[str, str]],
    rows: Sequence[tuple[str, Sequence[Bar]]],
    *,
    caption: str = "",
    width: int = 520,
    nothing: str = "nothing recorded",
    no_data: str = "no data",
) -> str:
    """Render 100%-stacked horizontal bars as an ``<svg>`` element.

    ``rows`` is ``[(group, [(server, segments or None), ...]), ...]``: one group per
    client count (``group`` is its label, "4 clients"), one bar per server. Each bar fills
    the full width, every segment in proportion to its share of the bar's total; a segment's ``<title>`` says
    ``"pg18 · 4 clients · user 46.2%"``. Segment edges are rounded once, cumulatively, so
    the segments of a bar tile it exactly. The default width is about what one of the two
    side-by-side figures of the HTML report gets, so the small labels stay at their size.
    """
    bar_h, bar_gap, group_gap = 20.0, 4.0, 12.0
    group_w = max((text_width(group, 12) for group, _ in rows), default=0.0)
    names = [server for _, bars in rows for server, _ in bars]
    server_w = min(max((text_width(n, 12) for n in names), default=0.0), width * 0.25)
    bar_left = 12 + group_w + 12 + server_w + 8
    bar_right = width - 16.0
    span = bar_right - bar_left

    body: list[str] = []
    legend_items, legend_bottom = _legend(legend, width, top=34)
    y = legend_bottom + 14
    top = y
    for group, bars in rows:
        group_top = y
        for server, segments in bars:
            who = f"{server} · {group}"
            body.append(
                f'<text x="{coord(bar_left - 8)}" y="{coord(y + bar_h / 2)}" dy="4" '
                f'text-anchor="end">{esc(_clip(server, server_w))}'
                f"<title>{esc(_summary(who, segments, nothing))}</title></text>"
            )
            body += _bar(who, segments, bar_left, y, span, bar_h, nothing)
            y += bar_h + bar_gap
        mid = (group_top + y - bar_gap) / 2
        body.append(
            f'<text x="12" y="{coord(mid)}" dy="4" font-weight="600">'
            f"{esc(group)}</text>"
        )
        y += group_gap - bar_gap
    bottom = y - group_gap + 6

    # The percent axis under the bars.
    axis = [f'<line x1="{coord(bar_left)}" y1="{coord(bottom)}" x2="{coord(bar_right)}" '
            f'y2="{coord(bottom)}" stroke="{AXIS}"/>']
    for pct in (0, 25, 50, 75, 100):
        x = coord(bar_left + span * pct / 100)
        axis.append(f'<line x1="{x}" y1="{coord(top - 4)}" x2="{x}" y2="{coord(bottom + 4)}" '
                    f'stroke="{AXIS}" stroke-opacity="0.35" stroke-dasharray="2 3"/>')
        axis.append(f'<text x="{x}" y="{coord(bottom + 17)}" text-anchor="middle" font-size="11" '
                    f'fill="{MUTED}">{pct}%</text>')
    height = bottom + (40 if caption else 26)
    if caption:
        axis.append(f'<text x="{coord(bar_left + span / 2)}" y="{coord(height - 8)}" '
                    f'text-anchor="middle" fill="{MUTED}">{esc(caption)}</text>')
    if not rows:
        body.append(f'<text x="{coord(width / 2)}" y="{coord(top + 10)}" text-anchor="middle" '
                    f'fill="{MUTED}">{esc(no_data)}</text>')

    h = coord(height)
    return "\n".join([
        *svg_head(title, width, h),
        *legend_items,
        *axis,  # the grid shows between the bars and through "nothing recorded"
        *body,
        "</svg>",
    ])


def _bar(who: str, segments: tuple[Segment, ...] | None, left: float, y: float, span: float,
         height: float, nothing: str) -> list[str]:
    if segments is None:
        return [
            f'<rect x="{coord(left)}" y="{coord(y)}" width="{coord(span)}" height="{coord(height)}" '
            f'fill="#FFFFFF" stroke="{AXIS}" stroke-dasharray="3 3"><title>{esc(who)} · '
            f"{esc(nothing)}</title></rect>",
            f'<text x="{coord(left + span / 2)}" y="{coord(y + height / 2)}" dy="4" '
            f'text-anchor="middle" font-size="11" fill="{MUTED}">{esc(nothing)}</text>',
        ]
    total = sum(s.percent for s in segments)
    out: list[str] = []
    done = 0.0
    x0 = round(left, 1)
    for seg in segments:
        done += seg.percent
        x1 = round(left + span * done / total, 1)
        if seg.percent <= 0 or x1 <= x0:
            x0 = x1
            continue
        hover = f"{who} · {seg.name} {format_percent(seg.percent)}"
        if seg.note:
            hover += f" ({seg.note})"
        out.append(
            f'<rect x="{coord(x0)}" y="{coord(y)}" width="{coord(x1 - x0)}" height="{coord(height)}" '
            f'fill="{seg.colour}" stroke="#FFFFFF" stroke-width="0.5">'
            f"<title>{esc(hover)}</title></rect>"
        )
        label = f"{seg.percent:.0f}%"
        if x1 - x0 >= text_width(label, 10) + 6:
            out.append(
                f'<text x="{coord((x0 + x1) / 2)}" y="{coord(y + height / 2)}" dy="3.5" '
                f'text-anchor="middle" font-size="10" fill="{_ink(seg.colour)}" '
                f'pointer-events="none">{label}</text>'
            )
        x0 = x1
    return out


def _summary(who: str, segments: tuple[Segment, ...] | None, nothing: str) -> str:
    if segments is None:
        return f"{who} · {nothing}"
    return f"{who} · " + ", ".join(f"{s.name} {format_percent(s.percent)}" for s in segments)


def _legend(items: Sequence[tuple[str, str]], width: int, *, top: float) -> tuple[list[str], float]:
    """Colour swatches in rows under the title; returns the elements and the bottom y."""
    out: list[str] = []
    places, bottom = legend_flow([16 + text_width(n, 12) for n, _ in items], width, top=top,
                                 gap=14)
    for (name, colour), (x, y) in zip(items, places, strict=True):
        out.append(f'<rect x="{coord(x)}" y="{coord(y - 5)}" width="10" height="10" '
                   f'fill="{colour}" stroke="{AXIS}" stroke-width="0.5"/>')
        out.append(f'<text x="{coord(x + 15)}" y="{coord(y)}" dy="4">{esc(name)}</text>')
    return out, bottom


def _clip(text: str, limit: float) -> str:
    """``text`` cut with an ellipsis to fit ``limit`` pixels at 12 px (full text on hover).
    A compared study's server (``study (2)/server``) keeps the start and as much of the end
    as fits and loses the middle, so the bars of two servers do not read alike."""
    if text_width(text, 12) <= limit:
        return text
    if "/" in text:
        head, tail = text[:6], text[6:]
        while tail and text_width(head + "…" + tail, 12) > limit:
            tail = tail[1:]
        if "/" in tail:
            return head + "…" + tail
    while text and text_width(text + "…", 12) > limit:
        text = text[:-1]
    return text + "…"


def _ink(colour: str) -> str:
    """Dark or white text, whichever reads better on ``colour`` (by relative luminance)."""
    r, g, b = (int(colour[i:i + 2], 16) / 255 for i in (1, 3, 5))
    lin = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in (r, g, b)]
    luminance = 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2]
    return "#FFFFFF" if luminance < 0.2 else TEXT
