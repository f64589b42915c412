"""The workloads of a study file: each kind of workload owns its options model.

An entry of ``workloads`` is written in one of these forms, all valid:

- a bare name: ``pgecons-read``, ``tpcc``;
- a mapping with a name and that workload's options: ``{name: tpcc, warehouses: 4}``;
- a pgbench script of one's own, ``{script: my.pgbench}``, or a weighted mix of scripts under a
  free name, ``{name: mix, scripts: [...]}``.

:func:`kind_of` reads the kind from the raw entry before it is validated: ``script`` or
``scripts`` make a script workload whatever the name; otherwise the name picks its workload's
model. A name that is no built-in workload is read as a pgbench one, and the registry of
workloads (:mod:`teiten.workloads`) refuses it with a did-you-mean. Every model refuses what it
does not take, so the JSON Schema lists each workload's own options; an option of another
workload is refused with one line that names whose option it is.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, ClassVar, Literal, Union

from pydantic import ConfigDict, Discriminator, Field, Tag, field_validator, model_validator

from teiten.spec.base import (
    MAX_SCALE,
    NAME,
    AtMost,
    Axis,
    Model,
    PathText,
    PeriodSeconds,
    PositiveSeconds,
    Seconds,
    ThinkSeconds,
)
from teiten.spec.sysbench import SysbenchSpec
from teiten.spec.workload_base import NamedWorkload, SqlLoaded, WorkloadOptions, register

MAX_WEIGHT = 10_000  # a script's weight in a mix: shares down to 0.01%
PGBENCH_WORKLOADS = ("pgecons-read", "pgecons-update", "tpcb-like", "simple-update", "select-only")


class ScriptRef(Model):
    script: PathText | None = Field(None, description="path of a pgbench script file")
    builtin: Literal["tpcb-like", "simple-update", "select-only"] | None = None
    weight: Annotated[int, Field(ge=1), AtMost(MAX_WEIGHT, "1")] = 1

    @model_validator(mode="after")
    def _one(self) -> ScriptRef:
        if (self.script is None) == (self.builtin is None):
            raise ValueError("give exactly one of 'script' or 'builtin'")
        return self


PGBENCH_OPTIONS = ("protocol", "rate", "latency_limit_ms", "percentiles", "max_tries", "defines",
                   "random_seed")
# A pgbench variable: what a script reads as :name.
VARIABLE = r"^[A-Za-z_][A-Za-z0-9_]{0,62}$"


class _PgbenchOptions(Model):
    """How pgbench sends and paces a pgbench workload's transactions."""

    protocol: Literal["simple", "extended", "prepared"] | None = Field(
        None, description="pgbench -M: how statements are sent (pgbench's default: simple)")
    rate: Annotated[float, Field(gt=0), AtMost(10_000_000, "more than 0")] | None = Field(
        None, description="pgbench -R: the target transactions per second of all clients "
        "together (latency at a fixed throughput); latencies then count from each "
        "transaction's scheduled start")
    latency_limit_ms: Annotated[float, Field(gt=0), AtMost(3_600_000, "more than 0")] | None = Field(
        None, description="pgbench -L: count the transactions that take longer; with 'rate', "
        "those that would start that late are skipped (counted apart, not in the latencies)")
    percentiles: bool | None = Field(
        None, description="latency percentiles (p50, p90, p95, p99, p99.9, max) from pgbench's "
        "transaction log (pgbench -l), which costs a line of disk per transaction while the "
        "trial runs; default: false")
    max_tries: Annotated[int, Field(ge=0), AtMost(1_000_000, "0")] | None = Field(
        None, description="pgbench --max-tries (15 or later): run a transaction that fails on a "
        "serialization or deadlock error up to this many times, 0 without limit; pgbench's "
        "default: 1")
    defines: dict[Annotated[str, Field(pattern=VARIABLE)],
                  Annotated[str, Field(pattern=r"^[^\x00-\x1f]*$")] | int | float] | None = Field(
        None, description="pgbench -D NAME=VALUE for each entry: variables the scripts read")
    random_seed: Annotated[int, Field(ge=0), AtMost((1 << 64) - 1, "0")] | Literal["time", "rand"] \
        | None = Field(
        None, description="pgbench --random-seed (11 or later): a number for the same "
        "pseudo-random sequence in every trial; pgbench's default: time")

    def pgbench_options(self) -> dict[str, object]:
        """The options given, by name (``defines`` as NAME=VALUE texts)."""
        defines = None if self.defines is None else tuple(f"{k}={v}" for k, v in self.defines.items())
        return {k: defines if k == "defines" else v for k in PGBENCH_OPTIONS
                if (v := getattr(self, k)) not in (None, False)}


