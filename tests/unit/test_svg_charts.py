"""The line charts' y axis fits the lines: a wide interval band or whisker is clipped at the
axis' edge instead of stretching the axis (issue: an update chart ran to 8,000 TPS for lines
at 200-900)."""

from __future__ import annotations

import re

from teiten.report import placing
from teiten.report.bars import Segment, stacked_bars
from teiten.report.svg import Line, line_chart, text_width


def _y_ticks(svg: str) -> list[float]:
    found = re.findall(r'text-anchor="end" font-size="11" [^>]*>([\d,.]+)<', svg)
    return [float(t.replace(",", "")) for t in found]


def test_a_wide_band_is_clipped_not_the_axis_stretched() -> None:
    points = [(1, 200.0), (2, 500.0), (4, 900.0)]
    wide = Line("pg18", points, band=[(1, 150.0, 260.0), (2, 400.0, 8000.0), (4, 850.0, 950.0)])
    ticks = _y_ticks(line_chart("t", "clients", "TPS", [wide]))
    assert 900 <= ticks[-1] <= 1500  # a quarter beyond the highest point, rounded up; not 8,000
    narrow = Line("pg18", points, band=[(1, 150.0, 260.0), (2, 400.0, 600.0), (4, 850.0, 1000.0)])
    assert _y_ticks(line_chart("t", "clients", "TPS", [narrow]))[-1] >= 1000  # a band that fits is shown whole


def test_a_clipped_whisker_loses_its_cap_at_the_edge() -> None:
    line = Line("ratio", [(1, 100.0), (2, 110.0)], whiskers=[(1, 90.0, 112.0), (2, 95.0, 1500.0)])
    svg = line_chart("t", "clients", "%", [line])
    paths = re.findall(r'<path d="(M[^"]+)" fill="none" stroke="[^"]+" stroke-width="1.5" '
                       r'stroke-opacity="0.8"/>', svg)
    assert len(paths) == 2
    assert paths[0].count("M") == 3 and paths[1].count("M") == 2  # the clipped one has only its lower cap
    assert _y_ticks(svg)[-1] < 200
    # ...and ends in an arrow at the edge with the value it runs to (issue 56, item 4).
    clip = r'<g class="clip" [^>]*><polygon points="[^"]+"/><text [^>]*>([^<]*)</text></g>'
    assert re.findall(clip, svg) == ["1,500.0"]


def test_two_clipped_whiskers_side_by_side_keep_their_values_apart() -> None:
    """Two servers' whiskers at one client count, both past the top: two arrows, two values,
    the second moved down off the first; and the margin band stretches the axis to show it."""
    lines = [Line("a", [(1, 110.0)], whiskers=[(1, 100.0, 900.0)], dodge=-3.5),
             Line("b", [(1, 120.0)], whiskers=[(1, 105.0, 1200.0)], dodge=3.5)]
    svg = line_chart("t", "clients", "%", lines, from_zero=False, y_unit="%",
                     margin=(90.0, 110.0, "within ±10%"))
    texts = re.findall(r'<g class="clip" [^>]*><polygon [^>]*/><text x="[^"]+" y="([^"]+)"[^>]*>([^<]*)<', svg)
    assert [t for _, t in texts] == ["900.0%", "1,200.0%"]
    assert abs(float(texts[0][0]) - float(texts[1][0])) >= 10
    assert _y_ticks(svg)[0] <= 90 and '<rect class="margin"' in svg and "<title>within ±10%</title>" in svg


def test_the_bars_of_compared_servers_keep_their_server_names() -> None:
    """A compare report names servers study/server; a long study name loses its middle, not
    the server's name, so two servers' bars never carry the same label."""
    cpu = (Segment("user", 60.0, "#1F77B4"), Segment("idle", 40.0, "#DDDDDD"))
    svg = stacked_bars("cpu", [("user", "#1F77B4")], [("1 client", [
        ("quick-fixed-point-small (1)/pg17", cpu), ("quick-fixed-point-small (2)/pg17", cpu),
        ("quick-fixed-point-small (2)/pg18", cpu)])])
    labels = re.findall(r'text-anchor="end">([^<]+)<title>', svg)
    assert len(labels) == 3 and len(set(labels)) == 3
    assert all(label.endswith(("/pg17", "/pg18")) for label in labels)


