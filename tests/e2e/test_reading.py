"""What a person reads, for stores whose truth is known (tests/truestores.py): `teiten report`
of a real store of the PGECons quick study (two workloads, 1, 2, 4 clients: six comparisons,
each interval at 1 − 0.05/6), in English and Japanese. For each case the answer line, the ratio
cell with its marker and colour, the ratio chart's hover text and the finding are asserted as
whole sentences; their numbers are those of the CSV (which the unit tests tie to the analysis),
and the numbers themselves are checked against the truth and against a direct computation from
the trials' TPS.

(a) +10%, CV 1%, 12 blocks: faster. (b) equal, CV 1%, 40 blocks: no difference within ±5%.
(c) equal, CV 10%, 8 blocks: cannot tell, with its bounds. (d) an interval that excludes 100% at
95% but not at the corrected level: cannot tell. (e) every trial of a point disturbed: cannot
tell (no ratio).
"""

from __future__ import annotations

import csv
import html
import math
import re
import statistics
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from tests.conftest import run_cli
from tests.truestores import Truth, build, study_text, tps_of

from teiten import workloads
from teiten.analysis.intervals import ratio_interval
from teiten.run.plan import plan
from teiten.spec.load import load_text

POINTS = [(w, c) for w in ("pgecons-read", "pgecons-update") for c in (1, 2, 4)]


@dataclass(frozen=True)
class Read:
    """What `teiten report` wrote, in one language."""

    md: str
    html: str
    ratio_rows: list[dict[str, str]]  # pgecons-read-ratio.csv
    chart: str                        # charts/pgecons-read-ratio.svg


def _report(store: Path, out: Path, lang: str) -> Read:
    run_cli("report", "--store", str(store), "--out", str(out), "--lang", lang, check=True)
    with (out / "tables" / "pgecons-read-ratio.csv").open(encoding="utf-8", newline="") as fh:
        rows = list(csv.DictReader(fh))
    return Read((out / "report.md").read_text(encoding="utf-8"),
                html.unescape((out / "report.html").read_text(encoding="utf-8")), rows,
                html.unescape((out / "charts" / "pgecons-read-ratio.svg").read_text(encoding="utf-8")))


def _row(read: Read, clients: int) -> dict[str, str]:
    return next(r for r in read.ratio_rows if r["clients"] == str(clients))


def _td(read: Read, clients: int) -> tuple[str, str]:
    """The class and the text of the ratio cell of pg18 at ``clients`` in pgecons-read."""
    m = re.search(rf'<td id="ratio--pgecons_2d_read--pg18--{clients}"(?: class="([^"]*)")?[^>]*>(.*?)</td>',
                  read.html)
    assert m, clients
    return m[1] or "", re.sub(r"<[^>]+>", "", m[2])


def _answer(read: Read, workload: str = "pgecons-read") -> str:
    line = next(ln for ln in read.md.splitlines() if ln.startswith(f"- {workload}: pg18 "))
    return line.removeprefix("- ")


def _store(tmp_path: Path, truth: Truth) -> Path:
    return build(tmp_path / "truth.db", truth)


def _pairs(truth: Truth, workload: str, clients: int) -> list[float]:
    """The within-block log ratios pg18 / pg17 at a point, straight from the drawn TPS."""
    loaded = load_text(study_text(truth), "truth.yaml")
    trials = plan(loaded.study, workloads.variants(loaded.study))
    tps = tps_of(truth, trials)
    by = {(t.server, t.repetition): tps[t.trial_id] for t in trials
          if t.workload == workload and t.clients == clients}
    return [math.log(by[("pg18", r)] / by[("pg17", r)]) for r in range(1, truth.blocks + 1)]


def _hodges_lehmann(d: list[float]) -> float:
    """The median of the Walsh averages, computed here without teiten's code."""
    return math.exp(statistics.median((a + b) / 2 for i, a in enumerate(d) for b in d[i:]))


def _every(truth_ratio: float) -> dict[tuple[str, int], float]:
    return dict.fromkeys(POINTS, truth_ratio)


