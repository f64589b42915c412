"""The fulltext suite (METHODS S9) on real clusters: setup at 2000 documents on PostgreSQL 18
(C.UTF-8), the methods this machine has (none, pg_trgm, bigram, tsvector; RUM on the
system's PostgreSQL 15 when its Debian package is there), the 'not installed' path of
pg_bigm and PGroonga, and why the suite needs a UTF-8 locale (pg_trgm and Japanese)."""

from __future__ import annotations

import re
import statistics
import subprocess
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from tests.conftest import ScratchDatabase, scratch_database
from tests.requirements import missing

from teiten import workloads
from teiten.drivers.sql import Session, Step
from teiten.spec.load import load_text
from teiten.workloads import fulltext, statements
from teiten.workloads.fulltext import corpus
from teiten.workloads.statements import NotInstalled

DOCUMENTS = 2000
OPTIONS = fulltext.Options(documents=DOCUMENTS)


@pytest.fixture(scope="module")
def loaded(pg18) -> Iterator[ScratchDatabase]:  # noqa: ANN001
    with scratch_database(pg18, locale="C.UTF-8") as db:
        times = fulltext.SUITE.setup(db.conninfo, OPTIONS, 2)
        assert set(times) == {"generate_s", "copy_s", "keywords_s", "vacuum_analyze_s"}
        assert all(t >= 0 for t in times.values())
        yield db


def _trial(db: ScratchDatabase, method: str, *, cache: str = "warm") -> list[Step]:
    """One trial of one method; its index is dropped afterwards (the runner restores a
    snapshot instead), so that the next method's searches cannot use it."""
    session = Session(db.conninfo, cold_restart=db.restart)
    try:
        fulltext.SUITE.run(session, fulltext.Variant(method, cache), OPTIONS)
        return session.steps
    finally:
        for (index,) in session.rows("SELECT indexrelid::regclass::text FROM pg_index "
                                     "WHERE indrelid = 'docs'::regclass AND NOT indisprimary"):
            session.execute(f"DROP INDEX {index}")
        session.close()


def _scalar(db: ScratchDatabase, statement: str) -> Any:
    session = Session(db.conninfo)
    try:
        return session.scalar(statement)
    finally:
        session.close()


def _rows(db: ScratchDatabase, statement: str) -> list[tuple[Any, ...]]:
    session = Session(db.conninfo)
    try:
        return session.rows(statement)
    finally:
        session.close()


def _searches(steps: list[Step]) -> list[Step]:
    searches = [s for s in steps if s.name == "search"]
    assert len(searches) == 9, [s.param for s in steps]
    return searches


def test_setup_loads_japanese_text_and_keywords_in_bands(loaded: ScratchDatabase) -> None:
    assert _scalar(loaded, "SELECT count(*) FROM docs") == DOCUMENTS
    chars = _scalar(loaded, "SELECT sum(length(body)) FROM docs")
    assert 0.9 * 400 < chars / DOCUMENTS < 1.1 * 400
    text = "".join(body for (body,) in _rows(loaded, "SELECT body FROM docs ORDER BY id LIMIT 200"))
    japanese = sum(1 for c in text if corpus.is_japanese(c))
    assert japanese / len(text) > 0.7
    english = re.findall(r" ([a-z]+) ", text)
    assert len(english) > 100
    assert all(c.isascii() or corpus.is_japanese(c) or c in "ー、。" for c in text)

    rows = _rows(loaded, "SELECT keyword, class, band, hits FROM fts_keywords ORDER BY class, hits")
    assert [(cls, band) for _, cls, band, _ in rows] == [
        (cls, band) for cls in ("en", "ja2", "ja3") for band in ("0.1%", "1%", "10%")]
    for keyword, cls, band, hits in rows:
        assert corpus.keyword_class(keyword) == cls
        if cls == "en":
            assert re.fullmatch(r"[a-z]{4,}", keyword)
        target = float(band.rstrip("%")) / 100 * DOCUMENTS
        assert target / 2 <= hits <= target * 2, (keyword, band, hits)
        # The true hit count is what LIKE finds.
        pattern = corpus.like_pattern(keyword).replace("'", "''")
        assert _scalar(loaded, f"SELECT count(*) FROM docs WHERE body LIKE '{pattern}'") == hits
    assert _rows(loaded, "SELECT source, documents FROM fts_corpus") == [("generated", DOCUMENTS)]


