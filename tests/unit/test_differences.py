"""Like with like: what the servers of a study differ in, and why (declared by the study, a
version's default, initdb, the build, the pgbench that drove them)."""

from __future__ import annotations

from typing import Any

import pytest

from teiten.analysis.differences import declared_values, differences, setting_text
from teiten.model.results import ServerRecord


def _server(name: str, install: str, *, version: str, checksums: bool = False,
            defaults: dict[str, str] | None = None, settings: dict[str, Any] | None = None,
            spec: dict[str, Any] | None = None, origin: str = "pypi",
            cflags: str = "-O2") -> ServerRecord:
    description: dict[str, Any] = {
        "version": version, "data_checksums": checksums, "origin": origin,
        "pg_config": {"CONFIGURE": "'--with-icu'", "CFLAGS": cflags, "CC": "gcc"},
        "cluster": {"encoding": "UTF8", "collate": "C", "ctype": "C", "wal_segment_size": "16MB",
                    "block_size": "8192"},
        "defaults": defaults if defaults is not None else {"effective_io_concurrency": "1"},
        "settings": settings or {"shared_buffers": {"setting": "16384", "unit": "8kB",
                                                    "source": "configuration file"}},
        "pgbench": version,
    }
    return ServerRecord(name, 0, "local", {"name": name, "install": install, "profile": "pgecons",
                                           "initdb": {"encoding": "UTF8"}, **(spec or {})},
                        description)


def test_two_versions_list_the_version_its_defaults_and_what_only_one_has() -> None:
    old = _server("pg17", "17", version="17.11",
                  defaults={"effective_io_concurrency": "1", "ssl_ecdh_curve": "prime256v1",
                            "log_connections": "off"})
    new = _server("pg18", "18", version="18.6",
                  defaults={"effective_io_concurrency": "16", "io_method": "worker",
                            "log_connections": ""})
    found = {d.what: (d.values, d.cause) for d in differences([old, new])}
    assert found == {
        "version": (("17.11", "18.6"), "declared"),
        "effective_io_concurrency": (("1", "16"), "version-default"),
        "log_connections": (("off", "''"), "same-meaning"),
        "io_method": (("—", "worker"), "version-only"),
        "ssl_ecdh_curve": (("prime256v1", "—"), "version-only"),
        "pgbench": (("17.11", "18.6"), "client"),
    }
    assert differences([old, new])[0].what == "version"  # declared first


def test_an_undeclared_initdb_default_and_build_are_listed_as_such() -> None:
    a = _server("a", "18", version="18.6", checksums=False)
    b = _server("b", "18", version="18.6", checksums=True, origin="source", cflags="-O0")
    found = {d.what: (d.values, d.cause) for d in differences([a, b])}
    assert found == {"data_checksums": (("off", "on"), "initdb"),
                     "origin": (("pypi", "source"), "build"),
                     "pg_config CFLAGS": (("+-O2", "+-O0"), "build")}


def test_what_the_study_sets_differently_is_declared() -> None:
    a = _server("a", "17", version="17.11")
    b = _server("b", "17", version="17.11", checksums=True,
                settings={"shared_buffers": {"setting": "32768", "unit": "8kB",
                                             "source": "configuration file"}},
                spec={"initdb": {"encoding": "UTF8", "data_checksums": True},
                      "settings": {"shared_buffers": "256MB"}, "cores": 2})
    found = {d.what: (d.values, d.cause) for d in differences([a, b])}
    assert found == {"cores": (("—", "2"), "declared"),
                     "data_checksums": (("off", "on"), "declared"),
                     "shared_buffers": (("128MB", "256MB"), "declared")}
    assert declared_values([a.setup, b.setup]) == [
        ("cores", ("—", "2")), ("initdb.data_checksums", ("—", "on")),
        ("settings.shared_buffers", ("—", "256MB"))]


def test_alike_servers_and_a_single_server_have_no_differences() -> None:
    assert differences([_server("a", "17", version="17.11")]) == ()
    assert differences([_server("a", "17", version="17.11"),
                        _server("b", "17", version="17.11")]) == ()


def test_servers_read_back_before_defaults_were_recorded_list_no_settings() -> None:
    """A store written before teiten recorded each version's defaults: its servers' settings
    cannot be compared honestly, so none are listed (the version still is)."""
    old = _server("pg17", "17", version="17.11")
    new = _server("pg18", "18", version="18.6", defaults={"effective_io_concurrency": "16"})
    del old.description["defaults"]  # type: ignore[attr-defined]
    assert [d.what for d in differences([old, new])] == ["version", "pgbench"]


