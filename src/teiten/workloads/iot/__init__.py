"""IoT sensor data in five models: load, index on the timestamp, query the last days (METHODS S8).

Each trial creates one model's table, loads ``devices`` x ``period / interval`` records
generated on the server (one INSERT ... SELECT, in time order), builds a B-tree or a BRIN
index on the timestamp, runs VACUUM ANALYZE, and queries the most recent ``query_days`` days
per device. The steps record the load time, the index build time, the table's and the
index's sizes and the query's plan and execution time.

The models: ``rdb`` (every sensor value a column), ``json`` and ``jsonb`` (the whole record
one document), ``hybrid-json`` and ``hybrid-jsonb`` (device_id and ts columns, the sensor
values a document). A cast of text to timestamptz is not immutable (it depends on the
TimeZone and DateStyle settings), so it cannot be indexed: the documents of ``json`` and
``jsonb`` hold the timestamp as epoch seconds, a number, and their index and their query use
the immutable expression ``((doc->>'ts')::double precision)``.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import psycopg
from psycopg import sql

from teiten.drivers.sql import Session
from teiten.installs.releases import Release
from teiten.messages import tr
from teiten.model.errors import UserError
from teiten.workloads.statements import Suite

HERE = Path(__file__).parent
START = datetime(2024, 1, 1, tzinfo=UTC)  # the first record; the data never depends on now()
SEED = 0.2016  # setseed() before every load: the same options give the same records
DAY_S = 86400
# The sensor values, in the order of the RDB columns and of the documents' keys.
SENSORS = ("latitude", "longitude", "temperature", "humidity", "pressure", "wind_speed",
           "wind_direction", "battery", "signal")
_SENSOR_COLUMNS = ", ".join(f"{name} {'smallint' if name in ('wind_direction', 'signal') else 'real'} NOT NULL"
                            for name in SENSORS)
# Bytes per record of the largest model, jsonb: 341 in the table and 22 in the B-tree, measured
# on 18 at the default size (bench.iot_load).
_BYTES_PER_ROW = 365
INDEXES = ("btree", "brin")


@dataclass(frozen=True)
class Model:
    """One way to store the records, and the expressions the query and the index use."""

    table: str
    columns: str  # the table's column definitions
    values: str  # the load's select list, over the generator's columns
    device: str
    temperature: str
    ts: str  # what the index is built on and the query compares
    epoch: bool  # ts is epoch seconds (a number in a document), not a timestamptz column


def _document(keys: tuple[str, ...], kind: str) -> str:
    """A compact JSON text of these generator columns, cast to json or jsonb: the server parses
    it as it would parse a record that a feed sends."""
    args: list[str] = []
    for i, key in enumerate(keys):
        args += [f"""'{"{" if i == 0 else ","}"{key}":'""", "epoch" if key == "ts" else key]
    return f"concat({', '.join(args)}, '}}')::{kind}"


def _models() -> dict[str, Model]:
    everything = ("device_id", "ts", *SENSORS)
    keys = "device_id integer NOT NULL, ts timestamptz NOT NULL"
    out = {"rdb": Model("iot_rdb", f"{keys}, {_SENSOR_COLUMNS}", ", ".join(everything), "device_id",
                        "temperature", "ts", epoch=False)}
    for kind in ("json", "jsonb"):
        out[kind] = Model(f"iot_{kind}", f"doc {kind} NOT NULL", _document(everything, kind),
                          "(doc->>'device_id')::integer", "(doc->>'temperature')::real",
                          "((doc->>'ts')::double precision)", epoch=True)
    for kind in ("json", "jsonb"):
        out[f"hybrid-{kind}"] = Model(f"iot_hybrid_{kind}", f"{keys}, doc {kind} NOT NULL",
                                      f"device_id, ts, {_document(SENSORS, kind)}", "device_id",
                                      "(doc->>'temperature')::real", "ts", epoch=False)
    return out


MODELS = _models()


@dataclass(frozen=True)
class Options:
    devices: int = 10
    interval: float = 60.0  # seconds between two records of a device
    period: float = 365.0 * DAY_S  # the seconds the records cover
    query_days: int = 30
    models: tuple[str, ...] = tuple(MODELS)
    indexes: tuple[str, ...] = INDEXES
    cache: tuple[str, ...] = ("warm",)


@dataclass(frozen=True)
class Variant:
    models: str
    indexes: str
    cache: str


def _text(name: str) -> str:
    """A SQL file of this package without its comment lines, which name the placeholders that
    psycopg's format() fills in."""
    lines = (HERE / name).read_text().splitlines()
    return "\n".join(line for line in lines if not line.startswith("--"))


