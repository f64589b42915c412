"""The line of versions (issue 19, item 3): servers that differ only in their install, ordered
by version, each against the one before it (前バージョン比) with the interval of the ratio by
block; shown only where it says more than the ratio to the baseline."""

from __future__ import annotations

from typing import Any

import pytest

from teiten.analysis import intervals
from teiten.analysis.history import history
from teiten.analysis.model import Point, ServerSeries, WorkloadSection
from teiten.model.results import ServerRecord
from teiten.report.history_tables import history_table
from teiten.words.context import Context

BLOCKS = tuple(str(b) for b in range(1, 9))
NOISE = (1.00, 1.03, 0.97, 1.02, 0.99, 1.01, 0.98, 1.04)


def _series(name: str, version: str, level: float) -> ServerSeries:
    points = []
    for clients in (1, 4):
        values = tuple(level * clients * n for n in NOISE)
        ci = intervals.median_interval(values)
        assert ci is not None
        points.append(Point(clients=clients, tps_median=ci.value, latency_ms_median=1.0,
                            tps_values=values, n_ok=8, n_failed=0, ratio=None,
                            tps_blocks=BLOCKS))
    return ServerSeries(name, version, tuple(points), None, None)


def _record(name: str, install: str, **extra: Any) -> ServerRecord:
    return ServerRecord(name, 0, "local", {"name": name, "install": install, "profile": "pgecons",
                                           **extra})


def _section(*series: ServerSeries) -> WorkloadSection:
    return WorkloadSection("w", "", series[0].server, (1, 4), tuple(series))


def test_versions_in_order_each_against_the_one_before() -> None:
    pg18, pg96, pg13 = (_series("pg18", "18.6", 150.0), _series("pg96", "9.6.24", 100.0),
                        _series("pg13", "13.23", 75.0))
    found = history(_section(pg18, pg96, pg13),
                    [_record("pg18", "18"), _record("pg96", "maven:9.6"), _record("pg13", "maven:13")])
    assert found is not None
    assert [(s.server, s.previous) for s in found.steps] == [("pg13", "pg96"), ("pg18", "pg13")]
    assert [name for name, _, _ in found.line] == ["pg96", "pg13", "pg18"]
    first = found.steps[0].cells[0]
    # Two steps at two client counts: one family of 4, each interval at 1 - 0.05/4.
    expected = intervals.ratio_interval(pg13.points[0].tps_values, pg96.points[0].tps_values,
                                        confidence=0.9875, blocks=BLOCKS, baseline_blocks=BLOCKS)
    assert expected is not None
    assert (first.ratio, first.ci, first.level) == (
        pytest.approx(0.75), (expected.low, expected.high), expected.confidence)
    table = history_table(_section(pg18, pg96, pg13), found, Context())
    assert [c.label for c in table.columns] == ["pg13 / pg96", "pg18 / pg13"]
    one = dict(table.rows)["1"]
    assert (one[0].value, one[0].marker, one[0].tone) == ("75.0%", "▼", "worse sig")
    assert (one[1].value, one[1].marker, one[1].tone) == ("200.0%", "▲", "better sig")
    assert "pg96 (9.6.24) → pg13 (13.23) → pg18 (18.6)" in table.notes[0]
    ja = history_table(_section(pg18, pg96, pg13), found, Context(lang="ja"))
    assert ja.heading == "w: 前バージョン比（各バージョンとその一つ前のバージョンの比）"


def test_only_where_it_says_more_and_only_for_a_line_of_versions() -> None:
    old, new = _series("pg17", "17.11", 100.0), _series("pg18", "18.6", 110.0)
    records = [_record("pg17", "17"), _record("pg18", "18")]
    # Two versions, the older the baseline: the ratio to the baseline already is it.
    assert history(_section(old, new), records) is None
    # The newer one the baseline: the line says what the TPS table does not.
    assert history(_section(new, old), records[::-1]) is not None
    # Servers that differ in more than their install are no line of versions.
    tuned = [_record("pg17", "17"), _record("pg18", "18", settings={"work_mem": "64MB"})]
    assert history(_section(new, old), tuned[::-1]) is None
    # Two servers of one release neither.
    same = _series("pg18b", "18.6", 100.0)
    assert history(_section(new, same), [_record("pg18", "18"), _record("pg18b", "pypi:18")]) is None


