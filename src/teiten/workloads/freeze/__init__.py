"""``freeze``: how long VACUUM FREEZE takes when part of the table is already frozen
(METHODS S10, after the PGECons 2016 study of 9.6's visibility map).

For each ratio n%: insert n% of the rows, VACUUM FREEZE, insert the rest, then time
VACUUM FREEZE, with the table in shared_buffers (warm) or not (cold: the server restarted
and the OS cache of its files dropped). Since 9.6 VACUUM skips the pages the visibility map
marks all-frozen, so the time falls with n: at 100% there is nothing left to freeze.
"""

from __future__ import annotations

from dataclasses import dataclass

from teiten.drivers.sql import Session
from teiten.messages import tr
from teiten.workloads.statements import Suite

TABLE = "freeze_t"
ROW_BYTES = 130  # measured: 3,000,000 rows take 390 MB on 15-18

_CREATE = f"""
CREATE TABLE {TABLE} (id bigint NOT NULL, at timestamptz NOT NULL, account int NOT NULL,
                      amount numeric(12, 2) NOT NULL, note text NOT NULL)
WITH (autovacuum_enabled = off, toast.autovacuum_enabled = off)
"""

# One row per id: a timestamp, an account, an amount and a short note, all from the id, so
# that the two inserts of a trial together always give the same table.
_INSERT = f"""
INSERT INTO {TABLE}
SELECT g, timestamptz '2024-01-01 00:00:00+00' + g * interval '1 second', (g * 7919) %% 100000,
       ((g * 104729) %% 1000000) / 100.0, 'payment ' || md5(g::text)
FROM generate_series(%s::bigint, %s::bigint) AS g
"""


@dataclass(frozen=True)
class Options:
    rows: int = 3_000_000
    frozen: tuple[int, ...] = (0, 20, 40, 60, 80, 100)  # per cent of the rows frozen first
    cache: tuple[str, ...] = ("warm", "cold")


@dataclass(frozen=True)
class Variant:
    frozen: int
    cache: str


def setup(conninfo: str, options: Options, jobs: int) -> dict[str, float]:
    return {}  # every trial builds its own table: the inserts are part of the procedure


def run(session: Session, variant: Variant, options: Options) -> None:
    rows, frozen = int(options.rows), int(variant.frozen)
    first = rows * frozen // 100
    label = f"{frozen}%"
    session.execute(_CREATE)
    has_vm = session.scalar("SELECT count(*) FROM pg_available_extensions "
                            "WHERE name = 'pg_visibility'")
    if has_vm:
        session.execute("CREATE EXTENSION IF NOT EXISTS pg_visibility")
    if first:
        session.step("insert", _INSERT, param=label, params=(1, first))
        session.step("first freeze", f"VACUUM FREEZE {TABLE}", param=label)
    if first < rows:
        session.step("insert", _INSERT, param=label, params=(first + 1, rows))
    session.execute("CHECKPOINT")  # a cold restart then has nothing to write
    pages = session.scalar_int(f"SELECT pg_relation_size('{TABLE}') / current_setting('block_size')::int")
    all_frozen = None
    if has_vm:
        all_frozen = session.scalar_int(f"SELECT all_frozen FROM pg_visibility_map_summary('{TABLE}')")
    session.cache(variant.cache, [TABLE])
    st = session.step("vacuum freeze", f"VACUUM FREEZE {TABLE}", param=label)
    st.extra.update({"pages": pages, "all_frozen_pages_before": all_frozen,
                     "frozen_share_before": round(all_frozen / pages, 4) if all_frozen is not None
                     and pages else None})


SUITE = Suite(
    name="freeze",
    description=tr("workload.about.freeze"),
    options_model=Options,
    variant_model=Variant,
    setup=setup,
    run=run,
    data_bytes=lambda o: int(o.rows) * ROW_BYTES,
    chart=("vacuum freeze", "frozen"),
)