@pytest.mark.parametrize(("setting", "unit", "shown"), [
    ("16384", "8kB", "128MB"), ("60000", "ms", "1min"), ("3600", "s", "1h"), ("4096", "kB", "4MB"),
    ("200", "ms", "200ms"), ("16777216", "B", "16MB"), ("-1", "ms", "-1"), ("0", "kB", "0"),
    ("1.5", "ms", "1.5 ms"), ("", None, "''"), ("on", None, "on")])
def test_settings_are_shown_as_show_words_them(setting: str, unit: str | None, shown: str) -> None:
    assert setting_text(setting, unit) == shown


def test_the_compiler_of_each_build_is_listed_where_it_differs() -> None:
    """Maven's zonky builds of old versions were made with old compilers: version() says so,
    and a compiler that differs is a build difference, not a version's."""
    a = _server("pg96", "maven:9.6", version="9.6.24", origin="maven")
    b = _server("pg18", "18", version="18.6", origin="pypi")
    a.description["version_string"] = ("PostgreSQL 9.6.24 on x86_64-pc-linux-gnu, compiled by gcc "
                                       "(GCC) 4.4.7 20120313 (Red Hat 4.4.7-23), 64-bit")
    b.description["version_string"] = ("PostgreSQL 18.6 on x86_64-pc-linux-gnu, compiled by gcc "
                                       "(Debian 12.2.0-14+deb12u1) 12.2.0, 64-bit")
    found = {d.what: (d.values, d.cause) for d in differences([a, b])}
    assert found["compiler"] == (("gcc (GCC) 4.4.7 20120313 (Red Hat 4.4.7-23)",
                                  "gcc (Debian 12.2.0-14+deb12u1) 12.2.0"), "build")
    assert found["origin"] == (("maven", "pypi"), "build")


def test_a_long_list_of_settings_one_version_has_is_counted_and_kept_whole_in_a_csv() -> None:
    import csv
    import io
    from types import SimpleNamespace
    from typing import cast

    from teiten.analysis.model import ReportData
    from teiten.report.differences import difference_table
    from teiten.report.exports import csv_text, differences_table

    old = _server("pg96", "9.6", version="9.6.24",
                  defaults={f"old_{i:02}": "on" for i in range(3)})
    new = _server("pg18", "18", version="18.6",
                  defaults={f"new_{i:02}": str(i) for i in range(20)})
    data = cast(ReportData, SimpleNamespace(
        differences=differences([old, new]), servers=[old, new], lang="en"))
    notes = difference_table(data).notes
    assert notes[1] == ("Settings only some of the versions have: pg96: old_00 = on, old_01 = on, "
                        "old_02 = on; pg18: 20 settings (new_00 = 0, new_01 = 1, new_02 = 2, "
                        "new_03 = 3, new_04 = 4, new_05 = 5, and 14 more).")
    assert notes[2] == "Every difference, each of these settings included, is in tables/differences.csv."
    rows = list(csv.DictReader(io.StringIO(csv_text(differences_table(data)))))
    assert len([r for r in rows if r["cause"] == "version-only"]) == 23
    assert {"what": "new_19", "pg96": "—", "pg18": "19", "cause": "version-only"} in rows


def test_versions_across_origins_are_named_and_builds_of_one_version_are_not() -> None:
    from teiten.analysis.differences import origins_across_versions

    assert origins_across_versions({"a": ("17.0", "maven"), "b": ("17.1", "npm"),
                                    "c": ("17.2", "maven")}) == {"maven": ["a", "c"], "npm": ["b"]}
    assert origins_across_versions({"a": ("17.0", "maven"), "b": ("17.2", "maven")}) == {}
    # the same version from two origins: the build is what the study compares
    assert origins_across_versions({"a": ("15.14", "system"), "b": ("15.14", "pypi")}) == {}


