"""A PostgreSQL store (issue 21, item 1): a real cluster that the test starts (not one being
benchmarked) holds the results; two runs write into it at once; report, compare, results and
``teiten store copy`` give the same figures as an SQLite file; an older schema is migrated; the
password comes from libpq's usual places and reaches no store, output or argv."""

from __future__ import annotations

import json
import os
import sqlite3
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import psycopg
import pytest
from tests import sharedstore
from tests.conftest import clusters_snapshot, run_cli, start_cli
from tests.sharedstore import SECRET
from tests.sharedstore import url as _url
from tests.truestores import Truth, build

from teiten.servers.cluster import Cluster
from teiten.store import Store
from teiten.store.address import StoreAddress
from teiten.store.pg import connect
from teiten.store.schema import MIGRATIONS, SCHEMA_VERSION

STUDY = """
study: {name}
servers: [{{name: pg18, install: "18"}}]
workloads: [select-only]
scale: 1
clients: [1]
duration: 1s
repetitions: 2
"""


@pytest.fixture
def store_server(pg18, teiten_home: Path) -> Iterator[Cluster]:  # noqa: ANN001
    with sharedstore.serve(pg18) as cluster:
        yield cluster


def _cli(*args: str, cwd: Path | None = None, password: str | None = SECRET) -> tuple[int, str, str]:
    env = {"PGPASSWORD": password} if password else {"PGPASSFILE": "/nonexistent"}
    proc = start_cli(*args, cwd=cwd, env=env)
    out, err = proc.communicate(timeout=600)
    return proc.returncode, out, err


def _figures(rows: list[dict[str, object]]) -> list[dict[str, object]]:
    """A results export without the ids a copy renumbers."""
    return [{k: v for k, v in r.items() if k != "study_id"} for r in rows]


def _every_text(cluster: Cluster) -> str:
    with cluster.connect("teiten_store") as conn:
        tables = [r[0] for r in conn.execute(
            "SELECT tablename FROM pg_tables WHERE schemaname = 'teiten'")]
        return "\n".join(str(row[0]) for t in tables
                         for row in conn.execute(f"SELECT t::text FROM teiten.{t} t"))  # noqa: S608


def test_two_runs_at_once_into_one_postgresql_store_report_as_sqlite_does(
        store_server: Cluster, workdir: Path) -> None:
    url = _url(store_server)
    for name in ("pgstore-a", "pgstore-b"):
        (workdir / f"{name}.yaml").write_text(STUDY.format(name=name))
    # Two shells, one store: the second with the option that lets two runs share a machine.
    first = start_cli("run", str(workdir / "pgstore-a.yaml"), "--store", url, "--no-report",
                      "--beside-others", env={"PGPASSWORD": SECRET})
    code, _, err = _cli("run", str(workdir / "pgstore-b.yaml"), "--store", url, "--no-report",
                        "--beside-others")
    out_a, err_a = first.communicate(timeout=600)
    assert first.returncode == 0, err_a
    assert code == 0, err
    assert f"store: {url}" in err

    code, out, err = _cli("studies", "--store", url, "--format", "json")
    assert code == 0, err
    studies = json.loads(out)
    assert sorted(s["name"] for s in studies) == ["pgstore-a", "pgstore-b"]
    assert all(s["state"] == "finished" and s["ok"] == 2 for s in studies)

    # The same studies in an SQLite file, by copy; a second copy adds nothing.
    lite = workdir / "copy.db"
    code, out, err = _cli("store", "copy", url, str(lite))
    assert code == 0, err
    assert out.count(": copied") == 2, out
    code, out, err = _cli("store", "copy", url, str(lite))
    assert out.count(": already there") == 2 and code == 0, out

    code, pg_rows, err = _cli("results", "--store", url, "--format", "json")
    assert code == 0, err
    lite_rows = run_cli("results", "--store", str(lite), "--format", "json", check=True).stdout
    assert _figures(json.loads(pg_rows)) == _figures(json.loads(lite_rows))
    assert all(r["tps"] > 0 for r in json.loads(pg_rows))

    for store, out_dir in ((url, workdir / "pg-report"), (str(lite), workdir / "lite-report")):
        code, _, err = _cli("report", "--store", store, "--out", str(out_dir), "--study-id",
                            str(next(s["study_id"] for s in studies if s["name"] == "pgstore-a")))
        assert code == 0, err
    assert (workdir / "pg-report" / "tables.json").read_text() == \
        (workdir / "lite-report" / "tables.json").read_text()

    ids = ",".join(str(s["study_id"]) for s in studies)
    code, _, err = _cli("compare", "--store", url, "--studies", ids, "--out",
                        str(workdir / "pg-compare"))
    assert code == 0, err
    assert (workdir / "pg-compare" / "report.html").is_file()

    assert SECRET not in _every_text(store_server), "the password never reaches the store"
    assert SECRET not in out_a + err_a + out + err


