"""The ratios printed beside the TPS table's (issue 33, item 2) speak the TPS table's words: each
step along a line of versions, each gain with cores and the largest core count against the best,
each degradation rate and each latency percentile's ratio is its interval's own estimate, its
interval is at its table's family level, and its cell carries the verdict read from the printed
interval (▲ ▼ ≈ ?, the same colours); the median latency ratio, which has no interval, says that it
carries no verdict.

Truths are built in: exact ratios (every block the same ratio) give a known verdict; a seeded
property over random blocks checks that every printed estimate lies in its printed interval and
that the marker is what that interval says, in en and ja.
"""

from __future__ import annotations

import random
import re
from decimal import Decimal

import pytest

from teiten.analysis import compare, judging, scaleups
from teiten.analysis import verdicts as v
from teiten.analysis.history import history
from teiten.analysis.model import CoreScaling, Point, ServerSeries, WorkloadSection
from teiten.model.results import ServerRecord
from teiten.report.cells import judged_cell
from teiten.report.degradation_tables import degradation_table
from teiten.report.history_tables import history_table
from teiten.report.scaleup_tables import scaleup_table
from teiten.report.tables import latency_table
from teiten.words.context import Context
from teiten.words.verdicts import MARKS, TONES

BLOCKS = tuple(str(b) for b in range(1, 9))
NOISE = (1.00, 1.03, 0.97, 1.02, 0.99, 1.01, 0.98, 1.04)
CELL = re.compile(r"^(?P<value>[+-]?\d+\.\d)% \[(?P<low>[+-]?\d+\.\d)–(?P<high>[+-]?\d+\.\d), "
                  r"(?P<level>[\d.]+)%\] (?P<marker>[▲▼≈?])$")


