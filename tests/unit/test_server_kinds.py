"""The kinds of server (teiten.servers.kinds): which kind a study's server is, which kind a
stored server was (stores from before the real kind was recorded called ssh and docker servers
"local"), and what the report's Servers table says of each, in English and Japanese."""

from __future__ import annotations

import json
import shutil
import sqlite3
from contextlib import closing
from pathlib import Path

import pytest

from teiten.report.build import write_study_report
from teiten.servers import kinds
from teiten.spec import ServerSpec
from teiten.store import Store

STORES = Path(__file__).resolve().parent.parent / "golden" / "report-stores"


@pytest.mark.parametrize(("given", "kind"), [
    ({"install": "17"}, "local"),
    ({"install": "17", "replicas": 1}, "local"),
    ({"install": "17", "pgpool": True, "replication": "native"}, "local"),
    ({"install": "15", "ssh": "db1"}, "ssh"),
    ({"install": "15", "ssh": "db1", "replicas": 1}, "ssh"),
    ({"install": "17", "docker": {}}, "docker"),
    ({"install": "17", "vm": {"accelerator": "tcg"}}, "vm"),
    ({"external": "host=db port=5432 dbname=bench"}, "external"),
])
def test_each_server_has_its_kind(given: dict[str, object], kind: str) -> None:
    spec = ServerSpec.model_validate({"name": "s", **given})
    found = kinds.of(spec)
    assert found.name == kind
    assert kinds.stored(kind, spec.model_dump(mode="json")) is found
    # a kind this teiten does not know, by the place its spec gives (a store from before the
    # real kind was recorded said "local" for all but external ones: store step 7 renames them)
    assert kinds.stored("unknown", spec.model_dump(mode="json")) is found


def test_what_each_kind_can_do() -> None:
    table = {k.name: (k.runs_here, k.install_here, k.controlled, k.loads_by_sql) for k in kinds.KINDS}
    assert table == {"local": (True, True, True, True), "ssh": (False, False, True, False),
                     "docker": (False, True, True, False), "external": (False, False, False, True),
                     "vm": (False, True, True, False)}


def _servers_rows(md: str) -> list[str]:
    return [line for line in md.splitlines() if line.startswith(("| Kind |", "| 種別 |"))]


@pytest.mark.parametrize(("lang", "expected"), [
    ("en", ["| Kind | docker (a container on this machine's Docker engine) |",
            "| Kind | ssh (a cluster teiten makes on another host, over OpenSSH) |"]),
    ("ja", ["| 種別 | docker（このマシンの Docker エンジン上のコンテナ） |",
            "| 種別 | ssh（teiten が OpenSSH 経由で別のホストに作るクラスタ） |"]),
])
def test_the_servers_table_names_the_real_kind_of_an_old_store(
        lang: str, expected: list[str], tmp_path: Path) -> None:
    """A golden store made of the old shape: its first server ran in a container and its
    second over ssh, and both were stored as "local" (the real runs' stores are in
    test_docker_study and test_ssh_study)."""
    path = tmp_path / "quick.db"
    shutil.copy(STORES / "quick.db", path)
    with closing(sqlite3.connect(path)) as conn, conn:
        for name, place in (("pg17", {"docker": {"network": "bridge"}}), ("pg18", {"ssh": "teiten-db1"})):
            spec = json.loads(conn.execute("SELECT spec_json FROM servers WHERE name = ?",
                                           (name,)).fetchone()[0])
            conn.execute("UPDATE servers SET spec_json = ? WHERE name = ?",
                         (json.dumps({**spec, **place}), name))
        assert {r[0] for r in conn.execute("SELECT kind FROM servers")} == {"local"}
    store = Store.open(path)  # store step 7 names each server's real kind
    try:
        assert dict(store.conn.execute("SELECT name, kind FROM servers").fetchall()) == {
            "pg17": "docker", "pg18": "ssh"}
        write_study_report(store, 1, tmp_path / "out", lang=lang)
    finally:
        store.close()
    assert _servers_rows((tmp_path / "out" / "report.md").read_text()) == expected


HOST_A = {"ssh": "db1", "cpus": 16, "ram_bytes": 64 << 30, "uname": "Linux 6.1.0 x86_64",
          "boot_id": "a"}
HOST_B = {**HOST_A, "ssh": "postgres@db2", "cpus": 8, "ram_bytes": 32 << 30, "boot_id": "b"}


@pytest.mark.parametrize(("lang", "description", "expected"), [
    ("en", {"host": HOST_A}, ["| Host | db1 (16 CPUs, 64.0 GiB of memory) |"]),
    ("ja", {"host": HOST_A}, ["| ホスト | db1（CPU 16 個、メモリ 64.0 GiB） |"]),
    ("en", {"host": HOST_A, "nodes": [{"node": "node0", **HOST_A}, {"node": "node1", **HOST_B}]},
     ["| Host of node0 | db1 (16 CPUs, 64.0 GiB of memory) |",
      "| Host of node1 | postgres@db2 (8 CPUs, 32.0 GiB of memory) |"]),
    ("ja", {"host": HOST_A, "nodes": [{"node": "node0", **HOST_A}, {"node": "node1", **HOST_B}]},
     ["| node0 のホスト | db1（CPU 16 個、メモリ 64.0 GiB） |",
      "| node1 のホスト | postgres@db2（CPU 8 個、メモリ 32.0 GiB） |"]),
])
def test_the_servers_table_names_the_host_of_an_ssh_server_and_of_each_node(
        lang: str, description: dict[str, object], expected: list[str], tmp_path: Path) -> None:
    path = tmp_path / "quick.db"
    shutil.copy(STORES / "quick.db", path)
    with closing(sqlite3.connect(path)) as conn, conn:
        spec, described = conn.execute("SELECT spec_json, description FROM servers "
                                       "WHERE name = 'pg18'").fetchone()
        conn.execute("UPDATE servers SET spec_json = ?, description = ?, kind = 'ssh' "
                     "WHERE name = 'pg18'",
                     (json.dumps({**json.loads(spec), "ssh": "db1"}),
                      json.dumps({**json.loads(described), **description})))
    store = Store.open(path)
    try:
        write_study_report(store, 1, tmp_path / "out", lang=lang)
    finally:
        store.close()
    md = (tmp_path / "out" / "report.md").read_text()
    assert [line for line in md.splitlines() if line.startswith(("| Host", "| node", "| ホスト"))] \
        == expected
