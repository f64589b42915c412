"""Stored bodies read back as typed records (a measured step, :class:`teiten.drivers.sql.Step`;
a workload, :class:`teiten.workloads.stored.StoredWorkload`), validated by pydantic.

A key the record does not name is left out; one it names and the body lacks takes its default.
A body of another shape raises ValueError in one line: what it is not, then each field that is
wrong and why.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from pydantic import TypeAdapter, ValidationError

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

Record = TypeVar("Record", bound="DataclassInstance")

# One validator per record class, made on its first read. Any: a map cannot tie each class to
# its own TypeAdapter's type; read gives back the record's.
_ADAPTERS: dict[type[DataclassInstance], TypeAdapter[Any]] = {}


def read(record: type[Record], body: Mapping[str, object], what: str) -> Record:
    """``body`` as a ``record``; ``what`` names it in the error (``a stored step``)."""
    if record not in _ADAPTERS:
        _ADAPTERS[record] = TypeAdapter(record)
    try:
        found: Record = _ADAPTERS[record].validate_python(dict(body))
    except ValidationError as exc:
        wrong = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
        raise ValueError(f"not {what}: {wrong}") from None
    return found
