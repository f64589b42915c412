"""From trials to verdicts: the ratio paired by repetition set, Holm's correction across a report's
comparisons, the notices that say how many were made, and how the report words it all."""

from __future__ import annotations

import html
import itertools
from dataclasses import replace
from pathlib import Path

import pytest

from teiten.analysis import compare, summary
from teiten.analysis.inputs import ReportOptions, StudyData
from teiten.analysis.model import WorkloadSection
from teiten.report.exports import RATIO_COLUMNS, TPS_COLUMNS, all_tables
from teiten.report.html import render_html
from teiten.report.markdown import render_markdown
from teiten.results import LoadFigures, PlannedTrial, ServerRecord, StudyResults, TrialRecord

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
    assert p.significant is True and p.p_value == pytest.approx(2 / 64)
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
    p = _section(_trials(3)).servers[1].points[0]
    assert p.ratio_method == "signed-rank" and p.ratio_ci_level == pytest.approx(0.75)
    assert p.significant is None and p.needed == 6 and p.p_value is None


def test_one_repetition_gives_no_interval() -> None:
    sec = _section(_trials(1))
    for s in sec.servers:
        assert s.points[0].tps_ci is None and s.points[0].tps_ci_level is None
    assert sec.servers[1].points[0].ratio_ci is None


def test_holm_corrects_the_family_and_says_what_a_verdict_needs() -> None:
    # 2 workloads x 2 client counts = 4 comparisons. With 6 blocks the best p is 2/64 = 0.031,
    # above 0.05 / 4: no comparison can pass Holm's first step, so none is tested.
    sections = [_section(_trials(6, ("r", "u"), (1, 2)), w, (1, 2)) for w in ("r", "u")]
    assert all(p.significant for s in sections for p in s.servers[1].points)  # one at a time
    corrected = compare.with_holm(sections)
    family = [p for s in corrected for p in s.servers[1].points]
    assert len(family) == 4 and all(p.comparisons == 4 for p in family)
    assert all(p.significant is None and p.p_value is None and p.needed == 8 for p in family)
    assert {f.kind for s in corrected for f in s.findings} >= {"too-few"}
    # With 8 blocks the best p is 2/256 = 0.0078 <= 0.0125: tested, and Holm-adjusted.
    sections = [_section(_trials(8, ("r", "u"), (1, 2)), w, (1, 2)) for w in ("r", "u")]
    family = [p for s in compare.with_holm(sections) for p in s.servers[1].points]
    assert all(p.p_value == pytest.approx(2 / 256) for p in family)
    assert all(p.p_holm == pytest.approx(4 * 2 / 256) and p.significant for p in family)


def test_holm_leaves_a_single_comparison_alone() -> None:
    (sec,) = compare.with_holm([_section(_trials(6))])
    p = sec.servers[1].points[0]
    assert p.comparisons == 1 and p.p_holm == pytest.approx(p.p_value) and p.significant is True


def _study(trials: list[TrialRecord], reps: int) -> StudyResults:
    spec = {"study": {"clients": [1, 2], "repetitions": reps, "duration": 1, "scale": 1,
                      "order": "random", "seed": 1},
            "workloads": [{"key": "r"}, {"key": "u"}]}
    servers = tuple(ServerRecord(name, i, "local", {}, {"version": v}) for i, (name, v) in
                    enumerate((("a", "17.5"), ("b", "18.1"))))
    return StudyResults(1, "s", "s.yaml", "", spec, 1, "finished", "2026-05-09T00:00:00+00:00",
                        None, {}, "0", servers, tuple(trials))


def _report(reps: int, lang: str = "en"):  # type: ignore[no-untyped-def]
    study = _study(_trials(reps, ("r", "u"), (1, 2)), reps)
    return summary.report_data(StudyData(study), ReportOptions("/tmp/s.db", "2026-05-09", lang=lang))


def test_the_report_says_how_many_comparisons_it_makes() -> None:
    data = _report(3)
    keys = {n.key: n.params for n in data.warnings}
    assert keys["comparisons"] == {"count": 4, "alpha": 0.05}
    assert keys["too-few-repetitions"] == {"repetitions": 3, "needed": 8}
    doc = render_html(data)
    assert "This report compares 4 points with their baseline" in doc
    assert "Holm" in doc
    ja = render_html(replace(data, lang="ja"))
    assert "基準サーバとの比較を 4 件" in ja and "Holm 法" in ja


def test_a_holm_verdict_is_worded_with_its_correction(tmp_path: Path) -> None:
    data = _report(8)
    doc = html.unescape(render_html(data))
    assert ("p = 0.031 after Holm's correction for 4 comparisons (Wilcoxon signed-rank test of the "
            "ratios within each repetition set; 0.008 before it): significant at α = 0.05") in doc
    text = render_markdown(data, tmp_path).read_text(encoding="utf-8")
    # 8 blocks: the signed-rank interval reaches 96.09%, printed rounded down; the medians 99.2%.
    assert ("b is 3.8% faster than a at 1 client: ratio 103.8% (96% CI 103.8–104.2%), significant "
            "after Holm's correction for 4 comparisons (p = 0.031).") in text
    assert ("| 1 | 1051.2 \\[698.5–1602.1, 99.2%\\] | 1091.4 \\[728.8–1662.9, 99.2%\\] | "
            "103.8% \\[103.8–104.2, 96%\\] \\* |") in text
    ja = html.unescape(render_html(replace(data, lang="ja")))
    assert "p = 0.031（4 件の比較について Holm 法で補正。" in ja
    assert "4 件の比較について Holm 法で補正して有意差あり（p = 0.031）。" in ja


def test_exports_append_the_levels_and_the_correction() -> None:
    data = _report(3)
    assert TPS_COLUMNS[-1] == "tps_ci_level_pct"
    assert RATIO_COLUMNS[-4:] == ("ratio_ci_level_pct", "ratio_ci_method", "p_value_holm",
                                  "p_value_family_size")
    tables = {t.name: t for section in all_tables(data) for t in section}
    ratio = [dict(zip(RATIO_COLUMNS, row, strict=True)) for row in tables["r-ratio"].rows]
    assert [r["ratio_ci_level_pct"] for r in ratio] == [75.0, 75.0]
    assert {r["ratio_ci_method"] for r in ratio} == {"signed-rank"}
    assert {r["p_value_family_size"] for r in ratio} == {4}
    assert {r["significance"] for r in ratio} == {"too-few"}
    tps = [dict(zip(TPS_COLUMNS, row, strict=True)) for row in tables["r-tps"].rows]
    assert {r["tps_ci_level_pct"] for r in tps} == {75.0}
