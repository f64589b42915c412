"""What a kind of workload is, as the registry (:mod:`teiten.workloads`) sees it: how an entry
of a study file, read by its options model, becomes a :class:`~teiten.workloads.base.Workload`;
which class a workload of the kind is when the store gives it back; the workload names it
runs, and their options with their defaults.

The built-in kinds are pgbench's (``pgbench``: the built-in scripts and the user's), the
application-shaped workloads (``app``, :mod:`teiten.workloads.apps`) and the measured-statement
suites (``suite``, :mod:`teiten.workloads.statements`). Any other kind is a module of this
package named as its options model's ``kind`` says (teiten.spec.workload_base), which exports
its ``KIND``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any, TypeVar

from teiten.spec import LoadedStudy
from teiten.workloads.base import Workload

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

Loc = tuple[str | int, ...]  # where the entry is in the study file: ("workloads", i)
# A workload's options (an app's, a suite's): a frozen dataclass, each option with its default.
Options = TypeVar("Options", bound="DataclassInstance")


def read_options(model: type[Options], given: Mapping[str, object]) -> Options:
    """The options of a workload as ``model`` types them, from what a study resolved or a store
    kept (an axis as a list or a tuple); an option ``given`` lacks takes its default, and one the
    model does not have (a store of another teiten's) is left out."""
    known = {f.name for f in fields(model)}
    return model(**{k: tuple(v) if isinstance(v, list) else v for k, v in given.items() if k in known})


def defaults_of(model: type[DataclassInstance]) -> dict[str, object]:
    """Every option of ``model`` with its default, as a study file writes it (a tuple as a
    list), in the order of its fields."""
    given = model()
    return {f.name: list(v) if isinstance(v := getattr(given, f.name), tuple) else v
            for f in fields(model)}


def _no_options(_name: str) -> Mapping[str, object]:
    return {}


@dataclass(frozen=True)
class WorkloadKind:
    name: str  # as the options models say (WorkloadOptions.kind) and the store keeps it
    workload: type[Workload]  # the class of a workload of this kind, resolved or stored
    # The study's entry (its options model, validated) at ``loc`` as a workload; raises
    # SpecError (loaded.error) for what the model could not check alone.
    resolve: Callable[[LoadedStudy, Loc, Any], Workload]
    names: tuple[str, ...]  # the workload names it runs
    # Every option of the named workload with its default (a pgbench workload's: none).
    defaults: Callable[[str], Mapping[str, object]] = _no_options
