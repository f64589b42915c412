"""What every model of a study file shares: closed frozen models, names, durations, axes."""

from __future__ import annotations

import re
from typing import Annotated, Any, TypeVar

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    GetJsonSchemaHandler,
    WithJsonSchema,
)
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import CoreSchema

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
        return float(value)
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


Bytes = Annotated[int, BeforeValidator(parse_bytes), Field(ge=1),
                  WithJsonSchema({"anyOf": [{"type": "integer", "minimum": 1},
                                            {"type": "string", "pattern": SIZE.pattern}]})]


def duration_schema(**number: float) -> dict[str, Any]:
    """The JSON Schema of a duration: a number of seconds (with these bounds) or a string."""
    return {"anyOf": [{"type": "number", **number},
                      {"type": "string", "pattern": DURATION.pattern}]}


class Model(BaseModel):
    """A part of a study file: unknown keys are refused, and a loaded study never changes."""

    model_config = ConfigDict(extra="forbid", frozen=True)


# Seconds written as a number or as a duration ("10s", "3min"), finite.
Seconds = Annotated[float, BeforeValidator(parse_duration), Field(ge=0, allow_inf_nan=False),
                    WithJsonSchema(duration_schema(minimum=0))]
PositiveSeconds = Annotated[float, BeforeValidator(parse_duration), Field(gt=0, allow_inf_nan=False),
                            WithJsonSchema(duration_schema(exclusiveMinimum=0))]


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

def _distinct(values: list[Any]) -> list[Any]:
    seen = [v for i, v in enumerate(values) if v in values[:i]]
    if seen:
        raise ValueError(f"{seen[0]!r} is listed twice")
    return values


class _OneOrList:
    """In the JSON Schema, an axis is one value or a list of them, as the loader reads it."""

    def __get_pydantic_json_schema__(self, core_schema: CoreSchema,
                                     handler: GetJsonSchemaHandler) -> JsonSchemaValue:
        schema = handler(core_schema)
        return {"anyOf": [schema["items"], schema]} if "items" in schema else schema


# An axis of a measured-statement workload: one value, or a list of distinct values.
Axis = Annotated[list[T], Field(min_length=1), AfterValidator(_distinct),
                 BeforeValidator(lambda v: v if isinstance(v, list) else [v]), _OneOrList()]
