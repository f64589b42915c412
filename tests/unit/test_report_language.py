"""A report in one language: the report of every built-in study's shape, rendered from the
small fixture stores of tests/golden/report-stores (made by scripts/make-report-stores.py,
real runs of the built-in studies made small), has no English sentence in Japanese and no
Japanese in English, outside what the store itself holds (names, SQL, plans, settings,
PostgreSQL's own messages). The English catalogue holds no Japanese at all: the Japanese terms
(基準比, 中央値, ...) belong to the Japanese report (issue 56, item 4)."""

from __future__ import annotations

import json
import re
import shutil
import sqlite3
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path

import pytest

from teiten import messages
from teiten.report.build import write_compare_report, write_study_report
from teiten.store import Store

STORES = Path(__file__).resolve().parent.parent / "golden" / "report-stores"
NAMES = sorted(p.stem for p in STORES.glob("*.db") if not p.stem.startswith("compare-"))

WORD = r"\b[A-Za-z][a-z]+\b"
ENGLISH = re.compile(WORD + r"(?:[ ,;:'’-]{1,3}" + WORD + r"){2,}")  # three words or more
KANA = r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff]"  # kana and kanji
JAPANESE = re.compile(KANA + r"+(?:[\s・ー]*" + KANA + r"+)*")
# Words people read in both languages as they are: product and method names, units, and the
# names of statistical tests.
ALLOWED_ENGLISH = ("Mann-Whitney", "Hodges-Lehmann", "Seq Scan", "Index Scan", "Bitmap Heap Scan",
                   "Bitmap Index Scan", "Index Only Scan", "Parallel Seq Scan", "Gather Merge")


class _Text(HTMLParser):
    """What a person reads on the page: text outside scripts and styles, and the hover
    texts, labels and alt texts."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.skip = 0
        self.parts: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in ("script", "style"):
            self.skip += 1
        self.parts += [v for k, v in attrs if k in ("title", "alt", "aria-label") and v]

    def handle_endtag(self, tag: str) -> None:
        if tag in ("script", "style"):
            self.skip -= 1

    def handle_data(self, data: str) -> None:
        if not self.skip and data.strip():
            self.parts.append(data.strip())


def _leaves(value: object) -> Iterator[str]:
    """Every string inside ``value``, JSON in strings included, except descriptions (the
    report words those itself)."""
    if isinstance(value, str):
        try:
            parsed = json.loads(value) if value[:1] in "[{" else None
        except ValueError:
            parsed = None
        yield from (_leaves(parsed) if parsed is not None else (value,))
    elif isinstance(value, dict):
        for k, v in value.items():
            yield str(k)
            if k != "description":
                yield from _leaves(v)
    elif isinstance(value, list | tuple):
        for v in value:
            yield from _leaves(v)


def stored_words(path: Path) -> list[str]:
    """The store's own text: what a report may show in any language. Longest first, so
    that a name inside a longer name is taken out with it."""
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    found: set[str] = set()
    try:
        tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        for table in tables:
            for row in conn.execute(f'SELECT * FROM "{table}"'):  # noqa: S608 - the store's own tables
                for cell in row:
                    if isinstance(cell, str):
                        for leaf in _leaves(cell):  # and its parts: a command line's arguments
                            found.add(leaf)
                            found.update(part.strip("'\"") for part in leaf.split())
    finally:
        conn.close()
    # single words stay: alone they make no sentence, and where they join the report's own
    # words into one, that sentence is the report's
    return sorted((w for w in found if (len(w) > 2 or not w.isascii()) and not re.fullmatch(r"[A-Za-z]+", w)),
                  key=len, reverse=True)


def page_text(out: Path) -> list[str]:
    parser = _Text()
    parser.feed((out / "report.html").read_text(encoding="utf-8"))
    markdown = (out / "report.md").read_text(encoding="utf-8")
    # Markdown: its escapes undone, its links' targets (file names) left out
    lines = [re.sub(r"\]\([^)]*\)", "]", re.sub(r"\\(.)", r"\1", line)) for line in markdown.splitlines()]
    return parser.parts + [line for line in lines if line.strip()]


def foreign(parts: list[str], lang: str, stored: list[str]) -> list[str]:
    """The sentences of ``parts`` in the other language, with their context."""
    bad = []
    for part in parts:
        text = part
        for word in stored:
            if word in text:
                text = text.replace(word, " ¦ ")
        for word in ALLOWED_ENGLISH:
            text = text.replace(word, " ¦ ")
        if lang == "ja":
            bad += [f"{m.group()!r} in {part[:160]!r}" for m in ENGLISH.finditer(text)]
        else:
            bad += [f"{m.group()!r} in {part[:160]!r}" for m in JAPANESE.finditer(text)]
    return sorted(set(bad))


def _copy(name: str, tmp: Path) -> Path:
    target = tmp / f"{name}.db"
    shutil.copyfile(STORES / f"{name}.db", target)  # opening a store may migrate it
    return target


def _study_id(store: Store) -> int:
    ids = [r.id for r in store.studies()]
    assert len(ids) == 1
    return int(ids[0])


def test_there_is_a_fixture_for_every_shape() -> None:
    assert {"quick", "cores", "checksums", "bookstore", "scaleup", "environments", "parallel",
            "replication", "iot", "fulltext", "freeze", "tpcc", "versions", "percentiles"} <= set(NAMES)


@pytest.mark.parametrize("lang", ["en", "ja"])
@pytest.mark.parametrize("name", NAMES)
def test_a_report_is_in_one_language(name: str, lang: str, tmp_path: Path) -> None:
    path = _copy(name, tmp_path)
    store = Store.open(path)
    try:
        write_study_report(store, _study_id(store), tmp_path / "out", lang=lang)
    finally:
        store.close()
    bad = foreign(page_text(tmp_path / "out"), lang, [str(path), *stored_words(STORES / f"{name}.db")])
    assert not bad, f"{name} ({lang}): " + "\n".join(bad)


@pytest.mark.parametrize("lang", ["en", "ja"])
def test_a_compare_report_is_in_one_language(lang: str, tmp_path: Path) -> None:
    stores = [Store.open(_copy(n, tmp_path)) for n in ("compare-a", "compare-b")]
    try:
        write_compare_report([(s, _study_id(s)) for s in stores], tmp_path / "out", lang=lang)
    finally:
        for s in stores:
            s.close()
    stored = sorted({w for n in ("compare-a", "compare-b") for w in stored_words(STORES / f"{n}.db")},
                    key=len, reverse=True)
    bad = foreign(page_text(tmp_path / "out"), lang, [str(tmp_path / "compare-a.db"),
                                                       str(tmp_path / "compare-b.db"), *stored])
    assert not bad, f"compare ({lang}): " + "\n".join(bad)


def test_the_check_finds_the_other_language() -> None:
    """The check itself: it sees an English sentence in Japanese and Japanese in English,
    and lets names and SQL pass."""
    assert foreign(["中央値 the repetitions vary by 7%"], "ja", []) == [
        "'the repetitions vary by' in '中央値 the repetitions vary by 7%'"]
    assert foreign(["select-only の結果: Seq Scan on access_log"], "ja", ["select-only"]) == []
    assert foreign(["pg18 · pgecons-read · 2 clients"], "ja", ["pgecons-read"]) == []
    assert foreign(["Median TPS 英語ではない"], "en", []) == ["'英語ではない' in 'Median TPS 英語ではない'"]
    assert foreign(["Wait events (待機イベント)"], "en", []) == [
        "'待機イベント' in 'Wait events (待機イベント)'"]


def test_the_english_catalogue_holds_no_japanese() -> None:
    """No English text of the catalogue has a CJK character (U+3000-U+9FFF, U+FF00-U+FFEF): a
    heading's Japanese gloss showed as empty boxes where no CJK font is installed."""
    cjk = re.compile("[\u3000-\u9fff\uff00-\uffef]")
    for catalogue in (messages.texts(), messages.notices()):
        assert [key for key, entry in catalogue.items() if cjk.search(entry["en"])] == []