def test_the_line_of_versions_chart_puts_the_versions_in_order_on_its_axis() -> None:
    from dataclasses import replace

    from teiten.report.charts import workload_charts

    pg18, pg96, pg13 = (_series("pg18", "18.6", 150.0), _series("pg96", "9.6.24", 100.0),
                        _series("pg13", "13.23", 75.0))
    section = _section(pg18, pg96, pg13)
    section = replace(section, history=history(section, [
        _record("pg18", "18"), _record("pg96", "maven:9.6"), _record("pg13", "maven:13")]))
    charts = {kind: (title, svg) for kind, title, svg in workload_charts(section)}
    title, svg = charts["history"]
    assert title == "w: median TPS along the versions"
    labels = [svg.index(f">{v}</text>") for v in ("9.6.24", "13.23", "18.6")]
    assert labels == sorted(labels)  # left to right in version order
    assert "PostgreSQL version" in svg and "pg13 (13.23) · 1 client · 75.4 TPS" in svg


# What version() and pg_config say of Maven's zonky builds (read back from real 10 and 11
# servers): gcc 4.4.7 and -O2 for 10, gcc 7.5 and -Os from 11 on, warning flags by version.
ZONKY_10 = {"origin": "maven", "version_string": "PostgreSQL 10.23 on x86_64-pc-linux-gnu, "
            "compiled by gcc (GCC) 4.4.7 20120313 (Red Hat 4.4.7-23), 64-bit",
            "pg_config": {"CFLAGS": "-Wall -Wmissing-prototypes -g -O2",
                          "CONFIGURE": "'--enable-debug' '--prefix=/mnt/hgfs/staging'"}}
ZONKY_11 = {"origin": "maven", "version_string": "PostgreSQL 11.22 on x86_64-pc-linux-gnu, "
            "compiled by gcc (Ubuntu 7.5.0-3ubuntu1~18.04) 7.5.0, 64-bit",
            "pg_config": {"CFLAGS": "-Wall -fexcess-precision=standard -Wno-format-truncation -Os",
                          "CONFIGURE": "'CFLAGS=-Os -DMAP_HUGETLB=0x40000' '--prefix=/other'"}}
ZONKY_12 = {**ZONKY_11, "pg_config": {**ZONKY_11["pg_config"],  # type: ignore[dict-item]
                                      "CFLAGS": "-Wall -Werror=vla -Wno-format-truncation -Os"}}


def test_a_step_or_change_across_another_build_says_so() -> None:
    from teiten.analysis.differences import build_changes, speed_flags

    assert speed_flags(ZONKY_10) == ("-O2",) and speed_flags(ZONKY_11) == ("-Os",)
    assert speed_flags({"pg_config": {}}) is None
    r10, r11, r12 = (ServerRecord(n, 0, "local", {"name": n, "install": f"maven:{n[2:]}"},
                                  description=d)
                     for n, d in (("pg10", ZONKY_10), ("pg11", ZONKY_11), ("pg12", ZONKY_12)))
    assert build_changes(r10, r11) == (("compiler", "gcc 4.4.7", "gcc 7.5.0"),
                                       ("optimisation", "-O2", "-Os"))
    assert build_changes(r11, r12) == ()  # another warning flag, another prefix: alike
    rebuilt = {**ZONKY_10, "version_string": ZONKY_10["version_string"].replace("4.4.7-23", "4.4.7-18"),
               "pg_config": {"CFLAGS": "-O0 -g -O2 -Wall", "CONFIGURE": ""}}
    r10b = ServerRecord("pg10b", 0, "local", {"name": "pg10b", "install": "10"}, description=rebuilt)
    assert build_changes(r10, r10b) == ()  # another package revision of gcc; the last -O applies
    # A 20% drop from 10 to 11 is a change point, and both it and the step say the build changed.
    series = (_series("pg10", "10.23", 100.0), _series("pg11", "11.22", 80.0),
              _series("pg12", "12.22", 80.0))
    found = history(_section(*series), [r10, r11, r12])
    assert found is not None
    assert [s.build != () for s in found.steps] == [True, False]
    assert [c.build for c in found.changes] == [build_changes(r10, r11)] * 2  # 1 and 4 clients
    notes = history_table(_section(*series), found, Context()).notes
    assert any(n.startswith("The build changes too at pg11 / pg10 (compiler gcc 4.4.7 → gcc "
                            "7.5.0; optimisation -O2 → -Os)")
               for n in notes), notes
    assert sum("The build changes here too (compiler" in n and "the change may be the build's"
               in n for n in notes) == 2, notes
    ja = history_table(_section(*series), found, Context(lang="ja")).notes
    assert any("ビルドも変わっています" in n and "コンパイラ gcc 4.4.7" in n
               and "最適化オプション -O2 → -Os" in n for n in ja), ja
