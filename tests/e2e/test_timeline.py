"""``teiten timeline``: a study's history on one testbed across builds, on stores whose truth is
known (tests/truestores.py: real specs, plans and store, TPS drawn from a known law).

A line of six commits c0..c5 on a branch, as a CI fleet runs it: study k compares c(k) with
c(k+1), two servers of one study. From c3 on every build is 30% slower. The timeline orders the
builds by their first-parent position, pools each build's repetitions across the studies that
ran it, and finds one change point, between c2 and c3, with the ratio inside its interval."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import pytest
from tests.conftest import run_cli
from tests.truestores import Truth, build

COMMITS = [f"{i:x}" * 40 for i in range(10, 16)]  # c0..c5: aaaa..., bbbb..., ...
SLOW_FROM = 3
FACTOR = 0.7


def _git(i: int) -> dict[str, object]:
    return {"commit": COMMITS[i], "subject": f"commit {i}", "position": 100 + i,
            "committed_at": f"2026-11-2{i}T09:00:00+09:00", "repo": "/src/pg", "ref": "main"}


def _line_of_commits(path: Path, *, slow_from: int | None = SLOW_FROM, testbed: str | None = None) -> Path:
    """Five studies named "truth": study k runs c(k) as pg17 and c(k+1) as pg18, 6 blocks each."""
    for k in range(5):
        build(path, Truth(blocks=6, cv=0.03, clients=(1, 4), workloads=("pgecons-read",), seed=k))
        with sqlite3.connect(path) as conn:
            sid = conn.execute("SELECT max(id) FROM studies").fetchone()[0]
            for name, i in (("pg17", k), ("pg18", k + 1)):
                [spec] = conn.execute("SELECT spec_json FROM servers WHERE study_id=? AND name=?",
                                      (sid, name)).fetchone()
                spec = json.loads(spec)
                spec["resolved"]["build"] = {"key": f"key{i}", "git": _git(i)}
                conn.execute("UPDATE servers SET spec_json=? WHERE study_id=? AND name=?",
                             (json.dumps(spec), sid, name))
                if slow_from is not None and i >= slow_from:
                    conn.execute("UPDATE trials SET tps = tps * ? WHERE study_id=? AND server=?",
                                 (FACTOR, sid, name))
            if testbed:
                [spec] = conn.execute("SELECT spec_json FROM studies WHERE id=?", (sid,)).fetchone()
                conn.execute("UPDATE studies SET spec_json=? WHERE id=?",
                             (json.dumps({**json.loads(spec), "testbed": testbed}), sid))
    run_cli("store", "summarize", "--store", str(path), check=True)
    return path


@pytest.fixture(scope="module")
def line(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The line of six commits, summarized (the tests only read it)."""
    return _line_of_commits(tmp_path_factory.mktemp("line") / "line.db")


