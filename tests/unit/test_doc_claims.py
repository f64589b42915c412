"""What docs/DESIGN.md and docs/STYLE.md say about teiten's modules holds (issue 55: every claim
of the two documents about a module is checked by a test or removed).

tests/unit/test_doc_references.py checks that the paths and tests the documents name exist, and
tests/unit/test_import_graph.py the ranks; this file checks what the documents say those modules
hold and do: every name they place in a module (`Name` in `src/teiten/x.py`,
`teiten.x.name`) is defined there, and each sentence about a module's imports, interface,
registry or folder, read from the source with ``ast`` or from the imported module. Each test
names the sentence it holds.
"""

from __future__ import annotations

import ast
import dataclasses
import functools
import importlib
import importlib.util
import inspect
import re
import sqlite3
import tomllib
import typing
from collections.abc import Iterator
from fnmatch import fnmatch
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "src" / "teiten"
DOCUMENTS = (ROOT / "docs" / "DESIGN.md", ROOT / "docs" / "STYLE.md")


def _doc(name: str) -> str:
    return (ROOT / "docs" / name).read_text(encoding="utf-8")


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _tree(relative: str) -> ast.Module:
    return parsed(SRC / relative)


@functools.cache
def parsed(path: Path) -> ast.Module:
    """A source file's tree, parsed once for the whole file of tests (none changes it)."""
    return ast.parse(path.read_text(encoding="utf-8"))


@functools.cache
def imports(path: Path) -> frozenset[str]:
    """Every teiten module or name an import in ``path`` names, under ``if TYPE_CHECKING:`` and
    inside functions too (``from a import b`` gives a and a.b)."""
    module = _module_name(path)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    out: set[str] = set()
    for node in ast.walk(parsed(path)):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*up, *([node.module] if node.module else [])])
            out |= {base, *(f"{base}.{a.name}" for a in node.names)}
    return frozenset(m for m in out if m == "teiten" or m.startswith("teiten."))


def _under(name: str, module: str) -> bool:
    return name == module or name.startswith(module + ".")


def importers(module: str) -> set[str]:
    """The files of src/teiten (relative to it) that import ``module`` or a module under it."""
    return {str(p.relative_to(SRC)) for p in sorted(SRC.rglob("*.py"))
            if any(_under(m, module) for m in imports(p))}


# ------------------------------------------------------------------ names placed in modules

_NAME = r"[A-Za-z_][\w.]*(?:\([^`]*\))?"
_PATH = r"src/teiten/[\w/]+\.py"
# `A` in `path`, `A`, `B` and `C` of `path`, `A` or `B` (`path`, `Table`s of `path`.
NAMES_THEN_PATH = re.compile(
    rf"(?P<names>`{_NAME}`s?(?:(?:,|,? and|,? or)\s+`{_NAME}`s?)*)\s+(?:(?:in|of)\s+|\()`(?P<path>{_PATH})`")
# `path` (`A`), `path`: `A`, `path`'s `A`.
PATH_THEN_NAME = re.compile(
    rf"`(?P<path>{_PATH})`(?: \((?P<names>`{_NAME}`)\)|(?::|'s)\s+(?P<names2>`{_NAME}`))")
# One name, backquoted, of the names a sentence gives.
ONE_NAME = re.compile(r"`([A-Za-z_][\w.]*)(?:\([^`]*\))?`")
# `teiten.wing.module.name`, or a call of it.
DOTTED = re.compile(r"`(?P<dotted>teiten\.[\w.]+)(?:\([^`]*\))?`")
# A schema-qualified view in PostgreSQL, not a module.
NOT_CODE = {"teiten.teiten_points"}