@pytest.mark.parametrize("lang", ["en", "ja"])
def test_a_setting_spelt_anew_and_a_renamed_one_are_explained(lang: str) -> None:
    """log_connections off (≤17) and '' (18) mean the same; force_parallel_mode (≤15) is 16's
    debug_parallel_query: the table says so rather than leave the reader to guess."""
    from types import SimpleNamespace
    from typing import cast

    from teiten.analysis.model import ReportData
    from teiten.report.differences import difference_table

    old = _server("pg15", "15", version="15.14",
                  defaults={"log_connections": "off", "force_parallel_mode": "off",
                            "password_encryption": "scram-sha-256"})
    new = _server("pg18", "18", version="18.6",
                  defaults={"log_connections": "", "debug_parallel_query": "off",
                            "password_encryption": "scram-sha-256"})
    data = cast(ReportData, SimpleNamespace(
        differences=differences([old, new]), servers=[old, new], lang=lang))
    table = difference_table(data)
    rows = {what: tuple(c.text for c in cells) for what, cells in table.rows}
    assert rows["log_connections"] == ("off", "''", {
        "en": "the same meaning: 18 made log_connections a list of what to log, and '' (nothing) "
              "is the off of earlier versions",
        "ja": "同じ意味: 18 で log_connections は記録する項目の一覧になり、'' (なし) は以前の off と同じ",
    }[lang])
    assert table.notes[-1] == {
        "en": "One setting under two names (renamed in the version given): "
              "force_parallel_mode → debug_parallel_query (16).",
        "ja": "名前が変わった同じ設定（括弧内のバージョンで改名）: "
              "force_parallel_mode → debug_parallel_query (16)。"}[lang]
    on = _server("pg96", "9.6", version="9.6.24", defaults={"password_encryption": "on"})
    md5 = _server("pg13", "13", version="13.23", defaults={"password_encryption": "md5"})
    found = {d.what: d.cause for d in differences([on, md5])}
    assert found["password_encryption"] == "same-meaning"
    scram = _server("pg14", "14", version="14.23", defaults={"password_encryption": "scram-sha-256"})
    assert {d.what: d.cause for d in differences([md5, scram])}["password_encryption"] == \
        "version-default", "a default that changed its meaning is a difference"


@pytest.mark.parametrize("lang", ["en", "ja"])
def test_every_cause_has_its_words(lang: str) -> None:
    """The run's summary of the differences and the report's table name every cause."""
    from teiten.analysis.model import Difference
    from teiten.messages import tr

    causes = Difference.__doc__.split("why it differs: ")[1]  # type: ignore[union-attr]
    for cause in ("declared", "profile", "version", "same-meaning", "version-default",
                  "version-only", "initdb", "setting", "build", "client"):
        assert cause in causes
        assert tr(f"differences.cause.{cause}", lang)


def test_only_what_the_study_file_wrote_is_declared() -> None:
    """A store that keeps what the file wrote (teiten.run.record.server_spec): a default the model
    filled in beside a written key is teiten's default, not declared; a key written as a whole
    ({}) declares its defaults; a size reads as the file writes it (issue 54, item 13)."""
    guest = {"vcpus": 1, "memory": 1 << 30, "accelerator": "kvm", "cpus": None, "boot_timeout": 300.0}
    host = _server("host", "18", version="18.1", spec={"written": ["install", "name"]})
    vm = _server("guest", "18", version="18.1", spec={
        "vm": guest, "written": ["install", "name", "vm.memory", "vm.vcpus"]})
    small = _server("small", "18", version="18.1", spec={
        "limits": {"memory": [1 << 30], "read_iops": None}, "written": ["install", "limits.memory", "name"]})
    found = {d.what: (d.values, d.cause) for d in differences([host, vm, small])}
    assert found == {"limits.memory": (("—", "—", "1GB"), "declared"),
                     "vm.memory": (("—", "1GB", "—"), "declared"),
                     "vm.vcpus": (("—", "1", "—"), "declared"),
                     "vm.accelerator": (("—", "kvm", "—"), "default"),
                     "vm.boot_timeout": (("—", "300.0", "—"), "default")}
    assert declared_values([host.setup, vm.setup, small.setup]) == [
        ("limits.memory", ("—", "—", "1GB")), ("vm.memory", ("—", "1GB", "—")), ("vm.vcpus", ("—", "1", "—"))]
    whole = _server("guest", "18", version="18.1", spec={"vm": guest, "written": ["install", "name", "vm"]})
    assert {d.cause for d in differences([host, whole])} == {"declared"}
    # A store from before teiten kept what was written: every differing field, as it was.
    old = _server("guest", "18", version="18.1", spec={"vm": guest})
    assert {d.what: d.cause for d in differences([_server("host", "18", version="18.1"), old])} == {
        f"vm.{k}": "declared" for k in ("accelerator", "boot_timeout", "memory", "vcpus")}


def test_a_description_whose_settings_are_no_mapping_is_refused_in_words() -> None:
    """A read-back setting is shown as SHOW words it; a stored description that holds
    something else where its settings belong says so instead of failing on an attribute."""
    from teiten.analysis.differences import read_back

    assert read_back({"setting": "16384", "unit": "8kB", "source": "default"}) == "128MB"
    assert read_back({"setting": "on"}) == "on"
    a = _server("a", "pg17", version="17.6")
    b = _server("b", "pg18", version="18.0", settings={"work_mem": "4MB"})
    with pytest.raises(ValueError, match="'4MB' where a mapping belongs"):
        differences([a, b])
