"""The registry of the monitors' metrics (teiten.monitors.registry): each metric has a unit, a
kind and a label in English and Japanese; the names it covers are exactly the ones meant; every
metric that any store of tests/golden/ holds is covered (an old store is shown as a new one);
a monitor cannot claim another's metric."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from teiten import messages
from teiten.monitors import registry
from teiten.monitors.base import UNITS, Metric, MonitorKind

GOLDEN = Path(__file__).resolve().parent.parent / "golden"


def test_every_metric_has_its_words_and_a_known_unit() -> None:
    names = [k.name for k in registry.KINDS]
    assert len(set(names)) == len(names)
    for kind in registry.KINDS:
        for metric in kind.metrics:
            fields = dict.fromkeys(metric.pattern.groupindex, "x")
            for lang in messages.LANGS:
                assert messages.tr(metric.label, lang, **fields), (kind.name, metric.name)
    for unit in UNITS:
        if unit != "count":
            assert messages.tr(f"unit.{unit}", "ja")


def test_a_metric_covers_the_names_it_means() -> None:
    device = Metric("{role}_device_util", "%", "gauge", "metric.device_util")
    assert device.fields("wal_device_util") == {"role": "wal"}
    assert device.fields("device_util") is None and device.fields("disk.vda.util") is None
    assert registry.label("data_device_util") == "utilisation of the data device"
    assert registry.label("server_cpu_system", "ja") == "サーバの CPU: system"
    assert (registry.unit("limit_write_bps"), registry.unit("xact_commit")) == ("bytes/s", "")
    assert registry.label("no_such_metric") == "no_such_metric" and registry.unit("no_such_metric") == ""
    with pytest.raises(ValueError, match="unit 'furlongs'"):
        Metric("x", "furlongs", "gauge", "metric.x")


def test_every_metric_of_the_golden_stores_is_registered() -> None:
    stored: set[str] = set()
    for path in sorted(GOLDEN.rglob("*.db")):
        with sqlite3.connect(f"file:{path}?immutable=1", uri=True) as conn:  # never a -wal beside it
            if conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'metrics'").fetchone():
                stored |= {n for (n,) in conn.execute("SELECT DISTINCT name FROM metrics")}
    assert {"cpu_user", "wal_device_util", "replication_lag_bytes_max", "load_skew_s"} <= stored
    assert registry.unregistered(stored) == []


def test_a_monitor_cannot_claim_another_monitors_metric() -> None:
    def nothing(window: object) -> None:
        return None

    with pytest.raises(ValueError, match="metric wal_bytes is another monitor's"):
        registry.register(MonitorKind("copycat", nothing, (Metric("wal_bytes", "bytes", "counter", "x"),)))
    with pytest.raises(ValueError, match="named 'activity'"):
        registry.register(MonitorKind("activity", nothing))
    assert [k.name for k in registry.KINDS].count("copycat") == 0