def test_store_copy_round_trips_figures_byte_equal(store_server: Cluster, workdir: Path) -> None:
    (workdir / "s.yaml").write_text(STUDY.format(name="pgstore-copy"))
    lite = workdir / "first.db"
    run_cli("run", str(workdir / "s.yaml"), "--store", str(lite), "--no-report", check=True)
    url = _url(store_server)
    back = workdir / "back.db"
    for source, dest in ((str(lite), url), (url, str(back))):
        code, out, err = _cli("store", "copy", source, dest)
        assert code == 0 and ": copied" in out, err
    tables = ("trials", "progress", "series", "metrics", "waits", "details", "statements", "steps",
              "point_summaries")
    with sqlite3.connect(lite) as a, sqlite3.connect(back) as b:
        for table in tables:
            query = f"SELECT * FROM {table} ORDER BY 1, 2, 3"  # noqa: S608
            assert a.execute(query).fetchall() == b.execute(query).fetchall(), table
        query = "SELECT name, spec_yaml, spec_json, fingerprint, seed, created_at FROM studies"
        assert a.execute(query).fetchall() == b.execute(query).fetchall()


def test_a_postgresql_store_of_the_previous_schema_is_migrated(
        store_server: Cluster, workdir: Path) -> None:
    url = _url(store_server)
    os.environ["PGPASSWORD"] = SECRET
    try:
        conn = connect(StoreAddress.parse(url))
        for step in range(1, SCHEMA_VERSION):  # the store as the previous teiten left it
            conn.execute("BEGIN")
            MIGRATIONS[step](conn)
            conn.execute("INSERT INTO meta VALUES ('schema_version', ?) ON CONFLICT (key) DO "
                         "UPDATE SET value = excluded.value", (str(step),))
            conn.execute("COMMIT")
        conn.execute("INSERT INTO studies (name, source, spec_yaml, spec_json, seed, state, "
                     "created_at, fingerprint, teiten_version) VALUES ('old', 'builtin:x', '', "
                     "'{}', 1, 'finished', 't0', '{}', '0')")
        conn.execute("INSERT INTO trials (study_id, trial_id, order_index, server, workload, "
                     "clients, threads, repetition, planned_duration_s, status, tps) VALUES "
                     "(1, 'a1', 0, 's', 'select-only', 1, 1, 1, 1.0, 'ok', 1234.5)")
        conn.close()
        store = Store.open(url)
        try:
            assert store._version() == SCHEMA_VERSION
            [record] = store.records(1)
            assert record.planned.purpose == "" and record.figures is None
            assert store.trials(1)[0]["tps"] == 1234.5
        finally:
            store.close()
    finally:
        del os.environ["PGPASSWORD"]


def test_without_a_password_the_store_is_refused_in_one_line(
        store_server: Cluster, workdir: Path) -> None:
    code, out, err = _cli("studies", "--store", _url(store_server), password=None)
    assert code == 2, err
    assert err.startswith(f"teiten: error: cannot reach the store {_url(store_server)} ("), err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_a_database_whose_teiten_schema_is_not_a_store_is_refused(
        store_server: Cluster, workdir: Path) -> None:
    with psycopg.connect(host="127.0.0.1", port=store_server.port, user="bench",
                         password=SECRET, dbname="teiten_store", autocommit=True) as conn:
        conn.execute("CREATE SCHEMA teiten")
        conn.execute("CREATE TABLE teiten.orders (id int)")
    (workdir / "s.yaml").write_text(STUDY.format(name="pgstore-foreign"))
    code, _, err = _cli("run", str(workdir / "s.yaml"), "--store", _url(store_server))
    assert code == 2, err
    assert err.strip() == (f"teiten: error: the schema teiten of {_url(store_server)} holds tables "
                           "that are not a teiten store's; give another database")
    with psycopg.connect(host="127.0.0.1", port=store_server.port, user="bench",
                         password=SECRET, dbname="teiten_store") as conn:
        tables = {r[0] for r in conn.execute(
            "SELECT tablename FROM pg_tables WHERE schemaname = 'teiten'")}
    assert tables == {"orders"}, "nothing is added to a schema that is not ours"


