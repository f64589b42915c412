"""Strengths and weaknesses of each full-text method, from measured figures (METHODS S9's
summary table). A pure function: no I/O, numbers in, short sentences out, each sentence
carrying the figures it rests on. A sentence is data (``{"key": ..., figures}``), worded
in the report's language by :func:`say` from the catalogue's ``fulltext.*`` texts.

The input is one server's figures per method (medians over repetitions, taken by the
caller)::

    {"build_s": float | None, "index_bytes": int | None, "table_bytes": int,
     "not_installed": bool,
     "searches": [{"keyword", "cls", "band", "hits", "rows", "seconds",
                   "rows_removed_by_index_recheck", "shape",
                   "rows_removed_by_filter" (optional)}]}

The rules, with the thresholds below:

* not installed: the one weakness "not installed on this server";
* build (methods with an index, at least two): the fastest build is a strength, the
  slowest a weakness when it took at least BUILD_SPREAD times the fastest;
* size: an index at least LARGE_INDEX times the table is a weakness, one at most
  SMALL_INDEX times the table a strength;
* per class of keyword (English, Japanese 2-character, Japanese 3+ characters), the
  median search time against the sequential scan's (method ``none``): at least FASTER
  times faster is a strength, less than NOT_FASTER times faster (or slower) a weakness;
  the fastest index of a class is a strength, the slowest a weakness when it is at least
  SLOWEST_SPREAD times the fastest. Speeds are compared only between methods that give
  about the same answer: at least SAME_ANSWER of the rows LIKE finds for the class (a
  word index that finds 2% of them is fast at something else);
* recall: the rows a method returns against the rows ``LIKE '%keyword%'`` finds (the true
  hits), summed over the class's keywords; anything but 100% is a weakness (tsvector and
  RUM match whole words, PGroonga's default operator class misses English words inside
  longer words);
* index use: a method with an index whose plans for a class never name an index cannot
  use it for that class (pg_trgm and 2-character keywords), a weakness; some plans
  without the index are one too;
* recheck: when the rows an index plan throws away after the index (Rows Removed by
  Index Recheck, plus Rows Removed by Filter for the bigram method, whose LIKE is a
  filter) outnumber the rows it returns for a class, a weakness (pg_bigm on English).

Sentences go to ``all`` (build, size, installation), ``en`` or ``ja``.
"""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from teiten.messages import tr

BUILD_SPREAD = 1.5
LARGE_INDEX = 1.0
SMALL_INDEX = 0.3
FASTER = 2.0
NOT_FASTER = 1.25
SLOWEST_SPREAD = 2.0
SAME_ANSWER = 0.9
BASELINE = "none"
WORD_METHODS = ("tsvector", "rum")

CLASS_ORDER = ("en", "ja1", "ja2", "ja3", "other")
CLASSES = frozenset(CLASS_ORDER)
GROUPS = ("all", "en", "ja")
Sentence = dict[str, object]  # {"key": a fulltext.* text, its fields}; JSON as it is


def say(sentence: Mapping[str, object], lang: str = "en") -> str:
    """One sentence in ``lang``; its keyword class (``cls``) worded too."""
    fields = {k: v for k, v in sentence.items() if k != "key"}
    if "cls" in fields:
        fields["text"] = tr(f"fulltext.class.{fields.pop('cls')}", lang)
    return tr(f"fulltext.{sentence['key']}", lang, **fields)


def _said(key: str, **fields: object) -> Sentence:
    return {"key": key, **fields}


@dataclass(frozen=True)
class Search:
    """One timed search of a method: its keyword's class, the rows LIKE finds (``hits``) and
    the rows it returned, its time, its plan's shape and the rows its plan threw away."""

    cls: str
    hits: int
    rows: int
    seconds: float
    shape: str = ""
    rechecked: int = 0       # Rows Removed by Index Recheck
    filtered: int = 0        # Rows Removed by Filter (the bigram method's LIKE is a filter)

    @classmethod
    def of(cls, given: Mapping[str, object]) -> Search:
        return cls(str(given.get("cls") or ""), _int(given.get("hits")), _int(given.get("rows")),
                   _float(given.get("seconds") or 0.0), str(given.get("shape") or ""),
                   _int(given.get("rows_removed_by_index_recheck")), _int(given.get("rows_removed_by_filter")))

    @property
    def indexed(self) -> bool:
        return "Index" in self.shape