def steps(options: Options) -> int:
    """Records per device: the period divided by the interval, rounded down."""
    # The small allowance keeps 0.3 / 0.1 from becoming 2 steps instead of 3.
    n = math.floor(options.period / options.interval + 1e-9)
    if n < 1:
        raise UserError(f"the iot workload's interval ({options.interval:g} s) is longer than its "
                        f"period ({options.period:g} s): not one record to load; make the "
                        "interval shorter or the period longer")
    return n


def generator(options: Options, values: str) -> sql.Composed:
    """The SELECT of ``values`` over every record (generate.sql) for these options."""
    return sql.SQL(_text("generate.sql")).format(
        steps=sql.Literal(steps(options)), devices=sql.Literal(int(options.devices)),
        interval=sql.Literal(float(options.interval)), start=sql.Literal(START.timestamp()),
        values=sql.SQL(values))


def since(options: Options) -> datetime:
    """The start of the queried days: the end of the period minus query_days."""
    return START + timedelta(seconds=float(options.period)) - timedelta(days=int(options.query_days))


def index_name(model: str, kind: str) -> str:
    return f"{MODELS[model].table}_ts_{kind}"


def load_statement(model: str, options: Options) -> sql.Composed:
    m = MODELS[model]
    return sql.SQL("INSERT INTO {} ").format(sql.Identifier(m.table)) + generator(options, m.values)


def query_statement(model: str, options: Options) -> sql.Composed:
    m = MODELS[model]
    start = since(options)
    bound = (sql.SQL("{}::double precision").format(sql.Literal(start.timestamp())) if m.epoch
             else sql.Literal(start))
    return sql.SQL(_text("query.sql")).format(
        device=sql.SQL(m.device), temperature=sql.SQL(m.temperature), table=sql.Identifier(m.table),
        ts=sql.SQL(m.ts), since=bound)


def create_table(session: Session, model: str) -> None:
    m = MODELS[model]
    session.execute(sql.SQL("CREATE TABLE {} ({}) WITH (autovacuum_enabled = off)").format(
        sql.Identifier(m.table), sql.SQL(m.columns)))


def load(session: Session, model: str, options: Options) -> None:
    """The timed load, after setseed() in the same session; the step gets ``rows_per_s``."""
    session.execute("SELECT setseed(%s)", (SEED,))
    step = session.step("load", load_statement(model, options),
                        param=f"{options.devices} devices x {steps(options)} steps")
    if step.rows and step.seconds > 0:
        step.extra["rows_per_s"] = step.rows / step.seconds


def setup(conninfo: str, options: Options, jobs: int) -> dict[str, float]:
    """Nothing to create once per server: each trial generates its records in one statement.
    Checks that the server can run that statement (at least one step, one device)."""
    started = time.perf_counter()
    with psycopg.connect(conninfo, autocommit=True) as conn:
        conn.execute(generator(replace(options, devices=1, period=options.interval), MODELS["rdb"].values))
    return {"setup_s": time.perf_counter() - started}


def run(session: Session, variant: Variant, options: Options) -> None:
    """One trial in an empty database: create the model's table, load (timed), build the index
    (timed), VACUUM ANALYZE, set the cache, query the most recent days (EXPLAIN ANALYZE)."""
    model, kind = variant.models, variant.indexes
    if model not in MODELS or kind not in INDEXES:
        raise ValueError(f"the iot workload has no model {model!r} or no index {kind!r}")
    table = MODELS[model].table
    create_table(session, model)
    load(session, model, options)
    session.step("index", sql.SQL("CREATE INDEX {} ON {} USING {} ({})").format(
        sql.Identifier(index_name(model, kind)), sql.Identifier(table), sql.SQL(kind),
        sql.SQL(MODELS[model].ts)), param=kind)
    session.execute(sql.SQL("VACUUM ANALYZE {}").format(sql.Identifier(table)))
    session.cache(variant.cache, [table])
    session.query("query", query_statement(model, options), param=f"last {options.query_days} days")


def data_bytes(options: Options) -> int:
    """The loaded size of the largest model (jsonb with its B-tree), roughly."""
    return int(options.devices) * steps(options) * _BYTES_PER_ROW


SUITE = Suite(
    name="iot",
    since=Release(90500),  # jsonb (9.4) and BRIN indexes (9.5)
    description=tr("workload.about.iot"),
    options_model=Options,
    variant_model=Variant,
    setup=setup,
    run=run,
    data_bytes=data_bytes,
    chart=("query", "models"),
)
