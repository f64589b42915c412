"""A workload's system and database activity: what the monitors saw beside each number.

Two 100%-stacked bar charts (CPU breakdown and wait events, one bar per client count and
server, servers side by side within a client count so versions compare at the same load),
the device-utilisation table with the checkpoints and autovacuum runs that fell inside the
measured window, and the links to flame graphs. Both reports (Markdown and HTML) take their
words and numbers from here; like :mod:`teiten.report.svg`, the charts are deterministic,
self-contained SVG with a ``<title>`` carrying the exact value on every segment.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from urllib.parse import quote

from teiten.report.model import Activity, ServerSeries, WorkloadSection
from teiten.report.svg import AXIS, FONT, MUTED, TEXT, coord, esc, text_width

ACTIVITY_HEADING = "System and database activity (システムとデータベースの稼働状況)"
CPU_HEADING = "CPU breakdown (CPU使用率の内訳)"
WAITS_HEADING = "Wait events (待機イベント)"
DEVICE_HEADING = "Device utilisation (%util)"
PROFILES_HEADING = "Flame graphs (フレームグラフ)"
WINDOW_HEADING = "Inside the measured window (測定区間内)"
WINDOW_NOTE = (
    "A checkpoint or an autovacuum run inside the measured window breaks the fixed-point "
    "method: the figures at those client counts are disturbed and should be measured again."
)

# Okabe–Ito colours in a fixed role each, so one colour means one thing in every report;
# idle is a light grey so the busy part of a bar stands out.
CPU_PARTS = ("user", "sys", "iowait", "steal", "irq", "idle")
CPU_COLOURS = {
    "user": "#0072B2",    # blue
    "sys": "#D55E00",     # vermillion
    "iowait": "#E69F00",  # orange
    "steal": "#CC79A7",   # reddish purple
    "irq": "#009E73",     # bluish green
    "idle": "#E3E3E3",    # light grey
}
CPU_EVENT = "CPU:CPU"
CPU_EVENT_COLOUR = "#0072B2"  # the blue of CPU user time
# For the other wait events, in order of their total share: the rest of Okabe–Ito (no
# black: it hides the segment labels), then Paul Tol's "muted" scheme, also safe for the
# common colour blindnesses. Events beyond these fold into "other", so no colour repeats.
WAIT_PALETTE = (
    "#D55E00", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#F0E442",
    "#882255", "#44AA99", "#332288", "#999933", "#DDCC77",
)
OTHER = "other"
OTHER_COLOUR = "#A8A8A8"
FALLBACK_COLOUR = "#777777"  # a CPU part the palette does not know
DEVICE_NAMES = {"data": "data", "wal": "WAL"}

# Shares below this (0.05%) print as 0.0%: no "other" segment for float dust.
MIN_SHARE = 0.0005


@dataclass(frozen=True)
class Segment:
    name: str
    percent: float  # as measured: the title shows it exactly
    colour: str
    note: str = ""  # added to the hover text


Bar = tuple[str, tuple[Segment, ...] | None]  # server, its segments (None: nothing recorded)


@dataclass(frozen=True)
class DeviceTable:
    """%util per client count: one column per (server, device), then what broke the window."""

    servers: tuple[str, ...]
    devices: tuple[str, ...]  # display names, in column order within each server
    rows: tuple[tuple[int, tuple[str, ...], str], ...]  # clients, cells, violations ("" if none)

    @property
    def has_violations(self) -> bool:
        return any(v for _, _, v in self.rows)


def has_activity(section: WorkloadSection) -> bool:
    """Whether any server of the section carries monitor data or flame graphs."""
    return any(s.activity or s.profiles or s.profile_diffs for s in section.servers)


def clients_text(clients: int) -> str:
    return f"{clients} client" if clients == 1 else f"{clients} clients"


def format_percent(value: float) -> str:
    return f"{value:.1f}%"


def cpu_bars(section: WorkloadSection) -> str:
    """The CPU breakdown as 100%-stacked bars: user, sys, iowait, steal, irq, idle.

    Widths are each part's share of the bar's total (the monitors' parts sum to about,
    not exactly, 100); the hover text gives the percentage as measured.
    """
    def segments(a: Activity) -> tuple[Segment, ...] | None:
        names = [p for p in CPU_PARTS if p in a.cpu] + sorted(set(a.cpu) - set(CPU_PARTS))
        parts = tuple(Segment(p, a.cpu[p], CPU_COLOURS.get(p, FALLBACK_COLOUR)) for p in names)
        return parts if sum(s.percent for s in parts) > 0 else None

    legend = [(p, CPU_COLOURS[p]) for p in CPU_PARTS]
    return stacked_bars(
        f"{section.workload}: {CPU_HEADING}", legend, _rows(section, segments),
        caption="share of CPU time (all cores)",
    )


def wait_colours(section: WorkloadSection) -> dict[str, str]:
    """A colour per wait event of the section, the same in every bar.

    CPU:CPU is always :data:`CPU_EVENT_COLOUR`; the other events take
    :data:`WAIT_PALETTE` in order of their total share over all bars (ties by name).
    Events past the palette's end get no colour and count as "other".
    """
    totals: dict[str, float] = {}
    for s in section.servers:
        for a in s.activity:
            for event, share in a.waits.items():
                totals[event] = totals.get(event, 0.0) + share
    ranked = sorted((e for e in totals if e != CPU_EVENT), key=lambda e: (-totals[e], e))
    colours = {CPU_EVENT: CPU_EVENT_COLOUR} if CPU_EVENT in totals else {}
    colours.update(zip(ranked, WAIT_PALETTE, strict=False))
    return colours


def wait_bars(section: WorkloadSection) -> str:
    """The wait events as 100%-stacked bars of their share of the samples.

    Segments keep one order in every bar (CPU:CPU first, then by total share), so the
    same event sits in the same place; what a server's top list leaves out is "other".
    """
    colours = wait_colours(section)
    order = list(colours)

    def segments(a: Activity) -> tuple[Segment, ...] | None:
        if not a.waits:
            return None
        parts = [Segment(e, a.waits[e] * 100, colours[e]) for e in order if e in a.waits]
        folded = {e: v for e, v in a.waits.items() if e not in colours}
        rest = 1.0 - sum(a.waits.values()) + sum(folded.values())
        if rest >= MIN_SHARE:
            note = "events outside the top list"
            if folded:
                note += "; includes " + ", ".join(
                    f"{e} {format_percent(v * 100)}" for e, v in sorted(folded.items())
                )
            parts.append(Segment(OTHER, rest * 100, OTHER_COLOUR, note))
        return tuple(parts)

    rows = _rows(section, segments)
    used = {seg.name for _, bars in rows for _, segs in bars for seg in segs or ()}
    legend = [(e, colours[e]) for e in order if e in used]
    if OTHER in used:
        legend.append((OTHER, OTHER_COLOUR))
    return stacked_bars(
        f"{section.workload}: {WAITS_HEADING}", legend, rows,
        caption="share of wait-event samples of the client backends",
    )


def stacked_bars(
    title: str,
    legend: Sequence[tuple[str, str]],
    rows: Sequence[tuple[int, Sequence[Bar]]],
    *,
    caption: str = "",
    width: int = 520,
) -> str:
    """Render 100%-stacked horizontal bars as an ``<svg>`` element.

    ``rows`` is ``[(clients, [(server, segments or None), ...]), ...]``: one group per
    client count, one bar per server. Each bar fills the full width, every segment in
    proportion to its share of the bar's total; a segment's ``<title>`` says
    ``"pg18 · 4 clients · user 46.2%"``. Segment edges are rounded once, cumulatively, so
    the segments of a bar tile it exactly. The default width is about what one of the two
    side-by-side figures of the HTML report gets, so the small labels stay at their size.
    """
    bar_h, bar_gap, group_gap = 20.0, 4.0, 12.0
    group_w = max((text_width(clients_text(c), 12) for c, _ in rows), default=0.0)
    names = [server for _, bars in rows for server, _ in bars]
    server_w = min(max((text_width(n, 12) for n in names), default=0.0), width * 0.25)
    bar_left = 12 + group_w + 12 + server_w + 8
    bar_right = width - 16.0
    span = bar_right - bar_left

    body: list[str] = []
    legend_items, legend_bottom = _legend(legend, width, top=34)
    y = legend_bottom + 14
    top = y
    for clients, bars in rows:
        group_top = y
        for server, segments in bars:
            who = f"{server} · {clients_text(clients)}"
            body.append(
                f'<text x="{coord(bar_left - 8)}" y="{coord(y + bar_h / 2)}" dy="4" '
                f'text-anchor="end">{esc(_clip(server, server_w))}'
                f"<title>{esc(_summary(who, segments))}</title></text>"
            )
            body += _bar(who, segments, bar_left, y, span, bar_h)
            y += bar_h + bar_gap
        mid = (group_top + y - bar_gap) / 2
        body.append(
            f'<text x="12" y="{coord(mid)}" dy="4" font-weight="600">'
            f"{esc(clients_text(clients))}</text>"
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
                    f'fill="{MUTED}">no data</text>')

    h = coord(height)
    return "\n".join([
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{h}" '
        f'viewBox="0 0 {width} {h}" role="img" aria-label="{esc(title)}" '
        f'font-family="{esc(FONT)}" font-size="12" fill="{TEXT}">',
        f"<title>{esc(title)}</title>",
        f'<rect width="{width}" height="{h}" fill="#FFFFFF"/>',
        f'<text x="12" y="22" font-size="15" font-weight="600">{esc(title)}</text>',
        *legend_items,
        *axis,  # the grid shows between the bars and through "nothing recorded"
        *body,
        "</svg>",
    ])


def device_table(section: WorkloadSection) -> DeviceTable:
    """%util of each device per client count and server (servers with any activity)."""
    servers = _activity_servers(section)
    keys = {k for s in servers for a in s.activity for k in a.device_util}
    devices = [k for k in DEVICE_NAMES if k in keys] + sorted(keys - set(DEVICE_NAMES))
    rows = []
    for clients in _activity_clients(section):
        cells: list[str] = []
        violations: list[str] = []
        for s in servers:
            a = _at(s, clients)
            for device in devices:
                value = None if a is None else a.device_util.get(device)
                cells.append("—" if value is None else format_percent(value))
            text = "" if a is None else violation_text(a)
            if text:
                violations.append(f"{s.server}: {text}")
        rows.append((clients, tuple(cells), "; ".join(violations)))
    return DeviceTable(
        servers=tuple(s.server for s in servers),
        devices=tuple(DEVICE_NAMES.get(d, d) for d in devices),
        rows=tuple(rows),
    )


def violation_text(a: Activity) -> str:
    """``1 checkpoint, autovacuum in 2 trials``; empty when the window was clean."""
    parts = []
    if a.checkpoints:
        parts.append(f"{a.checkpoints} checkpoint{'s' if a.checkpoints != 1 else ''}")
    if a.autovacuum:
        parts.append(f"autovacuum in {a.autovacuum} trial{'s' if a.autovacuum != 1 else ''}")
    return ", ".join(parts)


def profile_links(section: WorkloadSection) -> list[tuple[str, str]]:
    """``("pg18 · 4 clients: flame graph", href)`` per flame graph, href percent-encoded.

    Encoding keeps the path relative (a ``:`` cannot make it a ``javascript:`` URL).
    """
    links = [
        (f"{s.server} · {clients_text(clients)}: flame graph", quote(path, safe="/"))
        for s in section.servers
        for clients, path in sorted(s.profiles)
    ]
    links += [
        (f"{s.server} vs {section.baseline} · {clients_text(clients)}: differential flame graph "
         "(red grew, blue shrank)", quote(path, safe="/"))
        for s in section.servers
        for clients, path in sorted(s.profile_diffs)
    ]
    return links


def _activity_servers(section: WorkloadSection) -> list[ServerSeries]:
    return [s for s in section.servers if s.activity]


def _activity_clients(section: WorkloadSection) -> list[int]:
    seen = {a.clients for s in section.servers for a in s.activity}
    return [c for c in section.clients if c in seen] + sorted(seen - set(section.clients))


def _at(series: ServerSeries, clients: int) -> Activity | None:
    return next((a for a in series.activity if a.clients == clients), None)


def _rows(section: WorkloadSection,
          segments: Callable[[Activity], tuple[Segment, ...] | None]) -> list[tuple[int, list[Bar]]]:
    """One group per client count with activity; a bar per server that has any."""
    servers = _activity_servers(section)
    rows = []
    for clients in _activity_clients(section):
        bars: list[Bar] = []
        for s in servers:
            a = _at(s, clients)
            bars.append((s.server, None if a is None else segments(a)))
        rows.append((clients, bars))
    return rows


def _bar(who: str, segments: tuple[Segment, ...] | None, left: float, y: float, span: float,
         height: float) -> list[str]:
    if segments is None:
        return [
            f'<rect x="{coord(left)}" y="{coord(y)}" width="{coord(span)}" height="{coord(height)}" '
            f'fill="#FFFFFF" stroke="{AXIS}" stroke-dasharray="3 3"><title>{esc(who)} · nothing '
            f"recorded</title></rect>",
            f'<text x="{coord(left + span / 2)}" y="{coord(y + height / 2)}" dy="4" '
            f'text-anchor="middle" font-size="11" fill="{MUTED}">nothing recorded</text>',
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


def _summary(who: str, segments: tuple[Segment, ...] | None) -> str:
    if segments is None:
        return f"{who} · nothing recorded"
    return f"{who} · " + ", ".join(f"{s.name} {format_percent(s.percent)}" for s in segments)


def _legend(items: Sequence[tuple[str, str]], width: int, *, top: float) -> tuple[list[str], float]:
    """Colour swatches in rows under the title; returns the elements and the bottom y."""
    out: list[str] = []
    x, row = 12.0, 0
    for name, colour in items:
        item = 16 + text_width(name, 12)
        if x > 12 and x + item > width - 12:
            x, row = 12.0, row + 1
        y = top + row * 18 + 8
        out.append(f'<rect x="{coord(x)}" y="{coord(y - 5)}" width="10" height="10" '
                   f'fill="{colour}" stroke="{AXIS}" stroke-width="0.5"/>')
        out.append(f'<text x="{coord(x + 15)}" y="{coord(y)}" dy="4">{esc(name)}</text>')
        x += item + 14
    rows = row + 1 if items else 0
    return out, top + rows * 18


def _clip(text: str, limit: float) -> str:
    """``text`` cut with an ellipsis to fit ``limit`` pixels at 12 px (full text on hover)."""
    if text_width(text, 12) <= limit:
        return text
    while text and text_width(text + "…", 12) > limit:
        text = text[:-1]
    return text + "…"


def _ink(colour: str) -> str:
    """Dark or white text, whichever reads better on ``colour`` (by relative luminance)."""
    r, g, b = (int(colour[i:i + 2], 16) / 255 for i in (1, 3, 5))
    lin = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in (r, g, b)]
    luminance = 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2]
    return "#FFFFFF" if luminance < 0.2 else TEXT