def test_a_ten_percent_faster_is_faster(tmp_path: Path) -> None:
    truth = Truth(blocks=12, cv=0.01, ratio=_every(1.10))
    store = _store(tmp_path, truth)
    en, ja = _report(store, tmp_path / "en", "en"), _report(store, tmp_path / "ja", "ja")
    row = _row(en, 1)
    est, low, high = row["estimate_pct"], row["ratio_ci_low_pct"], row["ratio_ci_high_pct"]
    lv = row["ratio_ci_level_pct"].removesuffix(".0")
    assert row["verdict"] == "faster" and float(lv) >= 99.1
    # The estimate is the Hodges-Lehmann estimate of the within-block ratios; the truth is inside.
    assert float(est) == pytest.approx(100 * _hodges_lehmann(_pairs(truth, "pgecons-read", 1)), abs=0.051)
    assert float(low) < 110 < float(high) and float(low) > 100
    diff = f"{float(est) - 100:.1f}"
    assert (f"pgecons-read: pg18 against pg17: {diff}% faster at 1 client (ratio to baseline {est}%, {lv}% CI "
            f"{low}–{high}%)") \
        in _answer(en)
    assert (f"pg18 is {diff}% faster than pg17 at 1 client: ratio to baseline {est}% ({lv}% CI "
            f"{low}–{high}%).") in en.md
    assert _td(en, 1) == ("better sig marked", f"{est}% [{low}–{high}, {lv}%] ▲")
    assert (f"<title>pg18 · 1 client · {est}% [{low}–{high}, {lv}%] ▲ faster: the {lv}% interval "
            f"{low}–{high}% (signed-rank interval of the ratios within each block) lies wholly above 100%"
            "</title>") in en.chart
    assert f"クライアント数 1 で {diff}% 高速 (基準比 {est}%、{lv}% 信頼区間 {low}–{high}%)" in _answer(ja)
    assert (f"pg18 は pg17 よりクライアント数 1 で {diff}% 高速です: 基準比 {est}%（{lv}% 信頼区間 "
            f"{low}–{high}%）。") \
        in ja.md
    assert _td(ja, 1) == ("better sig marked", f"{est}% [{low}–{high}, {lv}%] ▲")
    assert f"高速: {lv}% 信頼区間 {low}–{high}%" in ja.chart


def _level(read: Read) -> str:
    """The one level every ratio interval of the workload reached, as printed."""
    (level,) = {r["ratio_ci_level_pct"].removesuffix(".0") for r in read.ratio_rows}
    assert float(level) >= 99.1  # 1 - 0.05/6 = 99.17%, printed rounded down as every level
    return level


def _span(read: Read) -> tuple[str, str]:
    lows = [float(r["ratio_ci_low_pct"]) for r in read.ratio_rows]
    highs = [float(r["ratio_ci_high_pct"]) for r in read.ratio_rows]
    return f"{min(lows):.1f}", f"{max(highs):.1f}"


def test_b_equal_servers_are_no_different_within_the_margin(tmp_path: Path) -> None:
    truth = Truth(blocks=40, cv=0.01, ratio=_every(1.0))
    store = _store(tmp_path, truth)
    en, ja = _report(store, tmp_path / "en", "en"), _report(store, tmp_path / "ja", "ja")
    assert {r["verdict"] for r in en.ratio_rows} == {"no-difference"}
    low, high = _span(en)
    lv = _level(en)
    assert 95 <= float(low) < 100 < float(high) <= 105
    assert _answer(en) == (f"pgecons-read: pg18 against pg17: no difference within ±5% at 1, 2, 4 clients "
                           f"(every interval within {low}–{high}%, {lv}% CI).")
    assert (f"pg18 vs pg17: no difference within ±5% at 1, 2, 4 clients (every interval within "
            f"{low}–{high}%, {lv}% CI).") in en.md
    row = _row(en, 2)
    assert _td(en, 2) == ("same marked", f"{row['estimate_pct']}% [{row['ratio_ci_low_pct']}–"
                                         f"{row['ratio_ci_high_pct']}, {lv}%] ≈")
    assert f"≈ no difference within ±5%: the {lv}% interval" in en.chart
    assert _answer(ja) == ("pgecons-read: pg18 (pg17 比): クライアント数 1、2、4 で差なし（±5% 以内。"
                           f"区間はすべて {low}–{high}%、{lv}% 信頼区間）。")
    assert _td(ja, 2)[0] == "same marked" and "±5% 以内で差なし" in ja.chart


