"""Workloads: what runs against a server, and the registry of their kinds.

A workload is data plus a little code: pgbench scripts shipped as package files, how to
initialise the data (``pgbench -i``, or the SQL of an application-shaped workload, see
:mod:`teiten.workloads.apps`), whether a trial changes the data (then the snapshot is
restored before every trial), and the pgbench arguments that select the scripts.

Each kind of workload is a :class:`~teiten.workloads.kind.WorkloadKind`, found by the name its
options model gives (``kind`` in teiten.spec.workload_base): pgbench's (here), the
applications' (:mod:`teiten.workloads.apps`) and the suites' (:mod:`teiten.workloads.statements`);
any other kind the study files know (teiten.spec.workloads.KINDS) is the module of this package
of its name, which exports its ``KIND``. So a new kind is new modules and its options model's
one line in KINDS.
"""

from __future__ import annotations

import difflib
import importlib
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from teiten.messages import texts, tr
from teiten.model.errors import StoreError, UserError
from teiten.spec import (
    BUILTIN_WORKLOADS,
    LoadedStudy,
    PgbenchSpec,
    ScriptSpec,
    Study,
    SuiteSpec,
    WorkloadSpec,
)
from teiten.spec.workloads import KINDS
from teiten.workloads import apps, statements
from teiten.workloads.base import Workload
from teiten.workloads.kind import Loc, WorkloadKind
from teiten.workloads.stored import StoredWorkload

__all__ = ["BUILTINS", "Workload", "WorkloadKind", "about", "from_json", "kind", "resolve",
           "variants"]

PACKAGE_DIR = Path(__file__).parent
BUILTIN_SCRIPTS = ("tpcb-like", "simple-update", "select-only")


@dataclass(frozen=True)
class _Builtin:
    scripts: tuple[tuple[str, int], ...]
    fillfactor: int | None
    modifies_data: bool
    description: str


BUILTINS: dict[str, _Builtin] = {
    "pgecons-read": _Builtin(
        ((str(PACKAGE_DIR / "pgecons" / "read.pgbench"), 1),), None, False,
        tr("workload.about.pgecons-read")),
    "pgecons-update": _Builtin(
        ((str(PACKAGE_DIR / "pgecons" / "update.pgbench"), 1),), 80, True,
        tr("workload.about.pgecons-update")),
    "tpcb-like": _Builtin((("builtin:tpcb-like", 1),), None, True, tr("workload.about.tpcb-like")),
    "simple-update": _Builtin((("builtin:simple-update", 1),), None, True,
                              tr("workload.about.simple-update")),
    "select-only": _Builtin((("builtin:select-only", 1),), None, False,
                            tr("workload.about.select-only")),
}


def _mix(scripts: Sequence[tuple[str, int]]) -> str:
    return ", ".join(f"{s}@{w}" for s, w in scripts)


def _names(scripts: Sequence[tuple[str, int]]) -> list[tuple[str, int]]:
    """Scripts by file name and weight (a stored path is where teiten was installed then)."""
    return [(Path(s).name, w) for s, w in scripts]


def about(body: Mapping[str, object], lang: str = "en") -> str:
    """What a stored workload is, in ``lang``: a built-in's words from the catalogue (with
    the options an application or suite ran with), a script mix's scripts; the stored
    description as it is for anything else (older stores, workloads teiten does not know)."""
    w = StoredWorkload.of(body)
    kind = w.named
    builtin = BUILTINS.get(w.key) if w.key is not None else None
    if kind is None and builtin is not None and _names(w.scripts) == _names(builtin.scripts):
        kind = w.key
    if kind is not None and f"workload.about.{kind}" in texts():
        text = tr(f"workload.about.{kind}", lang)
        shown = ", ".join(f"{k}={v}" for k, v in w.options.items() if v is not None)
        return f"{text} ({shown})" if shown and w.named else text
    if kind is None and w.scripts and w.description.startswith("mix of "):
        return tr("workload.about.mix", lang, scripts=_mix(w.scripts))
    return w.description


def from_json(body: Mapping[str, object]) -> Workload:
    """A stored workload, of its kind; refused when the SQL and scripts teiten ships for it
    are no longer what the study used. Raises StoreError for a body that is not one."""
    try:
        w = StoredWorkload.of(body)
    except ValueError as exc:
        raise StoreError(str(exc)) from None
    if w.key is None or w.scale is None or w.modifies_data is None or body.get("scripts") is None:
        lacks = [k for k in ("key", "scripts", "scale", "modifies_data") if body.get(k) is None]
        raise StoreError(f"not a stored workload: it has no {', '.join(lacks)}")
    opts = {k: tuple(v) if isinstance(v, list) else v for k, v in w.options.items()}
    name = w.kind or ("app" if w.app else "suite" if w.suite else "pgbench")
    cls = kind(name).workload
    found = cls(w.key, w.scripts, w.scale, w.fillfactor, w.modifies_data, w.description,
                w.app, tuple(sorted(opts.items())), w.suite)
    if found.digest() != w.digest:
        raise UserError(f"the {w.app or w.suite or w.key} workload's SQL and "
                        "scripts have changed since this study started (teiten was upgraded?); "
                        "finish it with the teiten that started it, or run the study again")
    return found