def test_corpus_file_and_own_keywords(loaded: ScratchDatabase, tmp_path: Path) -> None:
    """A user's corpus (one document per line, blank lines skipped) and a user's keywords,
    each into a fresh database of the same cluster."""
    from psycopg.conninfo import make_conninfo

    lines = corpus.generate(300, 200, 0.1, seed=5)
    path = tmp_path / "corpus.txt"
    path.write_text("\n".join(lines[:100]) + "\n\n" + "\n".join(lines[100:]) + "\n", encoding="utf-8")
    session = Session(loaded.conninfo)
    try:
        for name in ("from_file", "own_keywords"):
            session.execute(f"CREATE DATABASE {name}")
    finally:
        session.close()
    from_file = make_conninfo(loaded.conninfo, dbname="from_file")
    times = fulltext.SUITE.setup(from_file, replace(OPTIONS, corpus=str(path)), 2)
    assert set(times) == {"copy_s", "keywords_s", "vacuum_analyze_s"}
    db = Session(from_file)
    try:
        assert db.rows("SELECT body FROM docs ORDER BY id") == [(line,) for line in lines]
        assert db.scalar("SELECT sha256 FROM fts_corpus") == corpus.digest(lines)
        chosen = db.rows("SELECT keyword, class, hits FROM fts_keywords")
        assert {cls for _, cls, _ in chosen} == {"ja2", "ja3", "en"}
        for keyword, _, hits in chosen:
            assert hits == sum(keyword in line for line in lines)
    finally:
        db.close()

    # The keywords as a study file gives them, through the workload teiten resolves from it
    # (which keeps every list as a tuple) and the setup the runner calls.
    own = make_conninfo(loaded.conninfo, dbname="own_keywords")
    study = tmp_path / "own.yaml"
    study.write_text("study: own\nservers: [{name: a, install: '18'}]\nworkloads:\n"
                     "  - {name: fulltext, documents: 300, methods: [none],\n"
                     "     keywords: [日本, that, ところ, 50%, that]}\n", encoding="utf-8")
    loaded_study = load_text(study.read_text(encoding="utf-8"), str(study))
    [workload] = workloads.resolve(loaded_study)
    assert dict(workload.options)["keywords"] == ("日本", "that", "ところ", "50%", "that")
    statements.setup(workload, own, jobs=2)  # a duplicate is stored once
    db = Session(own)
    try:
        rows = db.rows("SELECT keyword, class, band, hits FROM fts_keywords ORDER BY keyword")
        docs = [body for (body,) in db.rows("SELECT body FROM docs")]
    finally:
        db.close()
    assert [(k, c) for k, c, _, _ in rows] == [
        ("50%", "other"), ("that", "en"), ("ところ", "ja3"), ("日本", "ja2")]
    for keyword, _, band, hits in rows:
        assert hits == sum(keyword in doc for doc in docs)
        assert band == corpus.nearest_band(hits, 300)


def test_like_methods_find_every_hit_and_pg_trgm_cannot_use_its_index_for_2_characters(
        loaded: ScratchDatabase) -> None:
    for method in ("none", "pg_trgm", "bigram"):
        steps = _trial(loaded, method)
        searches = _searches(steps)
        for s in searches:
            assert s.rows == s.extra["hits"], (method, s.param, s.rows, s.extra)
            assert s.plan is not None and s.plan.rows_removed_by_index_recheck >= 0
            assert s.cache is not None and s.cache["state"] == "warm"
        if method == "none":
            assert not [s for s in steps if s.name == "index"]
            assert all("Index" not in s.plan.shape for s in searches if s.plan)
            continue
        [index] = [s for s in steps if s.name == "index"]
        assert index.param == method and index.seconds > 0
        assert index.sizes is not None and index.sizes[fulltext.INDEX_NAMES[method]] > 0
        if method == "pg_trgm":
            for s in searches:
                assert s.plan is not None
                if s.extra["cls"] == "ja2":
                    # A 2-character LIKE pattern between wildcards has no trigram: the
                    # planner scans the table.
                    assert "docs_trgm" not in s.plan.shape and "Seq Scan on docs" in s.plan.shape
                elif s.extra["cls"] == "ja3":
                    assert "Bitmap Index Scan on docs_trgm" in s.plan.shape, s.plan.shape
        if method == "bigram":
            assert all("Bitmap Index Scan on docs_bigram" in s.plan.shape for s in searches if s.plan)


def test_pg_trgm_index_for_2_characters_is_a_full_index_scan(loaded: ScratchDatabase) -> None:
    """With sequential scans disabled the planner takes the trigram index for a 2-character
    keyword, and the index selects nothing: the recheck throws away every other row."""
    session = Session(loaded.conninfo)
    try:
        session.execute("CREATE EXTENSION IF NOT EXISTS pg_trgm")
        session.execute(fulltext.INDEXES["pg_trgm"])
        session.set(enable_seqscan=False)
        keyword, hits = session.rows("SELECT keyword, hits FROM fts_keywords WHERE class = 'ja2' "
                                     "ORDER BY hits LIMIT 1")[0]
        step = session.query("search", f"SELECT id FROM docs WHERE body LIKE '%{keyword}%'")
        assert step.plan is not None and "Bitmap Index Scan on docs_trgm" in step.plan.shape
        assert step.rows == hits
        assert step.plan.rows_removed_by_index_recheck == DOCUMENTS - hits
    finally:
        session.execute("DROP INDEX IF EXISTS docs_trgm")
        session.close()