def _boxes(svg: str) -> list[tuple[float, float, float, float]]:
    """The boxes of the chart's markers (the shapes with a hover title)."""
    out = []
    for tag, attrs in re.findall(r"<(rect|polygon|circle) ((?:(?!class=)[^>])*)><title>", svg):
        got = dict(re.findall(r'(\w+)="([^"]*)"', attrs))
        if tag == "rect":
            x, y, w, h = (float(got[k]) for k in ("x", "y", "width", "height"))
            out.append((x, y, x + w, y + h))
        elif tag == "circle":
            cx, cy, r = (float(got[k]) for k in ("cx", "cy", "r"))
            out.append((cx - r, cy - r, cx + r, cy + r))
        else:
            xs, ys = zip(*((float(a) for a in p.split(",")) for p in got["points"].split()), strict=True)
            out.append((min(xs), min(ys), max(xs), max(ys)))
    return out


def _label_box(svg: str) -> tuple[float, float, float, float]:
    found = re.search(r'<text class="margin-label" ([^>]*)>([^<]*)<', svg)
    assert found, "the band has its label"
    got = dict(re.findall(r'([\w-]+)="([^"]*)"', found[1]))
    at = placing.Placed(float(got["x"]), float(got["y"]), got.get("text-anchor", "start"))
    return placing.text_box(at, text_width(found[2], 10), 10)


def test_the_band_label_covers_no_point_near_100() -> None:
    """A point just above the band's top (105.6%) at the first client count, one at 100% and one
    at 104% at the last: the band's label, which sat at the band's top left, over the first,
    moves to where no marker is (and, here, no whisker either); the 100% line's label leaves
    the point at 100%."""
    lines = [Line("a", [(1, 105.6), (8, 100.0)], whiskers=[(1, 101.0, 111.0), (8, 96.0, 104.0)]),
             Line("b", [(1, 99.0), (8, 104.0)], whiskers=[(1, 97.0, 101.0), (8, 102.0, 106.0)])]
    svg = line_chart("t", "clients", "%", lines, from_zero=False, y_unit="%",
                     margin=(95.0, 105.0, "no difference: within ±5%"), reference=(100.0, "100% = a"))
    markers = _boxes(svg)
    assert len(markers) == 4
    label = _label_box(svg)
    assert not [m for m in markers if placing.overlaps(label, m)], (label, markers)
    whiskers = [(float(x) - 4, min(float(a), float(b)), float(x) + 4, max(float(a), float(b)))
                for x, a, b in re.findall(r'<path d="M([\d.]+) ([\d.]+) L[\d.]+ ([\d.]+)[^"]*" fill="none" '
                                          r'stroke="[^"]+" stroke-width="1.5"', svg)]
    assert len(whiskers) == 4 and not [w for w in whiskers if placing.overlaps(label, w)], (label, whiskers)
    band = re.search(r'<rect class="margin" x="([^"]+)" y="([^"]+)"', svg)
    assert band
    before = placing.text_box(placing.Placed(float(band[1]) + 4, float(band[2]) - 4, "start"),
                              text_width("no difference: within ±5%", 10), 10)
    assert [m for m in markers if placing.overlaps(before, m)], "where it was, it covered the point"
    # The 100% line's label leaves its right end, where the point at 100% is.
    ref = re.search(r'<text class="reference-label" x="([^"]+)" y="([^"]+)" text-anchor="(\w+)"', svg)
    assert ref and ref[3] != "end", "moved off the right end"
    box = placing.text_box(placing.Placed(float(ref[1]), float(ref[2]), ref[3]), text_width("100% = a", 11), 11)
    assert not [m for m in markers if placing.overlaps(box, m)], (box, markers)


def test_a_label_goes_where_it_covers_least() -> None:
    """Nowhere free: the place covering the fewest markers, then the fewest lines; on a free
    row, the first free place."""
    markers = [(0.0, 0.0, 100.0, 100.0)]
    assert placing.place(20, 10, rows=[50], left=0, right=100, columns=[], markers=markers) == \
        placing.Placed(4, 50, "start")
    free = placing.place(20, 10, rows=[50, 150], left=0, right=100, columns=[10, 90], markers=markers)
    assert free == placing.Placed(4, 150, "start")
    lines = [(0.0, 140.0, 30.0, 160.0)]
    assert placing.place(20, 10, rows=[50, 150], left=0, right=100, columns=[10, 90], markers=markers,
                         lines=lines) == placing.Placed(96, 150, "end")