# Names the documents place in a module in sentences the patterns above do not read.
ELSEWHERE_NAMED = {
    "src/teiten/servers/kind.py": ("Kind", "Kind.facts", "Kind.emulated"),  # "A server kind"
    "src/teiten/servers/ssh/slot.py": ("Slot.on",),  # "The host layer"
    "src/teiten/servers/ssh/server.py": ("SshServer", "SshServer._host"),
    "src/teiten/servers/ssh/topology.py": ("SshTopologyServer",),
    "src/teiten/servers/ssh/host.py": ("SshHost",),
    "src/teiten/servers/docker/spec.py": ("DockerPlace.on",),
    "src/teiten/spec/workload_base.py": ("NamedWorkload",),  # "A kind of workload"
    "src/teiten/spec/workloads.py": ("_Suite", "_App", "SuiteSpec", "AppSpec", "WorkloadSpec"),
    "src/teiten/workloads/apps.py": ("App", "KEY_TABLE"),  # "An application workload"
    "src/teiten/workloads/base.py": ("TrialOutcome",),
    "src/teiten/workloads/__init__.py": ("from_json",),
    "src/teiten/host/paths.py": ("refuse_replaceable",),  # "Trusted paths"
    "src/teiten/host/privileges.py": ("client_account",),  # "Privileges"
    "src/teiten/installs/source_workspace.py": ("take",),
    "src/teiten/store/db.py": ("Store.update_spec", "Store.details_of_kind"),
    "src/teiten/store/schema.py": ("for_postgres",),  # "The store"
    "src/teiten/model/results.py": ("StudyResults.record", "ServerRecord.setup", "LoadFigures"),
    "src/teiten/analysis/summary.py": ("report_data",),
    "src/teiten/analysis/model.py": ("WorkloadSection.tables",),  # "A report table"
    "src/teiten/report/parts.py": ("BODY", "FINDINGS"),
    "src/teiten/report/cells.py": ("DataTable", "data_name"),
    "src/teiten/monitors/base.py": ("Monitor", "Sampling", "Window", "Ended", "Watched", "UNITS", "Metric"),
    "src/teiten/monitors/registry.py": ("register",),  # "A monitor", step 2
    "src/teiten/cli/running.py": ("run_study",),  # "The flow of data"
}


def placements(text: str, source: str) -> list[tuple[str, str, str]]:
    """``(where, name, path)`` for every name ``text`` places in a module of src/teiten."""
    found = []
    for pattern in (NAMES_THEN_PATH, PATH_THEN_NAME):
        for m in pattern.finditer(text):
            where = f"{source}:{text.count(chr(10), 0, m.start()) + 1}"
            names = m.group("names") or m.group("names2")
            found += [(where, name, m.group("path")) for name in ONE_NAME.findall(names)]
    return sorted(found, key=lambda f: int(f[0].rpartition(":")[2]))


def _top_statements(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """The statements of a module's top level, inside its ifs and trys too."""
    for node in body:
        yield node
        if isinstance(node, ast.If | ast.Try):
            yield from _top_statements([*node.body, *node.orelse, *getattr(node, "finalbody", [])])


def _defined_at_top(tree: ast.Module, name: str) -> bool:
    for node in _top_statements(tree.body):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) and node.name == name:
            return True
        targets = node.targets if isinstance(node, ast.Assign) else \
            [node.target] if isinstance(node, ast.AnnAssign) else []
        if any(isinstance(n, ast.Name) and n.id == name for t in targets for n in ast.walk(t)):
            return True
    return False


def _has(obj: object, attribute: str) -> bool:
    """An attribute, a property, or a field of a dataclass or a pydantic model."""
    return hasattr(obj, attribute) or attribute in getattr(obj, "__dataclass_fields__", {}) \
        or attribute in getattr(obj, "model_fields", {})


def lacks(path: str, name: str) -> str | None:
    """Why ``path`` does not define ``name`` (``A`` or ``A.b``), or None when it does: ``A`` is
    defined in the file itself (not imported into it), ``b`` is an attribute of it."""
    file = ROOT / path
    if not file.is_file():
        return f"{path} does not exist"
    first, *rest = name.split(".")
    if not _defined_at_top(parsed(file), first):
        return f"{path} defines no {first}"
    obj: object = importlib.import_module(_module_name(file))
    for part in [first, *rest]:
        if not _has(obj, part):
            return f"{path}: {name} has no {part}"
        obj = getattr(obj, part, None)
    return None


