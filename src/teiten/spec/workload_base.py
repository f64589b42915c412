"""What every kind of workload entry of a study file shares, below the registry of kinds
(:data:`teiten.spec.workloads.KINDS`) so that a kind may live in a module of its own.

Each kind is an options model: a subclass of :class:`WorkloadOptions` (a built-in workload
named by ``name``: :class:`NamedWorkload`; one whose data teiten loads itself:
:class:`SqlLoaded`). Its ``names`` are the workload names that pick it, and its ``kind`` is the
kind of workload that runs it (:mod:`teiten.workloads`). The registry hands this module its
kinds (:func:`register`), so that an option of another kind is refused with one line that
says whose option it is.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, ClassVar

from pydantic import Field, model_validator
from pydantic_core import PydanticCustomError

from teiten.spec.base import NAME, Model

_KINDS: list[type[WorkloadOptions]] = []  # every registered kind, in the registry's order


def register(kinds: tuple[type[WorkloadOptions], ...]) -> None:
    """The kinds of workload entry the study files know (called once, by the registry)."""
    _KINDS[:] = kinds


def every_option() -> set[str]:
    """The keys of every registered kind's entry."""
    return {key for k in _KINDS for key in k.model_fields}


class WorkloadOptions(Model):
    """What every kind of workload entry shares: a bare name is read as ``{name: ...}``, and
    an option of another kind of workload is refused with a message that says whose it is."""

    names: ClassVar[tuple[str, ...]] = ()  # the built-in workloads that take these options
    # The kind of workload (teiten.workloads) that runs an entry of this model: "pgbench",
    # "app", "suite", or the name of its own module of teiten.workloads.
    kind: ClassVar[str] = "pgbench"

    @model_validator(mode="before")
    @classmethod
    def _own_options(cls, data: object) -> object:
        if isinstance(data, str):
            return {"name": data}  # a bare workload name
        if not isinstance(data, dict):
            return data  # refused by the model, with the forms of an entry
        given: dict[object, object] = dict(data)
        cls._check_form(given)
        entry = entry_name(given)
        known = every_option()
        for key, value in list(given.items()):
            if key in cls.model_fields or not isinstance(key, str):
                continue
            if value is None and key in known:
                del given[key]  # an option left empty was accepted before each kind had its own
                continue
            why = cls._foreign(key, entry)
            if why:
                raise PydanticCustomError("foreign_option", "{message}", {"message": why, "key": key})
        return given

    @property
    def key(self) -> str:
        """The workload's name in the study: its trials, its database, its report."""
        raise NotImplementedError

    @classmethod
    def _check_form(cls, data: Mapping[object, object]) -> None:
        """Refuse an entry whose keys do not make a workload of this kind."""

    @classmethod
    def _foreign(cls, key: str, entry: str) -> str | None:
        """Why ``key``, an option of another kind of workload, is refused here (None: the key
        is nobody's and is refused as an unknown key)."""
        owners = [name for kind in _KINDS if issubclass(kind, SqlLoaded)
                  for name in kind.names if key in kind.model_fields]
        if not owners:
            return None
        return (f"'{key}' is an option of the {' and '.join(owners)} workload"
                f"{'s' if len(owners) > 1 else ''}, not of '{entry}'; remove it")


class NamedWorkload(WorkloadOptions):
    """A built-in workload, named by ``name``: no script of the user's."""

    name: Annotated[str, Field(pattern=NAME)]

    @property
    def key(self) -> str:
        """The workload's name in the study: its trials, its database, its report."""
        return self.name

    @property
    def script(self) -> None:
        return None

    @property
    def scripts(self) -> None:
        return None

    @classmethod
    def _foreign(cls, key: str, entry: str) -> str | None:
        if key == "weight":
            return ("'weight' weighs a script of your own ({script: file.pgbench, weight: 2}) "
                    "or an entry of 'scripts'; remove it")
        return super()._foreign(key, entry)


class SqlLoaded(NamedWorkload):
    """A workload whose data teiten loads itself, not with pgbench -i: pgbench's data options
    are not its own."""

    @classmethod
    def _foreign(cls, key: str, entry: str) -> str | None:
        if key == "fillfactor":
            return (f"'fillfactor' is pgbench's -F; the {entry} workload sets its own "
                    "fillfactors (see its README); remove it")
        if key == "scale":
            return (f"'scale' is pgbench's -s; the {entry} workload sizes its data with its own "
                    "options (see its README); remove it")
        return super()._foreign(key, entry)


def entry_name(data: Mapping[object, object]) -> str:
    """The name an entry goes by in a message: its name, else its script's file name."""
    name, script = data.get("name"), data.get("script")
    if name is None and isinstance(script, str):
        return Path(script).stem
    return str(name)