def _ok(cluster: Cluster) -> int:
    try:
        with psycopg.connect(host="127.0.0.1", port=cluster.port, user="bench", password=SECRET,
                             dbname="teiten_store", connect_timeout=5) as conn:
            return int(conn.execute("SELECT count(*) FROM teiten.trials WHERE status='ok'")
                       .fetchone()[0])
    except psycopg.Error:  # no store yet
        return 0


def test_a_store_that_goes_away_mid_study_keeps_its_trials_and_resume_finishes(
        store_server: Cluster, workdir: Path) -> None:
    (workdir / "s.yaml").write_text(STUDY.format(name="pgstore-gone").replace(
        "repetitions: 2", "repetitions: 4"))
    url = _url(store_server)
    before = clusters_snapshot("pgstore-gone")
    proc = start_cli("run", str(workdir / "s.yaml"), "--store", url, "--no-report",
                     env={"PGPASSWORD": SECRET})
    deadline = time.monotonic() + 300
    while _ok(store_server) < 1:
        assert proc.poll() is None, proc.communicate()[1]
        assert time.monotonic() < deadline, "no trial finished"
        time.sleep(0.2)
    store_server.stop()
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == 1, err
    assert "Traceback" not in err, err
    last = err.strip().splitlines()[-1]
    assert last.startswith(f"teiten: error: the store {url} stopped answering ("), last
    assert last.endswith(f"every finished trial is kept in it: once it answers again, 'teiten "
                         f"resume --store {url}' finishes the study"), last
    assert clusters_snapshot("pgstore-gone") == before, "its clusters are gone"

    store_server.start(store_server.root / "logs")
    url = _url(store_server)  # a fresh port
    assert _ok(store_server) >= 1, "the trials finished before it went away are kept"
    code, out, err = _cli("store", "copy", url, str(workdir / "early.db"))
    assert code == 0 and out.endswith(": not copied: running\n"), out + err
    os.environ["PGPASSWORD"] = SECRET
    try:
        other = Store.open(url)  # another teiten, on this machine or another, holds the study
        with other.claimed(1):
            code, _, err = _cli("resume", "--store", url, "--no-report")
        other.close()
    finally:
        del os.environ["PGPASSWORD"]
    assert code == 2 and err.strip().endswith(
        f"study 1 of {url} is being run, resumed or cleaned by another teiten (on this machine "
        "or another); wait until it ends"), err
    code, _, err = _cli("resume", "--store", url, "--no-report")
    assert code == 0, err
    code, out, err = _cli("results", "--store", url, "--format", "json")
    assert [r["status"] for r in json.loads(out)] == ["ok"] * 4, out
    assert clusters_snapshot("pgstore-gone") == before


ENCODED = STUDY + 'description: "読み取りの比較, café"\n'


@pytest.mark.parametrize("encoding", ["SQL_ASCII", "UTF8"])
def test_a_store_in_a_database_of_either_encoding_reads_back(
        store_server: Cluster, workdir: Path, encoding: str) -> None:
    """initdb --no-locale gives SQL_ASCII where the environment has no UTF-8 locale (Debian's
    PostgreSQL 15 does): psycopg then hands the catalogue's names back as bytes unless the
    connection says which encoding it speaks. A study with non-ASCII text runs into either, and
    studies, results and report read it back."""
    database = f"store_{encoding.lower()}"
    with store_server.connect() as conn:
        conn.execute(f"CREATE DATABASE {database} ENCODING '{encoding}' LC_COLLATE 'C' "
                     "LC_CTYPE 'C' TEMPLATE template0 OWNER bench")
    url = f"postgresql://bench@127.0.0.1:{store_server.port}/{database}"
    (workdir / "s.yaml").write_text(ENCODED.format(name=f"pgstore-{encoding.lower()}"))
    code, _, err = _cli("run", str(workdir / "s.yaml"), "--store", url, "--no-report")
    assert code == 0, err
    code, out, err = _cli("studies", "--store", url, "--format", "json")
    assert code == 0, err
    [study] = json.loads(out)
    assert study["state"] == "finished" and study["ok"] == 2, study
    code, out, err = _cli("results", "--store", url, "--format", "json")
    assert code == 0, err
    assert len(json.loads(out)) == 2 and all(r["tps"] > 0 for r in json.loads(out))
    code, _, err = _cli("report", "--store", url, "--out", str(workdir / "report"))
    assert code == 0, err
    assert "読み取りの比較, café" in (workdir / "report" / "report.md").read_text()
    with psycopg.connect(host="127.0.0.1", port=store_server.port, user="bench",
                         password=SECRET, dbname=database, client_encoding="UTF8") as conn:
        spec = conn.execute("SELECT spec_yaml FROM teiten.studies").fetchone()[0]
    assert 'description: "読み取りの比較, café"' in spec, "stored as UTF-8 text"


