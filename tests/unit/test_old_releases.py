"""Servers before 9.6 (issue 57, item 7): every built-in study, resolved for a server of 9.3, 9.4
and 9.5, asks nothing of it that such a server would refuse. No release before 9.6 installs on
this machine, so the settings teiten would write (the profile's, the study's, what a workload
needs, and those of each start) are checked against the setting names of each release, and the
monitors' SQL against the objects each release has, both kept in tests/golden/releases/ with
their source on their first line. The same code on a real 9.6 server: tests/integration/test_profiles.py
runs a study on 9.6 (and tests/integration/test_old_source.py one built from an old source tree)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from teiten import studies
from teiten.analysis.summary import without_waits
from teiten.installs.releases import PGBENCH_OPTIONS_SINCE, Release
from teiten.model.results import ServerRecord
from teiten.monitors.database import activity_sql, views
from teiten.servers import profiles
from teiten.servers.cluster import runtime_settings
from teiten.servers.sql import housekeeping
from teiten.spec import load_file
from teiten.words.i18n import notice_text
from teiten.workloads import resolve
from teiten.workloads.statements import suite

GOLDEN = Path(__file__).parents[1] / "golden" / "releases"
OLD = ("9.3", "9.4", "9.5")
# A large machine and many clients: the profile's every figure at its most.
SIZING = profiles.Sizing(ram_bytes=256 * profiles.GB, disk_free_bytes=2000 * profiles.GB,
                         max_clients=400, data_bytes=profiles.pgbench_data_bytes(7000, 80))


def _lines(name: str) -> list[str]:
    lines = (GOLDEN / name).read_text().splitlines()
    assert lines[0].startswith("# source: ") and "http" in lines[0], f"{name} names no source"
    return [line for line in lines[1:] if line.strip()]


def known_settings(version: str) -> dict[str, tuple[str, ...] | None]:
    """The settings of ``version``: name (lower case) -> the values it takes, where listed."""
    out: dict[str, tuple[str, ...] | None] = {}
    for line in _lines(f"settings-{version}.txt"):
        name, _, values = line.partition(" = ")
        out[name.lower()] = tuple(values.split()) if values else None
    return out


def later_objects(release: Release) -> set[str]:
    """The functions, views, columns and extensions that came after ``release``."""
    rows = [line.split() for line in _lines("objects.txt")]
    return {name for name, since in rows if Release.of(since) > release}


def written(study: str, release: Release) -> list[tuple[str, dict[str, str]]]:
    """Each server of ``study`` that a server of ``release`` could run, and the settings teiten
    would write for it: its profile's and the study's, what the study's workloads need, and
    those of each start."""
    loaded = load_file(studies.path_of(study))
    needs = [w.server_settings() for w in resolve(loaded)]
    out = []
    for _, server in loaded.study.server_matrix():
        if server.install is None:
            continue  # an external server: teiten writes none of its settings
        if server.replicas and server.replication != "native":
            continue  # refused before 9.6 by the study's check: test_streaming_standbys_need_96
        conf = profiles.merged(server.profile, server.settings, SIZING, release)
        for need in needs:
            conf = profiles.with_needs(conf, need, server.settings, release)
        conf.update(runtime_settings(5432, Path("/tmp/teiten-x"), "127.0.0.1", Path("/tmp/logs")))
        out.append((server.name, conf))
    return out


@pytest.mark.parametrize("version", OLD)
def test_every_builtin_study_writes_only_settings_an_old_release_has(version: str) -> None:
    """Nothing a 9.3, 9.4 or 9.5 server would refuse at start ('unrecognized configuration
    parameter', or an enum's value it does not take), for any server of any built-in study."""
    release, known = Release.of(version), known_settings(version)
    refused, servers = [], 0
    for study in studies.names():
        for server, conf in written(study, release):
            servers += 1
            for name, value in conf.items():
                if "." in name:
                    continue  # an extension's setting: known once its library is loaded
                values = known.get(name.lower(), ())
                if values == ():
                    refused.append(f"{study}/{server}: {name}")
                elif values is not None and value.strip("'") not in values:
                    refused.append(f"{study}/{server}: {name} = {value}")
    assert servers > 40  # every built-in study's servers, at every core count
    assert not refused, f"PostgreSQL {version} would refuse: {sorted(set(refused))}"


def test_the_wal_between_checkpoints_is_the_same_volume_on_every_release() -> None:
    """pgecons: max_wal_size from 9.5, checkpoint_segments before, with 9.5's release notes'
    max_wal_size = (3 * checkpoint_segments) * 16MB; a name no release both lacks and writes."""
    conf = {v: profiles.settings("pgecons", SIZING, Release.of(v)) for v in (*OLD, "9.6", "18")}
    assert conf["9.5"]["max_wal_size"] == conf["18"]["max_wal_size"] == "163840MB"
    assert conf["9.3"]["checkpoint_segments"] == conf["9.4"]["checkpoint_segments"] == "3413"
    assert 3 * 3413 * 16 <= 163840 < 3 * 3414 * 16
    assert all(("max_wal_size" in c) != ("checkpoint_segments" in c) for c in conf.values())


@pytest.mark.parametrize("version", OLD)
def test_the_monitors_of_an_old_release_name_only_what_it_has(version: str) -> None:
    """The database monitor's queries (pg_stat_activity, the statistics views with
    pg_stat_statements) and the columns that key their rows name no function, view or column
    that came after the release; and before 9.6 it samples no wait event."""
    release = Release.of(version)
    texts = [activity_sql(release)]
    for view in views(release, statements=True):
        texts += [view.sql, *view.key]
    words = set(re.findall(r"[a-z_]+", " ".join(texts).lower()))
    assert not words & later_objects(release), words & later_objects(release)
    assert "wait_event" not in activity_sql(release) and not release.wait_events
    assert ("pg_prewarm" in later_objects(release)) == (not release.pg_prewarm)


def test_the_newest_monitors_name_what_came_later() -> None:
    """The same words are found where a release has them, so that the test above can fail."""
    words = " ".join([activity_sql(Release(180000)),
                      *(v.sql + " " + " ".join(v.key) for v in views(Release(180000), statements=True))])
    assert {"backend_type", "wait_event", "pg_stat_io", "pg_stat_checkpointer", "toplevel"} <= \
        set(re.findall(r"[a-z_]+", words))
    assert "pg_wal_lsn_diff" in views(Release(100000), statements=False)[-1].sql


def test_streaming_standbys_need_96() -> None:
    """The servers left out above (standbys teiten makes) are refused before 9.6 by the study's
    check (run/check.py, _check_standbys), which asks the same fact."""
    assert [Release.of(v).streaming_standbys for v in (*OLD, "9.6", "10")] == [False] * 3 + [True] * 2
    # the wal_level teiten gives a primary, 'replica', which 9.5 calls 'hot_standby'
    assert "replica" not in (known_settings("9.5")["wal_level"] or ("replica",))
    assert "hot_standby" in (known_settings("9.5")["wal_level"] or ())


def test_release_of_every_way_a_version_is_written() -> None:
    assert [Release.of(v).num for v in ("9.3.25", "9.6", "9.6.10", "10.23", "17.2", "18beta1")] == \
        [90300, 90600, 90600, 100000, 170000, 180000]
    assert [Release.of_num(n).name for n in (90325, 90610, 100023, 180001)] == ["9.3", "9.6", "10", "18"]
    assert str(PGBENCH_OPTIONS_SINCE["max_tries"]) == "15"
    assert Release.of("9.4").wal_volume(48 * 1024 * 1024) == {"checkpoint_segments": "1"}
    with pytest.raises(ValueError, match="not a PostgreSQL version"):
        Release.of("head")


def test_the_report_says_which_servers_had_no_wait_events() -> None:
    """A notice for each server before 9.6, read from what the server said of itself, in the
    report's two languages."""
    rows = [ServerRecord(name, i, "local", {}, {"version": version, "version_num": num})
            for i, (name, version, num) in enumerate([("pg95", "9.5.25", 90525),
                                                     ("pg96", "9.6.10", 90610), ("pg93", "9.3.25", 90325)])]
    found = without_waits(rows)
    assert [n.params["server"] for n in found] == ["pg95", "pg93"]
    assert notice_text(found[0], "en") == (
        "pg95 runs PostgreSQL 9.5.25, which has no wait events (they came in 9.6): no wait events "
        "were sampled on it, and the report shows none for it.")
    assert "9.5.25" in notice_text(found[0], "ja") and "待機イベント" in notice_text(found[0], "ja")


@pytest.mark.parametrize("version", OLD)
def test_teitens_own_connections_set_only_what_an_old_release_has(version: str) -> None:
    """Every connection of teiten's sets its timeouts off (-c in its options, PGOPTIONS of
    pgbench -i); a server refuses a connection that names a setting it lacks."""
    options = housekeeping(Release.of(version))
    names = re.findall(r"-c (\w+)=", options)
    assert names and set(names) <= set(known_settings(version)), options
    assert "idle_in_transaction_session_timeout" in housekeeping(Release.of("9.6"))


def test_a_suite_says_the_release_its_sql_needs() -> None:
    """accesslog's parallel query (max_parallel_workers_per_gather, a setting of 9.6) and iot's
    BRIN indexes (9.5): their setup refuses an older server before any SQL runs."""
    assert suite("accesslog").since == Release.of("9.6") and suite("iot").since == Release.of("9.5")
    assert "max_parallel_workers_per_gather" not in known_settings("9.5")
    assert "max_wal_size" in known_settings("9.5")  # and what 9.5 has, the file says
