"""`teiten bisect` on a real PostgreSQL 15 repository (the ``pg_git_repo`` fixture: a base
commit, two harmless ones, ONE that spins 1 ms before every simple query, two more), run as a
user runs it: good is the base, bad is ``main``. It must name the spinning commit in at most
⌈log2 5⌉ + 2 = 5 builds, keep every step's study in the store, and leave a history that
``teiten timeline`` splits at that commit, Apache Otava splits there too (the studies copied
into a PostgreSQL store, read with docs/otava/otava.yaml), and ``teiten gate`` judges: 1 for
the bad build against the base, 0 for a harmless one, 3 for a study too short to decide (issue
35, "Done when"). The builds are the suite's cached ones (TEST_HOME), made once per machine.

It runs alone: its verdicts compare TPS across servers, which other tests' load would blur.
"""

from __future__ import annotations

import sqlite3
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest
from tests import otava, sharedstore
from tests.conftest import TEST_HOME, run_cli, start_cli
from tests.gitrepo import GitRepo

from teiten.analysis.verdicts import printed_pct

pytestmark = [pytest.mark.slow, pytest.mark.alone]

FLAGS = "--configure=--without-icu"  # as the other PostgreSQL 15 builds of the suite
STUDY = """\
study: bisected
servers:
  - {name: any, install: "15", settings: {max_connections: 20}}
workloads: [pgecons-read]
scale: 1
clients: [1]
duration: 1s
repetitions: auto
auto_repetitions: {floor: 4, ceiling: 12}
# A step places its midpoint against the point midway between good and bad, not within a margin
# of either: the margin is the gate's (test_the_gate_...), which must pass a harmless build from
# a step's blocks measured beside the rest of the suite (an interval of 87.7-134.1% seen there at
# 99%); the spinning commit is 45-50% slower.
margin_pct: 30
"""


@dataclass(frozen=True)
class Bisected:
    repo: GitRepo
    store: Path
    done: subprocess.CompletedProcess[str]
    markdown: str


@pytest.fixture(scope="module")
def bisected(pg_git_repo: GitRepo) -> Bisected:
    where = TEST_HOME / "work" / "bisect"
    subprocess.run(["rm", "-rf", str(where)], check=True)
    where.mkdir(parents=True)
    where.chmod(0o755)
    (where / "s.yaml").write_text(STUDY)
    done = run_cli("bisect", str(where / "s.yaml"), "--repo", str(pg_git_repo.path), "--good",
                   pg_git_repo.commits[0].hash, "--bad", "main", FLAGS, "--store",
                   str(where / "b.db"), "--markdown", str(where / "b.md"), timeout=3600)
    md = (where / "b.md").read_text(encoding="utf-8") if (where / "b.md").exists() else ""
    return Bisected(pg_git_repo, where / "b.db", done, md)


def _beyond(store: Path) -> tuple[str, str]:
    """The words that study #1's interval earns for the margin, on its printed digits: " beyond
    ±30%" after "slower than good …" where it lies wholly below 70%, else the clause that says the
    intervals cannot tell (the interval as the store kept it, point_summaries)."""
    with sqlite3.connect(store) as conn:
        (high,) = conn.execute("SELECT high_pct FROM point_summaries WHERE study_id = 1 AND "
                               "baseline IS NOT NULL").fetchone()
    if printed_pct(high / 100) < 70:
        return " beyond ±30%", ""
    return "", " (whether by more than ±30%, the intervals cannot tell)"


def _servers(store: Path) -> dict[int, list[str]]:
    with sqlite3.connect(store) as conn:
        rows = conn.execute("SELECT study_id, name FROM servers ORDER BY study_id, position")
        out: dict[int, list[str]] = {}
        for study_id, name in rows:
            out.setdefault(study_id, []).append(name)
    return out


