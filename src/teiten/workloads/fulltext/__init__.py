"""The fulltext suite: full-text search for Japanese and English (METHODS S9).

``setup`` loads documents into ``docs(id, body)`` and chooses keywords at three hit shares
in three classes (:mod:`.corpus`); each trial builds one method's index (timed, with its
size) and runs ``LIKE '%keyword%'`` (or the method's own search) once per keyword under
EXPLAIN ANALYZE. :func:`judge` turns the figures into the report's strengths and weaknesses.
See README.md beside this file.
"""

from __future__ import annotations

import hashlib
import importlib.util
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import psycopg
from psycopg import sql

from teiten.drivers.sql import Session
from teiten.messages import tr
from teiten.model.errors import UserError
from teiten.workloads.fulltext import corpus
from teiten.workloads.fulltext.missing import missing_text, reworded
from teiten.workloads.fulltext.strengths import judge, judgements, say
from teiten.workloads.statements import NotInstalled, Suite

HERE = Path(__file__).parent
METHODS = ("none", "pg_trgm", "pg_bigm", "pgroonga", "bigram", "tsvector", "rum")
# The extension each method needs; the others need core PostgreSQL only.
EXTENSIONS = {"pg_trgm": "pg_trgm", "pg_bigm": "pg_bigm", "pgroonga": "pgroonga", "rum": "rum"}
INDEX_NAMES = {"pg_trgm": "docs_trgm", "pg_bigm": "docs_bigm", "pgroonga": "docs_pgroonga",
               "bigram": "docs_bigram", "tsvector": "docs_tsvector", "rum": "docs_rum"}  # as in indexes.sql
SEARCH_OF = {"none": "like", "pg_trgm": "like", "pg_bigm": "like", "pgroonga": "like",
             "bigram": "bigram", "tsvector": "words", "rum": "words"}
# Keywords of a corpus file are chosen on a seeded sample of this many lines; their hits are
# then counted in SQL over the whole table when the file has more lines.
CHOICE_SAMPLE = 50_000
# Rough sizes for data_bytes: bytes per character of the mixed text in UTF-8 (Japanese
# takes 3), bytes of a row's overhead, and each index's size as a multiple of the table.
# Measured at the defaults on PostgreSQL 15 and 18 (pg_trgm 5.1-6.3x, bigram 1.7-2.3x,
# tsvector 2.0-2.6x, RUM 2.4x): generated text has a random word order, so nearly every
# n-gram across a word boundary is new and the n-gram indexes are larger than on real text.
# pg_bigm is taken as the bigram method; PGroonga as pg_trgm (3.2x on the 2016 report's
# Wikipedia text).
BYTES_PER_CHAR = 2.9
ROW_OVERHEAD = 40
INDEX_FACTOR = {"none": 0.0, "pg_trgm": 6.5, "pg_bigm": 2.5, "pgroonga": 6.5, "bigram": 2.5,
                "tsvector": 2.7, "rum": 2.5}



@dataclass(frozen=True)
class Options:
    documents: int = 20_000  # generated documents
    doc_chars: int = 400  # mean characters per generated document
    english_share: float = 0.05
    corpus: str | None = None  # a UTF-8 text file, one document per line, instead
    keywords: tuple[str, ...] | None = None  # searched instead of chosen ones
    methods: tuple[str, ...] = METHODS
    cache: tuple[str, ...] = ("warm",)


@dataclass(frozen=True)
class Variant:
    methods: str
    cache: str


def _sections(filename: str, marker: str) -> dict[str, str]:
    """The statements of a package SQL file, each after a ``-- MARKER: NAME`` line, without
    comment lines."""
    out: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in (HERE / filename).read_text().splitlines():
        if line.startswith(f"-- {marker}: "):
            current = out.setdefault(line.split(": ", 1)[1].strip(), [])
        elif current is not None and line.strip() and not line.lstrip().startswith("--"):
            current.append(line)
    return {name: "\n".join(lines).rstrip(";") for name, lines in out.items()}


INDEXES = _sections("indexes.sql", "method")
SEARCHES = _sections("searches.sql", "search")


# -- setup ----------------------------------------------------------------------------------

