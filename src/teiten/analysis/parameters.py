"""The parameters in which compared studies differ where their numbers stop being comparable.

A compare report puts the servers of several studies side by side; their ratios mean something
only when each study measured the same thing the same way. Those parameters must be equal:
the scale, the duration, pgbench's threads, the prewarm and the connection (socket or TCP), where
pgbench ran (client CPUs, load clients), the settings profile of the servers (pgecons or
default), and every field and option of the workloads the studies share. Repetitions, clients,
the order and its seed, names and descriptions may differ: they change how much was measured,
not what. Pure functions, over the stored record of each study (``StudyResults.record``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import PurePosixPath

from teiten.analysis.model import Notice
from teiten.model.results import StudyResults

# The notice a compare report made with differing parameters carries (notices.yaml).
NOTICE = "different-parameters"
# The study fields that must be equal, in the order a message names them.
STUDY_FIELDS = ("scale", "duration", "threads", "prewarm", "restart", "connect", "client_cpus",
                "load_clients")
# A workload's own words, not what it measures.
IGNORED_WORKLOAD_FIELDS = ("key", "description")
_MISSING = object()  # a field a stored spec lacks (an older store)


@dataclass(frozen=True)
class Difference:
    """A parameter the studies differ in, with each study's value in the studies' order."""

    name: str                      # "scale", "settings profile", "tpcc warehouses"
    values: tuple[object, ...]  # each a stored JSON value

    def worded(self) -> str:
        """``scale (1, 10)``, ``duration (1s, 5s)``."""
        return f"{self.name} ({', '.join(_word(self.name, v) for v in self.values)})"


def differences(studies: Sequence[StudyResults]) -> list[Difference]:
    """The parameters in which ``studies`` differ, study fields first, then the settings
    profile, then the workloads they share (in the first study's order). A field a study's
    stored spec lacks (an older store) is not compared."""
    records = [s.record for s in studies]
    found = [d for name in STUDY_FIELDS
             if (d := _differ(name, [r.parameters.fields.get(name, _MISSING) for r in records]))]
    profile = _differ("settings profile", [_profiles(s) for s in studies])
    found += [profile] if profile else []
    entries = [{w.key: w.fields for w in r.workloads} for r in records]
    for key in entries[0]:
        if all(key in e for e in entries):
            found += _workload(key, [e[key] for e in entries],
                               [r.parameters.fields.get("scale") for r in records])
    return found


def listed(found: Sequence[Difference]) -> str:
    """``scale (1, 10) and duration (1s, 5s)``: the differences as an English list."""
    words = [d.worded() for d in found]
    return words[0] if len(words) == 1 else f"{', '.join(words[:-1])} and {words[-1]}"


def notice(found: Sequence[Difference]) -> Notice:
    """The report's notice of ``found``, in their words (each study's own values are in the
    report's Study table, from :class:`teiten.analysis.model.StudyParameters`)."""
    return Notice(NOTICE, {"fields": ", ".join(d.worded() for d in found)})


def _differ(name: str, values: list[object]) -> Difference | None:
    if any(v is _MISSING for v in values) or all(v == values[0] for v in values):
        return None
    return Difference(name, tuple(values))


def _profiles(study: StudyResults) -> str:
    """The settings profiles of a study's servers: ``pgecons``, or ``default+pgecons``."""
    return "+".join(sorted({srv.setup.profile or "none" for srv in study.servers}))


def _workload(key: str, entries: list[Mapping[str, object]],
              scales: list[object]) -> list[Difference]:
    """The fields and options in which one shared workload differs."""
    found: list[Difference] = []
    fields = [f for f in entries[0] if f not in IGNORED_WORKLOAD_FIELDS]
    for field in fields:
        values = [e.get(field, _MISSING) for e in entries]
        if field == "scale" and values == scales:
            continue  # the study's scale, compared (and named) as such
        if field == "scripts":
            values = [_scripts(v) for v in values]
        options = [v for v in values if isinstance(v, Mapping)]
        if field == "options" and len(options) == len(values):
            found += [d for option in options[0]
                      if (d := _differ(f"{key} {option}", [v.get(option, _MISSING) for v in options]))]
            continue
        d = _differ(f"{key} {field}", values)
        found += [d] if d else []
    return found


def _scripts(value: object) -> object:
    """A workload's scripts by file name and weight (``read.pgbench@1``): the directory is
    where teiten or the study file was, not what ran."""
    if not isinstance(value, list):
        return value
    return " + ".join(f"{PurePosixPath(str(s)).name}@{n}" for s, n in value)


def _word(name: str, value: object) -> str:
    if name == "duration" and isinstance(value, int | float):
        return f"{value:g}s"
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str | int | float):
        return str(value)
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), sort_keys=True, default=str)
