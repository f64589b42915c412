"""The rules that make a streaming standby on every version (servers/replication.py): whose
pg_basebackup takes the backup, what turns a copy into a standby, and the primary's
synchronous_standby_names before and after 10."""

from __future__ import annotations

from teiten.servers.replication import (
    basebackup_choice,
    primary_settings,
    standby_files,
    standby_settings,
)


def test_the_servers_own_pg_basebackup_from_10_else_a_newer_one() -> None:
    assert basebackup_choice(15, [("own", 15), ("client", 18)]) == "own"
    assert basebackup_choice(9, [("own", 9), ("client", 18)]) == "client"  # 9.6: no --no-sync
    assert basebackup_choice(9, [("client", 10)]) == "client"
    assert basebackup_choice(17, [("client", 16)]) is None  # it backs up its major or older
    assert basebackup_choice(9, [("own", 9)]) is None
    assert basebackup_choice(13, [("newest", 18), ("older", 15)]) == "newest"


def test_before_12_a_standby_is_made_by_recovery_conf_with_hot_standby_left_a_setting() -> None:
    settings = standby_settings(1, "/tmp/sockets", 5433)
    assert standby_files(12, settings) == ("standby.signal", "", settings)
    name, text, left = standby_files(11, settings)
    assert name == "recovery.conf" and left == ["hot_standby = on"]
    assert text.splitlines() == [
        "standby_mode = 'on'",
        "primary_conninfo = 'host=/tmp/sockets port=5433 user=postgres "
        "application_name=node1'",
        "primary_slot_name = 'node1'"]


def test_sync_standby_names_without_any_before_10() -> None:
    assert "synchronous_standby_names = 'ANY 2 (node1, node2)'" in primary_settings(
        "sync", 3, "on", wal_level=None, major=10)
    assert "synchronous_standby_names = '2 (node1, node2)'" in primary_settings(
        "sync", 3, "remote_apply", wal_level=None, major=9)
    assert "wal_level = 'replica'" not in primary_settings("async", 2, "on", wal_level="logical")


def test_a_series_on_an_ssh_host_holds_its_releases_betas_and_development_builds() -> None:
    from teiten.servers.ssh.host import _in_series

    assert _in_series("18.1", 18, "18", 1) and _in_series("18beta1", 18, "18", 1)
    assert _in_series("18devel", 18, "18", 1) and not _in_series("17.6", 17, "18", 1)
    assert _in_series("9.6.24", 9, "9.6", 2) and _in_series("9.6beta1", 9, "9.6", 2)
    assert not _in_series("9.5.25", 9, "9.6", 2) and not _in_series("9.61", 9, "9.6", 2)