def lacks_dotted(dotted: str) -> str | None:
    """Why ``teiten.a.b.name`` names nothing: its longest module prefix is a file of src/teiten
    and the rest is defined there."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        base = SRC.parent.joinpath(*parts[:cut])
        for file in (base.with_suffix(".py"), base / "__init__.py"):
            if file.is_file():
                rest = ".".join(parts[cut:])
                return lacks(str(file.relative_to(ROOT)), rest) if rest else None
    return f"{dotted} is no module of teiten"


def problems(text: str, source: str) -> list[str]:
    out = [f"{where}: {why}" for where, name, path in placements(text, source)
           if (why := lacks(path, name)) is not None]
    for m in DOTTED.finditer(text):
        if m.group("dotted") not in NOT_CODE and (why := lacks_dotted(m.group("dotted"))) is not None:
            out.append(f"{source}:{text.count(chr(10), 0, m.start()) + 1}: {why}")
    return out


def test_every_name_the_documents_place_in_a_module_is_defined_there() -> None:
    """DESIGN.md and STYLE.md throughout: "`Server` in `src/teiten/servers/base.py`", "`KINDS`
    of `src/teiten/spec/workloads.py`", "`teiten.analysis.gate.judge`", and the like."""
    found = [p for doc in DOCUMENTS for p in placements(doc.read_text(encoding="utf-8"), doc.name)]
    assert len(found) > 60, "the patterns read almost nothing: are they still right?"
    wrong = [problem for doc in DOCUMENTS
             for problem in problems(doc.read_text(encoding="utf-8"), doc.name)]
    wrong += [f"{path}: {why}" for path, names in ELSEWHERE_NAMED.items() for name in names
              if (why := lacks(path, name)) is not None]
    assert not wrong, "\n".join(wrong)


def test_the_reading_of_names_finds_a_name_a_module_lacks() -> None:
    text = ("`teiten run` is `_run` in `src/teiten/cli/commands.py`, with `Point`, `Nope` and\n"
            "`Evidence` of `src/teiten/model/results.py` (`Store.finish_trial` in `src/teiten/store/db.py`)\n"
            "`src/teiten/spec/study.py` (`Study`), `teiten.analysis.gate.judge` and `teiten.analysis.nosuch`.")
    assert [(w, n) for w, n, _ in placements(text, "x.md")] == [
        ("x.md:1", "_run"), ("x.md:1", "Point"), ("x.md:1", "Nope"), ("x.md:1", "Evidence"),
        ("x.md:2", "Store.finish_trial"), ("x.md:3", "Study")]
    assert problems(text, "x.md") == [
        "x.md:1: src/teiten/cli/commands.py defines no _run",
        "x.md:1: src/teiten/model/results.py defines no Nope",
        "x.md:3: src/teiten/analysis/__init__.py defines no nosuch"]
    assert lacks("src/teiten/model/results.py", "Point.nosuch") == \
        "src/teiten/model/results.py: Point.nosuch has no nosuch"


def test_the_bare_file_names_are_modules_where_the_sentence_puts_them() -> None:
    """DESIGN.md, "Builds from source and from git": `source_workspace.py`, `source_key.py`,
    `source_git.py` and `ccache.py` of installs/, and `run/record.py`; "The host layer": the
    VM's `image.py` and `qemu.py` beside `src/teiten/servers/vm/server.py`; "Words": the
    workloads' `kind.py`."""
    for relative in ("installs/source_workspace.py", "installs/source_key.py", "installs/source_git.py",
                     "installs/ccache.py", "run/record.py", "servers/vm/image.py", "servers/vm/qemu.py",
                     "workloads/kind.py"):
        assert (SRC / relative).is_file(), relative


# ------------------------------------------------------------------ the model and the spec

def test_the_results_model_imports_only_the_stored_record_and_the_details() -> None:
    """DESIGN.md, "The flow of data", and STYLE.md, "The middle of the flow": results.py
    imports nothing of teiten's but the stored study's typed record and a trial's typed details,
    which import nothing of teiten's; its classes are frozen dataclasses."""
    model = SRC / "model"
    assert imports(model / "results.py") == {
        "teiten.model.studyrecord", "teiten.model.studyrecord.ServerSetup",
        "teiten.model.studyrecord.StudyRecord", "teiten.model.details", "teiten.model.details.LoadDetails"}
    assert not imports(model / "studyrecord.py") and not imports(model / "details.py")
    results = importlib.import_module("teiten.model.results")
    classes = [c for _, c in inspect.getmembers(results, inspect.isclass) if c.__module__ == results.__name__]
    assert len(classes) > 10
    for cls in classes:
        assert dataclasses.is_dataclass(cls) and cls.__dataclass_params__.frozen, cls.__name__  # type: ignore[attr-defined]


