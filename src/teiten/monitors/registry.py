"""Every monitor, registered once, and the metrics they store (name, unit, kind, label).

:mod:`teiten.run.window` runs the monitors of this list over each trial's window; ``teiten show``
names a stored metric by what its monitor registered here. To add a monitor, write its module
(:mod:`teiten.monitors.base` says what it gives) and add its ``KIND`` to ``KINDS``, or write it as
the ``monitor.py`` of the report table that shows what it measures (``teiten/tables/KEY/``),
where it is found (docs/DESIGN.md, "A monitor").
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable
from importlib.resources import files

from teiten.messages import texts, tr
from teiten.monitors import (
    activity,
    foreign,
    loadparts,
    lwlock,
    placement,
    profile,
    remote_system,
    replication,
)
from teiten.monitors.base import Metric, MonitorKind


def _of_tables() -> list[MonitorKind]:
    """The monitors of the report tables' folders (``teiten/tables/KEY/monitor.py``, each the
    meter of what its table shows), by the folder's name."""
    found = files("teiten.tables")  # the wing's __init__ imports nothing
    folders = sorted(found.iterdir(), key=lambda d: d.name)  # safe: teiten's own package, as its imports
    return [importlib.import_module(f"teiten.tables.{d.name}.monitor").KIND
            for d in folders if d.joinpath("monitor.py").is_file()]


# In the order their parts enter a trial's evidence (and the store keeps them).
KINDS: list[MonitorKind] = [activity.KIND, profile.KIND, placement.KIND, lwlock.KIND, loadparts.KIND,
                            replication.KIND, remote_system.KIND, foreign.KIND, *_of_tables()]


def register(kind: MonitorKind) -> None:
    """Add a monitor after the others; its name and its metrics' names are its own."""
    if any(k.name == kind.name for k in KINDS):
        raise ValueError(f"a monitor named {kind.name!r} is registered already")
    if twice := sorted(m.name for m in kind.metrics if find(m.name)):
        raise ValueError(f"monitor {kind.name}: metric {twice[0]} is another monitor's")
    KINDS.append(kind)


def unregister(name: str) -> None:
    """Take a monitor off the list (a test's own, after the test)."""
    KINDS[:] = [k for k in KINDS if k.name != name]


def find(name: str) -> tuple[Metric, dict[str, str]] | None:
    """The registered metric that covers the stored name ``name``, with its fields; None when
    no monitor declares it."""
    for kind in KINDS:
        for metric in kind.metrics:
            fields = metric.fields(name)
            if fields is not None:
                return metric, fields
    return None


def unregistered(names: Iterable[str]) -> list[str]:
    """The names among ``names`` that no monitor declares."""
    return sorted(n for n in set(names) if find(n) is None)


def label(name: str, lang: str = "en") -> str:
    """The words for a stored metric in ``lang``: its registered label, filled with its fields;
    the name itself when no monitor declares it (a store from a monitor gone) or its label has
    no words yet."""
    found = find(name)
    if found is None or found[0].label not in texts():
        return name
    return tr(found[0].label, lang, **found[1])


def unit(name: str, lang: str = "en") -> str:
    """The unit of a stored metric in ``lang``; nothing for a count or a metric no monitor
    declares."""
    found = find(name)
    return tr(f"unit.{found[0].unit}", lang) if found and found[0].unit != "count" else ""
