"""Measured-statement workloads ("suites"): timed steps instead of a pgbench load.

METHODS S6, S8, S9 and S10 measure load time, index build time and size, query time against
a parameter and maintenance time. Each suite is a package under ``teiten/workloads/`` that
exports ``SUITE``, a :class:`Suite`:

- ``setup`` fills an empty database once per server (untimed; the cluster is then saved
  as a snapshot and restored before every trial, so every trial starts from the same bytes);
- ``run`` is one trial: given a :class:`~teiten.drivers.sql.Session` and a *variant*, it
  records named steps (load, index, query, vacuum, ...);
- the variants are the product of the suite's *axes*: options whose value is a list
  (``models: [rdb, jsonb]``, ``workers: [0, 1, 2]``, ``cache: [warm, cold]``). Each variant
  at each repetition is one trial, placed in the study's seeded random order.

A variant is written ``axis=value`` pairs joined by spaces, in the order of the axes.
"""

from __future__ import annotations

import hashlib
import importlib
import itertools
import re
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Generic, TypeVar

import psycopg

from teiten.drivers.sql import Session
from teiten.installs.releases import Release
from teiten.model.errors import ServerError, TeitenError, UserError
from teiten.spec import LoadedStudy, SuiteSpec, WorkloadSpec
from teiten.workloads.base import TrialOutcome, TrialRequest, Workload
from teiten.workloads.kind import WorkloadKind, defaults_of, read_options

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

PACKAGE_DIR = Path(__file__).parent
CACHE_STATES = ("warm", "cold")


class NotInstalled(TeitenError):
    """A method needs an extension this server does not have: the trial is skipped and
    reported as 'not installed', not as a failure."""


# A suite's options: a frozen dataclass, every option with its default; one variant: a frozen
# dataclass of one value per axis, in the axes' order.
Opts = TypeVar("Opts", bound="DataclassInstance")
Var = TypeVar("Var", bound="DataclassInstance")


@dataclass(frozen=True)
class Suite(Generic[Opts, Var]):
    name: str
    description: str
    # The options, each field with its default (an axis is a tuple of values), and a variant:
    # its fields are the axes, in the order a variant is written.
    options_model: type[Opts]
    variant_model: type[Var]
    # Fill an empty database (conninfo, options, jobs); returns seconds per setup step.
    setup: Callable[[str, Opts, int], dict[str, float]]
    # One trial: record steps in the session for this variant, with these options.
    run: Callable[[Session, Var, Opts], None]
    data_bytes: Callable[[Opts], int]
    # Server settings the suite needs (the study's own settings win); {} for most.
    settings: Callable[[Opts], dict[str, str]] = lambda _opts: {}
    needs_utf8: bool = False  # refuse servers whose database is not UTF-8 with a UTF-8 ctype
    # The first release whose SQL the suite needs (parallel query, jsonb, BRIN), else None.
    since: Release | None = None
    # What the suite lacks here with these options, in one line (a Python package), or None.
    missing: Callable[[Opts], str | None] = lambda _opts: None
    # How the report words what the suite leaves beside its figures, in a language: one sentence
    # of its judgements (fulltext's strengths and weaknesses), and why a variant did not run.
    say: Callable[[Mapping[str, object], str], str] = lambda sentence, _lang: str(sentence)
    reword: Callable[[str, str], str] = lambda reason, _lang: reason
    # The suite's own judgements of its figures, for its section of the report (fulltext's
    # strengths and weaknesses of each method); given the report's SuiteResults (Any: analysis's,
    # a layer above the workloads).
    judge: Callable[[Any], tuple[dict[str, object], ...]] | None = None
    # The step whose time the report charts, and its x: a variant axis, or "rows" (the rows
    # each search found); ("", ""): no chart of time.
    chart: tuple[str, str] = ("", "")

    @property
    def directory(self) -> Path:
        return PACKAGE_DIR / self.name

    @property
    def axes(self) -> tuple[str, ...]:
        """The options that make the variants, in this order."""
        return tuple(f.name for f in fields(self.variant_model))

    @property
    def defaults(self) -> dict[str, object]:
        """Every option with its default, as a study file writes it (an axis as a list)."""
        return defaults_of(self.options_model)

    def read(self, options: Mapping[str, object]) -> Opts:
        """The options of a workload, as a study resolved them or a store kept them."""
        return read_options(self.options_model, options)