def test_c_noisy_blocks_cannot_tell_and_give_their_bounds(tmp_path: Path) -> None:
    truth = Truth(blocks=8, cv=0.10, ratio=_every(1.0))
    store = _store(tmp_path, truth)
    en, ja = _report(store, tmp_path / "en", "en"), _report(store, tmp_path / "ja", "ja")
    rows = en.ratio_rows
    assert {(r["verdict"], r["verdict_reason"]) for r in rows} == {("cannot-tell", "wide")}
    low, high = _span(en)
    assert float(low) < 95 or float(high) > 105
    assert _answer(en) == (f"pgecons-read: pg18 against pg17: cannot tell at 1, 2, 4 clients: the intervals "
                           f"span {low}–{high}% at 99.2%, neither wholly above or below 100% nor within ±5% "
                           "(more blocks narrow them).")
    cls, text = _td(en, 4)
    assert cls == "marked" and text.endswith(", 99.2%] ?")
    assert "? cannot tell: the 99.2% interval" in en.chart and "holds 100% and reaches beyond ±5%" in en.chart
    assert _answer(ja) == ("pgecons-read: pg18 (pg17 比): クライアント数 1、2、4 では判定できません: "
                           f"区間は {low}–{high}%（99.2%）で、100% を完全に上回るとも下回るとも、±5% 以内とも"
                           "言えません（ブロックを増やすと狭まります）。")
    assert _td(ja, 4)[0] == "marked"


def _a_seed_for_d() -> Truth:
    """A truth of +3%, CV 3%, 10 blocks, and the first seed whose 1-client read ratio excludes
    100% at 95% but not at 1 - 0.05/6 (found by search, so the case does not depend on luck)."""
    for seed in range(1, 500):
        truth = Truth(blocks=10, cv=0.03, ratio=_every(1.03), seed=seed)
        d = _pairs(truth, "pgecons-read", 1)
        ones = [1.0] * len(d)
        at95 = ratio_interval(list(np.exp(d)), ones, confidence=0.95, blocks=range(len(d)),
                              baseline_blocks=range(len(d)))
        at_family = ratio_interval(list(np.exp(d)), ones, confidence=1 - 0.05 / 6, blocks=range(len(d)),
                                   baseline_blocks=range(len(d)))
        assert at95 is not None and at_family is not None
        if at95.low > 1.001 and at_family.low < 0.999:
            return truth
    raise AssertionError("no seed gives the case")


def test_d_an_interval_that_excludes_100_only_uncorrected_cannot_tell(tmp_path: Path) -> None:
    truth = _a_seed_for_d()
    store = _store(tmp_path, truth)
    en, ja = _report(store, tmp_path / "en", "en"), _report(store, tmp_path / "ja", "ja")
    row = _row(en, 1)
    low, high = row["ratio_ci_low_pct"], row["ratio_ci_high_pct"]
    assert (row["verdict"], row["verdict_reason"]) == ("cannot-tell", "wide")
    assert float(low) < 100 < float(high) and float(row["ratio_ci_level_pct"]) >= 99.1
    told = re.search(r"cannot tell at ([\d, ]+) clients?: the intervals span", _answer(en))
    assert told and "1" in told[1].split(", "), _answer(en)
    assert _td(en, 1) == ("marked", f"{row['estimate_pct']}% [{low}–{high}, {row['ratio_ci_level_pct']}%] ?")
    assert "では判定できません" in _answer(ja) and _td(ja, 1)[0] == "marked"


def test_e_a_point_with_every_trial_disturbed_cannot_tell(tmp_path: Path) -> None:
    truth = Truth(blocks=12, cv=0.01, ratio=_every(1.10), disturbed=frozenset({("pgecons-read", 2)}))
    store = _store(tmp_path, truth)
    en, ja = _report(store, tmp_path / "en", "en"), _report(store, tmp_path / "ja", "ja")
    row = _row(en, 2)
    assert (row["verdict"], row["verdict_reason"], row["ratio_pct"]) == ("cannot-tell", "no-ratio", "")
    assert _answer(en).endswith("; cannot tell at 2 clients: no ratio, as a server has no successful trial "
                                "there (see the warnings).")
    assert ("pg18 vs pg17: cannot tell at 2 clients: no ratio, as a server has no successful trial "
            "there") in en.md
    assert _td(en, 2) == ("missing marked", "— ?")
    assert "pg18 · 2 clients" not in en.chart  # no point is drawn where there is no ratio
    assert _answer(ja).endswith("クライアント数 2 では判定できません: 成功した試行のないサーバがあり、"
                                "比がありません（警告を参照）。")
    assert _td(ja, 2) == ("missing marked", "— ?")