def _series(name: str, version: str, level: float, noise: tuple[float, ...] = NOISE,
            clients: tuple[int, ...] = (1, 4), ratio: float | None = None) -> ServerSeries:
    points = []
    for c in clients:
        values = tuple(level * c * n for n in noise)
        points.append(Point(clients=c, tps_median=sorted(values)[len(values) // 2],
                            latency_ms_median=c / level, tps_values=values, n_ok=len(values),
                            n_failed=0, ratio=ratio, tps_blocks=BLOCKS[:len(values)]))
    return ServerSeries(name, version, tuple(points), None, None)


def _record(name: str, install: str) -> ServerRecord:
    return ServerRecord(name, 0, "local", {"name": name, "install": install, "profile": "pgecons"})


def _section(*series: ServerSeries, clients: tuple[int, ...] = (1, 4)) -> WorkloadSection:
    return WorkloadSection("w", "", series[0].server, clients, tuple(series))


@pytest.mark.parametrize("lang", ["en", "ja"])
def test_a_line_of_versions_marks_each_step_by_its_verdict(lang: str) -> None:
    """pg96 → pg13 at 75% (slower), pg13 → pg17 at 102% (no difference within ±5%), pg17 → pg18
    at 200% (faster): exact ratios, so each interval is the ratio itself."""
    line = (_series("pg18", "18.6", 153.0), _series("pg96", "9.6.24", 100.0),
            _series("pg13", "13.23", 75.0), _series("pg17", "17.7", 76.5))
    records = [_record("pg18", "18"), _record("pg96", "maven:9.6"), _record("pg13", "maven:13"),
               _record("pg17", "17")]
    found = history(_section(*line), records)
    assert found is not None
    table = history_table(_section(*line), found, Context(lang=lang))
    one = dict(table.rows)["1"]
    assert [(c.value, c.marker, c.tone) for c in one] == [
        ("75.0%", "▼", "worse sig"), ("102.0%", "≈", "same"), ("200.0%", "▲", "better sig")]
    # Three steps at two client counts: one family of 6, each interval at 1 - 0.05/6.
    assert one[0].ci == "[75.0–75.0, 99.2%]"
    note = table.notes[1]
    if lang == "en":
        assert note.startswith("Each ratio is its interval's own estimate (Hodges–Lehmann). This "
                               "table's 6 ratios are one family: each interval is at 99.17% "
                               "(Bonferroni: 1 − 0.05/6)")
        assert one[1].title == ("no difference within ±5%: the 99.2% interval 102.0–102.0% lies "
                                "inside 95–105%")
    else:
        assert note.startswith("各比はその信頼区間自身の推定値（Hodges–Lehmann 推定量）です。この表の 6 件の比")
        assert one[0].title.startswith("低速: 99.2% 信頼区間 75.0–75.0%")


def test_a_step_that_cannot_tell_has_no_colour() -> None:
    wide = (1.0, 1.6, 0.6, 1.3, 0.8, 1.2, 0.7, 1.5)
    line = (_series("pg18", "18.6", 100.0, wide), _series("pg96", "9.6.24", 100.0),
            _series("pg13", "13.23", 100.0))
    found = history(_section(*line), [_record("pg18", "18"), _record("pg96", "maven:9.6"),
                                      _record("pg13", "maven:13")])
    assert found is not None
    cell = dict(history_table(_section(*line), found, Context()).rows)["4"][1]
    assert (cell.marker, cell.tone) == ("?", "")
    assert cell.title.startswith("cannot tell: the ")


def test_a_degradation_rate_is_its_ratio_and_carries_its_verdict() -> None:
    """A pair the TPS table does not judge (two servers besides the baseline): the table's own
    family; 80% of a's TPS is a 20.0% rate, slower, ▼."""
    sec = _section(_series("base", "18.6", 100.0), _series("a", "18.6", 100.0),
                   _series("b", "18.6", 80.0))
    deg = compare.degradation(sec, "a", "b")
    assert not deg.reused
    table = degradation_table(deg, Context())
    cell = dict(table.rows)["1"][2]
    assert (cell.text, cell.tone) == ("20.0% [20.0–20.0, 97.6%] ▼", "worse sig")
    assert cell.title.startswith("slower: the 97.6% interval 80.0–80.0% lies wholly below 100%")
    assert "This table's 2 ratios are one family: each interval is at 97.5%" in table.notes[1]


def test_a_degradation_against_the_reference_is_the_tps_tables_ratio() -> None:
    sec = compare.with_family([_section(_series("a", "18.6", 100.0),
                                        _series("b", "18.6", 97.0, ratio=0.97))])[0]
    deg = compare.degradation(sec, "a", "b")
    assert deg.reused
    for row, p in zip(deg.rows, sec.servers[1].points, strict=True):
        assert row.judged is not None
        assert (row.judged.estimate, row.judged.ci, row.judged.verdict.word) == (
            p.estimate, p.ratio_ci, p.verdict)
    cell = dict(degradation_table(deg, Context()).rows)["1"][2]
    assert (cell.value, cell.marker, cell.tone) == ("3.0%", "≈", "same")
    assert "The intervals and verdicts are the TPS table's for the same pair" in \
        degradation_table(deg, Context()).notes[1]


def test_gains_with_cores_and_the_largest_against_the_best() -> None:
    """2 → 4 cores: 190% of the TPS (a gain of +90.0%, ▲); 4 → 8 cores: 95% (−5.0%, with the
    margin at 5 that is no difference); the largest count against the best: the same ratio."""
    fam = CoreScaling("pg", ((2, "pg-2cores"), (4, "pg-4cores"), (8, "pg-8cores")))
    sec = _section(_series("pg-2cores", "18.6", 100.0), _series("pg-4cores", "18.6", 190.0),
                   _series("pg-8cores", "18.6", 180.5))
    sc = scaleups.scaleup(sec, fam, {}, margin_pct=6.0)
    table = scaleup_table(sc, Context())
    gains = [dict(table.rows)[c][2] for c in ("2", "4", "8")]
    assert gains[0].value == "—"
    assert (gains[1].text, gains[1].tone) == ("+90.0% [90.0–90.0, 98.4%] ▲", "better sig")
    assert (gains[2].text, gains[2].tone) == ("-5.0% [-5.0–-5.0, 98.4%] ≈", "same")
    assert "At 8 cores the peak is -5.0% [-5.0–-5.0, 98.4%] against 4 cores: no difference within ±6%." \
        in table.notes
    assert any("This table's 3 ratios are one family: each interval is at 98.34%" in n for n in table.notes)


def test_the_median_latency_ratio_says_it_carries_no_verdict() -> None:
    sec = compare.with_family([_section(_series("a", "18.6", 100.0),
                                        _series("b", "18.6", 80.0, ratio=0.8))])[0]
    for lang, words in (("en", "carries no verdict"), ("ja", "判定は付けません")):
        table = latency_table(sec, Context(lang=lang))
        ratio = dict(table.rows)["1"][2]
        assert (ratio.value, ratio.marker, ratio.tone) == ("125.0%", "", "")
        assert words in table.notes[0]


# --- the property: what a judged cell prints is one thing ---------------------------------------

@pytest.mark.parametrize("lang", ["en", "ja"])
def test_every_printed_estimate_lies_in_its_interval_and_the_marker_reads_it(lang: str) -> None:
    rng = random.Random(33)
    seen: dict[str, int] = {}
    for _ in range(1500):
        n = rng.randint(2, 20)
        paired = rng.random() < 0.7
        truth, cv = rng.choice((1.0, 1.02, 0.97, 1.1, 0.8)), rng.choice((0.005, 0.02, 0.1, 0.3))
        base = [1000 * (1 + rng.gauss(0, cv)) for _ in range(n)]
        mine = [b * truth * (1 + rng.gauss(0, cv)) for b in base]
        blocks = [str(b) for b in range(n)]
        lower = rng.random() < 0.3
        margin = rng.choice((5.0, 5.0, 2.0, 10.0))
        j = judging.ratio([max(x, 1.0) for x in mine], [max(x, 1.0) for x in base],
                          comparisons=rng.randint(1, 12), margin_pct=margin,
                          blocks=blocks if paired else (), baseline_blocks=blocks if paired else (),
                          lower_is_better=lower)
        cell = judged_cell(j, Context(lang=lang))
        seen[j.verdict.word] = seen.get(j.verdict.word, 0) + 1
        assert cell.marker == MARKS[j.verdict.word]
        assert cell.tone == TONES[j.verdict.word]
        found = CELL.match(cell.text)
        if j.ci is None:
            assert j.verdict.word == v.UNSURE
            continue
        assert found, cell.text
        value, low, high = (Decimal(found[k]) for k in ("value", "low", "high"))
        assert low <= value <= high, cell.text
        m = Decimal(str(margin))
        inside = 100 - m <= low and high <= 100 + m
        if found["marker"] == "≈":
            assert inside
        elif found["marker"] == "▲":
            assert not inside and (high < 100 if lower else low > 100)
        elif found["marker"] == "▼":
            assert not inside and (low > 100 if lower else high < 100)
        else:
            assert j.verdict.reason == v.SHORT or not (inside or low > 100 or high < 100)
        if found["marker"] != "?":  # a verdict only where the family's level is reached
            assert j.level is not None and j.level >= j.required - 1e-9
    assert set(seen) == set(v.WORDS), seen