def test_the_study_files_models_are_closed_and_frozen() -> None:
    """STYLE.md, "Data and state": closed, frozen pydantic models (`src/teiten/spec/`)."""
    import pydantic

    models = []
    for path in sorted((SRC / "spec").glob("*.py")):
        module = importlib.import_module(_module_name(path))
        models += [c for _, c in inspect.getmembers(module, inspect.isclass)
                   if issubclass(c, pydantic.BaseModel) and c.__module__ == module.__name__]
    assert len(models) > 20
    for model in models:
        assert model.model_config.get("frozen") and model.model_config.get("extra") == "forbid", model


def test_the_error_tree_and_the_exit_status_each_class_carries() -> None:
    """STYLE.md, "Errors": TeitenError, with UserError (and SpecError), InstallError,
    ServerError, ProcessError, StoreError and MachineBusy under it; DESIGN.md, "Exit statuses":
    each class carries its status, 1, 2 for bad input, 3 for a machine that stayed busy."""
    from teiten.model import errors as e

    for cls in (e.UserError, e.InstallError, e.ServerError, e.ProcessError, e.StoreError, e.MachineBusy):
        assert issubclass(cls, e.TeitenError), cls
    assert issubclass(e.SpecError, e.UserError)
    assert (e.TeitenError.exit_code, e.UserError.exit_code, e.SpecError.exit_code,
            e.MachineBusy.exit_code) == (1, 2, 2, 3)


# ------------------------------------------------------------------ imports and programs

def test_only_the_cli_imports_the_run_wing_and_analysis_never_the_report() -> None:
    """DESIGN.md, "Layers and the import rule": "Analysis never imports the report. Only the
    CLI imports the `run` wing." (counting imports under TYPE_CHECKING too)."""
    assert {p for p in importers("teiten.run") if not p.startswith(("run/", "cli/"))} == set()
    assert {p for p in importers("teiten.report") if p.startswith("analysis/")} == set()
    assert "cli/running.py" in importers("teiten.run")


def test_every_folder_has_a_rank_or_stands_on_other_floors() -> None:
    """DESIGN.md, "Layers and the import rule": each folder has a rank (`RANKS`), but tables/,
    whose files stand elsewhere (`ELSEWHERE`): a kind's `servers/KEY/spec.py` counts as spec, a
    table's `__init__.py` as analysis, its `table.py` as report, its `monitor.py` as monitors."""
    spec = importlib.util.spec_from_file_location("import_graph", ROOT / "scripts" / "import-graph.py")
    assert spec is not None and spec.loader is not None
    graph = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(graph)
    areas = {p.name for p in SRC.iterdir() if (p / "__init__.py").is_file()} | \
        {p.stem for p in SRC.glob("*.py")}
    assert areas - set(graph.RANKS) == {"tables"}
    assert graph.area("teiten.servers.docker.spec") == "spec"
    assert graph.area("teiten.servers.docker.kind") == "servers"
    assert graph.area("teiten.tables.limits") == "analysis"
    assert graph.area("teiten.tables.limits.table") == "report"
    assert graph.area("teiten.tables.limits.monitor") == "monitors"


def test_one_module_starts_subprocesses() -> None:
    """STYLE.md, "Processes and waiting": "One module starts subprocesses:
    `src/teiten/host/procs.py`", with a mandatory timeout and an environment from an allow-list."""
    starting = re.compile(r"\bimport subprocess\b|from subprocess import|"
                          r"os\.(?:system|popen|exec\w*|spawn\w*)\(|create_subprocess_\w+|pty\.spawn")
    found = sorted(str(p.relative_to(SRC)) for p in SRC.rglob("*.py") if starting.search(p.read_text()))
    assert found == ["host/procs.py"]
    from teiten.host import procs

    timeout = inspect.signature(procs.run).parameters["timeout"]
    assert timeout.kind is inspect.Parameter.KEYWORD_ONLY and timeout.default is inspect.Parameter.empty
    assert "PATH" in procs.ENV_ALLOW and "ENV_ALLOW" in inspect.getsource(procs.build_env)


