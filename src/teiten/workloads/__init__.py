"""Workloads: what runs against a server.

A workload is data plus a little code: pgbench scripts shipped as package files, how to
initialise the data (``pgbench -i``, or the SQL of an application-shaped workload, see
:mod:`teiten.workloads.apps`), whether a trial changes the data (then the snapshot is
restored before every trial), and the pgbench arguments that select the scripts.
"""

from __future__ import annotations

import difflib
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from teiten.errors import UserError
from teiten.servers.profiles import pgbench_data_bytes
from teiten.spec import (
    BUILTIN_WORKLOADS,
    AppSpec,
    LoadedStudy,
    PgbenchSpec,
    ScriptSpec,
    SuiteSpec,
    WorkloadSpec,
)

PACKAGE_DIR = Path(__file__).parent
BUILTIN_SCRIPTS = ("tpcb-like", "simple-update", "select-only")


def suite_digest(name: str) -> str:
    from teiten.workloads import statements  # statements builds on this module
    return statements.digest(name)


def apps_digest(name: str) -> str:
    from teiten.workloads import apps  # apps builds on this module
    return apps.digest(name)


@dataclass(frozen=True)
class Workload:
    """A resolved workload of a study. ``scripts`` holds (pgbench selector, weight) pairs,
    where a selector is ``builtin:NAME`` or an absolute script path."""

    key: str
    scripts: tuple[tuple[str, int], ...]
    scale: int
    fillfactor: int | None
    modifies_data: bool
    description: str
    app: str | None = None  # "tpcc" | "bookstore": loaded by SQL, measured by teiten.workloads.apps
    options: tuple[tuple[str, Any], ...] = ()  # the app's options, every default filled in
    suite: str | None = None  # a measured-statement workload (teiten.workloads.statements)

    def option(self, name: str) -> Any:
        return dict(self.options)[name]

    def data_bytes(self) -> int:
        """The size of the loaded data, roughly: sizes shared_buffers."""
        if self.app is not None:
            from teiten.workloads import apps  # apps builds on this module
            return apps.data_bytes(self)
        if self.suite is not None:
            from teiten.workloads import statements
            return statements.suite(self.suite).data_bytes(dict(self.options))
        return pgbench_data_bytes(self.scale, self.fillfactor)

    @property
    def database(self) -> str:
        return "teiten_" + re.sub(r"[^a-z0-9_]", "_", self.key.lower())

    def init_args(self) -> list[str]:
        """pgbench arguments that initialise the data (server-side generation is faster)."""
        args = ["-i", "-s", str(self.scale), "-I", "dtGvp"]
        if self.fillfactor is not None:
            args += ["-F", str(self.fillfactor)]
        return args

    def script_args(self) -> list[str]:
        args: list[str] = []
        for selector, weight in self.scripts:
            if selector.startswith("builtin:"):
                args += ["-b", f"{selector.removeprefix('builtin:')}@{weight}"]
            else:
                args += ["-f", f"{selector}@{weight}"]
        return args

    def to_json(self) -> dict[str, object]:
        return {"key": self.key, "scripts": [list(s) for s in self.scripts], "scale": self.scale,
                "fillfactor": self.fillfactor, "modifies_data": self.modifies_data,
                "description": self.description, "app": self.app, "options": dict(self.options),
                **({"digest": apps_digest(self.app)} if self.app else {}),
                **({"suite": self.suite, "digest": suite_digest(self.suite)} if self.suite else {})}

    @classmethod
    def from_json(cls, w: dict[str, Any]) -> Workload:
        """A stored workload; refused when an app's SQL is no longer what the study used."""
        named = w.get("app") or w.get("suite")
        now = apps_digest(w["app"]) if w.get("app") else suite_digest(w["suite"]) if named else None
        if named and w.get("digest") != now:
            raise UserError(f"the {named} workload's SQL and scripts have changed since this "
                            "study started (teiten was upgraded?); finish it with the teiten "
                            "that started it, or run the study again")
        opts = {k: tuple(v) if isinstance(v, list) else v for k, v in (w.get("options") or {}).items()}
        return cls(w["key"], tuple((s, int(n)) for s, n in w["scripts"]), int(w["scale"]),
                   w["fillfactor"], bool(w["modifies_data"]), w.get("description", ""),
                   w.get("app"), tuple(sorted(opts.items())), w.get("suite"))


@dataclass(frozen=True)
class _Builtin:
    scripts: tuple[tuple[str, int], ...]
    fillfactor: int | None
    modifies_data: bool
    description: str


BUILTINS: dict[str, _Builtin] = {
    "pgecons-read": _Builtin(
        ((str(PACKAGE_DIR / "pgecons" / "read.pgbench"), 1),), None, False,
        "PGECons S1 read: count(abalance) over 10,000 consecutive accounts"),
    "pgecons-update": _Builtin(
        ((str(PACKAGE_DIR / "pgecons" / "update.pgbench"), 1),), 80, True,
        "PGECons S2 update: one random account's filler, fillfactor 80"),
    "tpcb-like": _Builtin((("builtin:tpcb-like", 1),), None, True, "pgbench's TPC-B-like builtin"),
    "simple-update": _Builtin((("builtin:simple-update", 1),), None, True,
                              "pgbench's simple-update builtin (-N)"),
    "select-only": _Builtin((("builtin:select-only", 1),), None, False,
                            "pgbench's select-only builtin (-S)"),
}


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
    which also refuses the options of other workloads)."""
    loc: tuple[str | int, ...] = ("workloads", index)
    if isinstance(spec, ScriptSpec):
        return _scripts(loaded, loc, spec)
    if isinstance(spec, AppSpec):
        from teiten.workloads import apps  # apps builds on this module
        return apps.resolve(loaded, loc, spec)
    if isinstance(spec, SuiteSpec):
        from teiten.workloads import statements  # statements builds on this module
        return statements.resolve(loaded, loc, spec)
    return _builtin(loaded, loc, spec)


def _scripts(loaded: LoadedStudy, loc: tuple[str | int, ...], spec: ScriptSpec) -> Workload:
    scale = spec.scale or loaded.study.scale
    modifies = spec.modifies_data if spec.modifies_data is not None else True
    if spec.script is not None:
        path = _script_path(loaded, (*loc, "script"), spec.script)
        return Workload(spec.key, ((path, spec.weight),), scale, spec.fillfactor, modifies,
                        f"script {spec.script}")
    assert spec.scripts is not None
    scripts = []
    for j, ref in enumerate(spec.scripts):
        if ref.builtin is not None:
            scripts.append((f"builtin:{ref.builtin}", ref.weight))
        else:
            assert ref.script is not None
            scripts.append((_script_path(loaded, (*loc, "scripts", j), ref.script), ref.weight))
    return Workload(spec.key, tuple(scripts), scale, spec.fillfactor, modifies,
                    "mix of " + ", ".join(f"{s}@{w}" for s, w in scripts))


def _builtin(loaded: LoadedStudy, loc: tuple[str | int, ...], spec: PgbenchSpec) -> Workload:
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
        builtin.description)
