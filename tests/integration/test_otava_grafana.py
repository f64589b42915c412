"""Results others read (issue 35, item 6): the files under docs/ that point Apache Otava and
Grafana at the view ``teiten.teiten_points`` of a PostgreSQL store, tested on a real one.

The store holds the line of six commits of tests/e2e/test_timeline.py (study k compares c(k)
with c(k+1); from c3 on every build is 30% slower), copied into a PostgreSQL store whose role
needs a password over TCP, with its studies finishing an hour apart as a fleet's do. (a) Apache
Otava, from PyPI into a virtual environment of its own under the tests' cache, runs ``analyze``
with docs/otava/otava.yaml (the password from its environment) and finds one change at each
client count, between the same two builds as ``teiten timeline`` on that store. (b) Every SQL
query of docs/grafana/teiten-dashboard.json (its panels', its variables', its annotation's),
with the variables and Grafana's macros replaced as Grafana would, runs against the view as a
role that may read nothing else, and returns the columns its panel reads. (c) Neither file holds a password.
"""

from __future__ import annotations

import json
import re
import sqlite3
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import psycopg
import pytest
import yaml
from tests import otava, sharedstore
from tests.conftest import ROOT, start_cli
from tests.e2e.test_timeline import COMMITS, SLOW_FROM, _line_of_commits
from tests.sharedstore import SECRET

DASHBOARD = ROOT / "docs" / "grafana" / "teiten-dashboard.json"
DATASOURCE = ROOT / "docs" / "grafana" / "teiten-datasource.yaml"
def _cli(*args: str) -> tuple[int, str, str]:
    """teiten on the PostgreSQL store, its password from libpq's environment."""
    proc = start_cli(*args, env={"PGPASSWORD": SECRET})
    out, err = proc.communicate(timeout=300)
    return proc.returncode, out, err


