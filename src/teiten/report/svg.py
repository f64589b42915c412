"""Small inline SVG line charts for the reports: pure functions, no dependencies, no JS.

The output is deterministic (same input, same bytes) and self-contained: colours and
fonts are presentation attributes, not a stylesheet, so one file renders the same inlined
in the HTML report, as an ``<img>`` in Markdown on GitHub, or opened on its own. Every
marker carries a ``<title>`` with its exact value, which browsers show on hover.

Colours are the Okabe–Ito palette (Okabe & Ito, "Color Universal Design", 2008), safe for
the common forms of colour blindness; marker shapes cycle too, so series stay apart in
greyscale print.
"""

from __future__ import annotations

import html
import math
import unicodedata
from collections.abc import Callable, Sequence

from teiten.report.model import WorkloadSection

Series = tuple[str, Sequence[tuple[float, float | None]]]

# Okabe–Ito, reordered so the first series are the most distinct on white; yellow last.
PALETTE = (
    "#0072B2",  # blue
    "#D55E00",  # vermillion
    "#009E73",  # bluish green
    "#E69F00",  # orange
    "#CC79A7",  # reddish purple
    "#56B4E9",  # sky blue
    "#000000",  # black
    "#F0E442",  # yellow
)
SHAPES = ("circle", "square", "diamond", "triangle")

FONT = "system-ui, -apple-system, 'Segoe UI', Roboto, 'Noto Sans', 'Noto Sans CJK JP', sans-serif"
TEXT = "#222222"
MUTED = "#555555"
GRID = "#E3E3E3"
AXIS = "#888888"

# log2 x axis once the client counts span this factor or more (1, 2, 4 ... 192).
LOG_X_MIN_SPAN = 8.0


def line_chart(
    title: str,
    x_label: str,
    y_label: str,
    series: Sequence[Series],
    *,
    log_x: bool = False,
    width: int = 640,
    height: int = 360,
    x_unit: str = "",
    y_unit: str = "",
    y_decimals: int = 1,
) -> str:
    """Render a line chart as an ``<svg>`` element.

    ``series`` is ``[(name, [(x, y or None), ...]), ...]``. The x axis is ticked at the x
    values given (log2 scale when ``log_x`` and every x is positive); the y axis starts at 0
    and is ticked in 1-2-5 steps. A ``None`` y breaks the series' line. ``x_unit``,
    ``y_unit`` and ``y_decimals`` only shape the hover text of the markers, for example
    ``"pg18 · 4 clients · 1234.5 TPS"``.
    """
    xs = sorted({float(x) for _, points in series for x, _ in points})
    ys = [y for _, points in series for _, y in points if y is not None]
    log_x = log_x and bool(xs) and xs[0] > 0

    out: list[str] = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" role="img" aria-label="{esc(title)}" '
        f'font-family="{esc(FONT)}" font-size="12" fill="{TEXT}">',
        f"<title>{esc(title)}</title>",
        f'<rect width="{width}" height="{height}" fill="#FFFFFF"/>',
        f'<text x="12" y="22" font-size="15" font-weight="600">{esc(title)}</text>',
    ]

    legend, legend_bottom = _legend([name for name, _ in series], width, top=34)
    out += legend

    y_ticks = nice_ticks(max(ys, default=0.0))
    y_top = y_ticks[-1]
    tick_decimals = _decimals(y_ticks[1] - y_ticks[0])
    y_texts = [f"{t:,.{tick_decimals}f}" for t in y_ticks]
    left = 30 + max(text_width(t, 11) for t in y_texts) + 8
    right = width - 16
    top = legend_bottom + 12
    bottom = height - 46

    def ypos(y: float) -> float:
        return bottom - y / y_top * (bottom - top)

    def to_axis(x: float) -> float:
        return math.log2(x) if log_x else x

    lo, hi = (to_axis(xs[0]), to_axis(xs[-1])) if xs else (0.0, 0.0)
    inset = 14.0

    def xpos(x: float) -> float:
        if hi == lo:
            return (left + right) / 2
        return left + inset + (to_axis(x) - lo) / (hi - lo) * (right - left - 2 * inset)

    # Grid and y axis.
    for tick, text in zip(y_ticks, y_texts, strict=True):
        ty = coord(ypos(tick))
        out.append(f'<line x1="{coord(left)}" y1="{ty}" x2="{coord(right)}" y2="{ty}" stroke="{GRID}"/>')
        out.append(
            f'<text x="{coord(left - 6)}" y="{ty}" dy="4" text-anchor="end" font-size="11" '
            f'fill="{MUTED}">{esc(text)}</text>'
        )
    out.append(
        f'<line x1="{coord(left)}" y1="{coord(bottom)}" x2="{coord(right)}" y2="{coord(bottom)}" '
        f'stroke="{AXIS}"/>'
    )
    mid_y = coord((top + bottom) / 2)
    out.append(
        f'<text x="16" y="{mid_y}" transform="rotate(-90 16 {mid_y})" text-anchor="middle" '
        f'fill="{MUTED}">{esc(y_label)}</text>'
    )

    # x axis: a tick at every x given, a label where it does not collide with the last one.
    for x in xs:
        px = coord(xpos(x))
        out.append(
            f'<line x1="{px}" y1="{coord(bottom)}" x2="{px}" y2="{coord(bottom + 4)}" stroke="{AXIS}"/>'
        )
    for x in _labelled_ticks(xs, xpos):
        out.append(
            f'<text x="{coord(xpos(x))}" y="{coord(bottom + 17)}" text-anchor="middle" font-size="11" '
            f'fill="{MUTED}">{esc(format_number(x))}</text>'
        )
    x_caption = f"{x_label} (log scale)" if log_x else x_label
    out.append(
        f'<text x="{coord((left + right) / 2)}" y="{coord(height - 10)}" text-anchor="middle" '
        f'fill="{MUTED}">{esc(x_caption)}</text>'
    )
    if not ys:
        out.append(
            f'<text x="{coord((left + right) / 2)}" y="{coord((top + bottom) / 2)}" '
            f'text-anchor="middle" fill="{MUTED}">no data</text>'
        )

    # Lines first, markers on top so every marker stays hoverable.
    for i, (_, points) in enumerate(series):
        d = _path([(xpos(x), None if y is None else ypos(y)) for x, y in points])
        if d:
            out.append(
                f'<path d="{d}" fill="none" stroke="{_colour(i)}" stroke-width="2" '
                f'stroke-linejoin="round" stroke-linecap="round"/>'
            )
    for i, (name, points) in enumerate(series):
        out.append(f'<g fill="{_colour(i)}">')
        for x, y in points:
            if y is None:
                continue
            hover = " · ".join(
                part.strip()
                for part in (name, f"{format_number(x)} {x_unit}", f"{y:.{y_decimals}f} {y_unit}")
            )
            out.append(_marker(SHAPES[i % len(SHAPES)], xpos(x), ypos(y), hover))
        out.append("</g>")
    out.append("</svg>")
    return "\n".join(out)