def test_bisect_names_the_commit_that_spins(bisected: Bisected) -> None:
    done, commits = bisected.done, bisected.repo.commits
    assert done.returncode == 0, done.stdout + done.stderr
    base, readme, spin, head = commits[0].hash, commits[2].hash, commits[3].hash, commits[-1].hash
    assert commits[3].bad
    lines = done.stdout.splitlines()
    assert lines[0] == (f"teiten bisect: 5 commits after good {base[:12]} up to bad main "
                        f"({head[:12]}) on the first-parent line of {bisected.repo.path}; at "
                        "most 5 builds")
    # "Beyond ±30%" only where the interval lies wholly below 70% (the spinning commit is 37-50%
    # slower here, and the study stops as soon as bad is slower: its upper end fell either side).
    beyond, unsure = _beyond(bisected.store)
    assert lines[1] == (f"Study #1: bad main ({head[:12]}) is slower than good {base[:12]}{beyond} "
                        f"at pgecons-read at 1 client{unsure}; each step measures those points.")
    # Midway between the base (0) and main (5): the README change (2), good; then between it
    # and main: the spinning commit (3), bad; it follows a good one, so it is the first bad.
    assert lines[2] == (f'Step 1 (study #2): {readme[:12]} "{commits[2].subject}" is good: above '
                        "the point midway between good and bad (nearer good) at every point.")
    assert lines[3].startswith("  pgecons-read at 1 client: ") and " of good, " in lines[3]
    assert lines[3].endswith("%] of the point midway between them"), lines[3]
    assert lines[4] == (f'Step 2 (study #3): {spin[:12]} "{commits[3].subject}" is bad: below '
                        "the point midway between good and bad (nearer bad) at every point.")
    assert lines[-1] == (f'The first bad commit is {spin} "{commits[3].subject}" (4 builds, 2 '
                         f"steps; every step's study is in {bisected.store}).")
    assert len(lines) == 7
    # The Markdown says the same, as a list under a heading.
    assert bisected.markdown.startswith(f"### {lines[0]}\n\n- {lines[1]}\n")
    assert bisected.markdown.rstrip().endswith(f"- {lines[-1]}")


def test_every_step_is_a_study_of_the_store(bisected: Bisected) -> None:
    c = [x.hash[:12] for x in bisected.repo.commits]
    assert _servers(bisected.store) == {
        1: [f"good-{c[0]}", f"bad-{c[5]}"],
        2: [f"good-{c[0]}", f"bad-{c[5]}", f"mid-{c[2]}"],
        3: [f"good-{c[2]}", f"bad-{c[5]}", f"mid-{c[3]}"],
    }
    with sqlite3.connect(bisected.store) as conn:
        names = {n for (n,) in conn.execute("SELECT name FROM studies")}
        states = {s for (s,) in conn.execute("SELECT state FROM studies")}
        builds = {b for (b,) in conn.execute("SELECT DISTINCT build FROM teiten_points")}
    assert names == {"bisected"} and states == {"finished"}
    assert builds == {bisected.repo.commits[i].hash for i in (0, 2, 3, 5)}


def test_the_timeline_of_the_builds_changes_at_that_commit(bisected: Bisected) -> None:
    text = run_cli("timeline", "bisected", "--store", str(bisected.store), check=True).stdout
    c = [x.hash[:12] for x in bisected.repo.commits]
    assert "4 builds in first-parent order on the branch, from 3 studies." in text
    changes = [ln for ln in text.split("Change points\n", 1)[1].splitlines() if ln.startswith("  ")]
    # The spinning commit's change, at least 25% down. Builds of the same code may measure up to
    # the study's margin apart here (docs/guide/history-and-ci.md, "The commit that did it"), and
    # the timeline, which judges builds and not commits, may split there too: any other change is
    # within ±30%.
    ratios = {(ln.split(" between ")[1][:12], ln.split(" and ")[1][:12]):
              float(ln.split("TPS became ", 1)[1].split("%", 1)[0]) for ln in changes}
    assert (c[2], c[3]) in ratios and ratios[(c[2], c[3])] < 75, text
    assert all(70 <= r <= 130 for at, r in ratios.items() if at != (c[2], c[3])), text


def test_the_gate_fails_the_bad_build_and_passes_a_harmless_one(bisected: Bisected) -> None:
    c = [x.hash[:12] for x in bisected.repo.commits]
    beyond, unsure = _beyond(bisected.store)
    for study, candidate, status, last in (
            ("1", f"bad-{c[5]}", 1, f"FAIL: bad-{c[5]} is slower than good-{c[0]}{beyond} at "
                                    f"1 point: pgecons-read at 1 client{unsure}."),
            ("2", f"mid-{c[2]}", 0, f"PASS: the one point is decided, and mid-{c[2]} is not "
                                    f"slower than good-{c[0]} there beyond ±30%.")):
        done = run_cli("gate", "--store", str(bisected.store), "--study", study, "--baseline",
                       f"good-{c[0]}", "--candidate", candidate)
        assert done.returncode == status, done.stdout + done.stderr
        assert done.stdout.splitlines()[-1] == last


