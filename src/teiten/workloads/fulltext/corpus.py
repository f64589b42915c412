"""The fulltext suite's documents and keywords, in pure Python (no database).

Documents are drawn word by word from real word frequencies (the ``wordfreq`` package's
lists for Japanese and English, Zipf-shaped as the lists give them) with a seeded
:class:`random.Random`, so that every server of a study gets the same bytes. Japanese words
are joined without spaces, as Japanese is written; 、 and 。 fall now and then; English
words stand between spaces.

Keywords are chosen per class (``ja2``: Japanese, exactly 2 characters; ``ja3``: Japanese,
3 or more; ``en``: English, lowercase ASCII, 4 or more letters) and per band, a target
share of documents that contain the keyword as a substring (what ``LIKE '%kw%'`` finds):
the candidate whose true hit count is nearest to the target wins.
"""

from __future__ import annotations

import functools
import hashlib
import itertools
import math
import random
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

SEED = 2016  # the year of the PGECons report (METHODS S9)
TARGET_SHARES = (0.001, 0.01, 0.1)  # of documents: rare, medium, common keywords
CLASSES = ("ja2", "ja3", "en")
CLASS_LABELS = {
    "ja1": "Japanese 1-character keywords",
    "ja2": "Japanese 2-character keywords",
    "ja3": "Japanese keywords of 3+ characters",
    "en": "English keywords",
    "other": "other keywords",
}
# Share of all tokens that are punctuation; the rest are words.
COMMA, PERIOD = "、", "。"
PUNCTUATION_SHARE = {COMMA: 0.05, PERIOD: 0.03}
# Around the binary search's landing point, this many candidates each side are counted too:
# hit counts fall with word frequency only roughly (a word also hits inside longer words).
WINDOW = 6

# Han (with the iteration mark 々), Hiragana and Katakana, and the prolonged sound mark ー.
# Left out: the katakana middle dot ・ (U+30FB), the combining voicing marks (U+3099-309C),
# and half-width katakana.
_JA_CHARS = ("\u3005\u3041-\u3096\u309d-\u309f\u30a1-\u30fa\u30fc-\u30ff"
             "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff")
_JAPANESE = re.compile(f"[{_JA_CHARS}]+")
_ENGLISH = re.compile(r"[a-z]+")
_ENGLISH_KEYWORD = re.compile(r"[a-z]{4,}")


def is_japanese(word: str) -> bool:
    """Made only of Han, Hiragana and Katakana characters (and ー), not of ー alone."""
    return bool(_JAPANESE.fullmatch(word)) and bool(word.strip("ー"))


def keyword_class(word: str) -> str:
    """``ja1``/``ja2``/``ja3`` (Japanese of 1, 2, 3+ characters), ``en`` (ASCII letters,
    digits and punctuation with at least one letter) or ``other`` (mixed scripts, ...)."""
    if is_japanese(word):
        return "ja1" if len(word) == 1 else "ja2" if len(word) == 2 else "ja3"
    if word.isascii() and any(c.isalpha() for c in word):
        return "en"
    return "other"


def band_label(share: float) -> str:
    """``0.001`` → ``0.1%``."""
    return f"{share * 100:g}%"


def nearest_band(hits: int, documents: int, shares: Sequence[float] = TARGET_SHARES) -> str:
    """The band whose target share is nearest to ``hits`` of ``documents`` (on a log scale)."""
    share = max(hits, 0.5) / max(documents, 1)
    return band_label(min(shares, key=lambda s: abs(math.log(share / s))))


@dataclass(frozen=True)
class Vocabulary:
    """Words of one language, most frequent first, with their frequencies."""

    words: tuple[str, ...]
    freqs: tuple[float, ...]


@functools.cache
def vocabulary(lang: str) -> Vocabulary:
    """wordfreq's words for ``ja`` (Japanese-only characters) or ``en`` (lowercase ASCII
    letters), in a fixed order: frequency descending, then the word."""
    import wordfreq

    keep = is_japanese if lang == "ja" else _ENGLISH.fullmatch
    pairs = sorted(((w, f) for w, f in wordfreq.get_frequency_dict(lang).items() if keep(w)),
                   key=lambda p: (-p[1], p[0]))
    return Vocabulary(tuple(w for w, _ in pairs), tuple(f for _, f in pairs))


def wordfreq_version() -> str:
    from importlib.metadata import version

    return version("wordfreq")


@functools.cache
def _tokens(english_share: float) -> tuple[tuple[str, ...], tuple[float, ...], float]:
    """Every token (Japanese words, " english " words, punctuation), their cumulative
    weights, and the mean token length in characters."""
    ja, en = vocabulary("ja"), vocabulary("en")
    words_share = 1 - sum(PUNCTUATION_SHARE.values())
    ja_scale = words_share * (1 - english_share) / sum(ja.freqs)
    en_scale = words_share * english_share / sum(en.freqs)
    tokens = (*ja.words, *(f" {w} " for w in en.words), *PUNCTUATION_SHARE)
    weights = [*(f * ja_scale for f in ja.freqs), *(f * en_scale for f in en.freqs),
               *PUNCTUATION_SHARE.values()]
    mean = sum(len(t) * w for t, w in zip(tokens, weights, strict=True)) / sum(weights)
    return tokens, tuple(itertools.accumulate(weights)), mean