def test_every_wait_is_bounded_and_names_what_it_waits_for() -> None:
    """STYLE.md, "Processes and waiting": `wait_until(predicate, timeout=..., what=...)` in
    `src/teiten/host/waiting.py`."""
    from teiten.host.waiting import wait_until

    parameters = inspect.signature(wait_until).parameters
    for name in ("timeout", "what"):
        assert parameters[name].kind is inspect.Parameter.KEYWORD_ONLY, name
        assert parameters[name].default is inspect.Parameter.empty, name


def _is_program(tree: ast.Module) -> bool:
    """A module run as a program of its own (``python -m``: the delay proxy)."""
    return any(isinstance(n, ast.If) and "__name__" in ast.unparse(n.test) for n in tree.body)


def test_only_the_cli_prints_or_exits() -> None:
    """STYLE.md, "Errors", and DESIGN.md, "Exit statuses": the library never prints (an error)
    and never calls `sys.exit`."""
    found = []
    for path in sorted(SRC.rglob("*.py")):
        relative = str(path.relative_to(SRC))
        tree = parsed(path)
        if relative.startswith("cli/") or relative == "__main__.py" or _is_program(tree):
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Call):
                called = ast.unparse(node.func)
                if called in ("print", "sys.exit", "os._exit", "exit", "quit") \
                        or called in ("sys.stdout.write", "sys.stderr.write"):
                    found.append(f"{relative}:{node.lineno}: {called}")
            elif isinstance(node, ast.Raise) and node.exc is not None and "SystemExit" in ast.unparse(node.exc):
                found.append(f"{relative}:{node.lineno}: SystemExit")
    assert not found, found


def test_no_grab_bag_no_cleanup_in_del_and_no_silenced_exception() -> None:
    """STYLE.md: "There is no `utils.py` grab-bag"; "Never clean up in `__del__`"; "Never write
    `except Exception: pass`"."""
    assert not [p for p in SRC.rglob("*.py") if p.stem in ("utils", "util", "helpers", "misc")]
    for path in SRC.rglob("*.py"):
        for node in ast.walk(parsed(path)):
            assert not (isinstance(node, ast.FunctionDef) and node.name == "__del__"), path
            if isinstance(node, ast.ExceptHandler) and all(isinstance(s, ast.Pass) for s in node.body):
                caught = ast.unparse(node.type) if node.type is not None else "everything"
                assert caught not in ("Exception", "BaseException", "everything"), (path, node.lineno)


# ------------------------------------------------------------------ the store

def _migrated(steps: int) -> sqlite3.Connection:
    from teiten.store.schema import MIGRATIONS

    conn = sqlite3.connect(":memory:", isolation_level=None)
    conn.row_factory = sqlite3.Row
    for step in range(1, steps + 1):
        MIGRATIONS[step](conn)
    return conn


def _columns(conn: sqlite3.Connection, table: str) -> list[str]:
    return [row[1] for row in conn.execute(f"PRAGMA table_info({table})")]


def test_the_store_takes_its_steps_in_order_into_generic_tables() -> None:
    """DESIGN.md, "The store": step n of `MIGRATIONS` turns version n - 1 into n; evidence goes
    into `series` (source, second, name, value), `metrics`, `waits` and `details` (a kind and a
    JSON body); a trial is planned, running, ok, failed, skipped or disturbed, a study running,
    finished or interrupted ("The flow of data")."""
    from teiten.model.results import STATUSES
    from teiten.store.schema import MIGRATIONS, SCHEMA_VERSION

    assert sorted(MIGRATIONS) == list(range(1, SCHEMA_VERSION + 1))
    conn = _migrated(SCHEMA_VERSION)
    assert {"source", "t", "name", "value"} <= set(_columns(conn, "series"))
    assert {"name", "value"} <= set(_columns(conn, "metrics"))
    assert {"wait_event_type", "wait_event"} <= set(_columns(conn, "waits"))
    assert {"kind", "body"} <= set(_columns(conn, "details"))
    sql = dict(conn.execute("SELECT name, sql FROM sqlite_master WHERE type = 'table'").fetchall())
    checks = {}
    for table in ("trials", "studies"):
        check = re.search(r"CHECK \(\w+ IN \(([^)]*)\)", sql[table])
        assert check is not None, table
        checks[table] = re.findall(r"'(\w+)'", check[1])
    assert tuple(checks["trials"]) == STATUSES == ("planned", "running", "ok", "failed", "skipped", "disturbed")
    assert checks["studies"] == ["running", "finished", "interrupted"]