class PgbenchSpec(_PgbenchOptions, NamedWorkload):
    """A workload that pgbench initialises (pgbench -i) and drives with its built-in scripts
    or the PGECons ones."""

    names: ClassVar[tuple[str, ...]] = PGBENCH_WORKLOADS

    name: Annotated[str, Field(pattern=NAME, json_schema_extra={"enum": list(PGBENCH_WORKLOADS)})]
    scale: Annotated[int, Field(ge=1), AtMost(MAX_SCALE, "1")] | None = Field(
        None, description="overrides the study's")
    fillfactor: Annotated[int, Field(ge=10, le=100)] | None = Field(
        None, description="pgbench -F; default: the workload's (80 for pgecons-update)")
    modifies_data: bool | None = Field(
        None, description="restore the snapshot before every trial; default: the workload's")


class ScriptSpec(WorkloadOptions, _PgbenchOptions):
    """pgbench scripts of your own: one script file, or a named weighted mix of scripts."""

    name: Annotated[str, Field(pattern=NAME)] | None = Field(
        None, description="default: the script file's name without its extension")
    script: PathText | None = Field(None, description="a pgbench script file of your own")
    weight: Annotated[int, Field(ge=1), AtMost(MAX_WEIGHT, "1")] = 1
    scripts: list[ScriptRef] | None = Field(None, description="a weighted mix of scripts")
    scale: Annotated[int, Field(ge=1), AtMost(MAX_SCALE, "1")] | None = Field(
        None, description="overrides the study's")
    fillfactor: Annotated[int, Field(ge=10, le=100)] | None = Field(None, description="pgbench -F")
    modifies_data: bool | None = Field(
        None, description="restore the snapshot before every trial; default: true")

    # The schema's way of saying what _check_form says.
    model_config = ConfigDict(json_schema_extra={
        "anyOf": [{"required": ["script"]}, {"required": ["name", "scripts"]}],
        "not": {"required": ["script", "scripts"]}})

    @classmethod
    def _check_form(cls, data: Mapping[object, object]) -> None:
        script, scripts = data.get("script"), data.get("scripts")
        if script is not None and scripts is not None:
            raise ValueError("give 'script' or 'scripts', not both")
        if scripts is not None and data.get("name") is None:
            raise ValueError("a mix of 'scripts' needs a 'name'")
        if data.get("name") is None and script is None:
            raise ValueError("a workload needs a 'name' (or a 'script')")

    @property
    def key(self) -> str:
        """The workload's name in the study: its name, else its script's file name."""
        if self.name is not None:
            return self.name
        assert self.script is not None
        return Path(self.script).stem


class _App(SqlLoaded):
    """An application-shaped workload (teiten.workloads.apps): PL/pgSQL transactions that
    pgbench calls with the spec's mix, measured over a window after a ramp-up."""

    kind: ClassVar[str] = "app"

    modifies_data: bool | None = Field(
        None, description="restore the snapshot before every trial; default: true")
    rampup: Seconds | None = Field(
        None, description="seconds of load before the measured window (HammerDB's rampup), "
        "excluded from every figure; default 0")


