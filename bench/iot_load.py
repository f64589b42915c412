"""The iot workload's load: its generator against a plain INSERT ... SELECT, and every model once.

- Generator cost: the rdb model's load (generate.sql: climate cycles, device offsets, noise)
  against ``INSERT INTO iot_rdb SELECT <constants> FROM generate_series(...)`` of as many
  rows into the same table definition, interleaved (which goes first alternates), on one
  PostgreSQL 18 cluster. Target: the generator reaches 0.8 of the plain insert's rate or more.
- The five models once at the workload's default size: load rate and time, table size, and
  the build time and size of a B-tree and of a BRIN index on the timestamp.

Every load starts from a freshly created table after a CHECKPOINT; max_wal_size is large
enough that no checkpoint falls inside a load. The comparison starts with an uncounted round of
each side: the first loads of a new cluster also create its WAL files.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from collections.abc import Iterator
from contextlib import contextmanager

from psycopg import sql
from psycopg.conninfo import make_conninfo

from bench.common import install
from teiten.drivers.sql import Session
from teiten.host import paths
from teiten.installs import Install
from teiten.servers.cluster import SUPERUSER, Cluster
from teiten.spec import InitdbOptions
from teiten.workloads import iot

SETTINGS = {"max_wal_size": "16GB", "checkpoint_timeout": "1h"}
MB = 2**20


@contextmanager
def scratch_cluster(inst: Install) -> Iterator[str]:
    """A started cluster with an empty database; yields its conninfo, removes it all after."""
    root = paths.make_owned(paths.clusters_dir() / f"bench-iot-{os.getpid()}-{time.time_ns()}",
                            "iot load benchmark")
    cluster = Cluster(inst, root)
    try:
        cluster.initdb(InitdbOptions())
        cluster.configure(SETTINGS)
        cluster.start(root / "logs")
        with cluster.connect() as conn:
            conn.execute("CREATE DATABASE iot")
        yield make_conninfo(host=cluster.host, port=cluster.port, user=SUPERUSER, dbname="iot")
    finally:
        cluster.stop()
        if cluster.socket_dir is not None:
            paths.remove_owned(cluster.socket_dir)
        paths.remove_owned(root)


def plain_insert(options: iot.Options) -> sql.Composed:
    """As many rows as the generator makes, in the same time order, with constant values."""
    devices, rows = options.devices, options.devices * iot.steps(options)
    return sql.SQL(
        "INSERT INTO iot_rdb SELECT (g % {devices} + 1)::integer, to_timestamp({start} + (g / {devices}) * "
        "{interval}::double precision), 35, 139, 15, 60, 1013, 3, 180, 3.9, -80 "
        "FROM generate_series(0, {last}) AS g").format(
        devices=sql.Literal(devices), start=sql.Literal(iot.START.timestamp()),
        interval=sql.Literal(float(options.interval)), last=sql.Literal(rows - 1))


def _fresh(session: Session, model: str) -> None:
    session.execute(sql.SQL("DROP TABLE IF EXISTS {}").format(sql.Identifier(iot.MODELS[model].table)))
    iot.create_table(session, model)
    session.execute("CHECKPOINT")


def generator_vs_plain(conninfo: str, options: iot.Options, rounds: int) -> float:
    """Median rows/s of each side, printed; returns generator / plain."""
    rates: dict[str, list[float]] = {"generator": [], "plain": []}
    rows = options.devices * iot.steps(options)
    session = Session(conninfo)
    try:
        for i in range(-1, rounds):  # round -1 warms up (the WAL files are new, nothing is cached)
            for side in ("generator", "plain") if i % 2 == 0 else ("plain", "generator"):
                _fresh(session, "rdb")
                if side == "generator":
                    iot.load(session, "rdb", options)
                else:
                    session.step("plain", plain_insert(options), sizes=False)
                step = session.steps[-1]
                assert step.rows == rows, f"{side} inserted {step.rows} rows, not {rows}"
                rates[side].append(rows / step.seconds)
            if i < 0:
                rates = {side: [] for side in rates}
                continue
            print(f"  round {i + 1}: generator {rates['generator'][-1]:,.0f} rows/s, plain "
                  f"{rates['plain'][-1]:,.0f} rows/s, ratio {rates['generator'][-1] / rates['plain'][-1]:.3f}",
                  flush=True)
    finally:
        session.close()
    med = {side: statistics.median(values) for side, values in rates.items()}
    for side, values in rates.items():
        print(f"{side}: median {med[side]:,.0f} rows/s (min {min(values):,.0f}, max {max(values):,.0f}, "
              f"n={len(values)})")
    ratio = med["generator"] / med["plain"]
    print(f"generator / plain insert: {ratio:.3f} (target >= 0.8)")
    return ratio


def every_model(conninfo: str, options: iot.Options) -> None:
    """Each model loaded once, then a B-tree and a BRIN index on its timestamp."""
    rows = options.devices * iot.steps(options)
    print(f"every model at {options.devices} devices x {iot.steps(options)} steps = {rows:,} records:")
    for model, m in iot.MODELS.items():
        session = Session(conninfo)
        try:
            _fresh(session, model)
            iot.load(session, model, options)
            built = {}
            for kind in iot.INDEXES:
                name = iot.index_name(model, kind)
                step = session.step("index", sql.SQL("CREATE INDEX {} ON {} USING {} ({})").format(
                    sql.Identifier(name), sql.Identifier(m.table), sql.SQL(kind), sql.SQL(m.ts)))
                assert step.sizes is not None
                built[kind] = (step.seconds, step.sizes[name])
            load = session.steps[0]
            assert load.sizes is not None
            table = load.sizes[m.table]
            session.execute(sql.SQL("DROP TABLE {}").format(sql.Identifier(m.table)))
        finally:
            session.close()
        indexes = ", ".join(f"{kind} {s:.2f} s {_size(size)}" for kind, (s, size) in built.items())
        print(f"  {model:>12}: load {load.seconds:6.2f} s, {load.extra['rows_per_s']:>9,.0f} rows/s; "
              f"table {_size(table)} ({table / rows:.1f} bytes per record); {indexes}", flush=True)


def _size(n: int) -> str:
    return f"{n / MB:,.1f} MB" if n >= MB else f"{n / 1024:,.0f} kB"


def main(rounds: int = 5, rows: int = 2_000_000) -> None:
    devices = 10
    compared = iot.Options(devices=devices, period=rows / devices * 60.0)
    with scratch_cluster(install("18")) as conninfo:
        print(f"rdb load of {rows:,} records, generator against a plain insert, {rounds} rounds:", flush=True)
        generator_vs_plain(conninfo, compared, rounds)
        every_model(conninfo, iot.Options())


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--rows", type=int, default=2_000_000)
    a = parser.parse_args()
    main(a.rounds, a.rows)