def test_the_timeline_finds_the_commit_that_slowed_every_build_after_it(line: Path, tmp_path: Path) -> None:
    store = line
    done = run_cli("timeline", "truth", "--store", str(store), "--out", str(tmp_path / "out"))
    assert done.returncode == 0, done.stderr
    text = done.stdout
    assert "6 builds in first-parent order on the branch, from 5 studies." in text
    # Each build in first-parent order, with its pooled repetitions: 6 from its one study at the
    # ends of the line, 12 from the two studies that ran it in between.
    table = text.split("pgecons-read\n", 1)[1].split("\n\n", 1)[0].splitlines()
    assert [row.split()[0] for row in table[1:]] == [c[:12] for c in COMMITS]
    assert [row.split()[4] for row in table[1:]] == ["(6)", "(12)", "(12)", "(12)", "(12)", "(6)"]
    changes = [ln for ln in text.split("Change points\n", 1)[1].splitlines() if ln.startswith("  ")]
    assert len(changes) == 2, changes  # one at each client count, both between c2 and c3
    for clients, line in zip(("1 client", "4 clients"), changes, strict=True):
        assert line.startswith(f"  pgecons-read at {clients}: between {COMMITS[2][:12]} (commit 2) and "
                               f"{COMMITS[3][:12]} (commit 3), TPS became "), line
        pct = float(line.split("TPS became ", 1)[1].split("%", 1)[0])
        low, high = (float(x) for x in line.split("[", 1)[1].split(",", 1)[0].split("–"))
        assert low <= pct <= high and low < FACTOR * 100 < high and high < 95, line
    html = (tmp_path / "out" / "timeline.html").read_text(encoding="utf-8")
    assert html.count("<svg") == 1 and f"{COMMITS[3][:12]} (commit 3)" in html
    md = (tmp_path / "out" / "timeline.md").read_text(encoding="utf-8")
    assert md.startswith("# Timeline of truth on testbed ") and changes[0].strip() in md
    assert done.stdout.rstrip().endswith("timeline.html")
    ja = run_cli("timeline", "truth", "--store", str(store), "--lang", "ja")
    assert "ブランチの first-parent 順" in ja.stdout
    assert f"{COMMITS[2][:12]} (commit 2) と {COMMITS[3][:12]} (commit 3) の間で、TPS が以前の " in ja.stdout


def test_a_line_without_a_change_says_so(tmp_path: Path) -> None:
    store = _line_of_commits(tmp_path / "flat.db", slow_from=None)
    done = run_cli("timeline", "truth", "--store", str(store))
    assert done.returncode == 0, done.stderr
    # two series (one workload at two client counts): each tested at 5% / 2, the timeline at 5%
    assert ("a permutation test keeps the split, its p at or below 0.025 (5% over the 2 series tested), "
            "so that a timeline without any change shows a change point at most 5% of the time;"
            in done.stdout)
    assert done.stdout.rstrip().endswith("No change point: no split of any point's series of builds "
                                         "has a permutation p at or below 0.025 (5% over the 2 series "
                                         "tested).")


def test_builds_that_are_no_commits_go_in_version_order(tmp_path: Path) -> None:
    store = tmp_path / "versions.db"
    build(store, Truth(blocks=4, cv=0.02, clients=(1,), workloads=("pgecons-read",)))
    run_cli("store", "summarize", "--store", str(store), check=True)
    done = run_cli("timeline", "truth", "--store", str(store))
    assert done.returncode == 0, done.stderr
    assert "2 builds in version order (then the order they first ran), from 1 studies." in done.stdout
    rows = done.stdout.split("pgecons-read\n", 1)[1].splitlines()
    assert [r.split()[0] for r in rows[1:3]] == ["17.7", "18.1"]


@pytest.mark.parametrize(("args", "says"), [
    (("nosuch",), "has no point summaries of a study named nosuch (studies with some: truth)"),
    (("truth", "--testbed", "elsewhere"), "truth never ran on testbed elsewhere in "),
])
def test_bad_input_is_one_line_with_status_2(line: Path, args: tuple[str, ...], says: str) -> None:
    done = run_cli("timeline", *args, "--store", str(line))
    assert done.returncode == 2 and says in done.stderr and len(done.stderr.splitlines()) == 1, done.stderr
    assert "Traceback" not in done.stderr


def test_a_study_on_two_testbeds_asks_which(line: Path, tmp_path: Path) -> None:
    store = tmp_path / "two.db"
    shutil.copyfile(line, store)
    _line_of_commits(store, testbed="ci-box-2")
    done = run_cli("timeline", "truth", "--store", str(store))
    assert done.returncode == 2 and "ran on 2 testbeds" in done.stderr and "give --testbed NAME" in done.stderr
    one = run_cli("timeline", "truth", "--store", str(store), "--testbed", "ci-box-2")
    assert one.returncode == 0 and "on testbed ci-box-2" in one.stdout
    assert "from 5 studies" in one.stdout
