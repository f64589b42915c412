"""The study file's entry of the sysbench workload: one of sysbench's OLTP tests on PostgreSQL,
an optional workload that teiten runs with sysbench instead of pgbench
(teiten.workloads.sysbench), ``{name: sysbench, test: oltp_read_only, tables: 2, table_size:
10000}``."""

from __future__ import annotations

from typing import Annotated, ClassVar, Literal, get_args

from pydantic import Field

from teiten.spec.workload_base import SqlLoaded

# sysbench's OLTP tests that share oltp_common.lua's tables (sbtest1 ... sbtestN); the first
# two only read.
Test = Literal["oltp_read_only", "oltp_point_select", "oltp_read_write", "oltp_write_only",
               "oltp_update_index", "oltp_update_non_index", "oltp_insert", "oltp_delete"]
TESTS: tuple[str, ...] = get_args(Test)
READ_ONLY = ("oltp_read_only", "oltp_point_select")
MAX_ROWS = 2**31 - 1  # the tables' id is an integer


class SysbenchSpec(SqlLoaded):
    """sysbench's OLTP tests (Debian's sysbench, its PostgreSQL driver): tables loaded by
    ``sysbench prepare``, each trial ``sysbench run`` with one thread per client."""

    names: ClassVar[tuple[str, ...]] = ("sysbench",)
    kind: ClassVar[str] = "sysbench"

    name: Literal["sysbench"]
    test: Test | None = Field(
        None, description="the sysbench test; the first two only read, the others change the "
        "data (then it is restored before every trial); default oltp_read_only")
    tables: Annotated[int, Field(ge=1, le=1000)] | None = Field(
        None, description="sysbench --tables: the tables sbtest1 ... sbtestN; default 1")
    table_size: Annotated[int, Field(ge=1, le=MAX_ROWS)] | None = Field(
        None, description="sysbench --table-size: rows per table; default 10000")

    @classmethod
    def _foreign(cls, key: str, entry: str) -> str | None:
        if key == "modifies_data":
            return ("'modifies_data' does not apply: the sysbench test says whether it changes "
                    "the data (all but oltp_read_only and oltp_point_select do); remove it")
        return super()._foreign(key, entry)
