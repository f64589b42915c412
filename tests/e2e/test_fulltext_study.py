"""The fulltext workload (S9) through ``teiten run`` on a real PostgreSQL 18 in C.UTF-8, at a
tiny size: methods that are not installed are skipped as "not installed" (not failed), the
others build, search and are judged in the report; a server in the C locale is refused."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from tests.conftest import TEST_HOME, clusters_snapshot, run_cli
from tests.e2e.test_bad_input import BadInput, run_bad, write_study  # noqa: F401

STUDY = """\
study: fulltext-e2e
servers:
  - {name: pg18, install: "18", initdb: {locale: C.UTF-8}}
workloads:
  - {name: fulltext, documents: 1500, doc_chars: 200, methods: [none, pg_trgm, pg_bigm, bigram, tsvector]}
repetitions: 1
"""


@pytest.fixture(scope="module")
def finished(pg18) -> dict[str, Any]:  # noqa: ANN001
    work = TEST_HOME / "work" / "e2e-fulltext"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    (work / "s.yaml").write_text(STUDY)
    before = clusters_snapshot("fulltext-e2e")
    done = run_cli("run", str(work / "s.yaml"), "--store", str(work / "r.db"), timeout=900)
    return {"work": work, "run": done, "before": before, "after": clusters_snapshot("fulltext-e2e")}


def test_missing_extensions_are_skipped_as_not_installed(finished: dict[str, Any]) -> None:
    done = finished["run"]
    assert done.returncode == 0, done.stderr
    assert "5 trials: 4 ok, 1 skipped" in done.stderr
    conn = sqlite3.connect(finished["work"] / "r.db")
    status = dict(conn.execute("SELECT variant, status FROM trials").fetchall())
    assert status["methods=pg_bigm cache=warm"] == "skipped"
    error = conn.execute("SELECT error FROM trials WHERE status = 'skipped'").fetchone()[0]
    assert error.startswith("not installed: ") and "pg_bigm" in error
    assert finished["after"] == finished["before"]


def test_like_methods_find_the_truth_and_the_report_judges_them(finished: dict[str, Any]) -> None:
    conn = sqlite3.connect(finished["work"] / "r.db")
    rows = conn.execute("SELECT t.variant, s.param, s.rows, json_extract(s.body, '$.extra.hits') "
                        "FROM steps s JOIN trials t USING (study_id, trial_id) WHERE s.name = 'search'"
                        ).fetchall()
    assert len(rows) == 4 * 9  # four methods ran, nine keywords each
    for variant, keyword, found, hits in rows:
        if "tsvector" not in variant:
            assert found == hits, (variant, keyword)
    md = (finished["work"] / "r-report" / "report.md").read_text()
    assert "### Strengths and weaknesses of each method (S9)" in md
    plain = md.replace("\\_", "_")
    assert "| pg18 · pg_bigm | — | not installed on this server. |" in plain
    assert "*methods=pg_bigm cache=warm on pg18: not installed (pg_bigm is not installed" in plain
    assert "![fulltext: time of 'search'](charts/fulltext-suite-time.svg)" in md


def test_a_server_in_the_c_locale_is_refused(workdir: Path, run_bad: BadInput) -> None:  # noqa: F811
    study = write_study(workdir, STUDY.replace(", initdb: {locale: C.UTF-8}", ""))
    store = workdir / "s.db"
    line = run_bad("run", str(study), "--store", str(store), stores=[store])
    assert line == (f"teiten: error: {study}:3: the fulltext workload needs a UTF-8 locale, and pg18 "
                    "has the C locale (--no-locale) and encoding UTF8, under which pg_trgm extracts "
                    "no trigrams from Japanese; give it initdb: {locale: C.UTF-8, encoding: UTF8}")
