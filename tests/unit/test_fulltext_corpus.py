"""The fulltext suite's pure parts: the document generator, the Japanese filter, keyword
choice, and judge (the S9 strengths and weaknesses table) on hand-made figures."""

from __future__ import annotations

import re
import unicodedata
from typing import Any

import pytest

from teiten.workloads import fulltext
from teiten.workloads.fulltext import corpus, strengths


def test_generator_is_deterministic_for_a_seed() -> None:
    first = corpus.generate(40, 300, 0.05, seed=7)
    assert first == corpus.generate(40, 300, 0.05, seed=7)
    assert corpus.digest(first) == corpus.digest(corpus.generate(40, 300, 0.05, seed=7))
    assert first != corpus.generate(40, 300, 0.05, seed=8)
    assert corpus.generate(40, 300, 0.05) == corpus.generate(40, 300, 0.05, seed=corpus.SEED)


@pytest.mark.parametrize("doc_chars", [100, 400])
def test_documents_mean_length_is_near_doc_chars(doc_chars: int) -> None:
    docs = corpus.generate(400, doc_chars, 0.05)
    assert abs(corpus.mean_length(docs) - doc_chars) < 0.05 * doc_chars
    lengths = [len(d) for d in docs]
    assert min(lengths) < 0.7 * doc_chars and max(lengths) > 1.3 * doc_chars  # they vary
    assert all(d.endswith("。") and d[0] not in " 、。" and "  " not in d for d in docs)


def test_documents_mix_japanese_and_english_by_english_share() -> None:
    only_ja = "".join(corpus.generate(30, 200, 0.0))
    assert not re.search(r"[a-z]", only_ja)
    only_en = "".join(corpus.generate(30, 200, 1.0))
    assert all(c.isascii() or c in "、。" for c in only_en)
    mixed = corpus.generate(200, 400, 0.05)
    english_chars = sum(len(w) for d in mixed for w in re.findall(r"[a-z]+", d))
    total = sum(map(len, mixed))
    assert 0.03 < english_chars / total < 0.3  # 5% of words, English words are longer
    with pytest.raises(ValueError, match="english_share must lie within"):
        corpus.generate(1, 10, 1.5)


@pytest.mark.parametrize(("word", "japanese"), [
    ("日本語", True), ("ひらがな", True), ("カタカナ", True), ("ラーメン", True), ("人々", True),
    ("ー", False), ("ーー", False), ("abc", False), ("日本1", False), ("東京・大阪", False),
    ("ｶﾀｶﾅ", False), ("日本語。", False), ("한국어", False), ("", False),
])
def test_japanese_filter(word: str, japanese: bool) -> None:
    assert corpus.is_japanese(word) is japanese


def test_japanese_vocabulary_holds_only_han_hiragana_katakana() -> None:
    words = corpus.vocabulary("ja").words
    assert len(words) > 100_000
    for word in words:
        for c in word:
            name = unicodedata.name(c)
            assert name.startswith(("CJK UNIFIED IDEOGRAPH", "CJK COMPATIBILITY IDEOGRAPH", "HIRAGANA",
                                    "KATAKANA")) or c in "ー々", (word, c, name)
    freqs = corpus.vocabulary("ja").freqs
    assert list(freqs) == sorted(freqs, reverse=True)
    assert all(re.fullmatch(r"[a-z]+", w) for w in corpus.vocabulary("en").words)


@pytest.mark.parametrize(("word", "cls"), [
    ("日本", "ja2"), ("日", "ja1"), ("データ", "ja3"), ("ところ", "ja3"), ("that", "en"),
    ("PostgreSQL", "en"), ("pg_trgm", "en"), ("日本a", "other"), ("ü", "other"),
])
def test_keyword_class_by_characters(word: str, cls: str) -> None:
    assert corpus.keyword_class(word) == cls


def test_candidates_by_class() -> None:
    assert all(len(w) == 2 and corpus.is_japanese(w) for w in corpus.candidates("ja2"))
    assert all(len(w) >= 3 and corpus.is_japanese(w) for w in corpus.candidates("ja3"))
    assert all(re.fullmatch(r"[a-z]{4,}", w) for w in corpus.candidates("en"))


