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
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from teiten.report import placing

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


@dataclass(frozen=True)
class Line:
    """One series of a line chart, with what may be drawn around it.

    ``band`` and ``whiskers`` are ``(x, low, high)``: a translucent polygon between the
    bounds (broken where a point has none), or error bars at each x. ``hover`` replaces
    the default marker text at an x. ``colour`` is a palette index (default: the position
    of the line), so a server keeps its colour in every chart; ``dodge`` shifts the whole
    line sideways by that many pixels, so that overlapping whiskers stay apart.
    """

    name: str
    points: Sequence[tuple[float, float | None]]
    band: Sequence[tuple[float, float, float]] = ()
    whiskers: Sequence[tuple[float, float, float]] = ()
    hover: Mapping[float, str] = field(default_factory=dict)
    colour: int | None = None
    dodge: float = 0.0
    dashed: bool = False  # a reference series, such as a theoretical line


def svg_head(title: str, width: int, height: str) -> list[str]:
    """The opening of every chart: the element, its accessible title, a white ground and
    the visible title. Close it with ``</svg>``."""
    return [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" role="img" aria-label="{esc(title)}" '
        f'font-family="{esc(FONT)}" font-size="12" fill="{TEXT}">',
        f"<title>{esc(title)}</title>",
        f'<rect width="{width}" height="{height}" fill="#FFFFFF"/>',
        f'<text x="12" y="22" font-size="15" font-weight="600">{esc(title)}</text>',
    ]


