"""A scale-up finding names the core count TPS peaks at only where the client-count findings'
rule would (issue 54, item 6): every core count's peak has at least 3 ok trials and the highest
peak's interval lies above every other's; "scales until" only where each step up to the knee
grew beyond the intervals. Otherwise it says what the intervals support, in that rule's words.
Stores of a core sweep (1 and 2 cores) whose every TPS is chosen, read by `teiten report`."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.conftest import run_cli
from tests.truestores import build_study

from teiten.model.results import PlannedTrial

STUDY = """study: cores-truth
servers:
  - {{name: pg18, install: "18"}}
cores: [1, 2]
workloads:
  - pgecons-read
scale: 1
clients: [1]
duration: 1s
repetitions: {n}
seed: 1
"""

# (TPS of each repetition at 1 core, at 2 cores), and what the report says in en and ja.
CASES = {
    # The issue's: 2 repetitions, 162.5 [156.5–168.5] against 157.2 [153.0–161.5].
    "two-repetitions": (
        (156.5, 168.5), (153.0, 161.5),
        "Cannot tell at which core count TPS peaks (as few as 2 successful trials at a core "
        "count's peak; stating a peak needs 3 at each).",
        "TPS が最大となるコア数は判定できません（コア数ごとの最大点で成功した試行が最少で 2 回。"
        "最大点を示すには各点 3 回以上が必要です）。"),
    # Enough repetitions, but the intervals overlap.
    "overlapping": (
        (158.0, 161.0, 162.5, 164.0, 167.0), (153.0, 155.0, 157.2, 159.5, 161.5),
        "Cannot tell at which core count TPS peaks: the interval of the highest peak (1 core, "
        "162.5 TPS) overlaps those of other core counts.",
        "TPS が最大となるコア数は判定できません: 最大の点（1 コア、162.5 TPS）の区間が他の"
        "コア数の区間と重なります。"),
    # A clear peak at the larger count, reached about linearly (192 >= 0.8 x 2 x 102).
    "clear-and-scaling": (
        (100.0, 101.0, 102.0, 103.0, 104.0), (190.0, 191.0, 192.0, 193.0, 194.0),
        "TPS peaks at 2 cores (192.0 TPS) and scales until 2 cores (80% of linear or better).",
        "TPS は 2 コアで最大 192.0 TPS に達し、2 コアまでほぼ線形に伸びます（線形の 80% 以上）。"),
    # A clear peak at the smaller count: the second core costs TPS.
    "clear-at-one-core": (
        (162.0, 163.0, 164.0, 165.0, 166.0), (150.0, 151.0, 152.0, 153.0, 154.0),
        "TPS peaks at 1 core (164.0 TPS).",
        "TPS は 1 コアで最大 164.0 TPS に達します。"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_scaleup_names_its_peak_only_where_the_intervals_place_it(case: str, tmp_path: Path) -> None:
    one, two, en, ja = CASES[case]
    by_cores = {"pg18-1core": one, "pg18-2cores": two}

    def tps(t: PlannedTrial) -> float:
        return by_cores[t.server][t.repetition - 1]

    store = build_study(tmp_path / "s.db", STUDY.format(n=len(one)), tps)
    for lang, said in (("en", en), ("ja", ja)):
        done = run_cli("report", "--store", str(store), "--out", str(tmp_path / lang), "--lang", lang)
        assert done.returncode == 0, done.stderr
        report = (tmp_path / lang / "report.md").read_text()
        assert f"*{said}*" in report, report
    assert "highest peak is at" not in (tmp_path / "en" / "report.md").read_text()
