"""From trials to verdicts: the ratio paired by repetition set, the Bonferroni level across a
report's comparisons, the verdict read from the interval, the notices that say how many were made,
and how the report words it all."""

from __future__ import annotations

import html
import itertools
from dataclasses import replace
from pathlib import Path

import pytest

from teiten.analysis import compare, summary
from teiten.analysis.inputs import ReportOptions, StudyData
from teiten.analysis.model import WorkloadSection
from teiten.features import FEATURES
from teiten.model.results import LoadFigures, PlannedTrial, ServerRecord, StudyResults, TrialRecord
from teiten.report.exports import RATIO_COLUMNS, TPS_COLUMNS, all_tables
from teiten.report.html import render_html
from teiten.report.markdown import render_markdown

_ORDER = itertools.count()


def _t(server: str, workload: str, clients: int, rep: int, tps: float, *, study_id: int = 1,
       study: str = "s") -> TrialRecord:
    n = next(_ORDER)
    figures = LoadFigures(tps=tps, transactions=int(tps), failed_transactions=0, duration_s=1.0,
                          latency_ms_avg=1000 * clients / tps, latency_ms_stddev=None,
                          initial_connection_ms=None, pgbench_version=None)
    return TrialRecord(PlannedTrial(f"t{n}", n, server, workload, clients, 1, rep, 1.0),
                       study_id=study_id, study=study, status="ok", figures=figures)


# Each block slows both servers alike (a drift the blocks share); b is 4% faster than a.
DRIFT = (1.0, 1.3, 0.8, 1.6, 0.7, 1.2, 0.9, 1.1)
NOISE = (0.002, -0.001, 0.0, 0.0013, -0.0021, 0.0007, -0.0015, 0.0004)


def _trials(reps: int, workloads: tuple[str, ...] = ("w",), clients: tuple[int, ...] = (1,),
            gain: float = 1.04) -> list[TrialRecord]:
    out = []
    for w, c, r in itertools.product(workloads, clients, range(1, reps + 1)):
        out.append(_t("a", w, c, r, 1000 * c * DRIFT[r - 1] * (1 + NOISE[r - 1])))
        out.append(_t("b", w, c, r, 1000 * c * DRIFT[r - 1] * gain * (1 - NOISE[r - 1] / 2)))
    return out


def _section(trials: list[TrialRecord], workload: str = "w",
             clients: tuple[int, ...] = (1,)) -> WorkloadSection:
    return summary.section(trials, workload, "", [("a", "17"), ("b", "18")], list(clients))


def test_the_ratio_pairs_trials_by_repetition_set() -> None:
    sec = _section(_trials(6))
    p = sec.servers[1].points[0]
    assert p.tps_blocks == ("1:s:1", "1:s:2", "1:s:3", "1:s:4", "1:s:5", "1:s:6")
    assert p.ratio_method == "signed-rank" and p.ratio_ci_level == pytest.approx(0.96875)
    assert p.ratio_ci is not None and 1.03 < p.ratio_ci[0] < p.ratio_ci[1] < 1.05
    assert p.p_value == pytest.approx(2 / 64)
    # The printed ratio is the interval's own (Hodges-Lehmann) estimate, inside it.
    assert p.estimate is not None and p.ratio_ci[0] <= p.estimate <= p.ratio_ci[1]
    # The drift the blocks share is not noise of the ratio: it could tell a 1% difference,
    # where the spread of either server's values alone (CV 27%) would need about 40%.
    assert p.detectable_pct is not None and p.detectable_pct < 1
    base = sec.servers[0].points[0]
    assert base.tps_ci_level == pytest.approx(0.96875) and base.ratio_method == ""


def test_studies_side_by_side_share_no_block() -> None:
    # Two studies (compare): the same repetition numbers are different blocks.
    trials = [t if t.planned.server == "a" else replace(t, study_id=2, study="other")
              for t in _trials(3)]
    p = _section(trials).servers[1].points[0]
    assert p.ratio_method == "hodges-lehmann" and p.ratio_ci_level == pytest.approx(0.9)


def test_three_blocks_reach_75_percent_and_no_verdict() -> None:
    (sec,) = compare.with_family([_section(_trials(3))])
    p = sec.servers[1].points[0]
    assert p.ratio_method == "signed-rank" and p.ratio_ci_level == pytest.approx(0.75)
    # The interval lies wholly above 100%, but at 75%: it judges nothing.
    assert p.ratio_ci is not None and p.ratio_ci[0] > 1
    assert (p.verdict, p.reason) == ("cannot-tell", "short") and p.needed == 6 and p.p_value is None


