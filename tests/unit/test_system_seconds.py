"""The system monitor's seconds beside pgbench's in the series viewer: stored samples put on
pgbench's per-second axis (teiten.analysis.inputs.system_seconds), and what a real store
(tests/golden/report-stores, made by real runs) gives the viewer."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from teiten.analysis.gather import study_data
from teiten.analysis.inputs import system_seconds
from teiten.features import FEATURES
from teiten.report.build import write_study_report
from teiten.store import Store

GOLDEN = Path(__file__).resolve().parent.parent / "golden" / "report-stores"


def test_samples_go_to_the_second_they_close_and_a_missing_second_is_none() -> None:
    samples = [(1.002, "cpu.idle", 70.0), (1.002, "disk.vda.util", 12.5), (1.002, "disk.vdb.util", 3.0),
               (2.004, "cpu.idle", 65.5), (2.004, "disk.vda.util", 14.0),
               (4.001, "cpu.idle", 10.0), (4.001, "disk.vdb.util", 9.0),
               (4.001, "cpu0.idle", 0.0), (4.001, "disk.loop0.util", 99.0)]  # not drawn
    got = system_seconds(samples, {"data": "vda", "wal": "vdb"})
    assert got == {"cpu": [30.0, 34.5, None, 90.0], "data": [12.5, 14.0], "wal": [3.0, None, None, 9.0]}
    # Data and WAL on one device: both roles read it.
    shared = system_seconds(samples, {"data": "vda", "wal": "vda"})
    assert shared["data"] == shared["wal"] == [12.5, 14.0]
    # No devices recorded (an older trial, or none found): the CPU only.
    assert system_seconds(samples, {}) == {"cpu": [30.0, 34.5, None, 90.0]}
    assert system_seconds([], {"data": "vda"}) == {}


@pytest.mark.parametrize("name", ["quick", "cores"])
def test_a_real_stores_trials_carry_their_cpu_and_devices_to_the_viewer(name: str, tmp_path: Path) -> None:
    path = tmp_path / f"{name}.db"
    shutil.copyfile(GOLDEN / f"{name}.db", path)  # opening may migrate: never the golden file
    store = Store.open(path)
    try:
        [row] = store.studies()
        data = study_data(store, row.id, FEATURES)
        raw = {t: store.series(row.id, t) for t in data.system}
        devices = store.details_of_kind(row.id, "devices")
        write_study_report(store, row.id, tmp_path / "report")
    finally:
        store.close()
    assert data.system, "the golden store's trials were monitored"
    for trial_id, seconds in data.system.items():
        idle = [r["value"] for r in raw[trial_id] if r["name"] == "cpu.idle"]
        assert [v for v in seconds["cpu"] if v is not None] == [100.0 - v for v in idle]
        dev = devices[trial_id]["data"]
        util = [r["value"] for r in raw[trial_id] if r["name"] == f"disk.{dev}.util"]
        assert [v for v in seconds["data"] if v is not None] == util
    html = (tmp_path / "report" / "report.html").read_text(encoding="utf-8")
    model = json.loads(re.search(r'<script type="application/json" id="series-data">(.*?)</script>',
                                 html, re.S)[1])
    drawn = [t for t in model["trials"] if "system" in t]
    assert drawn and all(isinstance(t["system"]["cpu"][0], float) for t in drawn)
    assert model["labels"]["cpu"] == "CPU busy % (this machine)"
