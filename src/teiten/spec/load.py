"""Loading a study file: YAML with line numbers, validation, and one-line messages.

A study file is the contract between users, tests and the runner. Every rejection names
the file, the line and what would fix it, on one line.
"""

from __future__ import annotations

import contextlib
import difflib
import json
import os
import re
import stat
from collections.abc import Hashable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, get_args

import psycopg
import yaml
from pydantic import BaseModel, ValidationError
from pydantic_core import ErrorDetails

from teiten.model.errors import SpecError
from teiten.spec import secrets
from teiten.spec.secrets import Secrets
from teiten.spec.study import Study
from teiten.spec.workloads import KINDS, PGBENCH_OPTIONS

WORKLOAD_KINDS: dict[str, type[BaseModel]] = {k.__name__: k for k in KINDS}


@dataclass(frozen=True)
class LoadedStudy:
    """A validated study and where it came from, for messages and relative paths."""

    study: Study
    path: str
    text: str
    lines: dict[tuple[str | int, ...], int] = field(default_factory=dict)
    secrets: Secrets = field(default_factory=Secrets)  # passwords taken out of ``text``

    @property
    def base_dir(self) -> Path:
        return Path(self.path).parent if not self.path.startswith("<") else Path.cwd()

    def line_of(self, loc: tuple[str | int, ...]) -> int | None:
        """The line of the longest prefix of ``loc`` that appears in the file."""
        for end in range(len(loc), -1, -1):
            if loc[:end] in self.lines:
                return self.lines[loc[:end]]
        return None

    def error(self, loc: tuple[str | int, ...], message: str) -> SpecError:
        return SpecError(message, path=self.path, line=self.line_of(loc))


def _line_map(node: yaml.Node, prefix: tuple[str | int, ...], out: dict[tuple[str | int, ...], int]) -> None:
    out.setdefault(prefix, node.start_mark.line + 1)
    if isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            path = (*prefix, str(key.value))
            out[path] = key.start_mark.line + 1
            _line_map(value, path, out)
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            out[(*prefix, i)] = item.start_mark.line + 1
            _line_map(item, (*prefix, i), out)


def _where(loc: tuple[str | int, ...]) -> str:
    text = ""
    for part in loc:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else part)
    return text


def _models_in(annotation: object) -> list[type[BaseModel]]:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    return [m for arg in get_args(annotation) for m in _models_in(arg)]


def _model_for(loc: tuple[str | int, ...]) -> type[BaseModel] | None:
    """The model that validates the value at ``loc``, a place as pydantic gives it: a workload
    entry's place holds the tag of its kind (the name of its model)."""
    model: type[BaseModel] | None = Study
    for part in loc:
        if isinstance(part, int):
            continue
        if part in WORKLOAD_KINDS:
            model = WORKLOAD_KINDS[part]
            continue
        info = model.model_fields.get(part) if model is not None else None
        if info is None:
            return None
        found = _models_in(info.annotation)
        model = found[0] if len(found) == 1 else None  # several: a tag comes next
    return model


_EXAMPLES = {
    "servers": 'a mapping such as {name: pg17, install: "17"} or {name: cloud, external: "host=..."}',
    "workloads": "a workload name such as pgecons-read, or a mapping such as {name: pgecons-update, "
                 "fillfactor: 80} or {script: my.pgbench}",
}


def _message(err: ErrorDetails) -> tuple[tuple[str | int, ...], str]:
    raw = tuple(err["loc"])
    loc = tuple(p for p in raw if isinstance(p, int) or not p[:1].isupper()
                and not p.startswith(("literal[", "function-", "int", "str")))
    kind = err["type"]
    if kind == "foreign_option":  # an option of another workload: the message names whose
        return (*loc, err["ctx"]["key"]), err["msg"]
    if kind == "extra_forbidden":
        key = str(loc[-1])
        model = _model_for(raw[:-1])
        allowed = list(model.model_fields) if model else []
        allowed.sort(key=lambda f: f in PGBENCH_OPTIONS)  # the entry's own keys first
        close = difflib.get_close_matches(key, allowed, n=1)
        hint = f" (did you mean '{close[0]}'?)" if close else ""
        parent = _where(loc[:-1])
        return loc, (f"unknown key '{key}'" + (f" in {parent}" if parent else "") + hint
                     + (f"; allowed: {', '.join(allowed)}" if allowed else ""))
    msg = err["msg"].removeprefix("Value error, ")
    named = re.match(r"'([a-z_]+)' ", msg)
    if kind == "value_error" and named:
        loc = (*loc, named.group(1))  # a check across keys that names the key at fault
    where = _where(loc) or "study"
    if kind == "missing":
        return loc, f"{where} is missing: it is required"
    if kind == "string_pattern_mismatch":
        return loc, (f"{where}: {_got(err.get('input'))} is not a valid name; use letters, digits "
                     "and _ . + - (at most 63 characters, starting with a letter or digit)")
    if kind == "model_type":
        example = _EXAMPLES.get(str(loc[0]) if loc else "", "a mapping of keys and values")
        return loc, f"{where}: write {example} (got {_got(err.get('input'))})"
    if kind == "too_short":
        return loc, f"{where}: needs at least one entry"
    if kind == "literal_error":
        return loc, f"{where}: got {_got(err.get('input'))}; {msg[0].lower()}{msg[1:]}"
    if kind in ("value_error", "assertion_error"):
        return loc, f"{where}: {msg}"
    return loc, f"{where}: {msg[0].lower()}{msg[1:]} (got {_got(err.get('input'))})"


