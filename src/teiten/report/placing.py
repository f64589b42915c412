"""Where a chart's label goes so that it covers nothing drawn: the ratio chart's label of the
band of "no difference", which sat over any point drawn just above 100 + the margin. Pure
geometry in the chart's pixels (y grows downwards); :mod:`teiten.report.svg` draws.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

Box = tuple[float, float, float, float]  # x0, y0, x1, y1 in pixels
MARKER = 6.0  # a marker's half size with room: the largest shape reaches 5.6 px from its point
CAP = 4.0  # a whisker's caps reach 4 px either side of it


@dataclass(frozen=True)
class Placed:
    """A label's anchor: ``x``, the baseline ``y`` and the SVG ``text-anchor``."""

    x: float
    y: float
    anchor: str


def text_box(at: Placed, width: float, size: float) -> Box:
    """The box a text of ``width`` pixels at font ``size`` covers, anchored at ``at``."""
    x0 = {"start": at.x, "middle": at.x - width / 2, "end": at.x - width}[at.anchor]
    return (x0, at.y - size * 0.8, x0 + width, at.y + size * 0.25)


def marker_boxes(points: Sequence[tuple[float, float]]) -> list[Box]:
    """The boxes markers drawn at ``points`` cover."""
    return [(x - MARKER, y - MARKER, x + MARKER, y + MARKER) for x, y in points]


def whisker_boxes(whiskers: Sequence[tuple[float, float, float]]) -> list[Box]:
    """The boxes whiskers ``(x, y of one end, y of the other)`` cover, caps included."""
    return [(x - CAP, min(a, b), x + CAP, max(a, b)) for x, a, b in whiskers]


def path_boxes(points: Sequence[tuple[float, float | None]], step: float = 3.0) -> list[Box]:
    """Small boxes along a series' line (its points joined, a ``None`` y breaking it), one every
    ``step`` pixels: a label is clear of the line where it overlaps none of them."""
    out: list[Box] = []
    for (x0, y0), (x1, y1) in zip(points, points[1:], strict=False):
        if y0 is None or y1 is None:
            continue
        n = max(1, int(((x1 - x0) ** 2 + (y1 - y0) ** 2) ** 0.5 / step))
        out += [(x - 1, y - 1, x + 1, y + 1) for i in range(n + 1)
                for x, y in [(x0 + (x1 - x0) * i / n, y0 + (y1 - y0) * i / n)]]
    return out


def overlaps(a: Box, b: Box) -> bool:
    """Whether two boxes share any area."""
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


def place(width: float, size: float, *, rows: Sequence[float], left: float, right: float,
          columns: Sequence[float], markers: Sequence[Box], lines: Sequence[Box] = (),
          prefer_right: bool = False) -> Placed:
    """The first place for a label ``width`` pixels wide that covers no marker, else the one
    covering the fewest markers and then the fewest ``lines`` (whiskers, other labels): on
    each baseline of ``rows`` in turn, at the plot's left edge, its right edge, then centred
    between neighbouring ``columns`` (the x of the points, where whiskers run). A label never
    runs past ``left`` or ``right``. ``prefer_right`` tries the right edge before the left."""
    xs = sorted(set(columns))
    gaps = sorted(((b - a, (a + b) / 2) for a, b in zip(xs, xs[1:], strict=False)), reverse=True)
    spots = [Placed(left + 4, 0, "start"), Placed(right - 4, 0, "end")][::-1 if prefer_right else 1]
    spots += [Placed(mid, 0, "middle") for _, mid in gaps
              if left + 4 <= mid - width / 2 and mid + width / 2 <= right - 4]
    best: tuple[tuple[int, int, int], Placed] | None = None
    for rank, (y, spot) in enumerate((y, s) for y in rows for s in spots):
        at = Placed(spot.x, y, spot.anchor)
        box = text_box(at, width, size)
        cost = (sum(overlaps(box, m) for m in markers), sum(overlaps(box, w) for w in lines), rank)
        if cost[:2] == (0, 0):
            return at
        if best is None or cost < best[0]:
            best = (cost, at)
    if best is None:  # no row given
        return spots[0]
    return best[1]


def band_label(width: float, band_top: float, band_bottom: float, *, top: float, bottom: float,
               left: float, right: float, columns: Sequence[float], markers: Sequence[Box],
               lines: Sequence[Box]) -> Placed:
    """Where the label of the band of "no difference" goes: above the band, else below it,
    else just inside it, at a place that covers no point (a point just above 100 + the
    margin sat under it) and, if it can, none of ``lines`` (whiskers, the series' lines, the
    100% line's label)."""
    rows = [y for y in (band_top - 4, band_bottom + 11, band_top + 11, band_bottom - 4)
            if top + 8 <= y <= bottom - 2]
    return place(width, 10, rows=rows or [band_top - 4], left=left, right=right, columns=columns,
                 markers=markers, lines=lines)