SUITE_NAMES = ("iot", "fulltext", "accesslog", "freeze")


def suite(name: str) -> Suite[Any, Any]:
    """The suite of that name (Any, Any: each suite has options and variants of its own types)."""
    module = importlib.import_module(f"teiten.workloads.{name}")
    found: Suite[Any, Any] = module.SUITE
    return found


def reworded(reason: str, lang: str) -> str:
    """A reason teiten stored in English, in ``lang`` by the suite whose words it is (each
    suite's ``reword`` leaves other reasons as they are)."""
    for name in SUITE_NAMES:
        reason = suite(name).reword(reason, lang)
    return reason


def is_suite(name: str) -> bool:
    return name in SUITE_NAMES


def variants(name: str, options: Mapping[str, object]) -> list[str]:
    """Every variant of a suite with these options, in the order of its axes."""
    found = suite(name)
    given = found.read(options)
    lists = [[f"{axis}={value}" for value in getattr(given, axis)] for axis in found.axes]
    return [" ".join(combo) for combo in itertools.product(*lists)]


def parse_variant(name: str, options: object, variant: str) -> DataclassInstance:
    """A variant (the suite's variant_model) with the types of the study's options."""
    found = suite(name)
    wanted = dict(pair.split("=", 1) for pair in variant.split())
    out: dict[str, object] = {}
    for axis in found.axes:
        matches = [v for v in getattr(options, axis) if str(v) == wanted.get(axis)]
        if not matches:
            raise ValueError(f"variant {variant!r} is not one of the {name} workload's")
        out[axis] = matches[0]
    return found.variant_model(**out)


def digest(name: str) -> str:
    """What a suite's code and SQL are: a study is resumed only with the same ones."""
    h = hashlib.sha256()
    for path in sorted(suite(name).directory.iterdir()):
        if path.suffix in (".sql", ".py", ".json"):
            h.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()[:16]


def options(spec: WorkloadSpec) -> dict[str, object]:
    """The suite's options from its options model (teiten.spec.workloads), every default
    filled in."""
    given = {k: getattr(spec, k) for k in type(spec).model_fields}
    return {k: (given[k] if given.get(k) is not None else v)
            for k, v in suite(spec.key).defaults.items()}


class SuiteWorkload(Workload):
    """A measured-statement workload: its data set up by its suite's SQL, each variant a trial
    of timed steps in one session."""

    kind: ClassVar[str] = "suite"
    drives_one_server: ClassVar[bool] = True

    def data_bytes(self) -> int:
        assert self.suite is not None
        found = suite(self.suite)
        return found.data_bytes(found.read(dict(self.options)))

    def load_sql(self, conninfo: str, *, jobs: int) -> dict[str, float]:
        return setup(self, conninfo, jobs=jobs)

    def server_settings(self) -> dict[str, str]:
        assert self.suite is not None
        found = suite(self.suite)
        return found.settings(found.read(dict(self.options)))

    def digest(self) -> str | None:
        assert self.suite is not None
        return digest(self.suite)

    @property
    def prewarm(self) -> bool:
        return False  # each step sets the cache state it is measured in (warm or cold)

    def run_trial(self, request: TrialRequest,
                  measuring: AbstractContextManager[object]) -> TrialOutcome:
        """One variant: its steps, timed one after the other in one session. The steps that
        finished are kept even when a later one fails; a missing extension skips the trial.
        The window's monitors do not run: each step is timed on its own, with the machine's
        CPU and data device around it (the request's meter)."""
        assert self.suite is not None
        found = suite(self.suite)
        options = found.read(dict(self.options))
        session: Session | None = None
        try:
            variant = parse_variant(found.name, options, request.variant)
            session = Session(request.endpoint.conninfo(), cold_restart=request.cold_restart,
                              meter=request.meter)
            found.run(session, variant, options)
        except NotInstalled as exc:
            return TrialOutcome(not_installed=str(exc))
        except (TeitenError, psycopg.Error, OSError, ValueError) as exc:
            if session is None:
                return TrialOutcome(error=f"could not start the trial: {exc}")
            return TrialOutcome(error=f"step {len(session.steps) + 1} failed: {exc}",
                                steps=tuple(st.record() for st in session.steps),
                                notes=tuple(session.notes))
        finally:
            if session is not None:
                session.close()
        return TrialOutcome(steps=tuple(st.record() for st in session.steps),
                            notes=tuple(session.notes))


