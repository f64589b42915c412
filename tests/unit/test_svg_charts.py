"""The line charts' y axis fits the lines: a wide interval band or whisker is clipped at the
axis' edge instead of stretching the axis (issue: an update chart ran to 8,000 TPS for lines
at 200-900)."""

from __future__ import annotations

import re

from teiten.report.bars import Segment, stacked_bars
from teiten.report.svg import Line, line_chart


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