@dataclass(frozen=True)
class Method:
    """One method's figures on one server (medians over repetitions, taken by the caller)."""

    build_s: float | None
    index_bytes: float | None  # a median (an int when given one)
    table_bytes: float
    not_installed: bool
    searches: tuple[Search, ...]

    @classmethod
    def of(cls, given: Mapping[str, object]) -> Method:
        build, index = given.get("build_s"), given.get("index_bytes")
        searches = given.get("searches") or ()
        if not isinstance(searches, list | tuple) or not all(isinstance(s, Mapping) for s in searches):
            raise TypeError(f"a method's searches are a list of objects, got {searches!r}")
        return cls(None if build is None else _float(build), None if index is None else _figure(index),
                   _int(given.get("table_bytes")), bool(given.get("not_installed")),
                   tuple(Search.of(s) for s in searches if isinstance(s, Mapping)))


def _figure(value: object) -> float:
    """A figure as given: a number (an int stays an int)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"a figure is a number, got {value!r}")
    return value


def _int(value: object) -> int:
    """A figure as an integer, 0 when absent."""
    value = value or 0
    if not isinstance(value, int | float | str):
        raise TypeError(f"a figure is a number, got {value!r}")
    return int(value)


def _float(value: object) -> float:
    if not isinstance(value, int | float | str):
        raise TypeError(f"a figure is a number, got {value!r}")
    return float(value)


@dataclass
class _Row:
    """A method's strengths and weaknesses, each by group (``all``, ``en``, ``ja``)."""

    method: str
    strengths: dict[str, list[Sentence]] = field(default_factory=lambda: {g: [] for g in GROUPS})
    weaknesses: dict[str, list[Sentence]] = field(default_factory=lambda: {g: [] for g in GROUPS})

    def good(self, group: str, key: str, **fields: object) -> None:
        self.strengths[group].append(_said(key, **fields))

    def bad(self, group: str, key: str, **fields: object) -> None:
        self.weaknesses[group].append(_said(key, **fields))

    def json(self) -> dict[str, object]:
        return {"method": self.method, "strengths": self.strengths, "weaknesses": self.weaknesses}


def judge(figures: Mapping[str, Mapping[str, object] | Method]) -> list[dict[str, object]]:
    """One row per method, in the order given: ``{"method", "strengths": {"all", "en",
    "ja"}, "weaknesses": {"all", "en", "ja"}}``, each a list of sentences."""
    methods = {m: f if isinstance(f, Method) else Method.of(f) for m, f in figures.items()}
    rows = {m: _Row(m) for m in methods}
    installed = {m: f for m, f in methods.items() if not f.not_installed}
    for method, f in methods.items():
        if f.not_installed:
            rows[method].bad("all", "not_installed")
    _builds(installed, rows)
    for method, f in installed.items():
        _size(method, f, rows[method])
    classes = {m: _by_class(f.searches) for m, f in installed.items()}
    for cls in CLASS_ORDER:
        per = {m: c[cls] for m, c in classes.items() if cls in c}
        if per:
            _speed(cls, {m: s for m, s in per.items() if _recall_of(s) >= SAME_ANSWER}, rows)
            for method, searches in per.items():
                _recall(method, cls, searches, rows[method])
                if method != BASELINE and installed[method].build_s is not None:
                    _index_use(cls, searches, rows[method])
                    _recheck(cls, searches, rows[method])
    return [r.json() for r in rows.values()]


def _group(cls: str) -> str:
    return "en" if cls == "en" else "ja"