# A study file is a page or two of YAML: a few levels deep and a few hundred values. These
# bounds refuse, in a millisecond and before anything is built from the file, what would
# otherwise take the process down: a "billion laughs" of aliases to aliases (9 levels of 9
# copies is 387 million values from a 1 kB file), or a nesting deeper than Python's stack.
MAX_DEPTH = 64  # levels of nesting, aliases followed
MAX_VALUES = 100_000  # values (mappings, lists, scalars), each alias counted as a copy


def _got(value: object) -> str:
    """A value as a message quotes it: whole, or its start (a number of 400 digits, a page)."""
    text = repr(value)
    return text if len(text) <= 60 else f"{text[:48]}... ({len(text)} characters)"


class _Refused(yaml.YAMLError):
    """Valid YAML that no study file is: too deep, too many values, an alias in a loop."""

    def __init__(self, message: str, mark: yaml.Mark | None) -> None:
        super().__init__(message)
        self.message = message
        self.mark = mark


class _StrictLoader(yaml.SafeLoader):
    """A YAML loader that refuses a key given twice in one mapping (plain YAML keeps the
    last one silently, which would hide a typo'd edit) and a nesting deeper than
    :data:`MAX_DEPTH` (PyYAML composes by recursion)."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._depth = 0

    def compose_node(self, parent: yaml.Node | None, index: int) -> yaml.Node | None:
        self._depth += 1
        try:
            if self._depth > MAX_DEPTH:
                raise _Refused(_too_deep(), self.peek_event().start_mark)
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Hashable, object]:
        seen: set[Hashable] = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            if not isinstance(key, Hashable):  # '{{a: 1}}': a mapping as a key
                raise yaml.constructor.ConstructorError(
                    None, None, "a mapping or a list cannot be a key (doubled braces '{{' make "
                    "one); write the key as text", key_node.start_mark)
            if key in seen:
                raise yaml.constructor.ConstructorError(
                    None, None, f"the key '{key}' is given twice; keep one", key_node.start_mark)
            seen.add(key)
        return super().construct_mapping(node, deep)


def _too_deep() -> str:
    return (f"the YAML nests more than {MAX_DEPTH} levels deep (aliases followed), where a "
            "study file needs a few; check the brackets and indentation")


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.MappingNode):
        return [part for pair in node.value for part in pair]
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    return []


def _check_expansion(root: yaml.Node) -> None:
    """Refuse a document that, each alias copied in as it is built (and as the line map and
    the models walk it), holds more than :data:`MAX_VALUES` values, nests deeper than
    :data:`MAX_DEPTH`, or loops (``&a [*a]``). Each node is counted once, whatever the aliases
    to it: linear in the text, however large the expansion."""
    size: dict[int, int] = {}
    depth: dict[int, int] = {}
    open_now: set[int] = set()  # the nodes on the path walked: an alias to one is a loop
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, done = stack.pop()
        key = id(node)
        if done:
            kids = _children(node)
            size[key] = 1 + sum(size[id(k)] for k in kids)
            depth[key] = 1 + max((depth[id(k)] for k in kids), default=0)
            open_now.discard(key)
            if size[key] > MAX_VALUES:
                raise _Refused(f"the YAML holds more than {MAX_VALUES} values, each alias (*name) "
                               "counted as a copy of what it names, where a study file needs a few "
                               "hundred; write fewer aliases of large parts", node.start_mark)
            if depth[key] > MAX_DEPTH:
                raise _Refused(_too_deep(), node.start_mark)
            continue
        if key in size:
            continue
        if key in open_now:
            raise _Refused("an alias (*name) names a mapping or list it is inside of, which "
                           "would never end; copy the part it means instead", node.start_mark)
        open_now.add(key)
        stack.append((node, True))
        stack += [(kid, False) for kid in _children(node)]


def parse_yaml(text: str, path: str) -> tuple[yaml.Node | None, Any]:
    """The YAML ``text`` of a study file as its node tree (for lines) and its data, bounded
    in depth and in values (:data:`MAX_DEPTH`, :data:`MAX_VALUES`). Raises
    :class:`SpecError`, one line."""
    loader = _StrictLoader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None, None
        _check_expansion(node)
        return node, loader.construct_document(node)
    except _Refused as exc:
        raise SpecError(exc.message, path=path,
                        line=exc.mark.line + 1 if exc.mark else None) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise SpecError(f"not valid YAML: {problem}", path=path,
                        line=mark.line + 1 if mark else None) from None
    except (ValueError, OverflowError) as exc:  # a value YAML reads but Python cannot hold:
        # an integer of 5,000 digits, a date of month 13
        why = ("a number of more than 4300 digits" if "integer string conversion" in str(exc)
               else str(exc).splitlines()[0][:120])
        raise SpecError(f"cannot read a value of the YAML ({why}); check the numbers and dates "
                        "of the file", path=path) from None
    finally:
        loader.dispose()


def _check_unique_names(loaded: LoadedStudy) -> None:
    study = loaded.study
    matrix = study.server_matrix()
    for section, names in (("servers", [(i, s.name) for i, s in matrix]),
                           ("workloads", list(enumerate(w.key for w in study.workloads)))):
        first: dict[str, int] = {}
        for i, name in names:
            if len(name) > 63:  # a swept limit or the cores axis made it
                raise loaded.error((section, i, "name"), f"{section}[{i}]: the server name "
                                   f"'{name}' is longer than 63 characters; give the server a "
                                   "shorter name")
            if name in first:
                what = "server" if section == "servers" else "workload"
                raise loaded.error((section, i, "name"), f"{section}[{i}]: the {what} name "
                                   f"'{name}' is already used by {section}[{first[name]}]; "
                                   "give each one a name of its own")
            first[name] = i
    if study.profile is not None:
        known = {"server": {s.name for _, s in matrix},
                 "workload": {w.key for w in study.workloads}}
        for i, point in enumerate(study.profile.points):
            for key in ("server", "workload"):
                value = getattr(point, key)
                if value is not None and value not in known[key]:
                    raise loaded.error(("profile", "points", i, key),
                                       f"profile.points[{i}].{key}: no {key} named '{value}' in "
                                       f"this study ({', '.join(sorted(known[key]))})")
        if study.profile.repetition > study.blocks:
            raise loaded.error(("profile", "repetition"), f"profile.repetition: the study has "
                               f"only {study.blocks} repetitions")


def load_text(text: str, path: str) -> LoadedStudy:
    """Parse and validate a study from YAML ``text``. Raises :class:`SpecError`."""
    node, data = parse_yaml(text, path)
    if not isinstance(data, dict):
        raise SpecError("a study file is a YAML mapping with at least 'study', 'servers' and "
                        "'workloads'", path=path, line=1)
    lines: dict[tuple[str | int, ...], int] = {}
    if node is not None:
        _line_map(node, (), lines)
    loaded = LoadedStudy(study=Study.model_construct(), path=path, text=text, lines=lines)
    if isinstance(data.get("$schema"), str):
        # Where an editor finds the schema ('teiten schema'), as JSON Schema allows: not the
        # study's to read.
        data = {k: v for k, v in data.items() if k != "$schema"}
    try:
        study = Study.model_validate(data)
    except ValidationError as exc:
        errors = [_message(e) for e in exc.errors()]
        errors.sort(key=lambda e: loaded.line_of(e[0]) or 0)
        loc, msg = errors[0]
        more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
        raise loaded.error(loc, msg + more) from None
    loaded = LoadedStudy(study=study, path=path, text=text, lines=lines)
    _check_unique_names(loaded)
    if node is not None and (found := _passwords(node, text, loaded)):
        # Stored, shown and reported without them: the text with each connection string that
        # held a password replaced by its redacted form (nothing else of the text changes).
        for start, end, stored, _ in sorted(found, reverse=True):
            text = text[:start] + json.dumps(stored, ensure_ascii=False) + text[end:]
        again = load_text(text, path)
        return replace(again, secrets=Secrets({stored: pw for _, _, stored, pw in found}))
    return loaded


def _passwords(root: yaml.Node, text: str, loaded: LoadedStudy) -> list[tuple[int, int, str, str]]:
    """(start, end, redacted string, password) for each ``external:`` value of the text that
    holds a password; an alias's value counts once, at its anchor."""
    out: dict[int, tuple[int, int, str, str]] = {}
    stack: list[tuple[yaml.Node, tuple[str | int, ...]]] = [(root, ())]
    while stack:
        node, loc = stack.pop()
        if isinstance(node, yaml.MappingNode):
            for key, value in node.value:
                if key.value == "external" and isinstance(value, yaml.ScalarNode):
                    try:
                        stored, password = secrets.redacted(str(value.value))
                    except psycopg.ProgrammingError:
                        raise loaded.error((*loc, "external"), f"{_where((*loc, 'external'))}: "
                                           "cannot read the connection string") from None
                    if password is not None:
                        out[id(value)] = (value.start_mark.index, value.end_mark.index, stored,
                                          password)
                stack.append((value, (*loc, str(key.value))))
        elif isinstance(node, yaml.SequenceNode):
            stack += [(item, (*loc, i)) for i, item in enumerate(node.value)]
    return list(out.values())


