"""One report across studies, and the guard against comparing different machines."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

from tests.conftest import ROOT, run_cli

GOLDEN = ROOT / "tests" / "golden" / "report-stores"

STUDY = """
study: {name}
servers: [{{name: {server}, install: "{install}"}}]
workloads: [select-only]
scale: 1
clients: [1, 2]
duration: 1s
repetitions: 1
"""


def _run(workdir: Path, name: str, server: str, install: str) -> Path:
    study = workdir / f"{name}.yaml"
    study.write_text(STUDY.format(name=name, server=server, install=install))
    store = workdir / f"{name}.db"
    done = run_cli("run", str(study), "--store", str(store), "--no-report")
    assert done.returncode == 0, done.stderr
    return store


def test_compare_two_years_and_refuse_mixed_machines(pg17, pg18, workdir: Path) -> None:
    old = _run(workdir, "year2025", "pg17", "17")
    new = _run(workdir, "year2026", "pg18", "18")
    out = workdir / "cmp"
    done = run_cli("compare", "--store", str(old), "--store", str(new), "--out", str(out),
                   "--degradation", "pg17:pg18")
    assert done.returncode == 0, done.stderr
    md = (out / "report.md").read_text()
    assert "pg17" in md and "pg18" in md and "year2025 + year2026" in md
    assert "pg18 / pg17" in md  # the first study's first server is the baseline
    # The same machine a year on, its kernel and OS upgraded: compared, and said (issue 19).
    with sqlite3.connect(new) as conn:
        fp = json.loads(conn.execute("SELECT fingerprint FROM studies").fetchone()[0])
        old_kernel, old_os = fp["kernel"], fp["os"]
        fp.update(kernel="9.9.9-teiten", os="Debian GNU/Linux 14 (forky)")
        conn.execute("UPDATE studies SET fingerprint = ?", (json.dumps(fp),))
    upgraded = run_cli("compare", "--store", str(old), "--store", str(new), "--out",
                       str(workdir / "cmp2"), "--lang", "en")
    assert upgraded.returncode == 0, upgraded.stderr
    said = " ".join((workdir / "cmp2" / "report.md").read_text().replace("\\", "").split())
    assert (f"The studies ran on the same machine with different software (kernel {old_kernel} → "
            f"9.9.9-teiten; os {old_os} → Debian GNU/Linux 14 (forky))") in said, said[:3000]
    # A store from another machine: same data, another CPU model in its fingerprint.
    with sqlite3.connect(new) as conn:
        fp["cpu_model"] = "Some Other CPU"
        conn.execute("UPDATE studies SET fingerprint = ?", (json.dumps(fp),))
    _refused(workdir, old, new, "the studies ran on machines that differ in cpu_model; their "
             "numbers are not comparable (add --allow-mixed to compare anyway)")
    allowed = run_cli("compare", "--store", str(old), "--store", str(new), "--out",
                      str(workdir / "cmp3"), "--allow-mixed")
    assert allowed.returncode == 0, allowed.stderr
    assert "differ in cpu_model" in (workdir / "cmp3" / "report.md").read_text().replace("\\_", "_")


def test_three_years_make_one_line_of_versions(pg17, pg18, workdir: Path) -> None:
    """This year's run joins the years before it on the same machine as one line of versions
    (issue 19): each version against the one before it, the line's chart, and intervals
    that pair no blocks across studies (each year ran its own)."""
    years = [_run(workdir, f"year{year}", f"pg{major}", major)
             for year, major in ((2024, "16"), (2025, "17"), (2026, "18"))]
    out = workdir / "line"
    done = run_cli("compare", *(a for y in years for a in ("--store", str(y))), "--out", str(out),
                   "--lang", "en")
    assert done.returncode == 0, done.stderr
    md = (out / "report.md").read_text()
    assert "### select-only: each version against the one before it" in md, md[:2000]
    assert ("| Clients | Ratio to the previous version: pg17 / "
            "pg16 | Ratio to the previous version: pg18 / pg17 |") in md
    assert (out / "charts" / "select-only-history.svg").is_file()
    assert ("pg17 / pg16, pg18 / pg17: these versions ran in different studies (no block in "
            "common)") in " ".join(md.replace("\\", "").split())


def _refused(workdir: Path, a: Path, b: Path, line: str) -> None:
    """``teiten compare`` of the stores ``a`` and ``b`` exits 2 with ``line`` and writes nothing."""
    out = workdir / "refused"
    refused = run_cli("compare", "--store", str(a), "--store", str(b), "--out", str(out))
    assert refused.returncode == 2
    assert refused.stderr.strip() == f"teiten: error: {line}"
    assert not out.exists()


def test_compare_needs_two_studies(pg17, workdir: Path) -> None:
    store = _run(workdir, "single", "pg17", "17")
    done = run_cli("compare", "--store", str(store), "--out", str(workdir / "x"))
    assert done.returncode == 2
    assert "compare needs two studies" in done.stderr


TINY = """
study: {name}
servers: [{{name: pg17, install: "17"{server}}}]
workloads: [{workload}]
scale: {scale}
clients: [1]
duration: {duration}
repetitions: {repetitions}
"""


def _tiny(workdir: Path, name: str, *, scale: int = 1, duration: str = "1s", repetitions: int = 1,
          server: str = "", workload: str = "select-only") -> Path:
    """A one-trial-per-repetition study of pg17 with the given parameters; its store."""
    study = workdir / f"{name}.yaml"
    study.write_text(TINY.format(name=name, scale=scale, duration=duration,
                                 repetitions=repetitions, server=server, workload=workload))
    store = workdir / f"{name}.db"
    done = run_cli("run", str(study), "--store", str(store), "--no-report")
    assert done.returncode == 0, done.stderr
    return store


def test_compare_refuses_different_scale_and_duration(pg17, workdir: Path) -> None:
    small = _tiny(workdir, "small")
    large = _tiny(workdir, "large", scale=2, duration="2s")
    _refused(workdir, small, large, "the studies differ in scale (1, 2) and duration (1s, 2s); "
             "their numbers are not comparable (add --allow-different-parameters to compare anyway)")
    allowed = run_cli("compare", "--store", str(small), "--store", str(large), "--out",
                      str(workdir / "cmp"), "--allow-different-parameters")
    assert allowed.returncode == 0, allowed.stderr
    md = (workdir / "cmp" / "report.md").read_text()
    assert ("The studies differ in scale (1, 2), duration (1s, 2s); their numbers are not "
            "directly comparable.") in md
    # The Study table gives each study's own value of what differs, not the first study's.
    assert "| 1 s (small), 2 s (large) |" in md
    assert "| 1 (small), 2 (large) |" in md


def test_compare_allows_other_repetitions_and_refuses_other_profile_or_options(
        pg17, workdir: Path) -> None:
    base = _tiny(workdir, "base")
    more = _tiny(workdir, "more", repetitions=2)
    done = run_cli("compare", "--store", str(base), "--store", str(more), "--out",
                   str(workdir / "cmp"))
    assert done.returncode == 0, done.stderr
    md = (workdir / "cmp" / "report.md").read_text()
    assert "not directly comparable" not in md
    # Each study's own repetitions (not the larger for both); the seed and order they share once.
    assert "| Repetitions | 1 (base), 2 (more) |" in md
    assert "| Order | random |" in md
    default = _tiny(workdir, "plain", server=", profile: default")
    _refused(workdir, base, default, "the studies differ in settings profile (pgecons, default); "
             "their numbers are not comparable (add --allow-different-parameters to compare anyway)")
    filled = _tiny(workdir, "filled", workload="{name: select-only, fillfactor: 90}")
    _refused(workdir, base, filled, "the studies differ in select-only fillfactor (none, 90); "
             "their numbers are not comparable (add --allow-different-parameters to compare anyway)")


def test_a_study_compared_with_itself_is_refused_in_one_line(workdir: Path) -> None:
    """Its id twice, its store twice, or a store and its copy: one study, whose ratios would
    all be 100% by construction, is refused before any report is made."""
    shutil.copy(GOLDEN / "compare-a.db", workdir / "a.db")
    run_cli("store", "copy", "a.db", "b.db", cwd=workdir, check=True)
    start = "teiten: error: "
    tail = (" (quick-fixed-point-small, started 2026-11-25T04:49:48+00:00): compared with itself "
            "it differs from nothing; give two different studies")
    for args, given in ((["--store", "a.db", "--store", "a.db"], "study 1 of a.db is given twice"),
                        (["--store", "a.db", "--studies", "1,1"], "study 1 of a.db is given twice"),
                        (["--store", "a.db", "--store", "b.db"],
                         "study 1 of a.db and study 1 of b.db are one study (a copy)")):
        done = run_cli("compare", *args, "--out", "r", cwd=workdir)
        assert done.returncode == 2, done.stderr
        assert done.stderr.splitlines() == [start + given + tail], done.stderr
    assert not (workdir / "r").exists()
