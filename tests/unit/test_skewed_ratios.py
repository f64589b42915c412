"""A ratio whose within-block ratios are skewed (pg18 stalls in 3 of 12 blocks, pg17 never)
takes the sign-test interval of their median, and the report says so where it prints it: the
legend and the cell's hover, in en and ja; its estimate is that median, inside the interval.
A real SQLite store of a built-in-shaped study, rendered by `teiten report`."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest
from tests.conftest import run_cli
from tests.truestores import Truth, build


@pytest.mark.parametrize("lang, legend, hover", [
    ("en", "sign-test interval of the median of the ratios within each repetition set",
     "sign-test interval of the ratios within each block (they looked skewed"),
    ("ja", "比の中央値に対する符号検定による信頼区間", "符号検定による信頼区間（比の分布が歪んでおり")])
def test_a_skewed_ratio_is_judged_by_the_sign_test_and_says_so(tmp_path: Path, lang: str,
                                                               legend: str, hover: str) -> None:
    truth = Truth(blocks=12, cv=0.01, clients=(1,), workloads=("pgecons-read",),
                  stalls=frozenset({2, 5, 9}))
    path = build(tmp_path / "skew.db", truth)
    out = tmp_path / "report"
    done = run_cli("report", "--store", str(path), "--out", str(out), "--lang", lang)
    assert done.returncode == 0, done.stderr
    html = (out / "report.html").read_text()
    assert legend in html and hover in html
    with (out / "tables" / "pgecons-read-ratio.csv").open() as f:
        (row,) = [r for r in csv.DictReader(f) if r["server"] == "pg18"]
    assert row["estimate_method"] == row["ratio_ci_method"] == "sign-test"
    low, estimate, high = (float(row[k]) for k in ("ratio_ci_low_pct", "estimate_pct",
                                                    "ratio_ci_high_pct"))
    assert low <= estimate <= high
    # The median of the within-block ratios: 9 blocks of 12 ran at the true ratio, 1.0.
    assert abs(estimate - 100) < 3
