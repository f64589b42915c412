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
from dataclasses import dataclass
from typing import Any

from teiten.spec import LoadedStudy
from teiten.workloads.base import Workload

Loc = tuple[str | int, ...]  # where the entry is in the study file: ("workloads", i)


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
