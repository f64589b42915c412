"""The iot measured-statement workload (METHODS S8) on a real PostgreSQL 18 cluster: the shape
and values of the generated records in every model, the steps a trial records (load, index,
query) with their sizes and plans, and a query on a cold cache."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta

import pytest
from psycopg import sql
from tests.conftest import ScratchDatabase, scratch_database

from teiten.drivers.sql import Session
from teiten.model.errors import UserError
from teiten.workloads import iot, statements

MODELS = list(iot.MODELS)
TINY = iot.Options(devices=3, interval=3600.0, period=10 * 86400.0, query_days=1)
# Big enough (86,400 records) for the planner to take either index for the last day of 20.
SMALL = iot.Options(devices=3, interval=60.0, period=20 * 86400.0, query_days=1)
# What a sensor can report, widely: a value outside is a mistake in the generator.
RANGES = {"latitude": (30, 44), "longitude": (129, 143), "temperature": (-30, 45), "humidity": (0, 100),
          "pressure": (950, 1050), "wind_speed": (0, 30), "wind_direction": (0, 359), "battery": (3.0, 4.2),
          "signal": (-120, -40)}


@pytest.fixture(scope="module")
def db(pg18) -> Iterator[ScratchDatabase]:  # noqa: ANN001
    with scratch_database(pg18) as scratch:
        yield scratch


@pytest.fixture
def session(db: ScratchDatabase) -> Iterator[Session]:
    """A session on an empty database, as every trial starts from; emptied again after."""
    s = Session(db.conninfo, cold_restart=db.restart)
    try:
        yield s
    finally:
        s.close()
        _drop_tables(db)


def _drop_tables(db: ScratchDatabase) -> None:
    s = Session(db.conninfo)
    for model in iot.MODELS.values():
        s.execute(sql.SQL("DROP TABLE IF EXISTS {}").format(sql.Identifier(model.table)))
    s.close()


def _value(model: str, name: str) -> str:
    """A value of a record in any model: the device as an integer, the time as epoch seconds,
    a sensor value as the real the generator made (the documents hold its shortest text)."""
    m = iot.MODELS[model]
    if name == "ts":
        return f"({m.ts})" if m.epoch else "extract(epoch FROM ts)::double precision"
    if name == "device_id":
        return m.device
    return f"(doc->>'{name}')::real" if m.epoch or model.startswith("hybrid") else f"{name}::real"


def _fingerprint(session: Session, model: str) -> str:
    """Every value of every record, in the order on disk."""
    values = ", ".join(_value(model, n) for n in ("device_id", "ts", *iot.SENSORS))
    return str(session.scalar(f"SELECT md5(string_agg(concat_ws(' ', {values}), ',' ORDER BY ctid)) "
                              f"FROM {iot.MODELS[model].table}"))


@pytest.mark.parametrize("model", MODELS)
def test_generated_records_have_the_asked_shape(session: Session, model: str) -> None:
    table = iot.MODELS[model].table
    iot.create_table(session, model)
    iot.load(session, model, TINY)
    [load] = session.steps
    assert (load.name, load.rows, load.param) == ("load", 3 * 240, "3 devices x 240 steps")
    assert load.extra["rows_per_s"] == pytest.approx(load.rows / load.seconds)
    assert session.scalar(f"SELECT count(*) FROM {table}") == 720
    ts, device = _value(model, "ts"), _value(model, "device_id")
    first, last = iot.START.timestamp(), (iot.START + timedelta(hours=239)).timestamp()
    assert session.rows(f"SELECT min({ts}), max({ts}) FROM {table}") == [(first, last)]
    per_device = session.rows(f"SELECT {device}, count(*), count(DISTINCT {ts}) FROM {table} "
                              "GROUP BY 1 ORDER BY 1")
    assert per_device == [(1, 240, 240), (2, 240, 240), (3, 240, 240)]
    # Time order on disk, as a feed delivers the records: no record older than the one before.
    assert session.scalar(f"SELECT count(*) FROM (SELECT {ts} < lag({ts}) OVER (ORDER BY ctid) AS back "
                          f"FROM {table}) AS o WHERE back") == 0
    for name, (lo, hi) in RANGES.items():
        value = _value(model, name)
        got = session.rows(f"SELECT min({value}), max({value}), count(DISTINCT {value}) FROM {table}")[0]
        assert lo <= got[0] <= got[1] <= hi, (name, got)
        assert got[2] > 3, f"{name} hardly varies: {got}"
    if model != "rdb":
        keys = session.rows("SELECT DISTINCT array(SELECT json_object_keys(doc::json) ORDER BY 1) "
                            f"FROM {table}")
        in_document = iot.SENSORS if model.startswith("hybrid") else ("device_id", "ts", *iot.SENSORS)
        assert keys == [(sorted(in_document),)]
    # The same seed gives the same records in the same order, and every model holds the same ones.
    before = _fingerprint(session, model)
    session.execute(f"TRUNCATE {table}")
    iot.load(session, model, TINY)
    assert _fingerprint(session, model) == before
    if model != "rdb":
        iot.create_table(session, "rdb")
        iot.load(session, "rdb", TINY)
        assert _fingerprint(session, "rdb") == before


@pytest.mark.parametrize("model", MODELS)
def test_a_trial_records_load_index_and_query(db: ScratchDatabase, model: str) -> None:
    sizes: dict[str, int] = {}
    for kind in ("btree", "brin"):
        s = Session(db.conninfo, cold_restart=db.restart)
        try:
            iot.SUITE.run(s, iot.Variant(model, kind, "warm"), SMALL)
            answer = s.rows(iot.query_statement(model, SMALL))
        finally:
            s.close()
            _drop_tables(db)
        load, index, query = s.steps
        assert [st.name for st in s.steps] == ["load", "index", "query"]
        table, name = iot.MODELS[model].table, iot.index_name(model, kind)
        assert load.rows == 3 * 28800 and load.extra["rows_per_s"] > 0
        assert load.sizes is not None and load.sizes[table] > 0 and name not in load.sizes
        assert index.param == kind and index.sizes is not None and index.sizes[name] > 0
        sizes[kind] = index.sizes[name]
        assert query.param == "last 1 days" and query.rows == 3 and query.plan is not None
        assert query.cache is not None and query.cache["state"] == "warm"
        assert query.cache["prewarmed_blocks"] > 0
        assert name in query.plan.shape, query.plan.shape
        # The last day of 20: 1440 records per device, averaged over believable temperatures.
        assert [(r[0], r[1]) for r in answer] == [(1, 1440), (2, 1440), (3, 1440)]
        assert all(-30 < r[2] < 45 for r in answer)
    assert sizes["brin"] < sizes["btree"]


def test_a_cold_query_restarts_the_server(session: Session) -> None:
    iot.SUITE.run(session, iot.Variant("hybrid-jsonb", "brin", "cold"), TINY)
    query = session.steps[-1]
    assert query.name == "query" and query.rows == 3
    assert query.cache == {"state": "cold", "server_restarted": True}


def test_setup_needs_nothing_but_checks_the_generator(db: ScratchDatabase) -> None:
    took = iot.SUITE.setup(db.conninfo, SMALL, 2)
    assert list(took) == ["setup_s"] and took["setup_s"] >= 0
    s = Session(db.conninfo)
    assert s.sizes() == {}
    s.close()


def test_the_options_and_their_variants() -> None:
    defaults = iot.Options()
    assert iot.steps(defaults) * defaults.devices == 5_256_000
    assert iot.SUITE.defaults == {"devices": 10, "interval": 60.0, "period": 365.0 * 86400, "query_days": 30,
                                  "models": ["rdb", "json", "jsonb", "hybrid-json", "hybrid-jsonb"],
                                  "indexes": ["btree", "brin"], "cache": ["warm"]}
    assert iot.SUITE.axes == ("models", "indexes", "cache")
    assert len(statements.variants("iot", iot.SUITE.defaults)) == 10
    assert statements.variants("iot", iot.SUITE.defaults)[0] == "models=rdb indexes=btree cache=warm"
    assert statements.parse_variant("iot", defaults, "models=jsonb indexes=brin cache=warm") == \
        iot.Variant("jsonb", "brin", "warm")
    assert iot.steps(iot.Options(period=0.3, interval=0.1)) == 3
    assert iot.since(defaults) == iot.START + timedelta(days=335)
    assert 1.5e9 < iot.data_bytes(defaults) < 2.5e9
    with pytest.raises(UserError, match=r"interval \(7200 s\) is longer than its period \(3600 s\)"):
        iot.steps(iot.Options(period=3600.0, interval=7200.0))
    # What a store keeps (every axis a list) reads back as the options; an option it lacks
    # (a store of an older teiten) takes its default, and one teiten no longer has is left out.
    assert iot.SUITE.read({**iot.SUITE.defaults, "retired": 1}) == defaults
    assert iot.SUITE.read({"devices": 3, "models": ["rdb"]}) == iot.Options(devices=3, models=("rdb",))