class TpccSpec(_App):
    """TPROC-C-like, after HammerDB: the five TPC-C transactions as PL/pgSQL procedures."""

    names: ClassVar[tuple[str, ...]] = ("tpcc",)

    name: Literal["tpcc"]
    warehouses: Annotated[int, Field(ge=1), AtMost(100_000, "1")] | None = Field(
        None, description="warehouses; default 2")
    all_warehouses: bool | None = Field(
        None, description="each transaction picks any warehouse (HammerDB's pg_allwarehouse) "
        "instead of the client's home warehouse")
    keying_and_think_time: bool | None = Field(
        None, description="the spec's keying and think times (off, like HammerDB)")
    check_consistency: bool | None = Field(
        None, description="check the spec's consistency conditions 1-4 after the load and "
        "after every trial; a violation fails the trial")


class BookstoreSpec(_App):
    """TPC-W-like online bookstore, after DBT-1, with think time."""

    names: ClassVar[tuple[str, ...]] = ("bookstore",)

    name: Literal["bookstore"]
    items: Annotated[int, Field(ge=100), AtMost(100_000_000, "100")] | None = Field(
        None, description="items; default 1000")
    customers: Annotated[int, Field(ge=10), AtMost(100_000_000, "10")] | None = Field(
        None, description="customers; default 2880")
    think_time: ThinkSeconds | None = Field(
        None, description="mean think time per interaction (negative exponential, capped at "
        "10x); DBT-1 used 7.2s; default 0.1s")
    mix: Literal["browsing", "shopping", "ordering"] | None = Field(
        None, description="the TPC-W interaction mix; default shopping")

    @field_validator("think_time")
    @classmethod
    def _whole_ms(cls, value: float | None) -> float | None:
        # pgbench sleeps in whole units: a mean below 1 ms would sleep nothing at all
        if value is not None and 0 < value < 0.001:
            raise ValueError(f"{value:g} s is below 1 ms; write 0 (no think time) or 1ms or more")
        return value


class _Suite(SqlLoaded):
    """A measured-statement workload (teiten.workloads.statements): timed steps instead of a
    pgbench load. An option written as a list is an axis: each value is a variant of its own."""

    kind: ClassVar[str] = "suite"

    cache: Axis[Literal["warm", "cold"]] | None = Field(
        None, description="the cache before each timed query or VACUUM: warm (pg_prewarm) or "
        "cold (server restarted, OS cache of its files dropped where possible)")

    @classmethod
    def _foreign(cls, key: str, entry: str) -> str | None:
        if key == "modifies_data":
            return (f"'modifies_data' does not apply: the {entry} workload's data is restored "
                    "before every trial; remove it")
        return super()._foreign(key, entry)


class IotSpec(_Suite):
    """Sensor data as rows, JSON or both: load, index and query times (METHODS S8)."""

    names: ClassVar[tuple[str, ...]] = ("iot",)

    name: Literal["iot"]
    devices: Annotated[int, Field(ge=1), AtMost(100_000_000, "1")] | None = Field(
        None, description="sensor devices")
    interval: PositiveSeconds | None = Field(
        None, description="seconds between two records of a device")
    period: PeriodSeconds | None = Field(
        None, description="the time the records cover, e.g. 365d")
    query_days: Annotated[int, Field(ge=1), AtMost(3660, "1")] | None = Field(
        None, description="the query reads the most recent this many days")
    models: Axis[Literal["rdb", "json", "jsonb", "hybrid-json", "hybrid-jsonb"]] | None = Field(
        None, description="data models")
    indexes: Axis[Literal["btree", "brin"]] | None = Field(
        None, description="the index on the timestamp")


