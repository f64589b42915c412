"""The en/ja message catalogue, and the words built from it.

Every sentence a person reads comes from the catalogue, which is data, not code: ``texts.yaml``
(the headings, labels, notes and sentences of the reports) and ``notices.yaml`` (the notices
of a study), each key with its English and Japanese side by side. Each file is read once, on
first use, and checked then: every key has exactly ``en`` and ``ja``, both texts are valid
``str.format`` templates with the same fields, and no key is written twice; anything else is
a :class:`CatalogueError` naming the file and the key.

This package imports nothing of teiten's, so the report and the CLI can both word their
messages from it.
"""

from __future__ import annotations

import functools
import re
import string
from collections.abc import Hashable, Iterable, Mapping
from importlib.resources import files
from types import MappingProxyType
from typing import Any

import yaml

try:
    from yaml import CSafeLoader as _SafeLoader
except ImportError:  # PyYAML built without libyaml: the pure-Python parser, slower
    from yaml import SafeLoader as _SafeLoader  # type: ignore[assignment]

LANGS = ("en", "ja")

Catalogue = Mapping[str, Mapping[str, str]]  # key -> language -> text


class CatalogueError(ValueError):
    """The message catalogue is malformed (a bug of the catalogue file, not of the input)."""


def lang_of(lang: str) -> str:
    """``lang`` when the catalogue has it, else English."""
    return lang if lang in LANGS else "en"


def tr(key: str, lang: str = "en", /, **params: object) -> str:
    """The text of ``key`` in ``lang``, its ``{fields}`` filled from ``params``.

    An unknown ``key`` raises :class:`KeyError`; an unknown ``lang`` gives English.
    """
    template = texts()[key][lang_of(lang)]
    return template.format(**params) if params else template


def join(items: Iterable[str], lang: str) -> str:
    """Items joined as a list in ``lang``: ``1, 2, 4`` or ``1、2、4``."""
    return tr("list.sep", lang).join(items)


def clients_phrase(clients: Iterable[int], lang: str) -> str:
    """``1 client``, ``1, 2 clients``; ``クライアント数 1、2`` in Japanese."""
    counts = [str(c) for c in clients]
    if len(counts) == 1 and counts[0] == "1":
        return tr("clients.one", lang, n=counts[0])
    return tr("clients.many", lang, list=join(counts, lang))


def reason(text: str, lang: str) -> str:
    """A reason teiten stored in English (a ``reason.*`` text, as the CLI said it) in
    ``lang``: read back through its English template and worded again; any other text
    (PostgreSQL's, pgbench's) as it is."""
    for key, pattern in _reasons():
        found = pattern.fullmatch(text)
        if found:
            return tr(key, lang, **found.groupdict())
    return text


@functools.cache
def _reasons() -> tuple[tuple[str, re.Pattern[str]], ...]:
    """Each ``reason.*`` key with its English template as a pattern, fields as groups."""
    found = []
    for key, entry in texts().items():
        if key.startswith("reason."):
            parts = [re.escape(literal) + (f"(?P<{field}>.+?)" if field else "")
                     for literal, field, _, _ in string.Formatter().parse(entry["en"])]
            found.append((key, re.compile("".join(parts), re.DOTALL)))
    return tuple(found)


def word(prefix: str, value: str, lang: str) -> str:
    """A stored value (a status, an order, ...) in ``lang``: the catalogue's
    ``prefix.value``; a value the catalogue does not know as it is."""
    key = f"{prefix}.{value}"
    return tr(key, lang) if key in texts() else value


def status_name(status: str, lang: str) -> str:
    """A trial status (ok, failed, ...) in ``lang``; unknown ones as they are."""
    return word("status", status, lang)


def workload_heading(workload: str, lang: str) -> str:
    """``Workload: x``; in Japanese 参照系 / 更新系 for read and update workloads (by name)."""
    name = workload.lower()
    key = "workload.update" if "update" in name else "workload.read" if "read" in name else "workload"
    return tr(key, lang, name=workload)


@functools.cache
def texts() -> Catalogue:
    """The texts of ``texts.yaml`` and of every ``texts.<part>.yaml`` beside it (a kind of
    server, workload or monitor brings its own words in a file of its own): key -> language ->
    ``str.format`` template (read-only). A key written in two files is a :class:`CatalogueError`."""
    return _merged("texts")


@functools.cache
def notices() -> Catalogue:
    """The notices of ``notices.yaml`` and of every ``notices.<part>.yaml`` beside it (a kind's
    own notices): notice key -> language -> template (read-only).

    The notice's wording derives ``{clients_words}`` ("4 clients") from its ``clients``
    parameter, so the two count as the same field when en and ja are compared.
    """
    return _merged("notices", same_fields={"clients_words": "clients"})