def setup(conninfo: str, options: Options, jobs: int) -> dict[str, float]:
    """Load the documents and choose the keywords, once per server (``jobs`` is unused:
    COPY is one stream)."""
    times: dict[str, float] = {}
    _check_numbers(options)
    user_keywords = _user_keywords(options.keywords)
    if options.corpus and not Path(options.corpus).is_file():
        raise UserError(f"fulltext corpus {options.corpus} is not a file: give a UTF-8 text file, "
                        "one document per line")
    with psycopg.connect(conninfo, autocommit=True) as conn:
        conn.execute((HERE / "schema.sql").read_text().encode())
        if options.corpus:
            chosen, total = _load_file(conn, Path(options.corpus), times, choose=not user_keywords)
        else:
            started = time.perf_counter()
            docs = corpus.generate(int(options.documents), int(options.doc_chars),
                                   float(options.english_share))
            times["generate_s"] = time.perf_counter() - started
            started = time.perf_counter()
            _copy(conn, docs)
            _record_corpus(conn, "generated", docs, _generator_text(options))
            times["copy_s"] = time.perf_counter() - started
            started = time.perf_counter()
            chosen = [] if user_keywords else corpus.choose_keywords(docs)
            total = len(docs)
            times["keywords_s"] = time.perf_counter() - started
        started = time.perf_counter()
        if user_keywords:
            chosen = [_counted(conn, kw, total) for kw in user_keywords]
        with conn.cursor() as cur, cur.copy("COPY fts_keywords (keyword, class, band, hits) FROM STDIN") as cp:
            for k in chosen:
                cp.write_row((k.keyword, k.cls, k.band, k.hits))
        times["keywords_s"] = times.get("keywords_s", 0.0) + time.perf_counter() - started
        started = time.perf_counter()
        conn.execute("VACUUM ANALYZE docs")
        times["vacuum_analyze_s"] = time.perf_counter() - started
    return times