def test_a_database_that_cannot_hold_the_studys_text_is_named_in_one_line(
        store_server: Cluster, workdir: Path) -> None:
    with store_server.connect() as conn:
        conn.execute("CREATE DATABASE store_latin1 ENCODING 'LATIN1' LC_COLLATE 'C' "
                     "LC_CTYPE 'C' TEMPLATE template0 OWNER bench")
    url = f"postgresql://bench@127.0.0.1:{store_server.port}/store_latin1"
    (workdir / "s.yaml").write_text(ENCODED.format(name="pgstore-latin1"))
    code, out, err = _cli("run", str(workdir / "s.yaml"), "--store", url, "--no-report")
    assert code == 2, err
    [line] = err.strip().splitlines()
    assert line.startswith(f"teiten: error: the database of the store {url} has the encoding "
                           "LATIN1, which cannot hold a text of this study ("), line
    assert line.endswith("); give a database made with ENCODING 'UTF8'"), line
    # Refused before anything is made or downloaded (Store.check sends it the study's text):
    # not even the schema is made, so 'studies' finds no store there.
    code, out, err = _cli("studies", "--store", url, "--format", "json")
    assert code == 2 and err.startswith(f"teiten: error: no teiten store in {url}"), (code, err)


def test_point_summaries_in_postgresql_are_timestamped_and_read_as_in_sqlite(
        store_server: Cluster, workdir: Path) -> None:
    """The view teiten_points has the same columns in both stores; finished_at is a timestamptz
    in PostgreSQL and ISO 8601 text with its offset in SQLite; summaries copied across, or
    computed in PostgreSQL, give the same exports as those of the SQLite file."""
    lite = build(workdir / "truth.db", Truth(blocks=10, cv=0.02, ratio={("pgecons-read", 2): 0.8}))
    run_cli("store", "summarize", "--store", str(lite), check=True)
    url = _url(store_server)
    code, out, err = _cli("store", "copy", str(lite), url)
    assert code == 0 and ": copied" in out, err
    with psycopg.connect(host="127.0.0.1", port=store_server.port, user="bench",
                         password=SECRET, dbname="teiten_store") as conn:
        types = dict(conn.execute(
            "SELECT column_name, data_type FROM information_schema.columns WHERE table_schema = "
            "'teiten' AND table_name = 'point_summaries'").fetchall())
        view = [r[0] for r in conn.execute(
            "SELECT column_name FROM information_schema.columns WHERE table_schema = 'teiten' AND "
            "table_name = 'teiten_points' ORDER BY ordinal_position")]
        times = conn.execute("SELECT DISTINCT time FROM teiten.teiten_points").fetchall()
    assert types["finished_at"] == types["committed_at"] == "timestamp with time zone"
    assert times == [(datetime(2026, 11, 26, 0, 2, tzinfo=UTC),)]
    with sqlite3.connect(lite) as conn:
        assert [r[1] for r in conn.execute("PRAGMA table_info(teiten_points)")] == view
        assert conn.execute("SELECT DISTINCT time FROM teiten_points").fetchall() == [
            ("2026-11-26T00:02:00+00:00",)]
    exports = {}
    for fmt in ("openmetrics", "bmf"):
        code, exports[fmt], err = _cli("results", "--store", url, "--format", fmt)
        assert code == 0, err
        assert exports[fmt] == run_cli("results", "--store", str(lite), "--format", fmt,
                                       check=True).stdout, fmt
    # Computed in PostgreSQL (written there as timestamptz), the same again.
    code, out, err = _cli("store", "summarize", "--store", url, "--study-id", "1")
    assert code == 0 and out == "study 1 (truth): 12 point summaries\n", err
    code, again, err = _cli("results", "--store", url, "--format", "openmetrics")
    assert code == 0 and again == exports["openmetrics"], err
    back = workdir / "back.db"
    code, out, err = _cli("store", "copy", url, str(back))
    assert code == 0 and ": copied" in out, err
    query = "SELECT * FROM point_summaries ORDER BY workload, clients, server"
    with sqlite3.connect(lite) as a, sqlite3.connect(back) as b:
        assert a.execute(query).fetchall() == b.execute(query).fetchall()