def test_every_built_in_study_and_workload_is_worded_in_both_languages() -> None:
    """A built-in study run as it ships, and every built-in workload, are described from the
    catalogue: its English is the study file's own description (kept equal here), its
    Japanese has no English sentence. A changed description is the user's and stays."""
    import yaml

    from teiten import studies
    from teiten.workloads import BUILTINS, about

    for name in studies.names():
        description = yaml.safe_load(studies.path_of(name).read_text())["description"]
        assert messages.tr(f"study.about.{name}", "en") == " ".join(description.split()), name
        ja = studies.about(name, description, "ja")
        assert JAPANESE.search(ja) and not foreign([ja], "ja", []), (name, ja)
        assert studies.about(name, description + " Changed.", "ja") == description + " Changed."
    for key, builtin in BUILTINS.items():
        moved = [["/old/venv/" + s.rsplit("/", 1)[-1], w] for s, w in builtin.scripts]
        stored = {"key": key, "scripts": moved, "description": builtin.description}
        assert about(stored, "en") == builtin.description
        assert JAPANESE.search(about(stored, "ja")), key
    for kind in ("tpcc", "bookstore", "accesslog", "freeze", "fulltext", "iot"):
        field = "app" if kind in ("tpcc", "bookstore") else "suite"
        stored = {"key": kind, field: kind, "options": {"rows": 40000}, "description": "old words"}
        assert about(stored, "ja").endswith("(rows=40000)") and JAPANESE.search(about(stored, "ja"))
    mix = {"key": "mine", "scripts": [["a.pgbench", 2], ["builtin:select-only", 1]],
           "description": "mix of a.pgbench@2, builtin:select-only@1"}
    assert about(mix, "ja") == "スクリプトの組み合わせ: a.pgbench@2, builtin:select-only@1"
    assert about({"key": "x", "description": "the user's own"}, "ja") == "the user's own"
