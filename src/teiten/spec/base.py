"""What every model of a study file shares: closed frozen models, names, durations, axes."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, TypeAlias, TypeVar

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    GetCoreSchemaHandler,
    GetJsonSchemaHandler,
    WithJsonSchema,
)
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import CoreSchema, core_schema

T = TypeVar("T")
NAME = r"^[A-Za-z0-9][A-Za-z0-9_.+-]{0,62}$"
DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|sec|secs|m|min|mins|h|d|day|days)?\s*$")
_UNITS = {None: 1.0, "s": 1.0, "sec": 1.0, "secs": 1.0, "ms": 0.001,
          "m": 60.0, "min": 60.0, "mins": 60.0, "h": 3600.0,
          "d": 86400.0, "day": 86400.0, "days": 86400.0}


def parse_duration(value: object) -> float:
    """Seconds from 300, "300s", "5min", "1.5 h". Parsed once, here, at the edge."""
    if isinstance(value, bool):
        raise ValueError("a duration is a number of seconds or a string like '5s' or '5min'")
    if isinstance(value, int | float):
        try:
            return float(value)
        except OverflowError:  # an integer of hundreds of digits
            return float("inf")  # refused as not finite
    m = DURATION.match(str(value))
    if not m:
        raise ValueError(f"cannot read {value!r} as a duration; write e.g. 5s, 300s or 5min")
    return float(m.group(1)) * _UNITS[m.group(2)]


SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(B|kB|MB|GB|TB)?\s*$")
_SIZE_UNITS = {None: 1, "B": 1, "kB": 1 << 10, "MB": 1 << 20, "GB": 1 << 30, "TB": 1 << 40}


def parse_bytes(value: object) -> int:
    """Bytes from 1048576, "512MB", "2GB" (PostgreSQL's units: powers of 1024)."""
    if isinstance(value, bool):
        raise ValueError("a size is a number of bytes or a string like '512MB' or '2GB'")
    if isinstance(value, int):
        return value
    m = SIZE.match(str(value))
    if not m:
        raise ValueError(f"cannot read {value!r} as a size; write e.g. 512MB or 2GB (kB, MB, GB, "
                         "TB: powers of 1024, as in postgresql.conf)")
    return int(float(m.group(1)) * _SIZE_UNITS[m.group(2)])


def size_text(n: int) -> str:
    """A size as a study file would write it: ``2GB``, ``512MB``, ``100kB``, else bytes."""
    for unit in ("TB", "GB", "MB", "kB"):
        if n % _SIZE_UNITS[unit] == 0:
            return f"{n // _SIZE_UNITS[unit]}{unit}"
    return str(n)


DAY = 86400.0


def seconds_text(seconds: float) -> str:
    """A bound in seconds as people read it: ``7 days``, ``1 h``, ``90 s``."""
    if seconds >= DAY and seconds % DAY == 0:
        days = int(seconds // DAY)
        return f"{days} day" + ("s" if days > 1 else "")
    if seconds >= 3600 and seconds % 3600 == 0:
        return f"{int(seconds // 3600)} h"
    return f"{seconds:.15g} s"


@dataclass(frozen=True)
class AtMost:
    """The upper bound of a number of a study file. Every number has one, so that no value
    reaches a program, a timer or the store that it cannot hold (a duration of a billion
    seconds overflowed at the first trial); a value above it is refused with the field, the
    value and the whole range allowed (``least``: the lower end as a message says it)."""

    most: float
    least: str
    unit: str = ""  # "s": a duration, said with its unit

    def __get_pydantic_core_schema__(self, source: object, handler: GetCoreSchemaHandler) -> CoreSchema:
        return core_schema.no_info_after_validator_function(self._check, handler(source))

    def __get_pydantic_json_schema__(self, schema: CoreSchema,
                                     handler: GetJsonSchemaHandler) -> JsonSchemaValue:
        found = handler(schema)
        if found.get("type") in ("integer", "number"):
            found["maximum"] = self.most
        return found

    def _check(self, value: float) -> float:
        if value > self.most:
            if self.unit == "s":
                top = seconds_text(self.most)
                top += f" ({self.most:.15g} s)" if not top.endswith(" s") else ""
                raise ValueError(f"{_number(value)} s is out of range; allowed: {self.least} "
                                 f"up to {top}")
            raise ValueError(f"{_number(value)} is out of range; allowed: {self.least} to "
                             f"{_number(self.most)}")
        return value


def _number(value: float) -> str:
    """A number as a message shows it: in full, or its first digits and how many."""
    whole = isinstance(value, int) or (isinstance(value, float) and value.is_integer()
                                       and abs(value) < 1e18)
    text = str(int(value)) if whole else f"{value:.15g}"
    return text if len(text) <= 24 else f"{text[:12]}... ({len(text)} digits)"


MAX_SCALE = 1_000_000  # pgbench -s, a study's or a workload's: 100,000 accounts each, ~15 TB

# A size: at most 1 PB (memory, bytes a second), which any kernel interface takes.
MAX_BYTES = 1 << 50
Bytes = Annotated[int, BeforeValidator(parse_bytes), Field(ge=1), AtMost(MAX_BYTES, "1"),
                  WithJsonSchema({"anyOf": [{"type": "integer", "minimum": 1,
                                             "maximum": MAX_BYTES},
                                            {"type": "string", "pattern": SIZE.pattern}]})]


def duration_schema(**number: float) -> dict[str, object]:
    """The JSON Schema of a duration: a number of seconds (with these bounds) or a string."""
    return {"anyOf": [{"type": "number", **number},
                      {"type": "string", "pattern": DURATION.pattern}]}


def _seconds(most: float, *, positive: bool) -> object:
    """Seconds written as a number or as a duration ("10s", "3min"), finite, at most ``most``;
    more than 0 when ``positive``, else 0 or more."""
    if positive:
        return Annotated[float, BeforeValidator(parse_duration), Field(gt=0, allow_inf_nan=False),
                         AtMost(most, "more than 0 s", "s"),
                         WithJsonSchema(duration_schema(exclusiveMinimum=0, maximum=most))]
    return Annotated[float, BeforeValidator(parse_duration), Field(ge=0, allow_inf_nan=False),
                     AtMost(most, "0 s", "s"), WithJsonSchema(duration_schema(minimum=0, maximum=most))]


# The durations of a study file, each with its bound (docs/guide/study-files.md, "Bounds"): a trial's measured
# run at most 7 days, a repetitions: auto budget 30 days, a think time 1 h, a ramp-up, a
# device's interval or a guest's boot 1 day, the time iot's records cover 3660 days.
if TYPE_CHECKING:
    Seconds: TypeAlias = float
    PositiveSeconds: TypeAlias = float
    ThinkSeconds: TypeAlias = float
    TrialSeconds: TypeAlias = float
    BudgetSeconds: TypeAlias = float
    PeriodSeconds: TypeAlias = float
else:
    Seconds = _seconds(DAY, positive=False)
    PositiveSeconds = _seconds(DAY, positive=True)
    ThinkSeconds = _seconds(3600.0, positive=False)
    TrialSeconds = _seconds(7 * DAY, positive=True)
    BudgetSeconds = _seconds(30 * DAY, positive=True)
    PeriodSeconds = _seconds(3660 * DAY, positive=True)


class Model(BaseModel):
    """A part of a study file: unknown keys are refused, and a loaded study never changes."""

    model_config = ConfigDict(extra="forbid", frozen=True)


# pg_ctl and initdb start postgres through /bin/sh, with every path in double quotes, where
# these characters still mean something: a path holding one (or a control character) is
# refused, so that no name from a study file reaches a shell.
SHELL_SPECIAL = '"$`\\'


def unsafe_char(text: str) -> str | None:
    """The first character of ``text`` that teiten does not pass to a program, or None."""
    return next((c for c in text if c in SHELL_SPECIAL or ord(c) < 0x20 or ord(c) == 0x7F), None)


def check_path_text(value: str) -> str:
    bad = unsafe_char(value)
    if bad is not None:
        raise ValueError(f"{ascii(value)} holds {ascii(bad)}, which teiten never passes to "
                         "PostgreSQL's programs (pg_ctl starts the server through a shell); "
                         "rename the file or directory")
    return value


# A path from a study file: no shell-special or control characters.
PathText = Annotated[str, AfterValidator(check_path_text)]

def _distinct(values: list[T]) -> list[T]:
    seen = [v for i, v in enumerate(values) if v in values[:i]]
    if seen:
        raise ValueError(f"{seen[0]!r} is listed twice")
    return values


# A JSON object of a JSON Schema document as pydantic writes it (model_json_schema), read and
# completed by key: the study file's schema (teiten.spec.schema) and what reads it.
JsonObject: TypeAlias = dict[str, object]


def json_object(node: Mapping[str, object], key: str, *more: str) -> JsonObject:
    """The JSON object at ``key`` of ``node``, or at ``key`` and the keys ``more`` below it
    (KeyError when one is missing)."""
    found = node[key]
    if not isinstance(found, dict):
        raise TypeError(f"the JSON Schema's {key} is {type(found).__name__}, not an object")
    return json_object(found, *more) if more else found


def json_objects(node: Mapping[str, object], key: str) -> list[JsonObject]:
    """The JSON objects of the list at ``key`` of ``node`` (``anyOf``, ``allOf``): none when
    it has no such key."""
    found = node.get(key, [])
    if not isinstance(found, list) or not all(isinstance(item, dict) for item in found):
        raise TypeError(f"the JSON Schema's {key} is not a list of objects")
    return found


class _OneOrList:
    """In the JSON Schema, an axis is one value or a list of them, as the loader reads it."""

    def __get_pydantic_json_schema__(self, core_schema: CoreSchema,
                                     handler: GetJsonSchemaHandler) -> JsonSchemaValue:
        schema = handler(core_schema)
        return {"anyOf": [json_object(schema, "items"), schema]} if "items" in schema else schema


# An axis of a measured-statement workload: one value, or a list of distinct values.
Axis = Annotated[list[T], Field(min_length=1), AfterValidator(_distinct),
                 BeforeValidator(lambda v: v if isinstance(v, list) else [v]), _OneOrList()]