def _merged(stem: str, *, same_fields: Mapping[str, str] | None = None) -> Catalogue:
    """``<stem>.yaml`` and every ``<stem>.<part>.yaml`` beside it, then the ``<stem>.yaml`` of
    each folder of a kind of server (``teiten/servers/KEY/``: a kind brings its own words) and
    of a table (``teiten/tables/KEY/``), as one catalogue; a key written in two files is a
    :class:`CatalogueError`."""
    merged: dict[str, Mapping[str, str]] = {}
    here = files(__name__)
    names = sorted(p.name for p in here.iterdir()
                   if p.name.startswith(f"{stem}.") and p.name.endswith(".yaml"))
    paths = [f"messages/{stem}.yaml", *(f"messages/{n}" for n in names if n != f"{stem}.yaml")]
    for folder in ("servers", "tables"):  # data read, nothing imported
        found = files(__name__.rpartition(".")[0]).joinpath(folder)
        paths += sorted(f"{folder}/{d.name}/{stem}.yaml" for d in found.iterdir()
                        if d.is_dir() and d.joinpath(f"{stem}.yaml").is_file())
    for path in paths:
        part = _load(path, same_fields=same_fields)
        if twice := sorted(set(part) & set(merged)):
            raise CatalogueError(f"teiten/{path}: key {twice[0]!r} is written in another {stem} "
                                 "file too")
        merged.update(part)
    return MappingProxyType(merged)


def _load(path: str, *, same_fields: Mapping[str, str] | None = None) -> Catalogue:
    """Read and check the catalogue file ``path`` (below the package's folder)."""
    where = f"teiten/{path}"
    text = files(__name__.rpartition(".")[0]).joinpath(*path.split("/")).read_text(encoding="utf-8")
    try:
        data = yaml.load(text, Loader=_UniqueKeyLoader)  # a safe loader
    except yaml.YAMLError as exc:
        raise CatalogueError(f"{where}: not valid YAML: {exc}") from None
    except CatalogueError as exc:
        raise CatalogueError(f"{where}: {exc}") from None
    return _check(data, where, same_fields or {})


def _check(data: object, where: str, same_fields: Mapping[str, str]) -> Catalogue:
    """``data`` as a read-only catalogue, or a :class:`CatalogueError` naming what is wrong."""
    if not isinstance(data, dict):
        raise CatalogueError(f"{where}: expected a mapping of keys to {{en: ..., ja: ...}}, "
                             f"found {type(data).__name__}")
    checked: dict[str, Mapping[str, str]] = {}
    for key, entry in data.items():
        if not isinstance(key, str):
            raise CatalogueError(f"{where}: key {key!r} is a {type(key).__name__}, not text; "
                                 f"quote it (\"{key}\":)")
        at = f"{where}: key {key!r}"
        if not isinstance(entry, dict) or set(entry) != set(LANGS):
            found = sorted(map(str, entry)) if isinstance(entry, dict) else type(entry).__name__
            raise CatalogueError(f"{at}: needs exactly the languages {', '.join(LANGS)}, "
                                 f"found {found}")
        fields: dict[str, frozenset[str]] = {}
        for lang in LANGS:
            template = entry[lang]
            if not isinstance(template, str):
                raise CatalogueError(f"{at}: the {lang} text is a {type(template).__name__}, "
                                     f"not text; write it in double quotes")
            fields[lang] = _fields(template, f"{at}, {lang}", same_fields)
        first, *others = LANGS
        for lang in others:
            if fields[lang] != fields[first]:
                raise CatalogueError(
                    f"{at}: the fields of {first} and {lang} differ: "
                    f"{_names(fields[first] - fields[lang])} only in {first}, "
                    f"{_names(fields[lang] - fields[first])} only in {lang}")
        checked[key] = MappingProxyType({lang: entry[lang] for lang in LANGS})
    return MappingProxyType(checked)


def _fields(template: str, at: str, same_fields: Mapping[str, str]) -> frozenset[str]:
    """The names of the ``str.format`` fields of ``template`` (``{a.b}`` and ``{a[0]}`` as ``a``)."""
    try:
        parsed = list(string.Formatter().parse(template))
    except ValueError as exc:
        raise CatalogueError(f"{at}: not a valid str.format template ({exc}); "
                             f"write a literal brace as {{{{ or }}}}") from None
    names = set()
    for _, field, _, _ in parsed:
        if field is not None:
            base = field.partition(".")[0].partition("[")[0]
            names.add(same_fields.get(base, base))
    return frozenset(names)


def _names(fields: frozenset[str]) -> str:
    return ", ".join("{" + f + "}" for f in sorted(fields)) or "nothing"


class _UniqueKeyLoader(_SafeLoader):
    """The safe YAML loader, refusing a key written twice in one mapping (YAML keeps the last)."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Hashable, Any]:
        seen: set[object] = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            if isinstance(key, Hashable):
                if key in seen:
                    raise CatalogueError(f"line {key_node.start_mark.line + 1}: key {key!r} is "
                                         f"written twice")
                seen.add(key)
        return super().construct_mapping(node, deep)