def test_pick_nearest_candidate_per_target() -> None:
    words = [f"w{i:03d}" for i in range(200)]
    hits = {w: 1000 // (i + 1) for i, w in enumerate(words)}  # Zipf-like, falling
    counted: list[str] = []

    def hits_of(word: str) -> int:
        counted.append(word)
        return hits[word]

    assert corpus.pick_nearest(words, hits_of, 100) == ("w009", 100)
    assert len(counted) < 40  # a binary search and a window, not every candidate
    assert corpus.pick_nearest(words, hits.__getitem__, 31.4) == ("w031", 31)  # w030 has 32
    # nearest on a log scale: 3 is nearer 2.5 than 2 is (3/2.5 < 2.5/2)
    assert corpus.pick_nearest(["a", "b"], {"a": 3, "b": 2}.__getitem__, 2.5) == ("a", 3)
    assert corpus.pick_nearest(["a", "b"], {"a": 3, "b": 2}.__getitem__, 2.4) == ("b", 2)
    # a word already taken for another band is skipped
    assert corpus.pick_nearest(words, hits.__getitem__, 100, exclude=["w009"]) == ("w008", 111)
    # words without hits are never chosen; none at all gives None
    assert corpus.pick_nearest(["a", "b"], {"a": 0, "b": 0}.__getitem__, 5) is None
    assert corpus.pick_nearest([], hits.__getitem__, 5) is None


def test_pick_nearest_looks_around_a_non_monotone_landing() -> None:
    words = ["a", "b", "c", "d", "e", "f"]
    hits = {"a": 90, "b": 60, "c": 9, "d": 21, "e": 5, "f": 1}
    assert corpus.pick_nearest(words, hits.__getitem__, 20) == ("d", 21)


def test_choose_keywords_counts_substrings_per_class_and_band() -> None:
    docs = ["日本語のtext", "日本の本", "ところで", "that thatch", "本日", "日本"] * 10 + ["x"] * 40
    pools = {"ja2": ["日本", "本日"], "ja3": ["日本語", "ところ"], "en": ["that", "text"]}
    chosen = corpus.choose_keywords(docs, shares=(0.1, 0.3), pools=pools)
    by = {(k.cls, k.band): (k.keyword, k.hits) for k in chosen}
    # 日本 is in 3 of the 6 repeated documents (30 of 100), 本日 in 1 (10).
    assert by[("ja2", "10%")] == ("本日", 10)
    assert by[("ja2", "30%")] == ("日本", 30)
    assert by[("ja3", "10%")] == ("日本語", 10)
    assert by[("ja3", "30%")] == ("ところ", 10)  # the only one left
    assert by[("en", "10%")] == ("that", 10)  # 'that' and 'text' tie: the more frequent wins
    assert by[("en", "30%")] == ("text", 10)


def test_like_pattern_escapes_wildcards() -> None:
    assert corpus.like_pattern("日本") == "%日本%"
    assert corpus.like_pattern("50%_a\\b") == "%50\\%\\_a\\\\b%"


def test_nearest_band_and_labels() -> None:
    assert [corpus.band_label(s) for s in corpus.TARGET_SHARES] == ["0.1%", "1%", "10%"]
    assert corpus.nearest_band(0, 1000) == "0.1%"
    assert corpus.nearest_band(3, 1000) == "0.1%"
    assert corpus.nearest_band(4, 1000) == "1%"  # on a log scale: 0.32% lies between them
    assert corpus.nearest_band(30, 1000) == "1%"
    assert corpus.nearest_band(900, 1000) == "10%"


def test_reservoir_is_a_seeded_sample() -> None:
    def sample(seed: int) -> list[str]:
        r = corpus.Reservoir(10, seed)
        for i in range(1000):
            r.add(str(i))
        assert r.seen == 1000
        return r.items

    assert sample(1) == sample(1) != sample(2)
    assert len(sample(1)) == 10 and len(set(sample(1))) == 10
    small = corpus.Reservoir(10)
    for c in "abc":
        small.add(c)
    assert small.items == ["a", "b", "c"]


@pytest.mark.parametrize(("option", "value", "message"), [
    ("documents", 0, "fulltext option documents must be a whole number of at least 1, got 0"),
    ("doc_chars", "400", "fulltext option doc_chars must be a whole number of at least 1, got '400'"),
    ("english_share", 1.5, "fulltext option english_share must lie within [0, 1], got 1.5"),
    ("keywords", ["日本", ""],
     "fulltext option keywords must be a list of non-empty strings, got ['日本', '']"),
    ("corpus", "/nonexistent/wiki.txt",
     "fulltext corpus /nonexistent/wiki.txt is not a file: give a UTF-8 text file, one document per line"),
])
def test_bad_options_are_refused_before_connecting(option: str, value: object, message: str) -> None:
    from teiten.model.errors import UserError

    with pytest.raises(UserError) as err:
        fulltext.setup("host=/nonexistent dbname=x", fulltext.Options(**{option: value}), 1)
    assert str(err.value) == message


def test_sql_files_cover_every_method() -> None:
    assert set(fulltext.INDEXES) == set(fulltext.METHODS) - {"none"}
    for method, name in fulltext.INDEX_NAMES.items():
        assert fulltext.INDEXES[method].startswith(f"CREATE INDEX {name} ON docs ")
    assert set(fulltext.SEARCHES) == set(fulltext.SEARCH_OF.values())
    assert all("--" not in text for text in (*fulltext.INDEXES.values(), *fulltext.SEARCHES.values()))
    assert fulltext.SUITE.axes == ("methods", "cache") and fulltext.SUITE.needs_utf8
    assert fulltext.SUITE.defaults["methods"] == list(fulltext.METHODS)


def test_data_bytes_grows_with_documents_and_the_largest_index() -> None:
    small = fulltext.data_bytes(fulltext.Options(methods=("none",)))
    assert 20_000 * 400 * 2 < small < 20_000 * 400 * 5
    assert fulltext.data_bytes(fulltext.Options(documents=40_000, methods=("none",))) > 1.9 * small
    assert fulltext.data_bytes(fulltext.Options()) > 7 * small  # pg_trgm's and PGroonga's indexes


# -- judge ----------------------------------------------------------------------------------

def _search(keyword: str, cls: str, hits: int, rows: int, ms: float, shape: str, recheck: int = 0,
            **more: Any) -> dict[str, Any]:
    return {"keyword": keyword, "cls": cls, "band": "1%", "hits": hits, "rows": rows, "seconds": ms / 1000,
            "rows_removed_by_index_recheck": recheck, "shape": shape, **more}


SEQ = "Seq Scan on docs"


def _bitmap(index: str) -> str:
    return f"Bitmap Heap Scan on docs > Bitmap Index Scan on {index}"


FIGURES: dict[str, dict[str, Any]] = {
    "none": {"build_s": None, "index_bytes": None, "table_bytes": 24 << 20, "not_installed": False,
             "searches": [_search("that", "en", 2000, 2000, 14, SEQ), _search("日本", "ja2", 200, 200, 15, SEQ),
                          _search("ところ", "ja3", 200, 200, 16, SEQ)]},
    "pg_trgm": {"build_s": 12.0, "index_bytes": 30 << 20, "table_bytes": 24 << 20, "not_installed": False,
                "searches": [_search("that", "en", 2000, 2000, 1.2, _bitmap("docs_trgm")),
                             _search("日本", "ja2", 200, 200, 18, SEQ),
                             _search("ところ", "ja3", 200, 200, 0.8, _bitmap("docs_trgm"))]},
    "pg_bigm": {"not_installed": True, "build_s": None, "index_bytes": None, "table_bytes": 24 << 20,
                "searches": []},
    "bigram": {"build_s": 30.0, "index_bytes": 7 << 20, "table_bytes": 24 << 20, "not_installed": False,
               "searches": [_search("that", "en", 2000, 2000, 12, _bitmap("docs_bigram"),
                                    rows_removed_by_filter=5000),
                            _search("日本", "ja2", 200, 200, 0.5, _bitmap("docs_bigram")),
                            _search("ところ", "ja3", 200, 200, 0.6, _bitmap("docs_bigram"))]},
    "tsvector": {"build_s": 2.0, "index_bytes": 5 << 20, "table_bytes": 24 << 20, "not_installed": False,
                 "searches": [_search("that", "en", 2000, 1900, 0.3, _bitmap("docs_tsvector")),
                              _search("日本", "ja2", 200, 3, 0.02, _bitmap("docs_tsvector")),
                              _search("ところ", "ja3", 200, 1, 0.02, _bitmap("docs_tsvector"))]},
}


def _worded(row: dict[str, Any], lang: str = "en") -> dict[str, Any]:
    """A judged row with its sentences worded (the judge gives them as data)."""
    def words(groups: dict[str, list[dict[str, Any]]]) -> dict[str, list[str]]:
        return {g: [strengths.say(x, lang) for x in said] for g, said in groups.items()}
    return {"method": row["method"], "strengths": words(row["strengths"]),
            "weaknesses": words(row["weaknesses"])}


def _row(method: str) -> dict[str, Any]:
    [row] = [_worded(r) for r in strengths.judge(FIGURES) if r["method"] == method]
    return row


def test_judge_keeps_the_order_and_the_shape() -> None:
    rows = strengths.judge(FIGURES)
    assert [r["method"] for r in rows] == list(FIGURES)
    for r in rows:
        assert set(r["strengths"]) == set(r["weaknesses"]) == {"all", "en", "ja"}
    assert fulltext.judge is strengths.judge


def test_judge_not_installed() -> None:
    assert _row("pg_bigm") == {"method": "pg_bigm", "strengths": {"all": [], "en": [], "ja": []},
                               "weaknesses": {"all": ["not installed on this server"], "en": [], "ja": []}}


def test_judge_pg_trgm_cannot_use_the_index_for_2_characters() -> None:
    row = _row("pg_trgm")
    assert row["weaknesses"]["ja"] == [
        "median search 1.2× slower than a sequential scan for Japanese 2-character keywords (18 ms vs 15 ms)",
        "slowest of the 2 methods for Japanese 2-character keywords: median 18 ms, 36× the fastest (bigram)",
        "cannot use the index for Japanese 2-character keywords: every plan scans the table "
        "(Seq Scan on docs), median 18 ms",
    ]
    assert "median search 20× faster than a sequential scan for Japanese keywords of 3+ characters " \
           "(0.8 ms vs 16 ms)" in row["strengths"]["ja"]
    assert "median search 12× faster than a sequential scan for English keywords (1.2 ms vs 14 ms)" \
        in row["strengths"]["en"]
    assert row["weaknesses"]["all"] == ["index larger than the table: 1.2× (30 MB vs 24 MB)"]


def test_judge_recall_below_100_percent_for_word_methods() -> None:
    row = _row("tsvector")
    assert "returns 95.0% of the rows LIKE finds for English keywords (1900 of 2000): " \
           "it matches whole words, not substrings" in row["weaknesses"]["en"]
    assert "returns 1.5% of the rows LIKE finds for Japanese 2-character keywords (3 of 200): " \
           "it matches whole words, not substrings" in row["weaknesses"]["ja"]
    assert row["strengths"]["all"] == ["fastest index build of the 3 (2.0 s; next 12 s by pg_trgm)",
                                       "small index: 0.21× the table (5.0 MB vs 24 MB)"]
    assert "fastest of the 3 methods for English keywords: median 0.3 ms (next 1.2 ms, pg_trgm)" \
        in row["strengths"]["en"]
    # 1.5% of LIKE's rows: its speed is not compared for Japanese
    assert not [s for s in row["strengths"]["ja"] if "median" in s]
    assert "fastest of the 2 methods for Japanese 2-character keywords: median 0.5 ms (next 18 ms, pg_trgm)" \
        in _row("bigram")["strengths"]["ja"]
    # the methods that find what LIKE finds get no recall sentence
    for method in ("none", "pg_trgm", "bigram"):
        assert not [s for r in _row(method)["weaknesses"].values() for s in r if s.startswith("returns")]


def test_judge_builds_sizes_and_recheck() -> None:
    bigram = _row("bigram")
    assert bigram["weaknesses"]["all"] == ["slowest index build of the 3 (30 s, 15× the fastest, tsvector)"]
    assert "small index: 0.29× the table (7.0 MB vs 24 MB)" in bigram["strengths"]["all"]
    assert bigram["weaknesses"]["en"] == [
        "median search hardly faster than a sequential scan for English keywords: 1.2× (12 ms vs 14 ms)",
        "slowest of the 3 methods for English keywords: median 12 ms, 40× the fastest (tsvector)",
        "the recheck discards more rows than it returns for English keywords: "
        "5000 removed vs 2000 returned (2.5×)",
    ]
    assert _row("none")["strengths"]["all"] == ["no index to build or store (the table alone: 24 MB)"]
    assert _row("none")["weaknesses"] == {"all": [], "en": [], "ja": []}


def test_judge_in_japanese() -> None:
    """The same sentences, worded from the catalogue in Japanese, with the same figures."""
    [row] = [_worded(r, "ja") for r in strengths.judge(FIGURES) if r["method"] == "pg_trgm"]
    assert row["weaknesses"]["all"] == ["索引が表より大きい: 1.2×（索引 30 MB、表 24 MB）"]
    assert ("日本語 2 文字のキーワードでは索引を使えない: すべての実行計画が表を走査（Seq Scan on docs）、"
            "中央値 18 ms") in row["weaknesses"]["ja"]
    assert _worded(strengths.judge({"x": {"not_installed": True}})[0], "ja")["weaknesses"]["all"] == [
        "このサーバに未インストール"]


def test_judge_partial_index_use_and_durations() -> None:
    figures = {
        "none": {"build_s": None, "index_bytes": None, "table_bytes": 1 << 30, "not_installed": False,
                 "searches": [_search("a", "en", 10, 10, 2000, SEQ), _search("b", "en", 10, 10, 2000, SEQ)]},
        "pg_trgm": {"build_s": 96_360.0, "index_bytes": 20 << 30, "table_bytes": 41 << 30,
                    "not_installed": False,
                    "searches": [_search("a", "en", 10, 10, 2500, SEQ),
                                 _search("b", "en", 10, 10, 1.0, _bitmap("docs_trgm"), 50)]},
    }
    [none, trgm] = [_worded(r) for r in strengths.judge(figures)]
    assert trgm["weaknesses"]["en"] == [
        "does not use the index for 1 of 2 English keywords (Seq Scan on docs), median 2.5 s",
        "the recheck discards more rows than it returns for English keywords: 50 removed vs 10 returned (5.0×)",
    ]
    assert trgm["strengths"]["en"] == []  # 1.6× faster: neither a strength nor a weakness
    assert trgm["strengths"]["all"] == trgm["weaknesses"]["all"] == []  # one build: no ranking
    assert strengths._duration(96_360.0) == "26 h 46 min"
    assert strengths._duration(600.0) == "10 min"
    assert strengths._bytes(131 << 30) == "131 GB"
    assert none["strengths"]["all"] == ["no index to build or store (the table alone: 1.0 GB)"]


def test_without_wordfreq_a_study_of_fulltext_is_refused_unless_it_gives_a_corpus(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """What the suite lacks here is its own to say (Suite.missing), and teiten.run.check says it
    in one line before anything is made."""
    import importlib.util

    from teiten.workloads import statements

    found = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "wordfreq" else found(name, *a))
    suite = statements.suite("fulltext")
    assert suite.missing(suite.read({})) == (
        "the fulltext workload draws its documents from wordfreq, which is not installed: pip "
        "install 'teiten[fulltext]' (or pip install wordfreq) in teiten's virtualenv")
    assert suite.missing(suite.read({"corpus": "/data/docs.txt"})) is None
    assert statements.suite("iot").missing(statements.suite("iot").read({})) is None
