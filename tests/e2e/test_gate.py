"""`teiten gate`, as a CI job meets it, on stores whose truth is known (tests/truestores.py: the
quick study's real spec and plan, two servers, two workloads at 1, 2 and 4 clients, each
trial's TPS drawn from a known law): the exit status, the last line a CI log shows, the row of
each point in the very numbers of the report's ratio table, in English and Japanese; paired (one
study) and unpaired (two studies); bad input, exit 2 with one line.

(a) pg18 10% slower at one point, CV 1%, 12 blocks: exit 1, that point listed. (b) equal, CV 1%,
40 blocks: every point no different within ±5%, exit 0. (c) equal, CV 10%, 8 blocks: exit 3, or
0 with --allow-undecided. (d) a study whose pg18 is 20% slower against another study's pg17:
unpaired, said so, exit 1. (e) pg18 3.5% slower at two points, CV 1.5%: intervals wholly below
100% but not below 95%, so "slower" without "beyond ±5%" (issue 54, item 4); with a third point
12% slower, only that one is said to be beyond.
"""

from __future__ import annotations

import csv
from pathlib import Path

import pytest
from tests.conftest import run_cli
from tests.truestores import Truth, build

POINTS = [(w, c) for w in ("pgecons-read", "pgecons-update") for c in (1, 2, 4)]


def _gate(store: Path, *args: str) -> tuple[int, list[str], str]:
    done = run_cli("gate", "--store", str(store), *args)
    return done.returncode, done.stdout.splitlines(), done.stderr


def _report_rows(store: Path, out: Path) -> dict[tuple[str, int], dict[str, str]]:
    """The report's ratio rows of both workloads, by point."""
    run_cli("report", "--store", str(store), "--out", str(out), check=True)
    rows = {}
    for w in ("pgecons-read", "pgecons-update"):
        with (out / "tables" / f"{w}-ratio.csv").open(encoding="utf-8", newline="") as fh:
            rows.update({(w, int(r["clients"])): r for r in csv.DictReader(fh)})
    return rows


def _cell(row: dict[str, str], marker: str) -> str:
    level = row["ratio_ci_level_pct"].removesuffix(".0")
    return f"{marker} {row['estimate_pct']}% [{row['ratio_ci_low_pct']}–{row['ratio_ci_high_pct']}, {level}%]"


def test_a_slower_point_fails_the_gate_and_is_listed(tmp_path: Path) -> None:
    store = build(tmp_path / "a.db", Truth(blocks=12, cv=0.01, ratio={("pgecons-update", 2): 0.90}))
    status, out, err = _gate(store, "--baseline", "pg17", "--candidate", "pg18",
                             "--markdown", str(tmp_path / "summary.md"))
    assert status == 1, err
    assert out[0] == ("teiten gate: pg18 against pg17, study truth #1 (paired: the two servers ran "
                      "in the same blocks)")
    assert out[1].startswith("Each ratio is the candidate's TPS over the baseline's, with its "
                             "interval at 99.17% so that the gate's 6 comparisons hold together")
    assert out[-1] == "FAIL: pg18 is slower than pg17 beyond ±5% at 1 point: pgecons-update at 2 clients."
    # Each point's row prints the report's own figures, marked by the report's verdict.
    report = _report_rows(store, tmp_path / "report")
    for (w, c), row in report.items():
        line = next(x for x in out if x.split()[:2] == [w, str(c)])
        marker = {"slower": "▼", "no-difference": "≈"}[row["verdict"]]
        assert _cell(row, marker) in line, (line, row)
        assert row["verdict"] == ("slower" if (w, c) == ("pgecons-update", 2) else "no-difference")
    # "beyond ±5%" is said because the slower point's interval lies wholly below 95%.
    assert float(report[("pgecons-update", 2)]["ratio_ci_high_pct"]) < 95
    md = (tmp_path / "summary.md").read_text(encoding="utf-8")
    assert md.startswith("### teiten gate: pg18 against pg17, study truth #1 (paired")
    assert "| Workload | Clients | Ratio [interval, level] | Verdict |" in md
    assert md.rstrip().endswith("**FAIL: pg18 is slower than pg17 beyond ±5% at 1 point: "
                                "pgecons-update at 2 clients.**")
    status, out, _ = _gate(store, "--baseline", "pg17", "--candidate", "pg18", "--lang", "ja")
    assert status == 1
    assert out[-1] == ("不合格: pg18 は 1 点で pg17 より ±5% を超えて低速です: pgecons-update の "
                       "クライアント数 2。")