def test_the_view_has_the_columns_the_design_lists_in_their_order() -> None:
    """DESIGN.md, "Results others read": the table of the view `teiten_points`'s columns, in
    order; store step 6 made it, step 8 appended `emulated`, step 9 the latency percentiles."""
    from teiten.store.schema import SCHEMA_VERSION

    table = _doc("DESIGN.md").split("| column | meaning |", 1)[1].split("\n\n", 1)[0]
    listed = [name for row in table.splitlines()[2:] for name in re.findall(r"`(\w+)`", row.split("|")[1])]
    assert len(listed) > 30
    assert _columns(_migrated(SCHEMA_VERSION), "teiten_points") == listed
    percentiles = ["p50_ms", "p90_ms", "p95_ms", "p99_ms", "p999_ms"]
    assert _columns(_migrated(8), "teiten_points") == listed[:-5] and listed[-5:] == percentiles
    assert _columns(_migrated(7), "teiten_points") == listed[:-6] and listed[-6] == "emulated"
    assert "teiten_points" not in {r[0] for r in _migrated(5).execute("SELECT name FROM sqlite_master")}


# ------------------------------------------------------------------ seams and interfaces

def test_analysis_is_given_the_features_it_asks() -> None:
    """DESIGN.md: analysis asks the kinds only through `Features`
    (`src/teiten/analysis/inputs.py`), which the caller hands it
    (`study_data(store, id, FEATURES)`, `src/teiten/features.py`)."""
    from teiten.analysis.gather import study_data
    from teiten.analysis.inputs import Features
    from teiten.features import FEATURES

    asked = {n for n, v in vars(Features).items() if callable(v) and not n.startswith("_")}
    assert asked and all(callable(getattr(FEATURES, n, None)) for n in asked), asked
    assert list(inspect.signature(study_data).parameters) == ["store", "study_id", "features"]


def test_a_workload_is_seen_only_through_protocols() -> None:
    """DESIGN.md, "Layers and the import rule": a server sees a workload only as `DataSet`,
    pgbench only as `Scripts` and sysbench only as `Test`: protocols that the workloads meet."""
    from teiten.drivers.pgbench import Scripts
    from teiten.drivers.sysbench import Test
    from teiten.servers.base import DataSet

    for protocol in (DataSet, Scripts, Test):
        assert typing.Protocol in protocol.__mro__, protocol
    for wing in ("servers", "drivers"):
        assert not [p for p in importers("teiten.workloads") if p.startswith(wing + "/")], wing


def _raises_not_implemented(function: object) -> bool:
    source = inspect.getsource(function)  # type: ignore[arg-type]
    return "raise NotImplementedError" in source


def test_the_interfaces_have_what_the_recipes_name() -> None:
    """DESIGN.md, "How to add ...": the methods and fields each recipe tells a new kind of
    server, host, monitor, workload or driver to give or override."""
    from teiten.model.results import LoadRun
    from teiten.monitors.base import Metric, Monitor, MonitorKind
    from teiten.servers.base import Server
    from teiten.servers.kind import Kind
    from teiten.servers.ssh.host import Host
    from teiten.workloads.base import Workload
    from teiten.workloads.kind import WorkloadKind
    from teiten.workloads.statements import Suite

    def lacking(cls: type, names: str) -> list[str]:
        return [n for n in names.split() if not _has(cls, n)]

    assert not lacking(Kind, "runs_here install_here controlled loads_by_sql problem unavailable "
                             "check_install build notices facts remove_leftovers")
    own = "prepare begin_trial end_trial describe close"
    capabilities = "targets server_pid confined_cpus devices log_mark lag_conninfo remote_monitor " \
                   "cold_restarter park step_meter"
    assert not lacking(Server, f"{own} {capabilities}")
    assert all(_raises_not_implemented(getattr(Server, n)) for n in own.split())
    assert not any(_raises_not_implemented(getattr(Server, n)) for n in capabilities.split())
    assert not lacking(Host, "ssh reach address describe origin close install_ref pids")
    assert not lacking(MonitorKind, "name watch layer metrics")
    assert not lacking(Monitor, "start stop contribute warnings failure disturbance")
    assert not lacking(Metric, "name unit kind label")
    assert typing.get_args(typing.get_type_hints(Metric)["kind"]) == ("gauge", "counter", "rate", "peak")
    assert not lacking(Workload, "kind sql_loaded load_sql data_bytes present_table modifies_data "
                                 "run_trial drives_one_server check")
    assert "measuring" in inspect.signature(Workload.run_trial).parameters
    assert inspect.signature(Workload.run_trial).return_annotation in ("TrialOutcome", "'TrialOutcome'")
    assert not lacking(WorkloadKind, "resolve workload names defaults")
    assert not lacking(Suite, "axes setup run data_bytes needs_utf8 say reword chart")
    assert not lacking(LoadRun, "driver argv stdout stderr figures failure timed_out")