def workload_charts(section: WorkloadSection) -> tuple[str, str]:
    """The two charts of a workload: median TPS and median latency against clients.

    The x axis is log2 when the client counts span a factor of :data:`LOG_X_MIN_SPAN` or more.
    """
    clients = [c for c in section.clients if c > 0]
    log_x = bool(clients) and max(clients) / min(clients) >= LOG_X_MIN_SPAN
    tps: list[Series] = []
    latency: list[Series] = []
    for s in section.servers:
        tps.append((s.server, [(p.clients, p.tps_median) for p in s.points]))
        latency.append((s.server, [(p.clients, p.latency_ms_median) for p in s.points]))
    tps_chart = line_chart(
        f"{section.workload}: median TPS",
        "clients",
        "TPS",
        tps,
        log_x=log_x,
        x_unit="clients",
        y_unit="TPS",
        y_decimals=1,
    )
    latency_chart = line_chart(
        f"{section.workload}: median latency",
        "clients",
        "latency (ms)",
        latency,
        log_x=log_x,
        x_unit="clients",
        y_unit="ms",
        y_decimals=3,
    )
    return tps_chart, latency_chart


def nice_ticks(maximum: float, *, target: int = 5) -> list[float]:
    """Ticks from 0 to at least ``maximum`` in steps of 1, 2 or 5 times a power of ten."""
    if not maximum > 0 or not math.isfinite(maximum):
        return [0.0, 0.2, 0.4, 0.6, 0.8, 1.0]
    raw = maximum / target
    power = 10.0 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 5, 10) if raw <= m * power * (1 + 1e-9))
    count = math.ceil(maximum / step - 1e-9)
    decimals = _decimals(step)
    return [round(i * step, decimals) for i in range(count + 1)]


def format_number(x: float) -> str:
    """``4`` for 4.0, ``2.5`` for 2.5: client counts and other axis values."""
    return str(int(x)) if float(x).is_integer() else f"{x:g}"