class FulltextSpec(_Suite):
    """Full-text search of Japanese and English text: index build, size and query times
    (METHODS S9)."""

    names: ClassVar[tuple[str, ...]] = ("fulltext",)

    name: Literal["fulltext"]
    documents: Annotated[int, Field(ge=10), AtMost(100_000_000, "10")] | None = Field(
        None, description="generated documents")
    doc_chars: Annotated[int, Field(ge=20), AtMost(1_000_000, "20")] | None = Field(
        None, description="mean characters per generated document")
    english_share: Annotated[float, Field(ge=0, le=1)] | None = Field(
        None, description="share of English words in generated documents")
    corpus: str | None = Field(
        None, description="a UTF-8 text file, one document per line, used instead of generated "
        "documents")
    keywords: Annotated[list[Annotated[str, Field(min_length=2)]], Field(min_length=1)] | None = Field(
        None, description="search these keywords instead of chosen ones")
    methods: Axis[Literal["none", "pg_trgm", "pg_bigm", "pgroonga", "bigram", "tsvector",
                          "rum"]] | None = Field(None, description="search methods")


class AccesslogSpec(_Suite):
    """An access log queried with parallel workers and partitions (METHODS S6)."""

    names: ClassVar[tuple[str, ...]] = ("accesslog",)

    name: Literal["accesslog"]
    rows_per_day: Annotated[int, Field(ge=1), AtMost(100_000_000, "1")] | None = Field(
        None, description="rows per day")
    days: Annotated[int, Field(ge=1, le=3660)] | None = Field(None, description="days")
    workers: Axis[Annotated[int, Field(ge=0, le=1024)]] | None = Field(
        None, description="values of max_parallel_workers_per_gather")
    layouts: Axis[Literal["single", "partitioned", "partitioned-unpruned", "join"]] | None = Field(
        None, description="one table, partitioned by day with pruning, or without; or the "
        "table joined to a page table of another parallel degree")


class FreezeSpec(_Suite):
    """VACUUM FREEZE time against the share of rows already frozen (METHODS S10)."""

    names: ClassVar[tuple[str, ...]] = ("freeze",)

    name: Literal["freeze"]
    rows: Annotated[int, Field(ge=100), AtMost(10_000_000_000, "100")] | None = Field(
        None, description="table rows")
    frozen: Axis[Annotated[int, Field(ge=0, le=100)]] | None = Field(
        None, description="percent of the rows frozen before the rest is inserted")


AppSpec = TpccSpec | BookstoreSpec
SuiteSpec = IotSpec | FulltextSpec | AccesslogSpec | FreezeSpec
# Every kind of workload entry, in the order the JSON Schema and the messages list them. A new
# kind is an options model in a module of its own (on teiten.spec.workload_base) and one line
# here; its workload kind is the module of teiten.workloads its ``kind`` names.
KINDS: tuple[type[WorkloadOptions], ...] = (
    PgbenchSpec,
    ScriptSpec,
    TpccSpec,
    BookstoreSpec,
    IotSpec,
    FulltextSpec,
    AccesslogSpec,
    FreezeSpec,
    SysbenchSpec,
)
register(KINDS)
_KIND_OF_NAME = {name: k.__name__ for k in KINDS for name in k.names}
BUILTIN_WORKLOADS = tuple(_KIND_OF_NAME)  # every built-in workload, in the order of KINDS


def kind_of(value: object) -> str:
    """The tag of the options model that validates a raw workload entry."""
    if isinstance(value, WorkloadOptions):
        return type(value).__name__
    if isinstance(value, str):
        return _KIND_OF_NAME.get(value, PgbenchSpec.__name__)
    if isinstance(value, dict):
        if value.get("script") is not None or value.get("scripts") is not None:
            return ScriptSpec.__name__
        name = value.get("name")
        if name is None:
            return ScriptSpec.__name__  # which says that a workload needs a name or a script
        if isinstance(name, str):
            return _KIND_OF_NAME.get(name, PgbenchSpec.__name__)
    return PgbenchSpec.__name__  # refused there, with the forms of a workload entry


# A study's workload entry: the options model of its kind, one member per kind of KINDS. The
# tags are the models' names, which the loader's messages leave out of the place of an error.
if TYPE_CHECKING:
    WorkloadSpec = WorkloadOptions
else:
    WorkloadSpec = Annotated[Union[tuple(Annotated[k, Tag(k.__name__)] for k in KINDS)],  # noqa: UP007
                             Discriminator(kind_of)]