def test_word_methods_find_words_not_substrings(loaded: ScratchDatabase) -> None:
    searches = _searches(_trial(loaded, "tsvector"))
    assert all(s.plan and "Bitmap Index Scan on docs_tsvector" in s.plan.shape for s in searches)
    assert all(s.rows <= s.extra["hits"] for s in searches if s.rows is not None)
    japanese = [s for s in searches if s.extra["cls"] != "en"]
    # A run of Japanese text between punctuation is one "word" to the default parser.
    assert sum(s.rows or 0 for s in japanese) < 0.2 * sum(s.extra["hits"] for s in japanese)


def test_cold_cache_restarts_before_every_search(loaded: ScratchDatabase) -> None:
    searches = _searches(_trial(loaded, "none", cache="cold"))
    assert all(s.cache and s.cache["state"] == "cold" and s.cache["server_restarted"] for s in searches)
    assert all(s.rows == s.extra["hits"] for s in searches)


@pytest.mark.parametrize("method", ["pg_bigm", "pgroonga"])
def test_missing_extension_is_not_installed_and_creates_nothing(loaded: ScratchDatabase, method: str) -> None:
    catalog = ("SELECT (SELECT array_agg(extname ORDER BY extname) FROM pg_extension), "
               "(SELECT array_agg(relname ORDER BY relname) FROM pg_class "
               " WHERE relnamespace = 'public'::regnamespace)")
    before = _rows(loaded, catalog)
    session = Session(loaded.conninfo)
    try:
        message = rf"^{method} is not installed on this server \(PostgreSQL 18\): "
        with pytest.raises(NotInstalled, match=message):
            fulltext.SUITE.run(session, fulltext.Variant(method, "warm"), OPTIONS)
        assert session.steps == []
    finally:
        session.close()
    assert _rows(loaded, catalog) == before
    assert method not in before[0][0]


def test_pg_trgm_finds_no_trigram_in_japanese_under_the_c_locale(pg18, loaded: ScratchDatabase) -> None:  # noqa: ANN001
    show = "SELECT show_trgm('日本語の文章')"
    ctype = "SELECT datctype FROM pg_database WHERE datname = current_database()"
    with scratch_database(pg18) as c_locale:
        session = Session(c_locale.conninfo)
        try:
            session.execute("CREATE EXTENSION pg_trgm")
            assert session.scalar(ctype) == "C"
            assert session.scalar(show) == []
        finally:
            session.close()
    session = Session(loaded.conninfo)
    try:
        session.execute("CREATE EXTENSION IF NOT EXISTS pg_trgm")
        assert session.scalar(ctype) == "C.UTF-8"
        assert len(session.scalar(show)) >= 4
    finally:
        session.close()


def _system_pg15() -> Any:
    from teiten.installs import find_all

    return next((i for i in find_all() if i.major == 15 and i.origin == "system"), None)


def _sharedir(install: Any) -> Path:
    pg_config = install.binary("pg_config")
    if pg_config.is_file():
        done = subprocess.run([str(pg_config), "--sharedir"], capture_output=True, text=True, timeout=30)
        if done.returncode == 0:
            return Path(done.stdout.strip())
    return Path(f"/usr/share/postgresql/{install.major}")


def test_rum_finds_what_tsvector_finds_on_the_system_postgresql_15() -> None:
    pg15 = _system_pg15()
    if pg15 is None:
        missing("no system PostgreSQL 15 (Debian's /usr/lib/postgresql/15/bin) on this machine")
    control = _sharedir(pg15) / "extension" / "rum.control"
    if not control.is_file():
        missing(f"RUM is not installed for the system PostgreSQL 15 ({control} is missing; "
                    "Debian's package is postgresql-15-rum)")
    options = replace(OPTIONS, documents=500)
    with scratch_database(pg15, locale="C.UTF-8") as db:
        fulltext.SUITE.setup(db.conninfo, options, 2)
        words = {s.param: s.rows for s in _searches(_trial(db, "tsvector"))}
        steps = _trial(db, "rum")
        [index] = [s for s in steps if s.name == "index"]
        assert index.sizes is not None and index.sizes["docs_rum"] > 0
        rum = _searches(steps)
        assert all(s.plan and "docs_rum" in s.plan.shape for s in rum), [s.plan.shape for s in rum if s.plan]
        assert {s.param: s.rows for s in rum} == words
        assert statistics.median(s.seconds for s in rum) >= 0