def _legend(names: list[str], width: int, *, top: float) -> tuple[list[str], float]:
    """Legend entries in rows under the title; returns the elements and the bottom y."""
    out: list[str] = []
    x, row = 12.0, 0
    for i, name in enumerate(names):
        item = 30 + text_width(name, 12)
        if x > 12 and x + item > width - 12:
            x, row = 12.0, row + 1
        y = top + row * 18 + 8
        colour = _colour(i)
        out.append(
            f'<line x1="{coord(x)}" y1="{coord(y)}" x2="{coord(x + 22)}" y2="{coord(y)}" '
            f'stroke="{colour}" stroke-width="2"/>'
        )
        out.append(f'<g fill="{colour}">{_shape(SHAPES[i % len(SHAPES)], x + 11, y)}</g>')
        out.append(f'<text x="{coord(x + 28)}" y="{coord(y)}" dy="4">{esc(name)}</text>')
        x += item + 18
    rows = row + 1 if names else 0
    return out, top + rows * 18


def _labelled_ticks(xs: list[float], xpos: Callable[[float], float]) -> list[float]:
    """The x values whose labels fit without overlapping, always keeping the first and last."""
    kept: list[tuple[float, float, float]] = []  # (x, left edge, right edge)
    for x in xs:
        half = text_width(format_number(x), 11) / 2 + 3
        centre = xpos(x)
        if kept and centre - half < kept[-1][2]:
            if x == xs[-1] and len(kept) > 1:
                kept.pop()  # the last count matters more than its neighbour
                if centre - half < kept[-1][2]:
                    continue
            else:
                continue
        kept.append((x, centre - half, centre + half))
    return [x for x, _, _ in kept]


def _path(points: list[tuple[float, float | None]]) -> str:
    """``M``/``L`` path data; a ``None`` y ends a segment, a lone point draws no line."""
    segments: list[list[tuple[float, float]]] = [[]]
    for x, y in points:
        if y is None:
            segments.append([])
        else:
            segments[-1].append((x, y))
    return " ".join(
        "M" + " L".join(f"{coord(x)} {coord(y)}" for x, y in seg) for seg in segments if len(seg) >= 2
    )


def _marker(shape: str, x: float, y: float, hover: str) -> str:
    tag, attrs = _shape_parts(shape, x, y, size=4.5)
    # The <title> child is what browsers show on hover.
    return f"<{tag} {attrs}><title>{esc(hover)}</title></{tag}>"


def _shape(shape: str, x: float, y: float) -> str:
    tag, attrs = _shape_parts(shape, x, y, size=4.0)
    return f"<{tag} {attrs}/>"


def _shape_parts(shape: str, x: float, y: float, *, size: float) -> tuple[str, str]:
    """The element name and attributes of a marker of ``shape`` centred on (x, y)."""
    if shape == "square":
        s = size * 0.9
        return "rect", f'x="{coord(x - s)}" y="{coord(y - s)}" width="{coord(2 * s)}" height="{coord(2 * s)}"'
    if shape == "diamond":
        s = size * 1.25
        pts = [(x, y - s), (x + s, y), (x, y + s), (x - s, y)]
    elif shape == "triangle":
        s = size * 1.2
        pts = [(x, y - s), (x + s, y + s * 0.8), (x - s, y + s * 0.8)]
    else:
        return "circle", f'cx="{coord(x)}" cy="{coord(y)}" r="{coord(size)}"'
    return "polygon", f'points="{" ".join(f"{coord(px)},{coord(py)}" for px, py in pts)}"'


def _colour(i: int) -> str:
    return PALETTE[i % len(PALETTE)]


def _decimals(step: float) -> int:
    return max(0, -math.floor(math.log10(step) + 1e-9))


def coord(v: float) -> str:
    """A coordinate with one decimal and no ``-0``: stable text for the same input."""
    text = f"{v:.1f}".removesuffix(".0")
    return "0" if text == "-0" else text


def text_width(text: str, size: float) -> float:
    """Rough rendered width: 0.6 em per narrow character, 1 em per wide (CJK) one."""
    return sum(size if unicodedata.east_asian_width(c) in "WF" else size * 0.6 for c in text)


def esc(text: str) -> str:
    """Escape for XML text and attributes, dropping the control characters XML 1.0 forbids."""
    clean = "".join(c for c in text if c >= " " or c in "\t\n\r")
    return html.escape(clean, quote=True)