SLIGHTLY = {("pgecons-read", 1): 0.965, ("pgecons-update", 2): 0.965}


def test_e_slower_within_reach_of_the_margin_is_not_said_to_be_beyond_it(tmp_path: Path) -> None:
    store = build(tmp_path / "e.db", Truth(blocks=12, cv=0.015, ratio=SLIGHTLY))
    report = _report_rows(store, tmp_path / "report")
    slower = {p for p, row in report.items() if row["verdict"] == "slower"}
    assert slower == set(SLIGHTLY)
    # The premise: each interval lies wholly below 100% and reaches above 95% (94.8–99.5 and
    # 93.3–97.8 with this seed), so neither is known to be slower by more than 5%.
    for p in slower:
        low, high = (float(report[p][f"ratio_ci_{x}_pct"]) for x in ("low", "high"))
        assert low < 95 < high < 100, report[p]
    status, out, err = _gate(store, "--baseline", "pg17", "--candidate", "pg18",
                             "--markdown", str(tmp_path / "summary.md"))
    assert status == 1, err  # the gate still fails on the verdict "slower"
    assert out[-1] == ("FAIL: pg18 is slower than pg17 at 2 points: pgecons-read at 1 client, "
                       "pgecons-update at 2 clients (whether by more than ±5%, the intervals "
                       "cannot tell).")
    assert "beyond" not in out[-1]
    md = (tmp_path / "summary.md").read_text(encoding="utf-8")
    assert md.rstrip().endswith(f"**{out[-1]}**")
    status, out, _ = _gate(store, "--baseline", "pg17", "--candidate", "pg18", "--lang", "ja")
    assert status == 1
    assert out[-1] == ("不合格: pg18 は 2 点で pg17 より低速です: pgecons-read の クライアント数 1、"
                       "pgecons-update の クライアント数 2（±5% を超える差かどうかは区間からは判定"
                       "できません）。")
    assert "を超えて低速" not in out[-1]


def test_e_only_the_points_wholly_beyond_the_margin_are_said_to_be(tmp_path: Path) -> None:
    ratio = {**SLIGHTLY, ("pgecons-update", 4): 0.88}
    store = build(tmp_path / "e.db", Truth(blocks=12, cv=0.015, ratio=ratio))
    report = _report_rows(store, tmp_path / "report")
    assert {p for p, row in report.items() if row["verdict"] == "slower"} == set(ratio)
    assert float(report[("pgecons-update", 4)]["ratio_ci_high_pct"]) < 95
    assert all(float(report[p]["ratio_ci_high_pct"]) >= 95 for p in SLIGHTLY)
    status, out, err = _gate(store, "--baseline", "pg17", "--candidate", "pg18")
    assert status == 1, err
    assert out[-1] == ("FAIL: pg18 is slower than pg17 at 3 points: pgecons-read at 1 client, "
                       "pgecons-update at 2, 4 clients; beyond ±5% at pgecons-update at 4 clients.")
    status, out, _ = _gate(store, "--baseline", "pg17", "--candidate", "pg18", "--lang", "ja")
    assert status == 1
    assert out[-1] == ("不合格: pg18 は 3 点で pg17 より低速です: pgecons-read の クライアント数 1、"
                       "pgecons-update の クライアント数 2、4。うち ±5% を超えて低速なのは "
                       "pgecons-update の クライアント数 4 です。")


def test_b_equal_servers_measured_closely_pass(tmp_path: Path) -> None:
    store = build(tmp_path / "b.db", Truth(blocks=40, cv=0.01))
    status, out, err = _gate(store, "--baseline", "pg17", "--candidate", "pg18")
    assert status == 0, err
    assert out[-1] == ("PASS: every one of the 6 points is decided, and pg18 is nowhere slower "
                       "than pg17 beyond ±5%.")
    assert sum("≈" in line for line in out) == len(POINTS)
    status, out, _ = _gate(store, "--baseline", "pg17", "--candidate", "pg18", "--lang", "ja")
    assert status == 0
    assert out[-1] == ("合格: 6 点すべてが判定でき、pg18 が pg17 より ±5% を超えて低速な点は"
                       "ありません。")


