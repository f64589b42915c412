"""The tables of a workload's section that are each their own folder, ``teiten/tables/KEY/``:
its figures (``__init__.py``, on analysis's floor of the import graph), the table the report
draws of them (``table.py``, on the report's floor) and its words (``texts.yaml``). Nothing
else names them: a new table is its folder, and its ``ORDER`` (its place among the others)
registers it (docs/DESIGN.md, "A report table").

A table's ``__init__.py`` gives ``ORDER: int`` and ``figures(given: SectionInputs)``, which
returns its figures for one workload's section, or None where the section has none of them
(its table is then left out). :func:`figures` puts them in the section
(:attr:`teiten.analysis.model.WorkloadSection.tables`), by its key; its ``table.py`` reads them
from there. A table whose figures need stored data that no other part reads gives
``gathered(store, study)`` too: that data by trial id, which :func:`gathered` reads when a
report gathers its study (``StudyData.gathered``, by the table's key; by trial id, so that a
compare report renames and merges it as it does the trials). A table whose figures belong in
each point's summary (the store's ``point_summaries``, which BMF and OpenMetrics read) gives
``point_figures(figures)``: by server and client count, the summary's columns it fills, which
:func:`point_figures` gathers.
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from importlib.resources import files
from types import ModuleType
from typing import TYPE_CHECKING

from teiten.analysis.inputs import StudyData
from teiten.analysis.model import WorkloadSection
from teiten.model.results import ServerRecord, StudyResults, TrialRecord

if TYPE_CHECKING:
    from teiten.store import Store

PACKAGE = "teiten.tables"


@dataclass(frozen=True)
class SectionInputs:
    """What a table's figures are made of: one load workload's section as analysis made it
    (its servers' points, its baseline), the study's trials and servers, and what the trials
    left beside their figures."""

    section: WorkloadSection
    trials: Sequence[TrialRecord]
    servers: Sequence[ServerRecord]      # the study's, in its order
    clients: Sequence[int]               # the study's client counts
    data: StudyData
    margin_pct: float                    # the study's margin of "no difference"
    block_of: Callable[[TrialRecord], str]  # the block a trial ran in (pairs trials across servers)

    @property
    def workload(self) -> str:
        return self.section.workload


@functools.cache
def registered() -> tuple[tuple[str, ModuleType], ...]:
    """Each table's key and figures module, in their ``ORDER`` (then by key)."""
    found = []
    for entry in files(PACKAGE).iterdir():
        if entry.is_dir() and entry.joinpath("__init__.py").is_file():
            module = importlib.import_module(f"{PACKAGE}.{entry.name}")
            found.append((int(module.ORDER), entry.name, module))
    return tuple((key, module) for _, key, module in sorted(found, key=lambda f: (f[0], f[1])))


def in_order() -> tuple[str, ...]:
    """The registered tables' keys, in the order the report shows them."""
    return tuple(key for key, _ in registered())


def gathered(store: Store, study: StudyResults) -> dict[str, Mapping[str, object]]:
    """What each table that reads stored data of its own gathered of ``study``, by its key."""
    return {key: module.gathered(store, study) for key, module in registered() if hasattr(module, "gathered")}


def figures(given: SectionInputs) -> tuple[tuple[str, object], ...]:
    """Each registered table's figures for ``given``'s section, by key; none of a table with
    nothing to show there."""
    return tuple((key, found) for key, module in registered()
                 if (found := module.figures(given)) is not None)


def point_figures(section: WorkloadSection) -> dict[tuple[str, int], dict[str, float | None]]:
    """What the registered tables add to each point's summary of ``section`` (the columns of
    ``point_summaries`` they fill), by server and client count: each table's
    ``point_figures`` of the figures it made there."""
    out: dict[tuple[str, int], dict[str, float | None]] = {}
    for key, module in registered():
        found = section.figures(key)
        if found is not None and hasattr(module, "point_figures"):
            for at, values in module.point_figures(found).items():
                out.setdefault(at, {}).update(values)
    return out