def resolve(loaded: LoadedStudy, loc: tuple[str | int, ...], spec: SuiteSpec) -> SuiteWorkload:
    found = suite(spec.key)
    opts = options(spec)
    if isinstance(corpus := opts.get("corpus"), str) and corpus:
        path = Path(corpus).expanduser()
        path = path if path.is_absolute() else loaded.base_dir / path
        if not path.is_file():
            raise loaded.error((*loc, "corpus"), f"corpus {corpus} ({path}) is not a "
                               "file; give a UTF-8 text file with one document per line")
        opts["corpus"] = str(path.resolve())
    shown = ", ".join(f"{k}={v}" for k, v in opts.items() if v is not None)
    frozen = tuple(sorted((k, tuple(v) if isinstance(v, list) else v) for k, v in opts.items()))
    return SuiteWorkload(spec.key, (), 1, None, True, f"{found.description} ({shown})",
                    suite=found.name, options=frozen)


KIND = WorkloadKind("suite", SuiteWorkload, resolve, SUITE_NAMES, lambda name: suite(name).defaults)


def check_utf8(conn: psycopg.Connection, workload: str) -> None:
    """Refuse a database whose encoding or character type is not UTF-8: pg_trgm finds no
    trigrams in Japanese text under the C locale (docs/DESIGN.md, 'Japanese text')."""
    row = conn.execute("SELECT pg_encoding_to_char(encoding), datctype FROM pg_database "
                       "WHERE datname = current_database()").fetchone()
    assert row is not None
    encoding, ctype = row
    if encoding != "UTF8" or not re.search(r"utf-?8", ctype or "", re.IGNORECASE):
        raise UserError(f"the {workload} workload needs a UTF-8 database with a UTF-8 locale "
                        f"(this one has encoding {encoding}, LC_CTYPE {ctype}; in the C locale "
                        "pg_trgm extracts no trigrams from Japanese); give the server "
                        "initdb: {locale: C.UTF-8}")


def setup(workload: Workload, conninfo: str, *, jobs: int) -> dict[str, float]:
    """Fill an empty database for a suite. Returns seconds per setup step. Raises UserError
    for a server the suite cannot use, ServerError when the SQL fails."""
    assert workload.suite is not None
    found = suite(workload.suite)
    try:
        with psycopg.connect(conninfo, autocommit=True, connect_timeout=15) as conn:
            release = Release.of_num(conn.info.server_version)
            if found.since is not None and release < found.since:
                raise UserError(f"the {found.name} workload needs PostgreSQL {found.since} or "
                                f"later, not {release}; run it on a newer server")
            if found.needs_utf8:
                check_utf8(conn, found.name)
        return found.setup(conninfo, found.read(dict(workload.options)), jobs)
    except psycopg.Error as exc:
        raise ServerError(f"setting up the {found.name} workload failed: {exc}") from exc