def test_a_server_kind_is_one_folder_and_its_modules_are_its_own() -> None:
    """DESIGN.md, "A server kind": each kind is `src/teiten/servers/<key>/`, its `kind.py`
    exporting `KIND` (which `KINDS` finds), its `spec.py` with the study file's key, its words
    `server.kind.<name>`; a kind may build on another's modules (vm on ssh's, ssh on local's),
    and outside the kinds only kinds.py and the cleanup of a killed run import the default,
    local."""
    from teiten.messages import texts
    from teiten.servers import kinds
    from teiten.spec.servers import PLACE_KINDS

    for kind in kinds.KINDS:
        folder = SRC / "servers" / kind.name
        assert importlib.import_module(f"teiten.servers.{kind.name}.kind").KIND is kind
        assert (folder / "spec.py").is_file() == (kind.name in PLACE_KINDS), kind.name
        assert f"server.kind.{kind.name}" in texts(), kind.name
    allowed = {"local": ("servers/ssh/", "servers/kinds.py", "run/leftovers.py"), "ssh": ("servers/vm/",)}
    for kind in kinds.KINDS:
        outside = {p for p in importers(f"teiten.servers.{kind.name}")
                   if not p.startswith(f"servers/{kind.name}/")}
        assert not {p for p in outside if not p.startswith(allowed.get(kind.name, ()))}, (kind.name, outside)


def test_a_report_table_folder_holds_what_the_recipe_names() -> None:
    """DESIGN.md, "A report table": `__init__.py` gives `ORDER` and `figures(given)`, `table.py`
    gives `tables(figures, section, ctx)`, `texts.yaml` its words with a label `table.<kind>`;
    `registered_tables` draws them at one place of `BODY`."""
    from teiten.report import parts

    folders = sorted(p for p in (SRC / "tables").iterdir() if (p / "__init__.py").is_file())
    assert {p.name for p in folders} >= {"limits", "load_parts"}
    for folder in folders:
        figures = importlib.import_module(f"teiten.tables.{folder.name}")
        assert isinstance(figures.ORDER, int), folder.name
        assert list(inspect.signature(figures.figures).parameters) == ["given"], folder.name
        table: ModuleType = importlib.import_module(f"teiten.tables.{folder.name}.table")
        assert list(inspect.signature(table.tables).parameters)[1:] == ["section", "ctx"], folder.name
        assert re.search(r"^table\.\w+:", (folder / "texts.yaml").read_text(), re.MULTILINE), folder.name
    body = next(n for n in _tree("report/parts.py").body
                if isinstance(n, ast.AnnAssign) and ast.unparse(n.target) == "BODY")
    assert "registered_tables" in ast.unparse(body) and callable(parts.registered_tables)


def test_every_monitor_of_the_wing_is_registered_before_the_tables_monitors() -> None:
    """DESIGN.md, "A monitor": a monitor is its module's `KIND`, one line in `KINDS` of
    `src/teiten/monitors/registry.py`; a table's `monitor.py` is found after the monitors of
    `src/teiten/monitors/`, by the folder's name."""
    from teiten.monitors import registry

    wing = [importlib.import_module(_module_name(p)).KIND for p in sorted((SRC / "monitors").glob("*.py"))
            if _defined_at_top(ast.parse(p.read_text()), "KIND")]
    tables = [importlib.import_module(_module_name(p)).KIND for p in sorted(SRC.glob("tables/*/monitor.py"))]
    assert wing and tables
    assert set(registry.KINDS[:len(wing)]) == set(wing)
    assert registry.KINDS[len(wing):len(wing) + len(tables)] == tables