@pytest.fixture(scope="module")
def store(pg18, teiten_home: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """The line of commits in a PostgreSQL store; its URL, the libpq keywords of its role, and
    the testbed of its studies."""
    lite = _line_of_commits(tmp_path_factory.mktemp("line") / "line.db")
    with sqlite3.connect(lite) as conn:
        # The truth stores' studies all began and finished at one time; a fleet's run one after
        # another (and ``store copy`` tells studies apart by name, start and fingerprint).
        for table, column in (("studies", "created_at"), ("point_summaries", "finished_at")):
            conn.execute(f"UPDATE {table} SET {column} = strftime('%Y-%m-%dT%H:%M:%S+00:00', "  # noqa: S608
                         f"{column}, ({'id' if table == 'studies' else 'study_id'} - 5) || ' hours')")
    with sharedstore.serve(pg18) as cluster:
        url = sharedstore.url(cluster)
        code, out, err = _cli("store", "copy", str(lite), url)
        assert code == 0 and out.count(": copied") == 5, err
        keywords = {"host": "127.0.0.1", "port": cluster.port, "user": "bench", "dbname": "teiten_store",
                    "password": SECRET}
        with psycopg.connect(**keywords) as conn:
            [testbed] = conn.execute("SELECT DISTINCT testbed FROM teiten.teiten_points").fetchone()
        with cluster.connect("teiten_store") as conn:
            # A role that may read the view and nothing else, as the README grants it.
            conn.execute("CREATE ROLE reader NOLOGIN")
            conn.execute("GRANT USAGE ON SCHEMA teiten TO reader; "
                         "GRANT SELECT ON teiten.teiten_points TO reader")
        yield {"url": url, "keywords": keywords, "testbed": testbed, "cluster": cluster}


def _timeline_changes(store: dict[str, Any]) -> dict[int, tuple[str, str]]:
    """``teiten timeline``'s change points: client count -> (last build before, first after),
    each as the 12 hex digits it prints."""
    code, out, err = _cli("timeline", "truth", "--store", store["url"])
    assert code == 0, err
    found = re.findall(r"^  pgecons-read at (\d+) clients?: between ([0-9a-f]{12}) .* and ([0-9a-f]{12}) ",
                       out, re.MULTILINE)
    return {int(c): (before, after) for c, before, after in found}


def test_otava_finds_the_change_where_teiten_timeline_does(store: dict[str, Any], tmp_path: Path) -> None:
    timeline = _timeline_changes(store)
    assert timeline == {c: (COMMITS[SLOW_FROM - 1][:12], COMMITS[SLOW_FROM][:12]) for c in (1, 4)}, timeline
    query = yaml.safe_load(otava.CONFIG.read_text())["tests"]["teiten"]["query"]
    keywords = store["keywords"]
    for clients in (1, 4):
        branch = f"{store['testbed']}/truth/pgecons-read/clients={clients}"
        groups = otava.analyze(keywords, SECRET, branch, tmp_path)
        assert len(groups) == 1 and len(groups[0]["changes"]) == 1, groups
        [change] = groups[0]["changes"]
        assert change["metric"] == "tps" and -40 < float(change["forward_change_percent"]) < -20, change
        # The series Otava read, in its order: the boundary is between the builds at index - 1
        # and index, and the change names the first build after it.
        with psycopg.connect(**keywords) as conn:
            builds = [r[1] for r in conn.execute(query.replace("%{BRANCH}", "%s"), (branch,))]
        assert builds == COMMITS, "one point per build, in first-parent order"
        index = change["index"]
        assert groups[0]["attributes"]["build"] == builds[index]
        assert groups[0]["attributes"]["subject"] == f"commit {index}"
        assert (builds[index - 1][:12], builds[index][:12]) == timeline[clients]


def _grafana_queries(dashboard: dict[str, Any]) -> list[tuple[str, str, str, list[str]]]:
    """Every SQL query of the dashboard: (a panel's type, variable or annotation; where it is;
    the SQL; the columns it must return). A time series names the middle of its band first,
    then the band's low and high fields."""
    queries = []
    for panel in dashboard["panels"]:
        # The fields the panel names: its overrides', its table's columns; a time series' time.
        named = [o["matcher"]["options"] for o in panel["fieldConfig"]["overrides"]]
        for step in panel.get("transformations", []):
            named += list(step["options"].get("indexByName", {}))
        if panel["type"] == "timeseries":
            [low_high] = [o for o in panel["fieldConfig"]["overrides"]
                          if o["properties"][0]["id"] == "custom.fillBelowTo"]
            middle = {"low": "value", "low_pct": "estimate_pct"}[low_high["matcher"]["options"]]
            named = [middle, *named, "time", "build"]
        for target in panel["targets"]:
            queries.append((panel["type"], f"panel {panel['title']!r}", target["rawSql"], named))
    for variable in dashboard["templating"]["list"]:
        queries.append(("variable", f"variable {variable['name']}", variable["query"], [variable["name"]]))
    for note in dashboard["annotations"]["list"]:
        queries.append(("annotation", f"annotation {note['name']}", note["target"]["rawSql"],
                        ["time", "text", "tags"]))
    return queries


def _as_grafana_sends(sql: str) -> str:
    """The query with Grafana's macro and ``${name:sqlstring}`` variables as psycopg parameters
    (a quoted literal each, as Grafana's sqlstring format gives); nothing else may be left."""
    sql = sql.replace("$__timeFilter(time)", "time BETWEEN %(from)s AND %(to)s")
    sql = re.sub(r"\$\{(\w+):sqlstring\}", r"%(\1)s", sql)
    assert "$" not in sql, f"a Grafana variable or macro the test does not know: {sql}"
    return sql


def test_every_query_of_the_grafana_dashboard_runs_against_the_view(store: dict[str, Any]) -> None:
    dashboard = json.loads(DASHBOARD.read_text())
    assert dashboard["__inputs"][0]["name"] == "DS"
    datasources = [t["datasource"] for p in dashboard["panels"] for t in p["targets"]]
    assert {d["uid"] for d in datasources} == {"${DS}"}
    assert [v["name"] for v in dashboard["templating"]["list"]] == ["testbed", "study", "benchmark", "server"]
    values = {"testbed": store["testbed"], "study": "truth", "benchmark": "truth/pgecons-read/clients=1",
              "server": "pg18", "from": datetime(2026, 11, 1, tzinfo=UTC),
              "to": datetime(2026, 12, 1, tzinfo=UTC)}
    queries = _grafana_queries(dashboard)
    assert len(queries) == 3 + 4 + 1
    with store["cluster"].connect("teiten_store") as conn:
        conn.execute("SET ROLE reader")
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute("SELECT 1 FROM teiten.point_summaries")
        for kind, where, sql, named in queries:
            cursor = conn.execute(_as_grafana_sends(sql), values)
            columns = [c.name for c in cursor.description]
            rows = [dict(zip(columns, r, strict=True)) for r in cursor.fetchall()]
            assert rows and set(named) <= set(columns), (where, columns, named)
            if "time" in columns:
                assert all(isinstance(r["time"], datetime) and r["time"].tzinfo for r in rows), where
            if kind == "variable":
                assert values[where.split()[1]] in [r[columns[0]] for r in rows], (where, rows)
            if kind == "timeseries":
                # The server's series: one point per study that ran pg18 (c1..c5), inside its band.
                assert [r["build"] for r in rows] == COMMITS[1:], where
                low, mid, high = named[1], named[0], named[2]  # the band's fields
                assert all(r[low] <= r[mid] <= r[high] for r in rows), (where, rows)
            if kind == "table":
                # The latest study (c4 against c5, both slow): each point's verdict and its build.
                assert {(r["server"], r["build"]) for r in rows} == {("pg17", COMMITS[4]), ("pg18", COMMITS[5])}
                assert {r["verdict"] for r in rows if r["baseline"]} <= {"no-difference", "cannot-tell"}, rows


def _secrets(node: Any, path: str = "") -> Iterator[tuple[str, Any]]:
    """Every value under a key that names a password or a secret, anywhere in a parsed file."""
    if isinstance(node, dict):
        for key, value in node.items():
            if re.search(r"password|secret|passwd|token", str(key), re.IGNORECASE):
                yield f"{path}/{key}", value
            yield from _secrets(value, f"{path}/{key}")
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from _secrets(value, f"{path}/{i}")


def test_the_docs_files_hold_no_password() -> None:
    config = yaml.safe_load(otava.CONFIG.read_text())
    assert "postgres" not in config, "Otava's connection comes from its environment"
    assert list(_secrets(config)) == []
    assert list(_secrets(json.loads(DASHBOARD.read_text()))) == []
    # Grafana's provisioning takes the password from the environment Grafana runs in.
    assert list(_secrets(yaml.safe_load(DATASOURCE.read_text()))) == [
        ("/datasources/0/secureJsonData/password", "${PGPASSWORD}")]
    for path in (otava.CONFIG, DASHBOARD, DATASOURCE):
        text = path.read_text()
        assert SECRET not in text and not re.search(r"postgres(ql)?://[^@\s/]*:[^@\s/]*@", text), path