# A study file is a page or two of YAML: a larger file is the wrong one (a log, a dump), and
# reading it whole could take all the memory first.
MAX_STUDY_BYTES = 4 * 1024 * 1024
_NOT_REGULAR = ((stat.S_ISDIR, "a directory"), (stat.S_ISCHR, "a character device"),
                (stat.S_ISBLK, "a block device"), (stat.S_ISFIFO, "a named pipe (FIFO)"),
                (stat.S_ISSOCK, "a socket"))


def _refuse_kind(p: Path, mode: int) -> None:
    if stat.S_ISREG(mode):
        return
    kind = next((name for test, name in _NOT_REGULAR if test(mode)), "something else")
    if kind == "a directory":  # the line this case always had
        raise SpecError(f"study file {p} is a directory; give the path of a YAML file")
    raise SpecError(f"study file {p} is {kind}, not a regular file; give the path of a YAML file")


def _refuse_size(p: Path, size: int) -> None:
    if size > MAX_STUDY_BYTES:
        raise SpecError(f"study file {p} is {size} bytes, more than the {MAX_STUDY_BYTES} bytes "
                        "(4 MiB) a study file may have; give the path of the study's YAML file")


def _read_bytes(p: Path) -> bytes:
    """The bytes of the regular file ``p``, at most :data:`MAX_STUDY_BYTES`. It is opened
    without blocking (opening a FIFO would wait for a writer forever) and its kind and size
    are checked before anything is read (``/dev/zero`` never ends)."""
    try:
        fd = os.open(p, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        raise SpecError(f"no such study file: {p}; see 'teiten study list' for the built-in "
                        "ones") from None
    except OSError as exc:
        with contextlib.suppress(OSError):  # a socket cannot be opened (ENXIO): name it
            _refuse_kind(p, os.stat(p).st_mode)
        raise SpecError(f"cannot read study file {p}: {exc.strerror}") from None
    try:
        found = os.fstat(fd)
        _refuse_kind(p, found.st_mode)
        _refuse_size(p, found.st_size)
        os.set_blocking(fd, True)
        with open(fd, "rb", closefd=False) as fh:
            data = fh.read(MAX_STUDY_BYTES + 1)  # bounded, should it grow meanwhile
    except OSError as exc:
        raise SpecError(f"cannot read study file {p}: {exc.strerror}") from None
    finally:
        os.close(fd)
    _refuse_size(p, len(data))
    return data


def load_file(path: str | Path) -> LoadedStudy:
    """Read, parse and validate the study file at ``path``: a regular file of UTF-8 YAML, at
    most :data:`MAX_STUDY_BYTES`. Raises :class:`SpecError`."""
    p = Path(path)
    try:
        text = _read_bytes(p).decode("utf-8")
    except UnicodeDecodeError:
        raise SpecError(f"study file {p} is not UTF-8 text; save it as UTF-8") from None
    # Line ends as text mode reads them (Path.read_text, as before): the stored text keeps "\n".
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    return load_text(text, str(p))