def kind(name: str) -> WorkloadKind:
    """The kind of workload ``name`` (an options model's ``kind``, or a stored workload's): a
    built-in one, else the ``KIND`` of the module of this package of that name, for a kind the
    study files know (teiten.spec.workloads.KINDS)."""
    if name in _BUILT_IN:
        return _BUILT_IN[name]
    if name not in {model.kind for model in KINDS} or not re.fullmatch(r"[a-z][a-z0-9_]*", name):
        raise UserError(f"this teiten knows no kind of workload '{name}' (a study written by "
                        "another version of teiten?); use the teiten that wrote it")
    found = importlib.import_module(f"{__name__}.{name}").KIND
    if not isinstance(found, WorkloadKind) or found.name != name:
        raise TypeError(f"{__name__}.{name}.KIND is not the WorkloadKind '{name}'")
    return found


def variants(study: Study) -> dict[str, list[str]]:
    """The variants of each measured-statement workload of a study, by key: what the plan
    runs of it (one session each) instead of client counts."""
    return {spec.key: statements.variants(spec.key, statements.options(spec))
            for spec in study.workloads if isinstance(spec, SuiteSpec)}


def resolve(loaded: LoadedStudy) -> list[Workload]:
    """The study's workloads, with scripts checked to be readable. Raises SpecError."""
    return [_resolve_one(loaded, i, spec) for i, spec in enumerate(loaded.study.workloads)]


def _script_path(loaded: LoadedStudy, loc: tuple[str | int, ...], script: str) -> str:
    path = Path(script).expanduser()
    if not path.is_absolute():
        path = loaded.base_dir / path
    if not path.is_file() or not os.access(path, os.R_OK):
        why = "does not exist" if not path.exists() else "is not a readable file"
        raise loaded.error(loc, f"script {script} ({path}) {why}; give a path relative to the "
                           "study file, or an absolute one")
    return str(path.resolve())


def _resolve_one(loaded: LoadedStudy, index: int, spec: WorkloadSpec) -> Workload:
    """One entry of the study, read from the options model of its kind (teiten.spec.workloads,
    which also refuses the options of other workloads), by that kind."""
    return kind(type(spec).kind).resolve(loaded, ("workloads", index), spec)


def _pgbench(loaded: LoadedStudy, loc: Loc, spec: PgbenchSpec | ScriptSpec) -> Workload:
    """A pgbench workload: scripts of the user's, or a built-in one."""
    if isinstance(spec, ScriptSpec):
        return _scripts(loaded, loc, spec)
    return _builtin(loaded, loc, spec)


def _scripts(loaded: LoadedStudy, loc: Loc, spec: ScriptSpec) -> Workload:
    scale = spec.scale or loaded.study.scale
    modifies = spec.modifies_data if spec.modifies_data is not None else True
    if spec.script is not None:
        path = _script_path(loaded, (*loc, "script"), spec.script)
        return Workload(spec.key, ((path, spec.weight),), scale, spec.fillfactor, modifies,
                        f"script {spec.script}", options=_sorted(spec.pgbench_options()))
    assert spec.scripts is not None
    scripts = []
    for j, ref in enumerate(spec.scripts):
        if ref.builtin is not None:
            scripts.append((f"builtin:{ref.builtin}", ref.weight))
        else:
            assert ref.script is not None
            scripts.append((_script_path(loaded, (*loc, "scripts", j), ref.script), ref.weight))
    return Workload(spec.key, tuple(scripts), scale, spec.fillfactor, modifies,
                    tr("workload.about.mix", scripts=_mix(scripts)),
                    options=_sorted(spec.pgbench_options()))


def _sorted(options: dict[str, object]) -> tuple[tuple[str, object], ...]:
    return tuple(sorted(options.items()))


def _builtin(loaded: LoadedStudy, loc: Loc, spec: PgbenchSpec) -> Workload:
    builtin = BUILTINS.get(spec.key)
    if builtin is None:
        names = list(BUILTIN_WORKLOADS)  # these, then the apps, then the suites
        close = difflib.get_close_matches(spec.key, names, n=1)
        hint = f"did you mean '{close[0]}'? " if close else ""
        raise loaded.error(loc, f"unknown workload '{spec.key}'; {hint}built-in workloads are "
                           f"{', '.join(names)}, or give {{script: path/to/file.pgbench}}")
    return Workload(
        spec.key, builtin.scripts, spec.scale or loaded.study.scale,
        spec.fillfactor if spec.fillfactor is not None else builtin.fillfactor,
        spec.modifies_data if spec.modifies_data is not None else builtin.modifies_data,
        builtin.description, options=_sorted(spec.pgbench_options()))


PGBENCH = WorkloadKind("pgbench", Workload, _pgbench, tuple(BUILTINS))
_BUILT_IN = {k.name: k for k in (PGBENCH, apps.KIND, statements.KIND)}