def test_suites_and_applications_are_registered_where_the_recipes_say() -> None:
    """DESIGN.md, "A measured-statement suite" and "An application workload": each name of
    `SUITE_NAMES` is a package exporting its `SUITE`; every `_Suite` (`_App`) model is in
    `KINDS` and `SuiteSpec` (`AppSpec`); each `App` of `APPS` has its table in `KEY_TABLE`."""
    from teiten.spec import workloads as spec
    from teiten.workloads import apps, statements

    for name in statements.SUITE_NAMES:
        assert (SRC / "workloads" / name / "__init__.py").is_file(), name
        suite = importlib.import_module(f"teiten.workloads.{name}").SUITE
        assert isinstance(suite, statements.Suite) and suite.name == name
    for base, union in ((spec._Suite, spec.SuiteSpec), (spec._App, spec.AppSpec)):
        models = [m for m in spec.KINDS if issubclass(m, base)]
        assert models and set(models) == set(typing.get_args(union)), base
    assert set(apps.APPS) == set(apps.KEY_TABLE)


def test_scripts_and_sql_are_package_files_of_the_workloads() -> None:
    """STYLE.md, "Layout": SQL and pgbench scripts are package files
    (`src/teiten/workloads/<name>/*.sql`, `*.pgbench`); DESIGN.md: "`pyproject.toml` ships every
    `workloads/**/*.pgbench`"."""
    setuptools = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    shipped = setuptools["package-data"]["teiten"]
    files = [p for suffix in ("*.sql", "*.pgbench") for p in SRC.rglob(suffix)]
    assert len(files) > 10
    for path in files:
        relative = str(path.relative_to(SRC))
        assert relative.startswith("workloads/"), relative
        assert any(fnmatch(relative, glob) for glob in shipped), relative


# ------------------------------------------------------------------ who calls what

def _calls(relative: str) -> set[str]:
    """The calls in a module, as written: ``server.prepare``, ``kinds.of``, ``build``."""
    return {ast.unparse(n.func) for n in ast.walk(_tree(relative)) if isinstance(n, ast.Call)}


def _attributes(calls: set[str]) -> set[str]:
    return {c.rpartition(".")[2] for c in calls}


def test_the_modules_of_the_flow_make_the_calls_the_documents_give() -> None:
    """DESIGN.md, "The flow of data" (the runner's calls), "Results others read" (`summarize`
    runs `report_data` on `study_data`, and `summaries`), the bisection's pieces ("with no
    machinery of its own"), and STYLE.md: check.py, leftovers.py and `teiten bisect` ask a
    server's kind through `teiten.servers.kinds`."""
    assert {"prepare", "begin_trial", "run_trial", "end_trial", "finish_trial", "after_blocks",
            "around"} <= _attributes(_calls("run/runner.py"))
    assert {"study_data", "report_data", "points.summaries"} <= _calls("cli/stores.py")
    assert {"build", "first_parent_range", "run_and_finish", "gate.judge", "bisection.midway"} <= \
        _calls("cli/bisect.py")
    for relative in ("run/check.py", "run/leftovers.py", "cli/bisect.py"):
        assert any(c.startswith("kinds.") for c in _calls(relative)), relative
    assert "kinds.of" in _calls("run/check.py") and "kinds.of" in _calls("cli/bisect.py")


def test_the_noise_guards_rule_is_the_cores_and_its_meter_a_monitor() -> None:
    """DESIGN.md, "A monitor": the noise guard's rule and record are `src/teiten/host/guard.py`'s,
    which the runner, the busy watch and the analysis of noise read; the meter is
    `src/teiten/monitors/foreign.py`."""
    assert {"run/runner.py", "run/busy.py", "analysis/noise.py", "monitors/foreign.py"} <= \
        importers("teiten.host.guard")
    assert _defined_at_top(_tree("monitors/foreign.py"), "KIND")