def _check_numbers(options: Options) -> None:
    """The numbers as the study file's model would have them (a store's options, or a caller's,
    are not validated by it)."""
    for name, value in (("documents", options.documents), ("doc_chars", options.doc_chars)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise UserError(f"fulltext option {name} must be a whole number of at least 1, got {value!r}")
    share = options.english_share
    if isinstance(share, bool) or not isinstance(share, int | float) or not 0 <= share <= 1:
        raise UserError(f"fulltext option english_share must lie within [0, 1], got {share!r}")


def _user_keywords(value: object) -> list[str]:
    if value is None:
        return []
    if not isinstance(value, list | tuple) or not all(isinstance(k, str) and k for k in value):
        raise UserError(f"fulltext option keywords must be a list of non-empty strings, got {value!r}")
    return list(dict.fromkeys(value))  # duplicates once, in the given order


def _generator_text(options: Options) -> str:
    return (f"wordfreq {corpus.wordfreq_version()}, seed {corpus.SEED}, documents {options.documents}, "
            f"doc_chars {options.doc_chars}, english_share {options.english_share}")


def _copy(conn: psycopg.Connection, docs: list[str]) -> None:
    with conn.cursor() as cur, cur.copy("COPY docs (id, body) FROM STDIN") as cp:
        for i, doc in enumerate(docs, 1):
            cp.write_row((i, doc))


def _record_corpus(conn: psycopg.Connection, source: str, docs: list[str], generator: str) -> None:
    conn.execute("INSERT INTO fts_corpus VALUES (%s, %s, %s, %s, %s)",
                 (source, len(docs), sum(map(len, docs)), corpus.digest(docs), generator))


def _lines(path: Path) -> Iterator[str]:
    """The documents of a corpus file: its non-blank lines, without NUL characters (text
    cannot hold them)."""
    try:
        with path.open(encoding="utf-8") as f:
            for line in f:
                line = line.rstrip("\r\n").replace("\x00", "")
                if line.strip():
                    yield line
    except UnicodeDecodeError as exc:
        raise UserError(f"fulltext corpus {path} is not UTF-8 text ({exc.reason} at byte {exc.start} "
                        "of a line): convert it to UTF-8, one document per line") from None


def _load_file(conn: psycopg.Connection, path: Path, times: dict[str, float], *,
               choose: bool) -> tuple[list[corpus.Keyword], int]:
    """COPY the file's lines into docs in one pass, keeping a seeded sample to choose the
    keywords on; the chosen keywords' hits over the whole table when the sample is not it."""
    started = time.perf_counter()
    h = hashlib.sha256()
    characters = 0
    sample = corpus.Reservoir(CHOICE_SAMPLE)
    with conn.cursor() as cur, cur.copy("COPY docs (id, body) FROM STDIN") as cp:
        for line in _lines(path):
            sample.add(line)
            cp.write_row((sample.seen, line))
            h.update(line.encode() + b"\n")
            characters += len(line)
    total = sample.seen
    if total == 0:
        raise UserError(f"fulltext corpus {path} has no non-blank line: one document per line")
    conn.execute("INSERT INTO fts_corpus VALUES (%s, %s, %s, %s, %s)",
                 (str(path), total, characters, h.hexdigest(), f"file of {path.stat().st_size} bytes"))
    times["copy_s"] = time.perf_counter() - started
    if not choose:
        return [], total
    started = time.perf_counter()
    chosen = corpus.choose_keywords(sample.items)
    if len(sample.items) < total:
        chosen = [corpus.Keyword(k.keyword, k.cls, k.band, _sql_hits(conn, k.keyword)) for k in chosen]
    times["keywords_s"] = time.perf_counter() - started
    return chosen, total


def _sql_hits(conn: psycopg.Connection, keyword: str) -> int:
    row = conn.execute("SELECT count(*) FROM docs WHERE body LIKE %s",
                       (corpus.like_pattern(keyword),)).fetchone()
    return int(row[0]) if row else 0


def _counted(conn: psycopg.Connection, keyword: str, documents: int) -> corpus.Keyword:
    hits = _sql_hits(conn, keyword)
    return corpus.Keyword(keyword, corpus.keyword_class(keyword), corpus.nearest_band(hits, documents), hits)


# -- one trial ------------------------------------------------------------------------------

def run(session: Session, variant: Variant, options: Options) -> None:
    """Build one method's index (timed) and search every keyword once (EXPLAIN ANALYZE)."""
    method = variant.methods
    if method not in METHODS:
        raise UserError(f"unknown fulltext method {method!r}: choose among {', '.join(METHODS)}")
    extension = EXTENSIONS.get(method)
    if extension is not None:
        _require(session, extension)
        session.execute(sql.SQL("CREATE EXTENSION IF NOT EXISTS {}").format(sql.Identifier(extension)))
    if method == "bigram":
        session.execute((HERE / "bigram.sql").read_text())
    if method != "none":
        session.step("index", INDEXES[method], param=method, index=INDEX_NAMES[method])
    session.execute("ANALYZE docs")
    template = sql.SQL(SEARCHES[SEARCH_OF[method]])
    keywords = session.rows("SELECT keyword, class, band, hits FROM fts_keywords ORDER BY class, hits, keyword")
    for keyword, cls, band, hits in keywords:
        session.cache(variant.cache, ["docs"])
        statement = template.format(pattern=sql.Literal(corpus.like_pattern(keyword)),
                                    keyword=sql.Literal(keyword))
        session.query("search", statement, param=keyword, cls=cls, band=band, hits=hits)


def _require(session: Session, extension: str) -> None:
    """NotInstalled, before anything is created, when the server cannot CREATE EXTENSION."""
    if session.scalar("SELECT count(*) FROM pg_available_extensions WHERE name = %s", (extension,)):
        return
    major = session.scalar_int("SELECT current_setting('server_version_num')::int / 10000")
    assert major is not None  # a setting the server always has
    raise NotInstalled(missing_text(extension, major))


def data_bytes(options: Options) -> int:
    """The docs table and the largest index of the methods asked for, roughly."""
    if options.corpus:
        path = Path(options.corpus)
        text = path.stat().st_size if path.is_file() else 0
        table = int(text * 1.1)
    else:
        row = int(options.doc_chars) * BYTES_PER_CHAR + ROW_OVERHEAD
        table = int(int(options.documents) * row * 1.1)
    factor = max((INDEX_FACTOR.get(m, 1.0) for m in options.methods or METHODS), default=0.0)
    return table + int(table * factor)


def missing_here(options: Options) -> str | None:
    """Without a corpus of the study's, the documents are drawn from wordfreq's word lists."""
    if options.corpus or importlib.util.find_spec("wordfreq") is not None:
        return None
    return ("the fulltext workload draws its documents from wordfreq, which is not installed: "
            "pip install 'teiten[fulltext]' (or pip install wordfreq) in teiten's virtualenv")


SUITE = Suite(
    name="fulltext",
    description=tr("workload.about.fulltext"),
    options_model=Options,
    variant_model=Variant,
    setup=setup,
    run=run,
    data_bytes=data_bytes,
    needs_utf8=True,
    missing=missing_here,
    say=say,
    reword=reworded,
    judge=judgements,
    chart=("search", "rows"),
)

__all__ = ["SUITE", "judge"]