def test_one_repetition_gives_no_interval() -> None:
    sec = _section(_trials(1))
    for s in sec.servers:
        assert s.points[0].tps_ci is None and s.points[0].tps_ci_level is None
    assert sec.servers[1].points[0].ratio_ci is None


def test_bonferroni_widens_the_family_and_says_what_a_verdict_needs() -> None:
    # 2 workloads x 2 client counts = 4 comparisons, each interval at 1 - 0.05/4 = 98.75%. With 6
    # blocks the signed-rank interval reaches 96.9% at most: short of it, so no verdict.
    sections = [_section(_trials(6, ("r", "u"), (1, 2)), w, (1, 2)) for w in ("r", "u")]
    assert all(p.ratio_ci and p.ratio_ci[0] > 1 for s in sections for p in s.servers[1].points)
    corrected = compare.with_family(sections)
    family = [p for s in corrected for p in s.servers[1].points]
    assert len(family) == 4 and all(p.comparisons == 4 for p in family)
    assert all((p.verdict, p.reason, p.needed) == ("cannot-tell", "short", 8) for p in family)
    assert all(p.ratio_ci_level == pytest.approx(1 - 2 / 64) for p in family)
    assert {f.kind for s in corrected for f in s.findings} >= {"cannot-tell"}
    # With 8 blocks it reaches 1 - 2/256 = 99.2% >= 98.75%: faster, read from that interval.
    sections = [_section(_trials(8, ("r", "u"), (1, 2)), w, (1, 2)) for w in ("r", "u")]
    family = [p for s in compare.with_family(sections, margin_pct=2) for p in s.servers[1].points]
    assert all(p.ratio_ci_level == pytest.approx(1 - 2 / 256) and p.verdict == "faster" for p in family)
    # At the default margin of 5%, the same interval (103.7-104.3%) is no difference within ±5%.
    assert {p.verdict for s in compare.with_family(sections) for p in s.servers[1].points} == {"no-difference"}
    assert all(p.ratio_ci and p.ratio_ci[0] <= p.estimate <= p.ratio_ci[1] for p in family if p.estimate)
    assert all(p.p_holm == pytest.approx(4 * 2 / 256) for p in family)  # the CSV's column, as before


def test_a_single_comparison_is_at_95_percent() -> None:
    (sec,) = compare.with_family([_section(_trials(6))], margin_pct=2)
    p = sec.servers[1].points[0]
    assert p.comparisons == 1 and p.p_holm == pytest.approx(p.p_value) and p.verdict == "faster"
    assert p.ratio_ci_level == pytest.approx(1 - 2 / 64)


def _study(trials: list[TrialRecord], reps: int) -> StudyResults:
    # b is 4% faster: a margin of 2% lets the verdict say so (at 5% it is no difference).
    spec = {"study": {"clients": [1, 2], "repetitions": reps, "duration": 1, "scale": 1,
                      "order": "random", "seed": 1, "margin_pct": 2},
            "workloads": [{"key": "r"}, {"key": "u"}]}
    servers = tuple(ServerRecord(name, i, "local", {}, {"version": v}) for i, (name, v) in
                    enumerate((("a", "17.5"), ("b", "18.1"))))
    return StudyResults(1, "s", "s.yaml", "", spec, 1, "finished", "2026-05-09T00:00:00+00:00",
                        None, {}, "0", servers, tuple(trials))


def _report(reps: int, lang: str = "en"):  # type: ignore[no-untyped-def]
    study = _study(_trials(reps, ("r", "u"), (1, 2)), reps)
    return summary.report_data(StudyData(study, features=FEATURES),
                               ReportOptions("/tmp/s.db", "2026-05-09", lang=lang))


def test_the_report_says_how_many_comparisons_it_makes() -> None:
    data = _report(3)
    keys = {n.key: n.params for n in data.warnings}
    assert keys["comparisons"] == {"count": 4, "alpha": 0.05, "level_pct": "98.75"}
    assert keys["too-few-repetitions"] == {"repetitions": 3, "needed": 8}
    doc = html.unescape(render_html(data))
    assert ("This report compares 4 points with their baseline (servers × workloads × client counts); "
            "each ratio's interval is computed at 98.75% (Bonferroni: 1 − α/4, α = 0.05)") in doc
    assert "Holm" not in doc
    ja = html.unescape(render_html(replace(data, lang="ja")))
    assert "基準サーバとの比較を 4 件" in ja and "Bonferroni 法" in ja