def line_chart(
    title: str,
    x_label: str,
    y_label: str,
    series: Sequence[Series | Line],
    *,
    log_x: bool = False,
    width: int = 640,
    height: int = 360,
    x_unit: str = "",
    y_unit: str = "",
    y_decimals: int = 1,
    from_zero: bool = True,
    reference: tuple[float, str] | None = None,
    margin: tuple[float, float, str] | None = None,
    log_caption: str = "{label} (log scale)",
    no_data: str = "no data",
    x_labels: Mapping[float, str] | None = None,
) -> str:
    """Render a line chart as an ``<svg>`` element.

    ``series`` is ``[(name, [(x, y or None), ...]), ...]`` or :class:`Line` objects. The x
    axis is ticked at the x values given (log2 scale when ``log_x`` and every x is
    positive); the y axis starts at 0 (or, without ``from_zero``, spans the data) and is
    ticked in 1-2-5 steps. A ``None`` y breaks the series' line. ``reference`` draws a
    dashed horizontal line at a y with a label; ``margin`` shades the band between two y values
    (a ratio's "no difference") and labels it. A whisker that runs past the axis ends there in
    an arrow, beside it the value it runs to. ``x_unit``, ``y_unit`` and ``y_decimals``
    shape the default hover text of the markers, for example
    ``"pg18 · 4 clients · 1234.5 TPS"``. ``x_labels`` names x values (versions along a line).
    """
    lines = [s if isinstance(s, Line) else Line(s[0], s[1]) for s in series]
    xs = sorted({float(x) for line in lines for x, _ in line.points})
    ys = [y for line in lines for _, y in line.points if y is not None]
    has_data = bool(ys)
    if reference is not None:
        ys.append(reference[0])
    if margin is not None:
        ys += margin[:2]
    ys += _bounds_shown(ys, [v for line in lines for _, lo, hi in (*line.band, *line.whiskers)
                             for v in (lo, hi)], from_zero=from_zero)
    log_x = log_x and bool(xs) and xs[0] > 0

    out: list[str] = svg_head(title, width, str(height))

    legend, legend_bottom = _legend([(line.name, _index(line, i), line.dashed) for i, line in enumerate(lines)],
                                    width, top=34)
    out += legend

    y_ticks = nice_ticks(max(ys, default=0.0)) if from_zero or not ys else nice_range(min(ys), max(ys))
    y_low, y_top = y_ticks[0], y_ticks[-1]
    tick_decimals = _decimals(y_ticks[1] - y_ticks[0])
    y_texts = [f"{t:,.{tick_decimals}f}" for t in y_ticks]
    left = 30 + max(text_width(t, 11) for t in y_texts) + 8
    right = width - 16
    top = legend_bottom + 12
    bottom = height - 46

    def ypos(y: float) -> float:
        return bottom - (y - y_low) / (y_top - y_low) * (bottom - top)

    def clipped(y: float) -> float:  # a band or whisker past the axis ends at its edge
        return ypos(min(max(y, y_low), y_top))

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
            f'fill="{MUTED}">{esc((x_labels or {}).get(x) or format_number(x))}</text>'
        )
    x_caption = log_caption.format(label=x_label) if log_x else x_label
    out.append(
        f'<text x="{coord((left + right) / 2)}" y="{coord(height - 10)}" text-anchor="middle" '
        f'fill="{MUTED}">{esc(x_caption)}</text>'
    )
    if not has_data:
        out.append(
            f'<text x="{coord((left + right) / 2)}" y="{coord((top + bottom) / 2)}" '
            f'text-anchor="middle" fill="{MUTED}">{esc(no_data)}</text>'
        )
    # The 100% line's label: at its right end, unless a point sits there (then wherever none is).
    ref_at = None if reference is None else placing.place(
        text_width(reference[1], 11), 11, rows=[ypos(reference[0]) - 5, ypos(reference[0]) + 14],
        left=left, right=right, columns=_columns(lines, xpos), markers=_markers(lines, xpos, ypos),
        prefer_right=True)
    if margin is not None:
        band_top, band_bottom = clipped(margin[1]), clipped(margin[0])
        out.append(f'<rect class="margin" x="{coord(left)}" y="{coord(band_top)}" '
                   f'width="{coord(right - left)}" height="{coord(band_bottom - band_top)}" '
                   f'fill="{AXIS}" fill-opacity="0.14">'
                   f"<title>{esc(margin[2])}</title></rect>")
        avoid = [] if ref_at is None or reference is None else [
            placing.text_box(ref_at, text_width(reference[1], 11), 11)]
        label = placing.band_label(
            text_width(margin[2], 10), band_top, band_bottom, top=top, bottom=bottom, left=left, right=right,
            columns=_columns(lines, xpos), markers=_markers(lines, xpos, ypos), lines=avoid + [
                box for line in lines for box in (*placing.whisker_boxes(
                    [(xpos(x) + line.dodge, clipped(lo), clipped(hi)) for x, lo, hi in line.whiskers]),
                    *placing.path_boxes([(xpos(x) + line.dodge, None if y is None else ypos(y))
                                         for x, y in line.points]))])
        out.append(f'<text class="margin-label" x="{coord(label.x)}" y="{coord(label.y)}" font-size="10" '
                   + ("" if label.anchor == "start" else f'text-anchor="{label.anchor}" ')
                   + f'fill="{MUTED}">{esc(margin[2])}</text>')
    if reference is not None and ref_at is not None:
        ry = coord(ypos(reference[0]))
        out.append(f'<line x1="{coord(left)}" y1="{ry}" x2="{coord(right)}" y2="{ry}" '
                   f'stroke="{TEXT}" stroke-width="1.2" stroke-dasharray="6 4"/>')
        out.append(f'<text class="reference-label" x="{coord(ref_at.x)}" y="{coord(ref_at.y)}" '
                   f'text-anchor="{ref_at.anchor}" font-size="11" fill="{MUTED}">{esc(reference[1])}</text>')

    # Bands under everything, then whiskers and lines, markers on top so every marker
    # stays hoverable.
    for i, line in enumerate(lines):
        out += _bands(line, xpos, clipped, _colour(_index(line, i)))
    placed: list[tuple[float, float]] = []  # the clip marks' texts drawn so far
    for i, line in enumerate(lines):
        colour = _colour(_index(line, i))
        for x, low, high in line.whiskers:
            at = xpos(x) + line.dodge
            out.append(_whisker(at, clipped(low), clipped(high), colour, caps=(y_low <= low, high <= y_top)))
            for value, edge, up in ((high, top, True), (low, bottom, False)):
                if (value > y_top) if up else (value < y_low):
                    text = f"{value:,.{y_decimals}f}{y_unit}"
                    out.append(_clip_mark(at, edge, up, colour, text, right=right, placed=placed))
        d = _path([(xpos(x) + line.dodge, None if y is None else ypos(y)) for x, y in line.points])
        if d:
            out.append(
                f'<path d="{d}" fill="none" stroke="{colour}" stroke-width="2" '
                f'stroke-linejoin="round" stroke-linecap="round"'
                + (' stroke-dasharray="7 5"' if isinstance(line, Line) and line.dashed else "") + "/>"
            )
    for i, line in enumerate(lines):
        index = _index(line, i)
        out.append(f'<g fill="{_colour(index)}">')
        for x, y in line.points:
            if y is None:
                continue
            hover = line.hover.get(float(x)) or " · ".join(
                part.strip()
                for part in (line.name, f"{format_number(x)} {x_unit}", f"{y:.{y_decimals}f} {y_unit}")
            )
            out.append(_marker(SHAPES[index % len(SHAPES)], xpos(x) + line.dodge, ypos(y), hover))
        out.append("</g>")
    out.append("</svg>")
    return "\n".join(out)