def test_a_study_too_short_to_decide_leaves_the_gate_undecided(bisected: Bisected) -> None:
    c = [x.hash[:12] for x in bisected.repo.commits]
    with sqlite3.connect(bisected.store) as conn:
        installs = dict(conn.execute("SELECT name, json_extract(spec_json, '$.install') FROM "
                                     "servers WHERE study_id = 2"))
    where = bisected.store.parent
    (where / "short.yaml").write_text(STUDY.replace(
        '  - {name: any, install: "15", settings: {max_connections: 20}}',
        f'  - {{name: base, install: "{installs[f"good-{c[0]}"]}"}}\n'
        f'  - {{name: readme, install: "{installs[f"mid-{c[2]}"]}"}}').replace(
        "repetitions: auto\nauto_repetitions: {floor: 4, ceiling: 12}", "repetitions: 2"))
    run_cli("run", str(where / "short.yaml"), "--store", str(where / "short.db"), "--no-report",
            check=True)
    short = run_cli("gate", "--store", str(where / "short.db"), "--baseline", "base",
                    "--candidate", "readme")
    assert short.returncode == 3, short.stdout + short.stderr
    assert run_cli("gate", "--store", str(where / "short.db"), "--baseline", "base",
                   "--candidate", "readme", "--allow-undecided").returncode == 0


@pytest.mark.parametrize(("good", "bad", "says"), [
    (5, 0, "is not an earlier commit of --bad"),
    (3, 3, "is not an earlier commit of --bad"),
])
def test_a_good_commit_not_before_bad_is_refused(pg_git_repo: GitRepo, workdir: Path, good: int,
                                                 bad: int, says: str) -> None:
    (workdir / "s.yaml").write_text(STUDY)
    done = run_cli("bisect", str(workdir / "s.yaml"), "--repo", str(pg_git_repo.path), "--good",
                   pg_git_repo.commits[good].hash, "--bad", pg_git_repo.commits[bad].hash,
                   "--store", str(workdir / "b.db"))
    assert done.returncode == 2, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and says in done.stderr, done.stderr
    assert not (workdir / "b.db").exists()


def test_otava_finds_the_change_at_the_same_commit(bisected: Bisected, pg18, tmp_path: Path) -> None:  # noqa: ANN001
    """The steps' studies copied into a PostgreSQL store: Apache Otava, with docs/otava/otava.yaml,
    finds the change between the same two builds as teiten timeline, at the spinning commit."""
    commits = bisected.repo.commits
    with sqlite3.connect(bisected.store) as conn:
        [testbed] = conn.execute("SELECT DISTINCT testbed FROM teiten_points").fetchone()
    with sharedstore.serve(pg18) as cluster:
        copied = start_cli("store", "copy", str(bisected.store), sharedstore.url(cluster),
                           env={"PGPASSWORD": sharedstore.SECRET})
        out, err = copied.communicate(timeout=300)
        assert copied.returncode == 0 and out.count(": copied") == 3, err
        keywords = {"host": "127.0.0.1", "port": cluster.port, "user": "bench",
                    "dbname": "teiten_store"}
        # Four builds are four points: Otava's default p of 0.001 needs more than two a side.
        # A change must pass 5% and be larger than 30% (the spinning commit's is 45-50%): builds of the same
        # code can measure that far apart here (docs/guide/history-and-ci.md,
        # "The commit that did it"). Otava 0.8.0 names its p-value option "-P, --p-value", as one
        # string.
        groups = otava.analyze(keywords, sharedstore.SECRET,
                               f"{testbed}/bisected/pgecons-read/clients=1", tmp_path,
                               "-P, --p-value", "0.05", "--magnitude", "0.3")
    assert len(groups) == 1 and len(groups[0]["changes"]) == 1, groups
    [change] = groups[0]["changes"]
    assert change["metric"] == "tps" and float(change["forward_change_percent"]) < -25, change
    # Its points are the four builds in first-parent order: base, README, spin, main; the change
    # names the first build after it.
    assert change["index"] == 2
    assert groups[0]["attributes"]["build"] == commits[3].hash


def test_an_unknown_ref_or_repository_is_named_by_its_option(pg_git_repo: GitRepo, workdir: Path) -> None:
    (workdir / "s.yaml").write_text(STUDY)
    for args, says in (
            (["--repo", str(pg_git_repo.path), "--good", "no-such-ref", "--bad", "main"],
             f"teiten: error: --good no-such-ref: no such commit in {pg_git_repo.path} "),
            (["--repo", str(workdir / "nowhere"), "--good", "a", "--bad", "b"],
             f"teiten: error: --repo {workdir / 'nowhere'}: no such directory; give a local clone "
             "of PostgreSQL")):
        done = run_cli("bisect", str(workdir / "s.yaml"), *args, "--store", str(workdir / "b.db"))
        assert done.returncode == 2 and done.stderr.startswith(says), done.stderr
        assert len(done.stderr.strip().splitlines()) == 1 and not (workdir / "b.db").exists()