def test_a_verdict_is_worded_from_its_interval(tmp_path: Path) -> None:
    data = _report(8)
    doc = html.unescape(render_html(data))
    assert ("faster: the 99.2% interval 103.7–104.3% (signed-rank interval of the ratios within each "
            "block) lies wholly above 100%") in doc
    text = render_markdown(data, tmp_path).read_text(encoding="utf-8")
    # 8 blocks: the signed-rank interval reaches 99.2% (>= 98.75%, the level 4 comparisons need),
    # printed rounded down; the medians 99.2%. The ratio is the interval's own estimate.
    assert ("- r: b against a: 4.0% faster at 1 client (ratio to baseline 104.0%, 99.2% CI "
            "103.7–104.3%); ") in text
    assert "b is 4.0% faster than a at 1 client: ratio to baseline 104.0% (99.2% CI 103.7–104.3%)." in text
    assert ("| 1 | 1051.2 \\[698.5–1602.1, 99.2%\\] | 1091.4 \\[728.8–1662.9, 99.2%\\] | "
            "104.0% \\[103.7–104.3, 99.2%\\] ▲ |") in text
    # The drift the blocks share makes every median's interval overlap the others: no peak.
    assert ("b: cannot tell where it peaks: the interval of its highest median (2 clients, 2182.7 TPS) "
            "overlaps those of other client counts.") in text
    ja = html.unescape(render_html(replace(data, lang="ja")))
    assert ("高速: 99.2% 信頼区間 103.7–104.3%（ブロックごとの比に対する符号付き順位による信頼区間）が "
            "100% を完全に上回ります") in ja
    assert "b は a よりクライアント数 1 で 4.0% 高速です: 基準比 104.0%（99.2% 信頼区間 103.7–104.3%）。" in ja


def test_too_few_blocks_cannot_tell_and_say_how_many_would(tmp_path: Path) -> None:
    data = _report(3)
    text = render_markdown(data, tmp_path).read_text(encoding="utf-8")
    assert ("- r: b against a: cannot tell at 1, 2 clients: the intervals span 103.7–104.2% at 75%, "
            "short of the 98.75% this report's 4 comparisons need each (8 blocks reach it).") in text
    assert "104.0% \\[103.7–104.2, 75%\\] ? |" in text
    ja = render_markdown(replace(data, lang="ja"), tmp_path / "ja").read_text(encoding="utf-8")
    assert ("クライアント数 1、2 では判定できません: 区間は 103.7–104.2%（75%）で、この報告の 4 件の比較が"
            "それぞれ必要とする 98.75% に届きません（8 ブロックで届きます）。") in ja


def test_exports_append_the_levels_and_the_correction() -> None:
    data = _report(3)
    # Appended in order, each after the last (the emulated mark last: issue 54, item 7).
    assert TPS_COLUMNS[-3:] == ("tps_ci_level_pct", "cpu_idle_pct", "emulated")
    assert RATIO_COLUMNS[-10:] == ("ratio_ci_level_pct", "ratio_ci_method", "p_value_holm",
                                   "p_value_family_size", "estimate_pct", "estimate_method", "verdict",
                                   "verdict_reason", "margin_pct", "emulated")
    tables = {t.name: t for section in all_tables(data) for t in section}
    ratio = [dict(zip(RATIO_COLUMNS, row, strict=True)) for row in tables["r-ratio"].rows]
    assert [r["ratio_ci_level_pct"] for r in ratio] == [75.0, 75.0]
    assert {r["ratio_ci_method"] for r in ratio} == {"signed-rank"}
    assert {r["p_value_family_size"] for r in ratio} == {4}
    assert {r["significance"] for r in ratio} == {"too-few"}
    verdicts = {(r["verdict"], r["verdict_reason"], r["margin_pct"]) for r in ratio}
    assert verdicts == {("cannot-tell", "short", 2.0)}
    assert all(r["ratio_ci_low_pct"] <= r["estimate_pct"] <= r["ratio_ci_high_pct"] for r in ratio)
    tps = [dict(zip(TPS_COLUMNS, row, strict=True)) for row in tables["r-tps"].rows]
    assert {r["tps_ci_level_pct"] for r in tps} == {75.0}