def _markers(lines: Sequence[Line], xpos: Callable[[float], float],
             ypos: Callable[[float], float]) -> list[placing.Box]:
    return placing.marker_boxes([(xpos(x) + line.dodge, ypos(y)) for line in lines
                                 for x, y in line.points if y is not None])


def _columns(lines: Sequence[Line], xpos: Callable[[float], float]) -> list[float]:
    return [xpos(x) + line.dodge for line in lines for x, _ in line.points]


def _index(line: Line, position: int) -> int:
    return position if line.colour is None else line.colour


def _bands(line: Line, xpos: Callable[[float], float], ypos: Callable[[float], float],
           colour: str) -> list[str]:
    """Translucent polygons between the band's bounds, one per run of consecutive points
    that have bounds; a lone point gets a short bar."""
    def shifted(x: float) -> float:
        return xpos(x) + line.dodge

    have = {float(x): (lo, hi) for x, lo, hi in line.band}
    runs: list[list[tuple[float, float, float]]] = [[]]
    for x, _ in line.points:
        bounds = have.get(float(x))
        if bounds is None:
            runs.append([])
        else:
            runs[-1].append((float(x), *bounds))
    out = []
    for run in runs:
        if len(run) == 1:
            x, lo, hi = run[0]
            out.append(f'<rect x="{coord(shifted(x) - 4)}" y="{coord(ypos(hi))}" width="8" '
                       f'height="{coord(max(ypos(lo) - ypos(hi), 0.5))}" fill="{colour}" '
                       f'fill-opacity="0.18"/>')
        elif run:
            upper = [f"{coord(shifted(x))},{coord(ypos(hi))}" for x, _, hi in run]
            lower = [f"{coord(shifted(x))},{coord(ypos(lo))}" for x, lo, _ in reversed(run)]
            out.append(f'<polygon points="{" ".join(upper + lower)}" fill="{colour}" '
                       f'fill-opacity="0.15" stroke="none"/>')
    return out


def _bounds_shown(ys: Sequence[float], bounds: Sequence[float], *, from_zero: bool) -> list[float]:
    """The bands' and whiskers' bounds the y axis stretches to: those within a quarter of
    the points' span beyond them. Farther ones are clipped at the axis' edge, so that one
    wide interval does not flatten every line (an update chart ran to 8,000 TPS for lines
    at 200-900)."""
    if not ys:
        return list(bounds)
    low, high = (0.0 if from_zero else min(ys)), max(ys)
    slack = (high - low) / 4 if high > low else abs(high) / 4
    return [min(max(v, low - slack), high + slack) for v in bounds]