def _by_class(searches: Sequence[Search]) -> dict[str, list[Search]]:
    out: dict[str, list[Search]] = {}
    for s in searches:
        out.setdefault(s.cls if s.cls in CLASSES else "other", []).append(s)
    return out


def _median_s(searches: Sequence[Search]) -> float:
    return statistics.median(s.seconds for s in searches)


# -- rules ----------------------------------------------------------------------------------

def _builds(installed: Mapping[str, Method], rows: Mapping[str, _Row]) -> None:
    builds = sorted((f.build_s, m) for m, f in installed.items() if f.build_s is not None)
    if len(builds) < 2:
        return
    (fast_s, fast), (next_s, next_m) = builds[0], builds[1]
    n = len(builds)
    rows[fast].good("all", "build_fastest", n=n, time=_duration(fast_s), next=_duration(next_s),
                    next_method=next_m)
    slow_s, slow = builds[-1]
    if fast_s > 0 and slow_s >= BUILD_SPREAD * fast_s:
        rows[slow].bad("all", "build_slowest", n=n, time=_duration(slow_s), times=_times(slow_s / fast_s),
                       fastest=fast)


def _size(method: str, f: Method, row: _Row) -> None:
    index, table = f.index_bytes, f.table_bytes
    if method == BASELINE and f.build_s is None:
        if table:
            row.good("all", "no_index", table=_bytes(table))
        return
    if not index or not table:
        return
    ratio = index / table
    if ratio >= LARGE_INDEX:
        row.bad("all", "index_large", times=_times(ratio), index=_bytes(index), table=_bytes(table))
    elif ratio <= SMALL_INDEX:
        row.good("all", "index_small", times=_times(ratio), index=_bytes(index), table=_bytes(table))


def _speed(cls: str, per: Mapping[str, Sequence[Search]], rows: Mapping[str, _Row]) -> None:
    group = _group(cls)
    medians = {m: _median_s(s) for m, s in per.items()}
    base = medians.get(BASELINE)
    for method, med in medians.items():
        if method == BASELINE or base is None:
            continue
        times = {"time": _duration(med), "scan": _duration(base), "cls": cls}
        if med > 0 and base / med >= FASTER:
            rows[method].good(group, "search_faster", times=_times(base / med), **times)
        elif med <= 0 or base / med < 1:
            slower = med / base if base > 0 else float("inf")
            rows[method].bad(group, "search_slower", times=_times(slower), **times)
        elif base / med < NOT_FASTER:
            rows[method].bad(group, "search_hardly", times=_times(base / med), **times)
    indexed = sorted((med, m) for m, med in medians.items() if m != BASELINE)
    if len(indexed) < 2:
        return
    (fast_s, fast), (next_s, next_m) = indexed[0], indexed[1]
    n = len(indexed)
    rows[fast].good(group, "search_fastest", n=n, cls=cls, time=_duration(fast_s), next=_duration(next_s),
                    next_method=next_m)
    slow_s, slow = indexed[-1]
    if fast_s > 0 and slow_s >= SLOWEST_SPREAD * fast_s:
        rows[slow].bad(group, "search_slowest", n=n, cls=cls, time=_duration(slow_s),
                       times=_times(slow_s / fast_s), fastest=fast)


def _recall_of(searches: Sequence[Search]) -> float:
    """Rows returned over rows LIKE finds, over a class's keywords (1 when LIKE finds none)."""
    hits = sum(s.hits for s in searches)
    return sum(s.rows for s in searches) / hits if hits else 1.0


def _recall(method: str, cls: str, searches: Sequence[Search], row: _Row) -> None:
    hits = sum(s.hits for s in searches)
    found = sum(s.rows for s in searches)
    if hits == 0 or found == hits:
        return
    key = "recall_words" if method in WORD_METHODS else "recall"
    row.bad(_group(cls), key, pct=_pct(found / hits), cls=cls, found=found, hits=hits)


