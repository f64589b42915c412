"""A testbed (docs/DESIGN.md, "Results others read"): the user's name for a machine, else a short
hash of the fingerprint's identity fields that stays the same when the machine's software or
tuning changes, and changes with another machine."""

from __future__ import annotations

from pathlib import Path

from teiten.host import fingerprint

MACHINE = {"hostname": "bench-1", "cpu_model": "AMD EPYC 7B13", "cpu_logical": 2,
           "memory_bytes": 8 * 2**30 - 150 * 2**20, "arch": "x86_64", "kernel": "6.1.0-18-amd64",
           "os": "Debian GNU/Linux 12 (bookworm)", "cpu_governor": "not exposed", "turbo": "on"}


def test_the_same_machine_keeps_its_key_through_upgrades_and_retuning() -> None:
    key = fingerprint.testbed_key(MACHINE)
    assert len(key) == 12 and int(key, 16) >= 0
    upgraded = {**MACHINE, "hostname": "renamed", "kernel": "6.1.0-25-amd64", "turbo": "off",
                # the kernel's own reservations moved the total by some MiB
                "memory_bytes": MACHINE["memory_bytes"] + 40 * 2**20}
    assert fingerprint.testbed_key(upgraded) == key


def test_another_machine_is_another_testbed() -> None:
    key = fingerprint.testbed_key(MACHINE)
    for field, value in (("cpu_model", "Intel Xeon"), ("cpu_logical", 4),
                         ("memory_bytes", 16 * 2**30), ("arch", "aarch64")):
        assert fingerprint.testbed_key({**MACHINE, field: value}) != key, field


def test_a_name_given_is_the_testbed() -> None:
    assert fingerprint.testbed_key(MACHINE, "ci-box-1") == "ci-box-1"


def test_this_machines_key_is_stable_between_two_readings(tmp_path: Path) -> None:
    first, second = fingerprint.machine(tmp_path), fingerprint.machine(tmp_path)
    assert fingerprint.testbed_key(first) == fingerprint.testbed_key(second)