def _whisker(x: float, y_low: float, y_high: float, colour: str,
             caps: tuple[bool, bool] = (True, True)) -> str:
    """An error bar from ``y_low`` to ``y_high`` (pixels), capped at the ends it reaches
    (an end clipped at the axis' edge gets no cap)."""
    d = f"M{coord(x)} {coord(y_low)} L{coord(x)} {coord(y_high)}"
    if caps[0]:
        d += f" M{coord(x - 4)} {coord(y_low)} L{coord(x + 4)} {coord(y_low)}"
    if caps[1]:
        d += f" M{coord(x - 4)} {coord(y_high)} L{coord(x + 4)} {coord(y_high)}"
    return f'<path d="{d}" fill="none" stroke="{colour}" stroke-width="1.5" stroke-opacity="0.8"/>'


def _clip_mark(x: float, edge: float, up: bool, colour: str, text: str, *, right: float,
               placed: list[tuple[float, float]]) -> str:
    """An arrow at the axis' ``edge`` (pixels) where a whisker runs past it, pointing the way
    it runs, and the value it runs to beside it, moved down (up) off the texts ``placed``."""
    sign = 1 if up else -1
    tip = f"{coord(x)},{coord(edge)}"
    base = f"{coord(x - 4)},{coord(edge + 7 * sign)} {coord(x + 4)},{coord(edge + 7 * sign)}"
    ty = edge + (10 if up else -3)
    while any(abs(px - x) < 60 and abs(py - ty) < 10 for px, py in placed):
        ty += 11 * sign
    placed.append((x, ty))
    tx, anchor = (x + 6, "start") if x + 60 < right else (x - 6, "end")
    return (f'<g class="clip" fill="{colour}"><polygon points="{tip} {base}"/>'
            f'<text x="{coord(tx)}" y="{coord(ty)}" font-size="10" text-anchor="{anchor}">'
            f"{esc(text)}</text></g>")


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


def nice_range(low: float, high: float, *, target: int = 5) -> list[float]:
    """Ticks covering ``low``..``high`` (not from 0) in steps of 1, 2 or 5 times a power of ten."""
    if not math.isfinite(low) or not math.isfinite(high):
        return nice_ticks(0)
    if high - low <= 0:
        low, high = low - 1, high + 1
    raw = (high - low) / target
    power = 10.0 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 5, 10) if raw <= m * power * (1 + 1e-9))
    first = math.floor(low / step + 1e-9)
    last = math.ceil(high / step - 1e-9)
    decimals = _decimals(step)
    return [round(i * step, decimals) for i in range(first, last + 1)]


def format_number(x: float) -> str:
    """``4`` for 4.0, ``2.5`` for 2.5: client counts and other axis values."""
    return str(int(x)) if float(x).is_integer() else f"{x:g}"


def legend_flow(widths: list[float], width: int, *, top: float,
                gap: float) -> tuple[list[tuple[float, float]], float]:
    """Where legend items of these widths go, left to right in rows of 18 px that wrap at
    ``width``: their (x, y) and the bottom y of the legend."""
    places = []
    x, row = 12.0, 0
    for item in widths:
        if x > 12 and x + item > width - 12:
            x, row = 12.0, row + 1
        places.append((x, top + row * 18 + 8))
        x += item + gap
    return places, top + (row + 1 if widths else 0) * 18


def _legend(names: list[tuple[str, int, bool]], width: int, *, top: float) -> tuple[list[str], float]:
    """Legend entries (name, palette index, dashed) in rows under the title, each line drawn as
    its series is; returns the elements and the bottom y."""
    out: list[str] = []
    places, bottom = legend_flow([30 + text_width(n, 12) for n, _, _ in names], width, top=top,
                                 gap=18)
    for (name, i, dashed), (x, y) in zip(names, places, strict=True):
        colour = _colour(i)
        out.append(
            f'<line x1="{coord(x)}" y1="{coord(y)}" x2="{coord(x + 22)}" y2="{coord(y)}" '
            f'stroke="{colour}" stroke-width="2"' + (' stroke-dasharray="4 3"' if dashed else "") + "/>"
        )
        out.append(f'<g fill="{colour}">{_shape(SHAPES[i % len(SHAPES)], x + 11, y)}</g>')
        out.append(f'<text x="{coord(x + 28)}" y="{coord(y)}" dy="4">{esc(name)}</text>')
    return out, bottom


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