def _index_use(cls: str, searches: Sequence[Search], row: _Row) -> None:
    without = [s for s in searches if not s.indexed]
    if not without:
        return
    shape = Counter(s.shape for s in without).most_common(1)[0][0]
    med = _duration(_median_s(without))
    if len(without) == len(searches):
        row.bad(_group(cls), "no_index_use", cls=cls, shape=shape, time=med)
    else:
        row.bad(_group(cls), "some_index_use", n=len(without), of=len(searches), cls=cls, shape=shape, time=med)


def _recheck(cls: str, searches: Sequence[Search], row: _Row) -> None:
    used = [s for s in searches if s.indexed]
    removed = sum(s.rechecked + s.filtered for s in used)
    returned = sum(s.rows for s in used)
    if not used or removed <= returned:
        return
    if returned:
        row.bad(_group(cls), "recheck", cls=cls, removed=removed, returned=returned,
                times=_times(removed / returned))
    else:
        row.bad(_group(cls), "recheck_all", cls=cls, removed=removed)


# -- numbers as text ------------------------------------------------------------------------

def _sig(x: float) -> str:
    """Two significant digits, without an exponent."""
    if x >= 10:
        return f"{x:.0f}"
    if x >= 1:
        return f"{x:.1f}"
    return f"{x:.2g}"


def _times(ratio: float) -> str:
    return f"{_sig(ratio)}×"


def _pct(ratio: float) -> str:
    return f"{ratio * 100:.1f}%"


def _duration(seconds: float) -> str:
    if seconds < 1:
        return f"{_sig(seconds * 1000)} ms"
    if seconds < 120:
        return f"{_sig(seconds)} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    return f"{int(seconds // 3600)} h {int(seconds % 3600 // 60)} min"


def _bytes(n: float) -> str:
    """1024-based, with pg_size_pretty's unit names."""
    for unit in ("bytes", "kB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:.0f} bytes" if unit == "bytes" else f"{_sig(n)} {unit}"
        n /= 1024
    raise AssertionError("unreachable")


def judgements(res: Any) -> tuple[dict[str, object], ...]:
    """The S9 strengths and weaknesses of each search method, per server, from the warm
    variants (or the first cache state measured): the suite's ``judge`` (teiten.workloads.
    statements.Suite), given the report's figures of the workload (its
    teiten.analysis.model.SuiteResults: servers, variants, steps, sizes, not_installed; Any, as
    analysis, a layer above the workloads, is not theirs to import)."""
    out: list[dict[str, object]] = []
    sizes = {(s.server, s.variant): s for s in res.sizes}
    for server in res.servers:
        methods: dict[str, Method] = {}
        for variant in res.variants:
            values = _values(variant)
            method, cache = values.get("methods", ""), values.get("cache", "warm")
            if method in methods or (cache != "warm" and any(
                    _values(v).get("cache") == "warm" for v in res.variants)):
                continue
            mine = [st for st in res.steps if st.server == server and st.variant == variant]
            gone = [why for s, v, why in res.not_installed if s == server and v == variant]
            size = sizes.get((server, variant))
            build = next((st.seconds for st in mine if st.step == "index"), None)
            methods[method] = Method(
                build_s=build, index_bytes=size.index_bytes if size and build is not None else None,
                table_bytes=size.table_bytes if size else 0, not_installed=bool(gone),
                searches=tuple(Search(
                    cls=st.labels.get("cls", ""), hits=int(st.extra.get("hits") or 0), rows=int(st.rows or 0),
                    seconds=st.seconds, shape=st.shape,
                    rechecked=int(st.plan.get("rows_removed_by_index_recheck") or 0))
                    for st in mine if st.step == "search"))
        if not methods or all(m.not_installed for m in methods.values()):
            continue
        for row in judge(methods):
            out.append({"server": server, **row})
    return tuple(out)


def _values(variant: str) -> dict[str, str]:
    """``{"methods": "pg_bigm", "cache": "warm"}`` of the variant ``methods=pg_bigm cache=warm``."""
    return dict(pair.split("=", 1) for pair in variant.split())