def test_c_too_few_blocks_cannot_tell_and_exit_3(tmp_path: Path) -> None:
    store = build(tmp_path / "c.db", Truth(blocks=8, cv=0.10))
    report = _report_rows(store, tmp_path / "report")
    assert {r["verdict"] for r in report.values()} == {"cannot-tell"}
    status, out, err = _gate(store, "--baseline", "pg17", "--candidate", "pg18")
    assert status == 3, err
    where = "pgecons-read at 1, 2, 4 clients, pgecons-update at 1, 2, 4 clients"
    assert out[-1] == (f"UNDECIDED: 6 points cannot tell: {where}. Run more repetitions "
                       "(repetitions: auto stops when each is decided), or pass --allow-undecided.")
    status, out, _ = _gate(store, "--baseline", "pg17", "--candidate", "pg18", "--allow-undecided")
    assert status == 0
    assert out[-1] == f"PASS (--allow-undecided): none is slower, and 6 points cannot tell: {where}."


def test_d_servers_of_two_studies_are_compared_unpaired(tmp_path: Path) -> None:
    store = tmp_path / "d.db"
    build(store, Truth(blocks=12, cv=0.01, seed=1))
    build(store, Truth(blocks=12, cv=0.01, seed=2, ratio=dict.fromkeys(POINTS, 0.8)))
    status, out, err = _gate(store, "--baseline", "1:pg17", "--candidate", "truth:pg18")
    assert status == 1, err
    assert out[0] == ("teiten gate: pg18 against pg17, study truth #1 / study truth #2 (unpaired: "
                      "two studies, so the two-sample Hodges–Lehmann interval, wider than a "
                      "paired one)")
    assert sum("▼" in line and "Hodges–Lehmann interval of the two sets" in line for line in out) == 6
    assert out[-1].startswith("FAIL: pg18 is slower than pg17 beyond ±5% at 6 points")
    # pg18 of the second study against its own pg17 (paired): no difference there.
    status, out, _ = _gate(store, "--study", "2", "--baseline", "pg18", "--candidate", "pg17")
    assert status == 0 and "faster" in "\n".join(out)


@pytest.mark.parametrize(("args", "says"), [
    (["--baseline", "pg17", "--candidate", "pg19"], "has both pg17 and pg19 (the latest, study "
     "truth #1, has pg17, pg18); name their studies as STUDY:SERVER, or give --study"),
    (["--baseline", "1:pg17", "--candidate", "pg19"], "study truth #1 has no server pg19; its "
     "servers are pg17, pg18"),
    (["--baseline", "pg17", "--candidate", "pg17"], "--baseline and --candidate are both pg17"),
    (["--baseline", "pg17", "--candidate", ":pg18"], "--candidate :pg18: give SERVER or STUDY:SERVER"),
    (["--baseline", "nightly:pg17", "--candidate", "pg18"], "has no study named nightly"),
    (["--baseline", "pg17", "--candidate", "pg18", "--study", "7"], "has no study 7"),
])
def test_bad_input_is_one_line_and_exit_2(tmp_path: Path, args: list[str], says: str) -> None:
    store = build(tmp_path / "e.db", Truth(blocks=3, cv=0.01))
    status, out, err = _gate(store, *args)
    assert status == 2 and out == []
    assert len(err.strip().splitlines()) == 1 and says in err, err


def test_an_unfinished_study_is_refused(tmp_path: Path) -> None:
    import sqlite3
    from contextlib import closing

    store = build(tmp_path / "f.db", Truth(blocks=3, cv=0.01))
    with closing(sqlite3.connect(store)) as conn, conn:
        conn.execute("UPDATE studies SET state = 'interrupted'")
    status, _, err = _gate(store, "--baseline", "pg17", "--candidate", "pg18")
    assert status == 2
    assert "study truth (#1) is interrupted: the gate judges finished studies only" in err