def generate(documents: int, doc_chars: int, english_share: float, *, seed: int = SEED) -> list[str]:
    """``documents`` documents of ``doc_chars`` characters on average (uniform between half
    and one and a half times that), the same for the same arguments and wordfreq version."""
    if not 0 <= english_share <= 1:
        raise ValueError(f"english_share must lie within [0, 1], got {english_share}")
    tokens, cum, mean = _tokens(english_share)
    rng = random.Random(seed)
    low, high = max(1, doc_chars // 2), max(1, doc_chars * 3 // 2)
    out = []
    for _ in range(documents):
        target = rng.randint(low, high)
        parts: list[str] = []
        length = 0
        while length < target:
            for token in rng.choices(tokens, cum_weights=cum, k=int((target - length) / mean) + 4):
                parts.append(token)
                length += len(token)
                if length >= target:
                    break
        out.append(_tidy("".join(parts)))
    return out


_SPACES = re.compile(r" {2,}")
_SPACE_BEFORE_PUNCT = re.compile(r" (?=[、。])")
_PUNCT_RUN = re.compile(r"[、。]*。[、。]*|、{2,}")


def _tidy(text: str) -> str:
    """One space between English words, no run of punctuation, no punctuation first, and a
    document ends with 。."""
    text = _SPACE_BEFORE_PUNCT.sub("", _SPACES.sub(" ", text))
    text = _PUNCT_RUN.sub(lambda m: PERIOD if PERIOD in m.group() else COMMA, text)
    text = text.lstrip(" 、。").rstrip(" 、")
    return text if text.endswith(PERIOD) else text + PERIOD


def digest(documents: Iterable[str]) -> str:
    """sha256 of the documents, one per line: the same on every server of a study."""
    h = hashlib.sha256()
    for doc in documents:
        h.update(doc.encode() + b"\n")
    return h.hexdigest()


# -- keywords -------------------------------------------------------------------------------

@dataclass(frozen=True)
class Keyword:
    keyword: str
    cls: str
    band: str
    hits: int  # documents that contain it as a substring


def candidates(cls: str) -> list[str]:
    """Words that may be chosen as keywords of a class, most frequent first."""
    if cls == "en":
        return [w for w in vocabulary("en").words if _ENGLISH_KEYWORD.fullmatch(w)]
    words = vocabulary("ja").words
    return [w for w in words if len(w) == 2] if cls == "ja2" else [w for w in words if len(w) >= 3]


def pick_nearest(words: Sequence[str], hits_of: Callable[[str], int], target: float, *,
                 exclude: Iterable[str] = ()) -> tuple[str, int] | None:
    """The word whose hits are nearest to ``target`` on a log scale (ties: the more
    frequent word), among those with at least one hit.

    ``words`` come most frequent first, so hits fall roughly along the list: a binary search
    finds where they cross the target, and the candidates within WINDOW of it are counted
    too. Only those words are counted (counting is the expensive part)."""
    if not words:
        return None
    counted: dict[int, int] = {}

    def hits(i: int) -> int:
        if i not in counted:
            counted[i] = hits_of(words[i])
        return counted[i]

    lo, hi = 0, len(words) - 1
    while lo < hi:
        mid = (lo + hi) // 2
        if hits(mid) > target:
            lo = mid + 1
        else:
            hi = mid
    for i in range(max(0, lo - WINDOW), min(len(words), lo + WINDOW + 1)):
        hits(i)
    skip = set(exclude)
    found = [(abs(math.log(h / target)), i) for i, h in counted.items() if h > 0 and words[i] not in skip]
    if not found:
        return None
    _, best = min(found)
    return words[best], counted[best]


def substring_hits(documents: Sequence[str]) -> Callable[[str], int]:
    """Documents that contain a word as a substring, what ``LIKE '%word%'`` counts."""
    def hits_of(word: str) -> int:
        return sum(1 for doc in documents if word in doc)
    return hits_of


def choose_keywords(documents: Sequence[str], *, shares: Sequence[float] = TARGET_SHARES,
                    classes: Sequence[str] = CLASSES,
                    pools: dict[str, Sequence[str]] | None = None) -> list[Keyword]:
    """One keyword per class and share, hits counted over ``documents``; a class or band
    where no candidate hits at all is left out. ``pools`` replaces the candidates (tests)."""
    hits_of = functools.lru_cache(maxsize=None)(substring_hits(documents))
    chosen = []
    for cls in classes:
        words = pools[cls] if pools is not None else candidates(cls)
        taken: list[str] = []
        for share in shares:
            pick = pick_nearest(words, hits_of, share * len(documents), exclude=taken)
            if pick is not None:
                taken.append(pick[0])
                chosen.append(Keyword(pick[0], cls, band_label(share), pick[1]))
    return chosen


def like_pattern(keyword: str) -> str:
    """``%keyword%`` with LIKE's special characters escaped (backslash is LIKE's default
    escape character)."""
    escaped = keyword.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


class Reservoir:
    """A seeded uniform sample of at most ``size`` of the items added (reservoir sampling,
    Algorithm R), and how many were added."""

    def __init__(self, size: int, seed: int = SEED):
        self.size = size
        self.items: list[str] = []
        self.seen = 0
        self._rng = random.Random(seed)

    def add(self, item: str) -> None:
        self.seen += 1
        if len(self.items) < self.size:
            self.items.append(item)
        else:
            j = self._rng.randrange(self.seen)
            if j < self.size:
                self.items[j] = item


def mean_length(documents: Sequence[str]) -> float:
    return sum(map(len, documents)) / max(len(documents), 1)

